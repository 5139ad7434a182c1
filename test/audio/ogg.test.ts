import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { oggCrc32, oggPageCrc } from '../../src/audio/crc32.js';
import { OggPacketReader, OggPageReader, OggPageWriter, buildOggPage, type OggPage, type OggPagePackets, type OggWarning } from '../../src/audio/ogg.js';
import { VoicewireError } from '../../src/util/errors.js';
import { concat, cutsArb, oneByOne, splitAt } from '../helpers/chunks.js';
import { expectCode as expectError } from '../helpers/errors.js';
import { naiveOggPages as naivePages, type NaiveOggPage as NaivePage } from '../helpers/ogg-pages.js';

const fixture = (name: string): Uint8Array => new Uint8Array(readFileSync(new URL(`../../fixtures/opus/${name}`, import.meta.url)));
const OPUSENC = fixture('opusenc_20ms.opus');
const TAGS2 = fixture('opusenc_tags2pages.opus');
const ascii = (s: string): Uint8Array => new TextEncoder().encode(s);

/** Independent reference: the RFC 3533 CRC bit by bit (poly 0x04C11DB7, MSB first, init 0, no xor). */
function naiveCrc(data: Uint8Array): number {
  let crc = 0;
  for (const byte of data) {
    crc ^= byte << 24;
    for (let k = 0; k < 8; k++) crc = crc & 0x80000000 ? (crc << 1) ^ 0x04c11db7 : crc << 1;
  }
  return crc >>> 0;
}



/** Independent reference: packets of one stream by the RFC 3533 §5 lacing rule (value < 255 ends a packet). */
function naivePackets(pages: NaivePage[]): Uint8Array[] {
  const packets: Uint8Array[] = [];
  let cur: number[] = [];
  for (const p of pages) {
    let at = 0;
    for (const v of p.lacing) {
      cur.push(...p.body.subarray(at, at + v));
      at += v;
      if (v < 255) {
        packets.push(Uint8Array.from(cur));
        cur = [];
      }
    }
  }
  return packets;
}

function readPages(chunks: Uint8Array[], options: ConstructorParameters<typeof OggPageReader>[0] = {}): OggPage[] {
  const r = new OggPageReader(options);
  const out: OggPage[] = [];
  for (const c of chunks) out.push(...r.push(c));
  out.push(...r.flush());
  return out;
}

function readPackets(chunks: Uint8Array[], options: ConstructorParameters<typeof OggPacketReader>[0] = {}): OggPagePackets[] {
  const r = new OggPacketReader(options);
  const out: OggPagePackets[] = [];
  for (const c of chunks) out.push(...r.push(c));
  out.push(...r.flush());
  return out;
}

/** Byte arrays compared as base64 strings: vitest's deep equality is slow on large typed arrays. */
const b64 = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64');
const summary = (pages: OggPage[]) =>
  pages.map((p) => ({ offset: p.offset, headerType: p.headerType, granule: p.granule, serial: p.serial, sequence: p.sequence, lacing: b64(p.segments), body: b64(p.body) }));


describe('oggCrc32 (RFC 3533 §6)', () => {
  it('has the published check value 0x89A1897F for "123456789"', () => {
    expect(oggCrc32(ascii('123456789'))).toBe(0x89a1897f);
  });

  it('equals a bit-by-bit reference on random data, in one piece or several', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), fc.nat(), (data, cutSeed) => {
        const ref = naiveCrc(data);
        expect(oggCrc32(data)).toBe(ref);
        const cut = data.length === 0 ? 0 : cutSeed % (data.length + 1);
        expect(oggCrc32(data, oggCrc32(data, 0, 0, cut), cut)).toBe(ref);
      }),
      { numRuns: 200 },
    );
  });

  it('verifies the stored CRC of every page that opusenc wrote', () => {
    for (const p of naivePages(TAGS2)) {
      const page = TAGS2.slice(p.offset, p.offset + 27 + p.lacing.length + p.body.length);
      const stored = new DataView(page.buffer).getUint32(22, true);
      expect(oggPageCrc(page)).toBe(stored); // the field is taken as zero, whatever it holds
      page.fill(0, 22, 26);
      expect(oggCrc32(page)).toBe(stored);
    }
  });

  it('oggPageCrc equals the bit-by-bit reference over the page with its CRC field zeroed', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 27, maxLength: 700 }), (page) => {
        const zeroed = page.slice();
        zeroed.fill(0, 22, 26);
        expect(oggPageCrc(page)).toBe(naiveCrc(zeroed));
      }),
      { numRuns: 200 },
    );
    expectError(() => oggPageCrc(new Uint8Array(26)), 'INVALID_ARGUMENT');
  });
});

describe('OggPageReader', () => {
  it('reads back every header field as written: any int64 granule (-1 included), serial and sequence up to 2^32 - 1', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), fc.nat({ max: 0xffffffff }), fc.nat({ max: 0xffffffff }), fc.nat({ max: 7 }), (granule, serial, sequence, headerType) => {
        const page = buildOggPage({ headerType, granule, serial, sequence, segments: [3], body: new Uint8Array([1, 2, 3]) });
        const [read] = new OggPageReader().push(page);
        expect(read).toMatchObject({ granule, serial, sequence, headerType });
      }),
      { numRuns: 300 },
    );
  });

  it('reads the pages of opusenc files exactly as a reference parser does', () => {
    for (const file of [OPUSENC, TAGS2]) {
      const ref = naivePages(file);
      const pages = readPages([file]);
      expect(summary(pages)).toEqual(ref.map((p) => ({ ...p, lacing: b64(Uint8Array.from(p.lacing)), body: b64(p.body) })));
      expect(pages[0]!.bos).toBe(true);
      expect(pages.at(-1)!.eos).toBe(true);
    }
  });

  it('gives the same pages whole, byte by byte, with empty chunks and at random splits', () => {
    const whole = summary(readPages([TAGS2]));
    expect(summary(readPages(oneByOne(OPUSENC)))).toEqual(summary(readPages([OPUSENC])));
    expect(summary(readPages(splitAt(TAGS2, [0, 0, 5, 5, 27, 28, 100, 100, 65000])))).toEqual(whole);
    fc.assert(
      fc.property(cutsArb(TAGS2.length, 30), (cuts) => {
        expect(summary(readPages(splitAt(TAGS2, cuts)))).toEqual(whole);
      }),
      { numRuns: 40 },
    );
  });

  it('strict: skips garbage before the first page; junk between or after pages is OGG_CORRUPT, once the pages before it are out', () => {
    const pages = naivePages(OPUSENC);
    const p1 = OPUSENC.subarray(0, pages[1]!.offset);
    const rest = OPUSENC.subarray(pages[1]!.offset);
    const junk1 = ascii('xxOgOggxOggS\x01yyyy');
    const warnings: OggWarning[] = [];
    expect(readPages(oneByOne(concat([junk1, OPUSENC])), { onWarning: (w) => warnings.push(w) }).length).toBe(pages.length);
    expect(warnings.map((w) => [w.kind, w.offset])).toEqual([['garbage', 0]]);
    for (const junk of ['OggOggOg', 'x', 'OggS\x01']) {
      for (const chunks of [[concat([p1, ascii(junk), rest])], oneByOne(concat([p1, ascii(junk), rest]))]) {
        const r = new OggPageReader();
        const got: OggPage[] = [];
        const e = expectError(() => {
          for (const c of chunks) got.push(...r.push(c));
          r.flush();
        }, 'OGG_CORRUPT', /damaged at byte \d+: expected the next page/);
        expect(e.details).toMatchObject({ offset: p1.length });
        expect(got.map((p) => p.sequence)).toEqual([0]);
      }
    }
    // After the last page too (the EOS page of a file can lose its capture pattern the same way).
    const r = new OggPageReader();
    expect(r.push(concat([OPUSENC, ascii('tail')])).length).toBe(pages.length);
    expectError(() => r.flush(), 'OGG_CORRUPT');
    const t = new OggPageReader();
    expect(t.push(concat([OPUSENC, ascii('Ogg')])).length).toBe(pages.length);
    expectError(() => t.flush(), 'OGG_TRUNCATED'); // a cut inside the next capture pattern
  });

  it('strict: a flipped capture-pattern or version byte of any page is an error, never a silently lost page', () => {
    const pages = naivePages(OPUSENC);
    for (const k of [1, Math.floor(pages.length / 2), pages.length - 1]) {
      for (let b = 0; b < 5; b++) {
        for (const mask of [0x01, 0x80]) {
          const bad = OPUSENC.slice();
          bad[pages[k]!.offset + b]! ^= mask;
          const r = new OggPageReader();
          const got: OggPage[] = [];
          expectError(() => {
            got.push(...r.push(bad));
            r.flush();
          }, 'OGG_CORRUPT');
          expect(got.map((p) => p.sequence)).toEqual(pages.slice(0, k).map((p) => p.sequence));
        }
      }
    }
  });

  it('strict: false skips garbage before, between and after pages and reports where and how much', () => {
    const pages = naivePages(OPUSENC);
    const p1 = OPUSENC.subarray(0, pages[1]!.offset);
    const rest = OPUSENC.subarray(pages[1]!.offset);
    // Garbage that contains near-misses of the capture pattern, and a false "OggS" with version 1.
    const junk1 = ascii('xxOgOggxOggS\x01yyyy');
    const junk2 = ascii('OggOggOg');
    const input = concat([junk1, p1, junk2, rest, ascii('tail')]);
    const warnings: OggWarning[] = [];
    const got = readPages(oneByOne(input), { strict: false, onWarning: (w) => warnings.push(w) });
    expect(got.map((p) => p.sequence)).toEqual(pages.map((p) => p.sequence));
    expect(warnings.map((w) => [w.kind, w.offset])).toEqual([
      ['garbage', 0],
      ['garbage', junk1.length + p1.length],
      ['garbage', input.length - 4],
    ]);
    expect(warnings[0]!.message).toContain(`skipped ${junk1.length} bytes`);
    expect(warnings[1]!.message).toContain(`skipped ${junk2.length} bytes`);
    expect(got[1]!.offset).toBe(junk1.length + p1.length + junk2.length);
  });

  it('raises OGG_CRC_MISMATCH for a flipped byte, and can skip the page instead', () => {
    const pages = naivePages(OPUSENC);
    const bad = OPUSENC.slice();
    bad[pages[2]!.offset + 100]! ^= 0x10; // a body byte (the lacing table ends at +53)
    const r = new OggPageReader();
    const e = expectError(() => r.push(bad.subarray(pages[2]!.offset)), 'OGG_CRC_MISMATCH', /fails its CRC: stored 0x[0-9a-f]{8}, computed 0x[0-9a-f]{8}/);
    expect(e.details).toMatchObject({ offset: 0, sequence: 2 });
    expectError(() => r.push(new Uint8Array(1)), 'INVALID_STATE');

    const warnings: OggWarning[] = [];
    const got = readPages([bad], { strict: false, onWarning: (w) => warnings.push(w) });
    expect(got.map((p) => p.sequence)).toEqual(pages.filter((p) => p.sequence !== 2).map((p) => p.sequence));
    expect(warnings[0]!.kind).toBe('crc-mismatch');
    expect(warnings[0]!.offset).toBe(pages[2]!.offset);
    expect(warnings.some((w) => w.kind === 'garbage')).toBe(true);
  });

  it('returns the good pages before a bad one and raises the error on the next call', () => {
    const pages = naivePages(OPUSENC);
    const bad = OPUSENC.slice();
    bad[pages[2]!.offset + 100]! ^= 1;
    const r = new OggPageReader();
    expect(r.push(bad).map((p) => p.sequence)).toEqual([0, 1]);
    expectError(() => r.flush(), 'OGG_CRC_MISMATCH');
    expectError(() => r.flush(), 'INVALID_STATE');
  });

  it('emits complete pages and raises OGG_TRUNCATED on flush when the input ends inside a page', () => {
    const pages = naivePages(OPUSENC);
    for (const cut of [pages[2]!.offset + 4, pages[2]!.offset + 20, pages[2]!.offset + 100]) {
      const r = new OggPageReader();
      expect(r.push(OPUSENC.subarray(0, cut)).length).toBe(2);
      const e = expectError(() => r.flush(), 'OGG_TRUNCATED', /ended inside the page at byte/);
      expect(e.details).toMatchObject({ offset: pages[2]!.offset });
    }
    // Ending exactly at a page boundary is not a truncation of a page.
    expect(readPages([OPUSENC.subarray(0, pages[2]!.offset)]).length).toBe(2);
    // allowTruncated: the partial page is dropped and reported.
    const warnings: OggWarning[] = [];
    expect(readPages([OPUSENC.subarray(0, pages[2]!.offset + 20)], { allowTruncated: true, onWarning: (w) => warnings.push(w) }).length).toBe(2);
    expect(warnings.map((w) => [w.kind, w.offset])).toEqual([['truncated', pages[2]!.offset]]);
  });

  it('wraps an unexpected error (here from onWarning) with an Ogg code, not PROTOCOL_INTERNAL', () => {
    const boom = new TypeError('boom');
    const r = new OggPageReader({
      onWarning: () => {
        throw boom;
      },
    });
    const e = expectError(() => r.push(concat([ascii('junk'), OPUSENC])), 'OGG_INVALID_PAGE', /boom/);
    expect(e.cause).toBe(boom);
    expect(e.closeCode).toBeUndefined();
    expectError(() => r.push(new Uint8Array(1)), 'INVALID_STATE');
  });

  it('declares input without a capture pattern not Ogg after maxGarbage bytes', () => {
    const r = new OggPageReader({ maxGarbage: 1000 });
    r.push(new Uint8Array(900).fill(0x41));
    expectError(() => r.push(new Uint8Array(200).fill(0x41)), 'OGG_INVALID_PAGE', /not an Ogg stream/);
  });

  it('fuzz: mutated files raise only VoicewireError, and a failed reader reports INVALID_STATE', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 8 }), fc.boolean(), cutsArb(OPUSENC.length, 5), (edits, skip, cuts) => {
        const data = OPUSENC.slice();
        for (const [at, v] of edits) data[at % data.length] = v;
        const r = new OggPageReader({ strict: !skip, maxGarbage: 4096 });
        let failed = false;
        try {
          for (const c of splitAt(data, cuts)) r.push(c);
          r.flush();
        } catch (err) {
          expect(err).toBeInstanceOf(VoicewireError);
          failed = true;
        }
        if (failed) expectError(() => r.push(new Uint8Array(4)), 'INVALID_STATE');
      }),
      { numRuns: 150 },
    );
  });
});

describe('OggPageWriter', () => {
  it('laces a packet of length L as ⌊L/255⌋ values of 255 then L mod 255 (RFC 3533 §5)', () => {
    for (const len of [0, 1, 254, 255, 256, 509, 510, 511, 4000]) {
      const w = new OggPageWriter({ serial: 7 });
      w.addPacket(new Uint8Array(len).fill(3), 960);
      const [page] = w.flushPage();
      const ref = naivePages(page!)[0]!;
      expect(ref.lacing).toEqual([...Array<number>(Math.floor(len / 255)).fill(255), len % 255]);
      expect(ref.granule).toBe(960n);
      expect(ref.serial).toBe(7);
    }
  });

  it('writes valid pages: CRC, consecutive sequence numbers, BOS first, EOS last, ≤ 255 segments, granule -1 where no packet ends', () => {
    const w = new OggPageWriter({ serial: 0xdeadbeef });
    const packets = [new Uint8Array(100), new Uint8Array(70_000).map((_, i) => i & 0xff), new Uint8Array(255 * 3), new Uint8Array(0), new Uint8Array(300)];
    const pages: Uint8Array[] = [];
    packets.forEach((p, i) => pages.push(...w.addPacket(p, (i + 1) * 1000)));
    pages.push(...w.flushPage({ eos: true }));
    const file = concat(pages);
    const ref = naivePages(file);
    expect(ref.map((p) => p.sequence)).toEqual(ref.map((_, i) => i));
    expect(ref.every((p) => p.serial === 0xdeadbeef && p.lacing.length <= 255)).toBe(true);
    expect(ref.map((p) => p.headerType & 2)).toEqual(ref.map((_, i) => (i === 0 ? 2 : 0)));
    expect(ref.map((p) => p.headerType & 4)).toEqual(ref.map((_, i) => (i === ref.length - 1 ? 4 : 0)));
    for (const p of ref) {
      const ends = p.lacing.some((v) => v < 255);
      if (!ends) expect(p.granule).toBe(-1n);
    }
    for (let i = 0; i < ref.length; i++) {
      const raw = file.slice(ref[i]!.offset, ref[i]!.offset + 27 + ref[i]!.lacing.length + ref[i]!.body.length);
      const stored = new DataView(raw.buffer).getUint32(22, true);
      raw.fill(0, 22, 26);
      expect(naiveCrc(raw)).toBe(stored);
    }
    expect(naivePackets(ref).map(b64)).toEqual(packets.map(b64));
  });

  it('closes the page in progress rather than splitting a packet that fits a fresh page', () => {
    const w = new OggPageWriter();
    expect(w.addPacket(new Uint8Array(200 * 255), 1)).toEqual([]);
    const closed = w.addPacket(new Uint8Array(100 * 255), 2);
    expect(closed.length).toBe(1);
    expect(naivePages(closed[0]!)[0]!.granule).toBe(1n);
    const rest = naivePages(concat(w.flushPage({ eos: true })));
    expect(rest.length).toBe(1);
    expect(rest[0]!.headerType & 1).toBe(0);
  });

  it('writes an empty EOS page when nothing is queued, and nothing after EOS', () => {
    const w = new OggPageWriter();
    const [p] = w.flushPage({ eos: true, eosGranule: 5n });
    const ref = naivePages(p!)[0]!;
    expect(ref.headerType).toBe(2 | 4);
    expect(ref.lacing).toEqual([]);
    expect(ref.granule).toBe(5n);
    expectError(() => w.addPacket(new Uint8Array(1), 1), 'INVALID_STATE');
  });

  it('addPacket(5), addPacket({}) and other bad arguments are INVALID_ARGUMENT at once (issue 11 §12: flushPage looped until the heap was exhausted)', () => {
    const w = new OggPageWriter({ serial: 1 });
    for (const bad of [5, {}, null, undefined, 'abc', [1, 2, 3], new Int16Array(4)]) expectError(() => w.addPacket(bad as never, 0), 'INVALID_ARGUMENT');
    for (const g of [NaN, 0.5, -2, Infinity, '3', {}, null, 2n ** 63n]) expectError(() => w.addPacket(new Uint8Array(1), g as never), 'INVALID_ARGUMENT');
    expect(w.flushPage()).toEqual([]); // nothing was queued by the bad calls
    for (const o of [5, 'x', null]) expectError(() => new OggPageWriter(o as never), 'INVALID_ARGUMENT');
    for (const serial of [-1, 2 ** 32, 1.5, NaN, '1']) expectError(() => new OggPageWriter({ serial: serial as never }), 'INVALID_ARGUMENT');
    expectError(() => w.flushPage(null as never), 'INVALID_ARGUMENT');
    expectError(() => w.flushPage({ eos: true, eosGranule: NaN }), 'INVALID_ARGUMENT');
    for (const o of [5, 'x', null]) {
      expectError(() => new OggPageReader(o as never), 'INVALID_ARGUMENT');
      expectError(() => new OggPacketReader(o as never), 'INVALID_ARGUMENT');
    }
    expectError(() => new OggPacketReader({ select: 5 as never }), 'INVALID_ARGUMENT');
    expectError(() => new OggPageReader({ onWarning: 'x' as never }), 'INVALID_ARGUMENT');
    expectError(() => new OggPageReader({ maxGarbage: NaN }), 'INVALID_ARGUMENT');
    expectError(() => new OggPageReader().push(5 as never), 'INVALID_ARGUMENT');
    const page = { headerType: 0, granule: 0, serial: 1, sequence: 0, segments: [1], body: new Uint8Array(1) };
    expect(buildOggPage(page).length).toBe(29);
    for (const bad of [{ segments: [256], body: new Uint8Array(256) }, { segments: [0.5], body: new Uint8Array(0) }, { body: [1] }, { segments: null }, { headerType: 256 }, { serial: -1 }, { sequence: NaN }, { granule: NaN }]) {
      expectError(() => buildOggPage({ ...page, ...bad } as never), 'INVALID_ARGUMENT');
    }
    expectError(() => buildOggPage(null as never), 'INVALID_ARGUMENT');
  });

  it('buildOggPage rejects more than 255 segments or lacing that does not match the body', () => {
    expectError(() => buildOggPage({ headerType: 0, granule: 0, serial: 1, sequence: 0, segments: new Array<number>(256).fill(0), body: new Uint8Array(0) }), 'INVALID_ARGUMENT');
    expectError(() => buildOggPage({ headerType: 0, granule: 0, serial: 1, sequence: 0, segments: [3], body: new Uint8Array(2) }), 'INVALID_ARGUMENT');
  });
});

/** A stream of `packets` written by our writer, one page per `perPage` packets. */
function stream(serial: number, packets: Uint8Array[], perPage = 2): Uint8Array[] {
  const w = new OggPageWriter({ serial });
  const pages: Uint8Array[] = [];
  packets.forEach((p, i) => {
    pages.push(...w.addPacket(p, (i + 1) * 960));
    if ((i + 1) % perPage === 0 && i < packets.length - 1) pages.push(...w.flushPage());
  });
  pages.push(...w.flushPage({ eos: true }));
  return pages;
}

const randomPackets = (n: number, seed: number): Uint8Array[] =>
  Array.from({ length: n }, (_, i) => {
    const len = [0, 1, 255, 510, 254, 256, 70_000, 3000][(i + seed) % 8]!;
    return new Uint8Array(len).map((_, j) => (j * 7 + i + seed) & 0xff);
  });

describe('OggPacketReader', () => {
  it('reassembles packets across pages, including lengths that are multiples of 255, as a reference does', () => {
    for (const file of [OPUSENC, TAGS2]) {
      const got = readPackets([file]).flatMap((g) => g.packets.map(b64));
      expect(got).toEqual(naivePackets(naivePages(file)).map(b64));
    }
    const packets = randomPackets(12, 3);
    const file = concat(stream(42, packets, 3));
    const groups = readPackets([file]);
    expect(groups.flatMap((g) => g.packets.map(b64))).toEqual(packets.map(b64));
    // Each page's granule belongs to its last completed packet; -1 when none completes.
    for (const g of groups) if (g.packets.length === 0) expect(g.granule).toBe(-1n);
    expect(groups.at(-1)!.eos).toBe(true);
    expect(groups[0]!.bos).toBe(true);
  });

  it('gives the same packets whole, byte by byte and at random splits', () => {
    const file = concat(stream(9, randomPackets(10, 1), 2));
    const flat = (gs: OggPagePackets[]) => gs.map((g) => ({ ...g, packets: g.packets.map(b64) }));
    const whole = flat(readPackets([file]));
    expect(flat(readPackets(oneByOne(TAGS2)))).toEqual(flat(readPackets([TAGS2])));
    fc.assert(
      fc.property(cutsArb(file.length, 40), (cuts) => {
        expect(flat(readPackets(splitAt(file, cuts)))).toEqual(whole);
      }),
      { numRuns: 30 },
    );
  });

  it('follows only the selected stream and reports the others, never mixing them in', () => {
    const a = stream(1, randomPackets(6, 0), 1);
    const b = stream(2, randomPackets(6, 5), 1);
    // Multiplexed: both BOS pages first (RFC 3533 §4), then pages interleaved.
    const mixed: Uint8Array[] = [];
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      if (a[i]) mixed.push(a[i]!);
      if (b[i]) mixed.push(b[i]!);
    }
    const warnings: OggWarning[] = [];
    let picked = -1;
    const groups = readPackets([concat(mixed)], {
      select: (serial) => {
        if (picked !== -1) return false;
        picked = serial;
        return true;
      },
      onWarning: (w) => warnings.push(w),
    });
    expect(picked).toBe(1);
    expect(groups.every((g) => g.serial === 1)).toBe(true);
    expect(groups.flatMap((g) => g.packets.map(b64))).toEqual(randomPackets(6, 0).map(b64));
    expect(warnings.filter((w) => w.kind === 'other-stream').map((w) => w.serial)).toEqual([2]);
  });

  it('strict: a page sequence gap is OGG_SEQUENCE_GAP, after the packets before it', () => {
    const packets = [new Uint8Array(10).fill(1), new Uint8Array(70_000).fill(2), new Uint8Array(10).fill(3), new Uint8Array(10).fill(4)];
    const pages = stream(5, packets, 1);
    const ref = pages.map((p) => naivePages(p)[0]!);
    for (let drop = 1; drop < pages.length - 1; drop++) {
      const r = new OggPacketReader();
      const got: OggPagePackets[] = [];
      const e = expectError(() => {
        got.push(...r.push(concat(pages.filter((_, i) => i !== drop))));
        r.flush();
      }, 'OGG_SEQUENCE_GAP', new RegExp(`page sequence ${ref[drop]!.sequence + 1} follows ${ref[drop]!.sequence - 1}`));
      expect(e.details).toMatchObject({ serial: 5, sequence: ref[drop]!.sequence + 1, expected: ref[drop]!.sequence });
      expect(got.map((g) => g.sequence)).toEqual(ref.slice(0, drop).map((p) => p.sequence));
      expectError(() => r.push(new Uint8Array(0)), 'INVALID_STATE');
    }
    // Losing the last page leaves no gap to see: the missing EOS page reports it.
    expectError(() => readPackets([concat(pages.slice(0, -1))]), 'OGG_TRUNCATED', /without an EOS page/);
  });

  it('strict: false reports a page sequence gap and drops the packet the lost page was carrying', () => {
    const packets = [new Uint8Array(10).fill(1), new Uint8Array(70_000).fill(2), new Uint8Array(10).fill(3), new Uint8Array(10).fill(4)];
    const pages = stream(5, packets, 1);
    // Pages: [p0] [p1 start] [p1 end] [p2] [p3, EOS]; drop the page with the start of p1.
    const ref = pages.map((p) => naivePages(p)[0]!);
    const dropAt = ref.findIndex((p) => p.lacing.every((v) => v === 255));
    expect(dropAt).toBeGreaterThan(0);
    const warnings: OggWarning[] = [];
    const groups = readPackets([concat(pages.filter((_, i) => i !== dropAt))], { strict: false, onWarning: (w) => warnings.push(w) });
    expect(groups.flatMap((g) => g.packets.map((p) => p[0]))).toEqual([1, 3, 4]);
    expect(warnings.map((w) => w.kind)).toEqual(['sequence-gap']);
    expect(warnings[0]!.message).toMatch(/page sequence 2 follows 0/);
  });

  it('a stream that ends without EOS is OGG_TRUNCATED (reported with allowTruncated), as is a truncated packet', () => {
    const pages = naivePages(TAGS2);
    const s = new OggPacketReader();
    expect(s.push(TAGS2.subarray(0, pages[3]!.offset)).length).toBe(3);
    const e = expectError(() => s.flush(), 'OGG_TRUNCATED', /ended without an EOS page/);
    expect(e.details).toMatchObject({ offset: pages[3]!.offset, serial: pages[0]!.serial });
    expectError(() => s.flush(), 'INVALID_STATE');
    const warnings: OggWarning[] = [];
    readPackets([TAGS2.subarray(0, pages[3]!.offset)], { allowTruncated: true, onWarning: (w) => warnings.push(w) });
    expect(warnings.map((w) => w.kind)).toEqual(['missing-eos']);
    readPackets([TAGS2.subarray(0, pages[2]!.offset)], { allowTruncated: true, onWarning: (w) => warnings.push(w) });
    expect(warnings[1]!.message).toMatch(/a 65025-byte packet was left incomplete/); // OpusTags spans pages 1–2
    // The complete file ends with its EOS page: no error, no warning.
    readPackets([TAGS2], { onWarning: (w) => warnings.push(w) });
    expect(warnings.length).toBe(2);
    const r = new OggPacketReader();
    const got = r.push(TAGS2.subarray(0, pages[2]!.offset + 50));
    expect(got.map((g) => g.packets.length)).toEqual([1, 0]);
    expectError(() => r.flush(), 'OGG_TRUNCATED');
  });

  it('limits a reassembled packet to maxPacketSize (OGG_PACKET_TOO_LARGE)', () => {
    const r = new OggPacketReader({ maxPacketSize: 60_000 });
    expect(r.push(TAGS2).length).toBe(1); // the OpusHead page, then the error is raised next
    expectError(() => r.flush(), 'OGG_PACKET_TOO_LARGE', /maxPacketSize \(60000 bytes\)/);
    expect(readPackets([TAGS2], { maxPacketSize: 70_000 }).length).toBe(4);
  });

  it('keeps a copy of each continued part, not a view of the pushed chunk (issue 11 §5: 32,000 chunks retained 2 GB for 8 MB counted)', () => {
    // One 100 KB packet over two pages; each page pushed inside a 64 KiB chunk that the caller reuses.
    const w = new OggPageWriter({ serial: 3 });
    const packet = new Uint8Array(100_000).map((_, i) => (i * 7) & 0xff);
    const pages = [...w.addPacket(packet, 1), ...w.flushPage({ eos: true })];
    expect(pages.length).toBe(2);
    const r = new OggPacketReader();
    const chunk = new Uint8Array(65536);
    const got: Uint8Array[] = [];
    for (const page of pages) {
      // The page is pushed as a view of a bigger buffer, which is overwritten once push returns.
      chunk.set(page);
      for (const g of r.push(chunk.subarray(0, page.length))) got.push(...g.packets);
      chunk.fill(0xee);
    }
    r.flush();
    expect(got.length).toBe(1);
    expect(got[0]!.length).toBe(packet.length);
    expect(got[0]!.every((b, i) => b === packet[i])).toBe(true);
  });

  it('fuzz: mutated streams raise only VoicewireError', () => {
    const file = concat(stream(3, randomPackets(8, 2), 2));
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 6 }), fc.boolean(), (edits, skip) => {
        const data = file.slice();
        for (const [at, v] of edits) data[at % data.length] = v;
        // Recompute CRCs so that mutations reach the lacing and packet logic, not just the CRC check.
        if (skip) {
          for (const p of naivePagesLoose(data)) {
            const raw = data.subarray(p.start, p.end);
            raw.fill(0, 22, 26);
            new DataView(raw.buffer, raw.byteOffset).setUint32(22, naiveCrc(raw), true);
          }
        }
        const r = new OggPacketReader({ maxPacketSize: 100_000 });
        try {
          r.push(data);
          r.flush();
        } catch (err) {
          expect(err).toBeInstanceOf(VoicewireError);
          expectError(() => r.push(new Uint8Array(1)), 'INVALID_STATE');
        }
      }),
      { numRuns: 150 },
    );
  });
});

/** Page spans of a possibly mangled file (stops where the layout no longer holds). */
function naivePagesLoose(file: Uint8Array): { start: number; end: number }[] {
  const out: { start: number; end: number }[] = [];
  let at = 0;
  while (at + 27 <= file.length && file[at] === 0x4f && file[at + 1] === 0x67 && file[at + 2] === 0x67 && file[at + 3] === 0x53) {
    const n = file[at + 26]!;
    if (at + 27 + n > file.length) break;
    let size = 0;
    for (let i = 0; i < n; i++) size += file[at + 27 + i]!;
    if (at + 27 + n + size > file.length) break;
    out.push({ start: at, end: at + 27 + n + size });
    at += 27 + n + size;
  }
  return out;
}
