import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { OggOpusDecoder, OggOpusEncoder, createOggOpusDecoderStream, createOggOpusEncoderStream, decodeOggOpus, encodeOggOpus, type OggOpusDecoderOptions, type OggOpusEncoderOptions, type OggOpusErrorDetails } from '../../src/audio/ogg-opus.js';
import { createResampler } from '../../src/audio/resampler.js';
import { buildOpusHead, buildOpusTags, parseOpusHead, parseOpusTags } from '../../src/audio/opus-head.js';
import { OggPageWriter, type OggWarning } from '../../src/audio/ogg.js';
import { opusPacketDuration } from '../../src/audio/opus.js';
import { oggCrc32 } from '../../src/audio/crc32.js';
import { VoicewireError } from '../../src/util/errors.js';
import { createOggOpusDecoderTransform, createOggOpusEncoderTransform } from '../../src/node/ogg-opus.js';
import { concat, cutsArb, oneByOne, splitAt } from '../helpers/chunks.js';
import { has, needs, run, runText } from '../helpers/tools.js';
import { expectCode as expectError } from '../helpers/errors.js';
import { naiveOggPages as pagesOf, type NaiveOggPage as Page } from '../helpers/ogg-pages.js';

// --- helpers -------------------------------------------------------------------------------------

const tmp = mkdtempSync(join(tmpdir(), 'voicewire-ogg-opus-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function wavPcm(name: string): Int16Array {
  const wav = readFileSync(new URL(`../../fixtures/speech/${name}`, import.meta.url));
  const at = wav.indexOf('data') + 8;
  return new Int16Array(wav.buffer.slice(wav.byteOffset + at, wav.byteOffset + wav.length));
}
const SPEECH = wavPcm('en_48k.wav');
const SPEECH_24K = wavPcm('en_24k.wav');
const SHORT = SPEECH.subarray(9600, 9600 + 24000); // 0.5 s

const fixture = (name: string): Uint8Array => new Uint8Array(readFileSync(new URL(`../../fixtures/opus/${name}`, import.meta.url)));
function golden(name: string): Int16Array {
  const b = readFileSync(new URL(`../../fixtures/opus/${name}.s16le`, import.meta.url));
  return new Int16Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
}
const FIXTURES = ['opusenc_20ms', 'ffmpeg_20ms', 'ffmpeg_40ms', 'ffmpeg_60ms', 'ffmpeg_120ms', 'opusenc_tags2pages'];

/** SNR of `x` against the reference `ref`, dB (both the same length). */
function snr(ref: ArrayLike<number>, x: ArrayLike<number>): number {
  expect(x.length).toBe(ref.length);
  let s = 0;
  let n = 0;
  for (let i = 0; i < ref.length; i++) {
    s += ref[i]! * ref[i]!;
    n += (ref[i]! - x[i]!) ** 2;
  }
  return n === 0 ? Infinity : 10 * Math.log10(s / n);
}

const le = (a: Int16Array | Float32Array): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
const b64 = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64');

function f32(bytes: Uint8Array): Float32Array {
  const copy = bytes.slice();
  return new Float32Array(copy.buffer, 0, copy.length >> 2);
}

function file(name: string, data: Uint8Array): string {
  const path = join(tmp, name);
  writeFileSync(path, data);
  return path;
}

/** opusdec's float decoding at 48 kHz (the oracle). */
function opusdecFloat(ogg: Uint8Array, extra: string[] = []): Float32Array {
  const path = file(`in-${Math.random().toString(36).slice(2)}.opus`, ogg);
  const out = `${path}.f32`;
  run('opusdec', ['--quiet', '--rate', '48000', '--float', ...extra, path, out]);
  return f32(new Uint8Array(readFileSync(out)));
}



function packetsOf(page: Page): Uint8Array[] {
  const out: Uint8Array[] = [];
  let start = 0;
  let at = 0;
  for (const v of page.lacing) {
    at += v;
    if (v < 255) {
      out.push(page.body.subarray(start, at));
      start = at;
    }
  }
  return out;
}

/** Rewrites the CRC of every page (after a deliberate edit), by the RFC 3533 rule. */
function fixCrcs(data: Uint8Array): Uint8Array {
  const out = data.slice();
  for (const p of pagesOf(out)) {
    const raw = out.subarray(p.offset, p.offset + 27 + p.lacing.length + p.body.length);
    raw.fill(0, 22, 26);
    new DataView(raw.buffer, raw.byteOffset).setUint32(22, oggCrc32(raw), true);
  }
  return out;
}


function encodeChunks(chunks: (Int16Array | Float32Array | Uint8Array)[], options: OggOpusEncoderOptions): Uint8Array {
  const enc = new OggOpusEncoder(options);
  const pages: Uint8Array[] = [];
  for (const c of chunks) pages.push(...enc.push(c));
  pages.push(...enc.flush());
  return concat(pages);
}

function decodeChunks(chunks: Uint8Array[], options: OggOpusDecoderOptions = {}): Int16Array {
  const dec = new OggOpusDecoder(options);
  const out: Int16Array[] = [];
  for (const c of chunks) out.push(...dec.push(c));
  out.push(...dec.flush());
  return concat(out.length ? out : [new Int16Array(0)]);
}

// --- OpusHead / OpusTags -------------------------------------------------------------------------

describe('OpusHead / OpusTags (RFC 7845 §5)', () => {
  const opusenc = fixture('opusenc_20ms.opus');
  const [head, tags] = pagesOf(opusenc).slice(0, 2).map((p) => packetsOf(p)[0]!);

  it('parses the headers opusenc wrote', () => {
    expect(parseOpusHead(head!)).toMatchObject({ version: 1, channelCount: 1, preSkip: 312, inputSampleRate: 48000, outputGain: 0, mappingFamily: 0, streamCount: 1, coupledCount: 0 });
    const t = parseOpusTags(tags!);
    expect(t.vendor).toMatch(/^libopus /);
    expect(t.comments.some((c) => c.startsWith('ENCODER='))).toBe(true);
  });

  it('builds headers that parse back to the same fields', () => {
    const h = parseOpusHead(buildOpusHead({ channelCount: 2, preSkip: 3840, inputSampleRate: 44100, outputGain: -1234 }));
    expect(h).toMatchObject({ version: 1, channelCount: 2, preSkip: 3840, inputSampleRate: 44100, outputGain: -1234, mappingFamily: 0, coupledCount: 1 });
    expect([...h.channelMapping]).toEqual([0, 1]);
    const t = parseOpusTags(buildOpusTags({ vendor: 'vendor ✓', comments: ['TITLE=héllo', 'ARTIST=x=y'] }));
    expect(t).toEqual({ vendor: 'vendor ✓', comments: ['TITLE=héllo', 'ARTIST=x=y'] });
    expectError(() => buildOpusTags({ vendor: 'v', comments: ['no equals sign'] }), 'INVALID_ARGUMENT');
    expectError(() => buildOpusHead({ preSkip: 70000 }), 'INVALID_ARGUMENT');
  });

  it('rejects headers that break §5.1/§5.2 with OPUS_INVALID_HEADER', () => {
    const edit = (at: number, v: number): Uint8Array => {
      const h = head!.slice();
      h[at] = v;
      return h;
    };
    expectError(() => parseOpusHead(edit(0, 0x6f)), 'OPUS_INVALID_HEADER', /magic/);
    expectError(() => parseOpusHead(edit(8, 16)), 'OPUS_INVALID_HEADER', /version 16/);
    expectError(() => parseOpusHead(edit(9, 0)), 'OPUS_INVALID_HEADER', /channel count is 0/);
    expectError(() => parseOpusHead(edit(9, 3)), 'OPUS_INVALID_HEADER', /family 0 allows 1 or 2/);
    expectError(() => parseOpusHead(head!.subarray(0, 18)), 'OPUS_INVALID_HEADER', /at least 19/);
    expectError(() => parseOpusHead(edit(18, 1)), 'OPUS_INVALID_HEADER', /needs 22 bytes/);
    const fam1 = Uint8Array.from([...head!.subarray(0, 18), 1, 2, 3, 0, 1]);
    fam1[9] = 2;
    expectError(() => parseOpusHead(fam1), 'OPUS_INVALID_HEADER', /coupled stream count 3 exceeds/);
    expect(parseOpusHead(Uint8Array.from([...head!, 0xaa, 0xbb])).preSkip).toBe(312); // trailing bytes allowed
    const t = tags!.slice();
    new DataView(t.buffer).setUint32(8, 1 << 30, true);
    expectError(() => parseOpusTags(t), 'OPUS_INVALID_HEADER', /vendor string needs/);
    expectError(() => parseOpusTags(head!), 'OPUS_INVALID_HEADER', /magic/);
  });

  it('fuzz: random bytes behind the magic raise only OPUS_INVALID_HEADER', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 60 }), (rest) => {
        for (const [magic, parse] of [['OpusHead', parseOpusHead], ['OpusTags', parseOpusTags]] as const) {
          try {
            parse(Uint8Array.from([...Buffer.from(magic), ...rest]));
          } catch (err) {
            expect(err).toBeInstanceOf(VoicewireError);
            expect((err as VoicewireError).code).toBe('OPUS_INVALID_HEADER');
          }
        }
      }),
      { numRuns: 500 },
    );
  });
});

// --- encoder -------------------------------------------------------------------------------------

describe('OggOpusEncoder', () => {
  it('writes OpusHead alone on page 0, OpusTags ending page 1, 80 ms pages of 20 ms packets, and the EOS granule = length + pre-skip', () => {
    const enc = new OggOpusEncoder({ serial: 1234 });
    const data = concat([...enc.push(SPEECH), ...enc.flush()]);
    const pages = pagesOf(data);
    expect(pages.every((p) => p.serial === 1234)).toBe(true);
    expect(pages.map((p) => p.sequence)).toEqual(pages.map((_, i) => i));
    // RFC 7845 §3: the ID header alone on a BOS page with granule 0; the comment header next.
    expect(pages[0]).toMatchObject({ headerType: 2, granule: 0n, lacing: [19] });
    expect(parseOpusHead(packetsOf(pages[0]!)[0]!).preSkip).toBe(enc.preSkip);
    expect(enc.preSkip).toBe(312);
    expect(pages[1]!.headerType).toBe(0);
    expect(pages[1]!.granule).toBe(0n);
    expect(packetsOf(pages[1]!).length).toBe(1);
    expect(parseOpusTags(packetsOf(pages[1]!)[0]!).vendor).toBe('voicewire (libopus 1.4)');
    const audio = pages.slice(2);
    let total = 0;
    for (const [i, p] of audio.entries()) {
      const packets = packetsOf(p);
      expect(packets.every((pk) => opusPacketDuration(pk) === 960)).toBe(true);
      total += packets.length * 960;
      if (i < audio.length - 1) {
        expect(packets.length).toBe(4);
        expect(p.granule).toBe(BigInt(total)); // 48 kHz samples through the last packet, pre-skip included
        expect(p.headerType).toBe(0);
      }
    }
    const last = audio.at(-1)!;
    expect(last.headerType).toBe(4);
    expect(last.granule).toBe(BigInt(SPEECH.length + 312));
    expect(total - (SPEECH.length + 312)).toBeGreaterThanOrEqual(0);
    expect(total - (SPEECH.length + 312)).toBeLessThan(960); // end trimming within the last packet
  });

  const configs: [string, OggOpusEncoderOptions, Int16Array | Float32Array][] = [
    ['default', {}, SPEECH],
    ['a page per packet', { pageDuration: 20 }, SPEECH],
    ['120 ms packets', { packetDuration: 120 }, SPEECH],
    ['2.5 ms packets, 10 ms pages', { packetDuration: 2.5, pageDuration: 10 }, SHORT],
    ['lowdelay', { application: 'lowdelay' }, SPEECH],
    ['voip, 16 kbit/s, complexity 5', { application: 'voip', bitrate: 16000, complexity: 5 }, SPEECH],
    ['Float32 input', {}, Float32Array.from(SHORT, (v) => v / 32768)],
    ['24 kHz input', { sampleRate: 24000 }, SPEECH_24K],
    ['output gain -6 dB', { outputGain: -6 * 256 }, SHORT],
    ['1 sample', {}, SHORT.subarray(0, 1)],
    ['311 samples (< pre-skip)', {}, SHORT.subarray(0, 311)],
    ['960 samples', {}, SHORT.subarray(0, 960)],
    ['empty', {}, new Int16Array(0)],
  ];

  describe.skipIf(!has(['opusinfo', 'opusdec']))(needs(['opusinfo', 'opusdec'], 'is accepted by opus-tools'), () => {
    for (const [name, options, input] of configs) {
      it(`${name}: opusinfo reports no warning or error; opusdec outputs exactly the input length, as voicewire decodes it`, () => {
        const ogg = encodeOggOpus(input, options);
        const path = file(`${name.replace(/\W+/g, '_')}.opus`, ogg);
        const info = runText('opusinfo', [path]);
        expect(info).toContain('Processing file');
        expect(info).not.toMatch(/warning|error/i);
        const ref = opusdecFloat(ogg);
        expect(ref.length).toBe((input.length * 48000) / (options.sampleRate ?? 48000));
        const mine = decodeOggOpus(ogg, { sampleFormat: 'float32' });
        expect(mine.pcm.length).toBe(ref.length);
        if (ref.length > 1000) expect(snr(ref, mine.pcm)).toBeGreaterThanOrEqual(40);
      });
    }
  });

  it('gives the same bytes for any chunking of the input: samples, bytes with odd cuts, empty chunks', () => {
    const whole = b64(encodeChunks([SHORT], { serial: 77 }));
    expect(b64(encodeChunks([new Int16Array(0), ...splitAt(SHORT, [0, 1, 959, 960, 961, 5000, 5000])], { serial: 77 }))).toBe(whole);
    const bytes = le(SHORT);
    expect(b64(encodeChunks(splitAt(bytes, [1, 3, 1919, 1920, 7681, 20001]), { serial: 77 }))).toBe(whole);
    fc.assert(
      fc.property(cutsArb(SHORT.length, 12), fc.boolean(), (cuts, asBytes) => {
        const chunks = asBytes ? splitAt(bytes, cuts.map((c) => c * 2 + (c % 2))) : splitAt(SHORT, cuts);
        expect(b64(encodeChunks(chunks, { serial: 77 }))).toBe(whole);
      }),
      { numRuns: 15 },
    );
    // f32le bytes equal Float32Array input.
    const f = Float32Array.from(SHORT.subarray(0, 4000), (v) => v / 32768);
    expect(b64(encodeChunks(splitAt(le(f), [3, 5, 4001]), { serial: 5, inputEncoding: 'f32le' }))).toBe(b64(encodeChunks([f], { serial: 5 })));
  });

  it('reports its latency and writes a page per 80 ms frame as soon as the frame is pushed', () => {
    const enc = new OggOpusEncoder();
    expect(enc.latency).toEqual({ codecMs: 6.5, packetMs: 20, pageMs: 60 });
    const first = enc.push(SPEECH.subarray(0, 3840));
    expect(first.length).toBe(3); // OpusHead, OpusTags, then the first frame's page
    for (let i = 1; i < 10; i++) {
      const pages = enc.push(SPEECH.subarray(i * 3840, (i + 1) * 3840));
      expect(pages.length).toBe(1);
      expect(packetsOf(pagesOf(pages[0]!)[0]!).length).toBe(4);
    }
    // Below a frame nothing is written until flushPage(), which writes the finished packets.
    expect(enc.push(SPEECH.subarray(0, 2000))).toEqual([]);
    const early = enc.flushPage();
    expect(early.length).toBe(1);
    expect(packetsOf(pagesOf(early[0]!)[0]!).length).toBe(2);
    enc.destroy();
    const perPacket = new OggOpusEncoder({ pageDuration: 20 });
    expect(perPacket.latency.pageMs).toBe(0);
    expect(perPacket.push(SPEECH.subarray(0, 960)).length).toBe(3);
    perPacket.destroy();
    expect(new OggOpusEncoder({ application: 'lowdelay' }).latency.codecMs).toBe(2.5);
  });

  it('rejects bad options and input, and cannot be used after flush', () => {
    expectError(() => new OggOpusEncoder({ packetDuration: 30 as never }), 'INVALID_ARGUMENT', /packetDuration/);
    expectError(() => new OggOpusEncoder({ pageDuration: -1 }), 'INVALID_ARGUMENT', /pageDuration/);
    expectError(() => new OggOpusEncoder({ comments: ['bad'] }), 'INVALID_ARGUMENT');
    const enc = new OggOpusEncoder();
    expectError(() => enc.push('pcm' as never), 'INVALID_ARGUMENT', /Int16Array, Float32Array or Uint8Array/);
    expectError(() => enc.push(new Int16Array(1)), 'INVALID_STATE');
    const odd = new OggOpusEncoder();
    odd.push(new Uint8Array(3));
    expectError(() => odd.flush(), 'PCM_PARTIAL_SAMPLE');
    const done = new OggOpusEncoder();
    done.flush();
    expectError(() => done.push(new Int16Array(1)), 'INVALID_STATE');
  });
});

// --- decoder -------------------------------------------------------------------------------------

describe('OggOpusDecoder', () => {
  it('decodes opusenc and ffmpeg files (20/40/60/120 ms packets, OpusTags over two pages) to opusdec\'s length and within 40 dB of its samples', () => {
    for (const name of FIXTURES) {
      const ref = golden(name);
      const warnings: OggWarning[] = [];
      const got = decodeOggOpus(fixture(`${name}.opus`), { onWarning: (w) => warnings.push(w) });
      expect(got.pcm.length).toBe(ref.length);
      expect(snr(ref, got.pcm)).toBeGreaterThanOrEqual(40);
      expect(warnings).toEqual([]);
    }
    const tags = decodeOggOpus(fixture('opusenc_tags2pages.opus')).tags!;
    expect(tags.comments.find((c) => c.startsWith('NOTE='))!.length).toBe(5 + 66000);
  });

  it.skipIf(!has('opusdec'))(needs('opusdec', 'matches opusdec\'s float output on every fixture'), () => {
    for (const name of FIXTURES) {
      const ogg = fixture(`${name}.opus`);
      const ref = opusdecFloat(ogg);
      const got = decodeOggOpus(ogg, { sampleFormat: 'float32' });
      expect(got.pcm.length).toBe(ref.length);
      expect(snr(ref, got.pcm)).toBeGreaterThanOrEqual(40);
    }
  });

  it('gives the same PCM whole, byte by byte, with empty chunks and at random splits', () => {
    const small = fixture('ffmpeg_60ms.opus');
    const whole = b64(le(decodeChunks([small])));
    expect(b64(le(decodeChunks(oneByOne(small))))).toBe(whole);
    const big = fixture('opusenc_tags2pages.opus');
    const bigWhole = b64(le(decodeChunks([big])));
    expect(b64(le(decodeChunks(splitAt(big, [0, 0, 19, 20, 65000, 65000, 70000]))))).toBe(bigWhole);
    fc.assert(
      fc.property(cutsArb(big.length, 25), (cuts) => {
        expect(b64(le(decodeChunks(splitAt(big, cuts))))).toBe(bigWhole);
      }),
      { numRuns: 25 },
    );
  });

  it('emits one chunk per page of audio, as soon as the page is complete', () => {
    const ogg = encodeOggOpus(SHORT, { serial: 1 });
    const pages = pagesOf(ogg);
    const dec = new OggOpusDecoder();
    const sizes: number[] = [];
    for (const p of pages) sizes.push(dec.push(ogg.subarray(p.offset, p.offset + 27 + p.lacing.length + p.body.length)).reduce((n, c) => n + c.length, 0));
    expect(dec.flush()).toEqual([]);
    expect(sizes.slice(0, 3)).toEqual([0, 0, 3840 - 312]); // headers, then the first page minus pre-skip
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(SHORT.length);
    expect(dec.ended).toBe(true);
  });

  it('Float32 output is the Int16 output / 32768', () => {
    const ogg = fixture('ffmpeg_20ms.opus');
    const i = decodeOggOpus(ogg).pcm;
    const f = decodeOggOpus(ogg, { sampleFormat: 'float32' }).pcm;
    expect(f).toEqual(Float32Array.from(i, (v) => v / 32768));
  });

  it.skipIf(!has('opusdec'))(needs('opusdec', 'applies the output gain as opusdec does, and can skip it'), () => {
    const ogg = encodeOggOpus(SHORT, { outputGain: -6 * 256 });
    const ref = opusdecFloat(ogg);
    const got = decodeOggOpus(ogg, { sampleFormat: 'float32' }).pcm;
    expect(snr(ref, got)).toBeGreaterThanOrEqual(40);
    const raw = decodeOggOpus(ogg, { sampleFormat: 'float32', applyOutputGain: false }).pcm;
    let a = 0;
    let b = 0;
    for (let k = 0; k < got.length; k++) {
      a += got[k]! * raw[k]!;
      b += raw[k]! * raw[k]!;
    }
    expect(a / b).toBeCloseTo(10 ** (-6 / 20), 2);
  });

  it.skipIf(!has(['opusenc', 'opusdec']))(needs(['opusenc', 'opusdec'], 'decodes a stereo opusenc file like opusdec, or downmixes it to mono'), () => {
    const stereo = new Int16Array(SHORT.length * 2);
    for (let k = 0; k < SHORT.length; k++) {
      stereo[2 * k] = SHORT[k]!;
      stereo[2 * k + 1] = SHORT[SHORT.length - 1 - k]!;
    }
    const raw = file('stereo.raw', le(stereo));
    const ogg = file('stereo.opus', new Uint8Array(0));
    run('opusenc', ['--quiet', '--raw', '--raw-rate', '48000', '--raw-chan', '2', raw, ogg]);
    const data = new Uint8Array(readFileSync(ogg));
    const ref = opusdecFloat(data);
    const got = decodeOggOpus(data, { sampleFormat: 'float32' });
    expect(got.channels).toBe(2);
    expect(snr(ref, got.pcm)).toBeGreaterThanOrEqual(40);
    const mono = decodeOggOpus(data, { channels: 1 });
    expect(mono.channels).toBe(1);
    expect(mono.pcm.length).toBe(SHORT.length);
  });

  it('outputs other rates: natively at 24 kHz, through the resampler at 22.05 kHz', () => {
    const ogg = fixture('opusenc_20ms.opus');
    const n48 = decodeOggOpus(ogg).pcm.length;
    const at24 = decodeOggOpus(ogg, { sampleRate: 24000 });
    expect(at24.sampleRate).toBe(24000);
    expect(at24.pcm.length).toBe(n48 / 2);
    const at22 = decodeOggOpus(ogg, { sampleRate: 22050, sampleFormat: 'float32' });
    expect(at22.pcm.length).toBe(Math.round((n48 * 22050) / 48000));
    // Chunking does not change the resampled output.
    const dec = new OggOpusDecoder({ sampleRate: 22050, sampleFormat: 'float32' });
    const parts = [...oneByOne(ogg.subarray(0, 3000)).flatMap((c) => dec.push(c)), ...dec.push(ogg.subarray(3000)), ...dec.flush()];
    expect(concat(parts)).toEqual(at22.pcm);
    expectError(() => new OggOpusDecoder({ sampleRate: 0 }), 'INVALID_ARGUMENT');
  });

  it('a flipped byte fails with OGG_CRC_MISMATCH, or loses just that page with a warning with strict: false', () => {
    const ogg = encodeOggOpus(SPEECH, { serial: 2 });
    const full = decodeOggOpus(ogg).pcm;
    const pages = pagesOf(ogg);
    const bad = ogg.slice();
    bad[pages[4]!.offset + 60]! ^= 0x01; // a body byte of the third audio page
    expectError(() => decodeOggOpus(bad), 'OGG_CRC_MISMATCH', /fails its CRC/);
    const warnings: OggWarning[] = [];
    const got = decodeOggOpus(bad, { strict: false, onWarning: (w) => warnings.push(w) }).pcm;
    expect(got.length).toBe(full.length - 3840);
    expect(got.subarray(0, 2 * 3840 - 312)).toEqual(full.subarray(0, 2 * 3840 - 312));
    expect(warnings.map((w) => w.kind)).toEqual(['crc-mismatch', 'garbage', 'sequence-gap']);
  });

  it('a truncated file decodes what was complete, then reports OGG_TRUNCATED', () => {
    const ogg = encodeOggOpus(SPEECH, { serial: 3 });
    const full = decodeOggOpus(ogg).pcm;
    const pages = pagesOf(ogg);
    const complete = 6 * 3840 - 312; // six complete audio pages of 80 ms, minus pre-skip
    for (const [cut, why] of [
      [pages[8]!.offset + 40, /ended inside the page/],
      [pages[8]!.offset, /ended without an EOS page/], // at a page boundary: the EOS page is missing
    ] as const) {
      const dec = new OggOpusDecoder();
      const got = concat(dec.push(ogg.subarray(0, cut)));
      expect(got.length).toBe(complete);
      expect(b64(le(got))).toBe(b64(le(full.subarray(0, complete))));
      const e = expectError(() => dec.flush(), 'OGG_TRUNCATED', why);
      expect((e.details as OggOpusErrorDetails).pcm.length).toBe(0); // nothing was held back
      expectError(() => dec.push(new Uint8Array(1)), 'INVALID_STATE');
      // One-shot: the error carries all the complete audio.
      const one = expectError(() => decodeOggOpus(ogg.subarray(0, cut)), 'OGG_TRUNCATED', why);
      expect(one.details).toMatchObject({ sampleRate: 48000, channels: 1 });
      expect(b64(le((one.details as OggOpusErrorDetails).pcm))).toBe(b64(le(full.subarray(0, complete))));
      // allowTruncated: the complete audio is the result, the cut a warning.
      const warnings: OggWarning[] = [];
      expect(b64(le(decodeOggOpus(ogg.subarray(0, cut), { allowTruncated: true, onWarning: (w) => warnings.push(w) }).pcm))).toBe(b64(le(full.subarray(0, complete))));
      expect(warnings.map((w) => w.kind)).toEqual(cut === pages[8]!.offset ? ['missing-eos'] : ['truncated', 'missing-eos']);
    }
    // Resampled output: the resampler's last samples are not lost either.
    const at22 = decodeOggOpus(ogg.subarray(0, pages[8]!.offset), { sampleRate: 22050, allowTruncated: true }).pcm;
    expect(at22.length).toBe(Math.round((complete * 22050) / 48000));
    const e22 = expectError(() => decodeOggOpus(ogg.subarray(0, pages[8]!.offset), { sampleRate: 22050 }), 'OGG_TRUNCATED');
    expect(b64(le((e22.details as OggOpusErrorDetails).pcm))).toBe(b64(le(at22)));
    const dec22 = new OggOpusDecoder({ sampleRate: 22050 });
    const streamed = concat(dec22.push(ogg.subarray(0, pages[8]!.offset)));
    const tail = (expectError(() => dec22.flush(), 'OGG_TRUNCATED').details as OggOpusErrorDetails).pcm as Int16Array;
    expect(tail.length).toBeGreaterThan(0);
    expect(b64(le(concat([streamed, tail])))).toBe(b64(le(at22)));
    // Cut before OpusTags was complete.
    expectError(() => decodeOggOpus(ogg.subarray(0, pages[1]!.offset)), 'OGG_TRUNCATED', /without an EOS page/);
    expect(decodeOggOpus(ogg.subarray(0, pages[1]!.offset), { allowTruncated: true }).pcm.length).toBe(0);
  });

  it('strict: any flipped header byte of a middle or the last page is an error, raised after exactly the audio before that page', () => {
    const ogg = encodeOggOpus(SPEECH.subarray(0, 48000), { serial: 12 });
    const pages = pagesOf(ogg);
    const full = decodeOggOpus(ogg).pcm;
    const mid = Math.floor(pages.length / 2);
    for (const k of [mid, pages.length - 1]) {
      // The audio before page k, by definition: the file cut just before it, accepted as truncated.
      const before = decodeOggOpus(ogg.subarray(0, pages[k]!.offset), { allowTruncated: true }).pcm;
      if (k === mid) expect(before.length).toBe((k - 2) * 3840 - 312); // 80 ms pages after the two header pages
      const beforeB64 = b64(le(before));
      expect(beforeB64).toBe(b64(le(full.subarray(0, before.length))));
      const headerBytes = 27 + pages[k]!.lacing.length;
      for (let b = 0; b < headerBytes; b++) {
        for (const mask of [0x01, 0x80]) {
          const bad = ogg.slice();
          bad[pages[k]!.offset + b]! ^= mask;
          const dec = new OggOpusDecoder();
          const got: Int16Array[] = [];
          let caught: unknown;
          try {
            got.push(...dec.push(bad));
            got.push(...dec.flush());
          } catch (err) {
            caught = err;
          }
          expect(caught, `byte ${b} ^ ${mask} of page ${k}`).toBeInstanceOf(VoicewireError);
          expect(['OGG_CRC_MISMATCH', 'OGG_CORRUPT', 'OGG_TRUNCATED']).toContain((caught as VoicewireError).code);
          expect(b64(le(concat(got.length ? got : [new Int16Array(0)])))).toBe(beforeB64);
          if (b % 8 === 0) expect(b64(le((expectError(() => decodeOggOpus(bad), (caught as VoicewireError).code).details as OggOpusErrorDetails).pcm))).toBe(beforeB64);
        }
      }
    }
  });

  it('strict: random bit flips anywhere in an audio page are an error, never a silent loss; a lost page is OGG_SEQUENCE_GAP', () => {
    const ogg = encodeOggOpus(SPEECH.subarray(0, 48000), { serial: 13 });
    const pages = pagesOf(ogg);
    const full = decodeOggOpus(ogg).pcm;
    const before = new Map<number, number>();
    const beforeLength = (k: number): number => {
      if (!before.has(k)) before.set(k, decodeOggOpus(ogg.subarray(0, pages[k]!.offset), { allowTruncated: true }).pcm.length);
      return before.get(k)!;
    };
    fc.assert(
      fc.property(fc.integer({ min: 2, max: pages.length - 1 }), fc.nat(), fc.integer({ min: 0, max: 7 }), (k, at, bit) => {
        const size = 27 + pages[k]!.lacing.length + pages[k]!.body.length;
        const bad = ogg.slice();
        bad[pages[k]!.offset + (at % size)]! ^= 1 << bit;
        let caught: unknown;
        try {
          decodeOggOpus(bad);
        } catch (err) {
          caught = err;
        }
        expect(caught).toBeInstanceOf(VoicewireError);
        const pcm = ((caught as VoicewireError).details as OggOpusErrorDetails).pcm;
        expect(pcm.length).toBe(beforeLength(k));
        expect(b64(le(pcm))).toBe(b64(le(full.subarray(0, pcm.length))));
      }),
      { numRuns: 40 },
    );
    const k = 5;
    const gap = concat([ogg.subarray(0, pages[k]!.offset), ogg.subarray(pages[k + 1]!.offset)]);
    const e = expectError(() => decodeOggOpus(gap), 'OGG_SEQUENCE_GAP', /page sequence 6 follows 4/);
    expect(b64(le((e.details as OggOpusErrorDetails).pcm))).toBe(b64(le(full.subarray(0, beforeLength(k)))));
    const warnings: OggWarning[] = [];
    expect(decodeOggOpus(gap, { strict: false, onWarning: (w) => warnings.push(w) }).pcm.length).toBe(full.length - 3840);
    expect(warnings.map((w) => w.kind)).toEqual(['sequence-gap']);
  });

  it('strict: on an ffmpeg file, every single-bit flip in a page header is an error (none decodes to silence)', () => {
    const ogg = fixture('ffmpeg_20ms.opus');
    const codes = new Set<string>();
    for (const p of pagesOf(ogg)) {
      for (let b = 0; b < 27 + p.lacing.length; b++) {
        for (let bit = 0; bit < 8; bit++) {
          const bad = ogg.slice();
          bad[p.offset + b]! ^= 1 << bit;
          let caught: unknown;
          try {
            decodeOggOpus(bad);
          } catch (err) {
            caught = err;
          }
          expect(caught, `byte ${p.offset + b} bit ${bit}`).toBeInstanceOf(VoicewireError);
          codes.add((caught as VoicewireError).code);
        }
      }
    }
    expect([...codes].sort()).toEqual(['OGG_CORRUPT', 'OGG_CRC_MISMATCH', 'OGG_NO_OPUS_STREAM', 'OGG_TRUNCATED']);
  });

  it('reports its latency: the longest page read, plus the resampler look-ahead off the libopus rates', () => {
    const ogg = encodeOggOpus(SHORT, { serial: 14 });
    const pages = pagesOf(ogg);
    const pageAt = (k: number): Uint8Array => ogg.subarray(pages[k]!.offset, pages[k]!.offset + 27 + pages[k]!.lacing.length + pages[k]!.body.length);
    for (const rate of [48000, 24000, 22050, 44100]) {
      const dec = new OggOpusDecoder({ sampleRate: rate });
      const resamplerMs = rate === 48000 || rate === 24000 ? 0 : createResampler({ from: 48000, to: rate }).delaySeconds * 1000;
      expect(dec.latency).toEqual({ pageMs: 0, resamplerMs, totalMs: resamplerMs });
      let out = 0;
      for (let k = 0; k < pages.length; k++) {
        out += dec.push(pageAt(k)).reduce((n, c) => n + c.length, 0);
        if (k < 2) continue;
        // An 80 ms page (the encoder's default, read back independently from the granules).
        const pageMs = Number(pages[k]!.granule - pages[k - 1]!.granule) / 48;
        if (k < pages.length - 1) expect(pageMs).toBe(80);
        expect(dec.latency.pageMs).toBe(80);
        expect(dec.latency.totalMs).toBe(80 + resamplerMs);
        // Nothing waits longer than reported: the output reaches the page's end minus the resampler's look-ahead.
        const reached = Math.min(Number(pages[k]!.granule), 312 + SHORT.length) - 312;
        if (k < pages.length - 1) expect(out).toBeGreaterThanOrEqual(Math.floor(((reached / 48000) - resamplerMs / 1000) * rate) - 1);
      }
      dec.flush();
    }
  });

  it('raises OGG_NO_OPUS_STREAM for empty input, garbage, or Ogg without Opus', () => {
    expectError(() => decodeOggOpus(new Uint8Array(0)), 'OGG_NO_OPUS_STREAM', /empty/);
    expectError(() => decodeOggOpus(new Uint8Array(100).fill(7)), 'OGG_NO_OPUS_STREAM');
    const w = new OggPageWriter({ serial: 9 });
    w.addPacket(new TextEncoder().encode('\x01vorbis-ish header'), 0);
    const notOpus = concat([...w.flushPage(), ...(w.addPacket(new Uint8Array(50), 100), w.flushPage({ eos: true }))]);
    const warnings: OggWarning[] = [];
    expectError(() => decodeOggOpus(notOpus, { onWarning: (x) => warnings.push(x) }), 'OGG_NO_OPUS_STREAM', /no logical stream starting with OpusHead/);
    expect(warnings.map((x) => [x.kind, x.serial])).toEqual([['other-stream', 9]]);
    expectError(() => decodeOggOpus(new Uint8Array(70_000).fill(1)), 'OGG_INVALID_PAGE', /not an Ogg stream/);
  });

  it('raises OPUS_INVALID_HEADER for a bad OpusHead or a missing OpusTags, OPUS_UNSUPPORTED for multistream', () => {
    const ogg = encodeOggOpus(SHORT, { serial: 4 });
    const pages = pagesOf(ogg);
    const badHead = ogg.slice();
    badHead[pages[0]!.offset + 28 + 9] = 0; // channel count 0
    expectError(() => decodeOggOpus(fixCrcs(badHead)), 'OPUS_INVALID_HEADER', /channel count is 0/);
    const noTags = concat([ogg.subarray(0, pages[1]!.offset), ogg.subarray(pages[2]!.offset)]);
    const renumbered = noTags.slice();
    for (const p of pagesOf(renumbered)) new DataView(renumbered.buffer).setUint32(p.offset + 18, p.sequence === 0 ? 0 : p.sequence - 1, true);
    expectError(() => decodeOggOpus(fixCrcs(renumbered)), 'OPUS_INVALID_HEADER', /OpusTags/);
    // Family 1, 6 channels (5.1): needs the multistream decoder.
    const w = new OggPageWriter({ serial: 5 });
    const head = Uint8Array.from([...Buffer.from('OpusHead'), 1, 6, 0x38, 1, 0x80, 0xbb, 0, 0, 0, 0, 1, 4, 2, 0, 4, 1, 2, 3, 5]);
    w.addPacket(head, 0);
    expectError(() => decodeOggOpus(concat(w.flushPage())), 'OPUS_UNSUPPORTED', /6 channels in 4 streams/);
  });

  it('decodes only the first Opus stream of a multiplexed or chained file, and reports the others', () => {
    const a = encodeOggOpus(SHORT, { serial: 10 });
    const b = encodeOggOpus(SPEECH.subarray(0, 9600), { serial: 11 });
    const alone = decodeOggOpus(a).pcm;
    const pa = pagesOf(a).map((p) => a.subarray(p.offset, p.offset + 27 + p.lacing.length + p.body.length));
    const pb = pagesOf(b).map((p) => b.subarray(p.offset, p.offset + 27 + p.lacing.length + p.body.length));
    // Multiplexed: both BOS pages first (RFC 3533 §4), then the rest interleaved.
    const mixed: Uint8Array[] = [pa[0]!, pb[0]!];
    for (let i = 1; i < Math.max(pa.length, pb.length); i++) {
      if (pa[i]) mixed.push(pa[i]!);
      if (pb[i]) mixed.push(pb[i]!);
    }
    const warnings: OggWarning[] = [];
    expect(decodeOggOpus(concat(mixed), { onWarning: (w) => warnings.push(w) }).pcm).toEqual(alone);
    expect(warnings.map((w) => [w.kind, w.serial])).toEqual([['other-stream', 11]]);
    const chained: OggWarning[] = [];
    const dec = decodeOggOpus(concat([a, b]), { onWarning: (w) => chained.push(w) });
    expect(dec.pcm).toEqual(alone);
    expect(dec.head.preSkip).toBe(312);
    expect(chained.map((w) => [w.kind, w.serial])).toEqual([['other-stream', 11]]);
  });

  it('fuzz: mutated files raise only VoicewireError, and a failed decoder reports INVALID_STATE', () => {
    const ogg = fixture('ffmpeg_40ms.opus');
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 6 }), fc.boolean(), (edits, crc) => {
        let data: Uint8Array = ogg.slice();
        for (const [at, v] of edits) data[at % data.length] = v;
        if (crc) data = fixCrcs(data.subarray(0, lastWholePage(data)));
        const dec = new OggOpusDecoder({ strict: crc, allowTruncated: !crc });
        try {
          dec.push(data);
          dec.flush();
        } catch (err) {
          expect(err).toBeInstanceOf(VoicewireError);
          expectError(() => dec.push(new Uint8Array(1)), 'INVALID_STATE');
        }
      }),
      { numRuns: 120 },
    );
  });
});

/** End of the last page whose layout still holds (so CRCs can be rewritten after an edit). */
function lastWholePage(data: Uint8Array): number {
  let at = 0;
  while (at + 27 <= data.length && data[at] === 0x4f && data[at + 1] === 0x67 && data[at + 2] === 0x67 && data[at + 3] === 0x53) {
    const n = data[at + 26]!;
    if (at + 27 + n > data.length) break;
    let size = 0;
    for (let i = 0; i < n; i++) size += data[at + 27 + i]!;
    if (at + 27 + n + size > data.length) break;
    at += 27 + n + size;
  }
  return at;
}

// --- stream adapters -----------------------------------------------------------------------------

describe('Ogg Opus streams', () => {
  it('Node Transforms: PCM bytes → Ogg pages → PCM bytes, same as the one-shot functions', async () => {
    const chunks: Buffer[] = [];
    await pipeline(
      Readable.from(splitAt(Buffer.from(le(SHORT)), [1, 7, 3841, 9000])),
      createOggOpusEncoderTransform({ serial: 21 }),
      new Writable({
        write(c: Buffer, _e, cb) {
          chunks.push(c);
          cb();
        },
      }),
    );
    const ogg = new Uint8Array(Buffer.concat(chunks));
    expect(b64(ogg)).toBe(b64(encodeOggOpus(SHORT, { serial: 21 })));
    const pcm: Buffer[] = [];
    await pipeline(
      Readable.from(splitAt(Buffer.from(ogg), [5, 100, 2000])),
      createOggOpusDecoderTransform(),
      new Writable({
        write(c: Buffer, _e, cb) {
          pcm.push(c);
          cb();
        },
      }),
    );
    expect(b64(Buffer.concat(pcm))).toBe(b64(le(decodeOggOpus(ogg).pcm)));
  });

  it('Node Transform: a truncated or damaged stream delivers the complete audio, then errors', async () => {
    const ogg = encodeOggOpus(SPEECH, { serial: 3 });
    const at = pagesOf(ogg)[8]!.offset;
    const flipped = ogg.slice();
    flipped[at]! ^= 1; // the capture pattern of the 9th page
    for (const [input, code] of [
      [ogg.subarray(0, at + 40), 'OGG_TRUNCATED'],
      [ogg.subarray(0, at), 'OGG_TRUNCATED'],
      [flipped, 'OGG_CORRUPT'],
    ] as const) {
      let bytes = 0;
      const err = await pipeline(
        Readable.from([Buffer.from(input)]),
        createOggOpusDecoderTransform(),
        new Writable({
          write(c: Buffer, _e, cb) {
            bytes += c.length;
            cb();
          },
        }),
      ).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(VoicewireError);
      expect((err as VoicewireError).code).toBe(code);
      expect(bytes).toBe((6 * 3840 - 312) * 2);
    }
  });

  it('web TransformStreams: encode then decode', async () => {
    const input = new ReadableStream<Int16Array>({
      start(c) {
        for (const part of splitAt(SHORT, [100, 5000, 5001])) c.enqueue(part);
        c.close();
      },
    });
    const pcm: Int16Array[] = [];
    await input
      .pipeThrough(createOggOpusEncoderStream({ serial: 8 }))
      .pipeThrough(createOggOpusDecoderStream())
      .pipeTo(new WritableStream({ write: (c) => void pcm.push(c) }));
    expect(concat(pcm)).toEqual(decodeOggOpus(encodeOggOpus(SHORT, { serial: 8 })).pcm);
    const failing = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new Uint8Array(10));
        c.close();
      },
    }).pipeThrough(createOggOpusDecoderStream());
    await expect(failing.pipeTo(new WritableStream())).rejects.toMatchObject({ code: 'OGG_NO_OPUS_STREAM' });
  });
});
