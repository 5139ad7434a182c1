/**
 * Issue 11 §8: lenient Ogg resync (`strict: false`) on crafted garbage — a false capture pattern
 * every 30 bytes, each claiming a ~64 KB page — cost ~1000× (1 MB → 7.3 s, 34,111 CRC
 * rejections) and lost the final EOS page behind an incomplete false candidate.
 */
import { describe, expect, it } from 'vitest';
import { OggPageReader, OggPageWriter, type OggPage } from '../../src/audio/ogg.js';

/** `size` bytes of 0xFF with "OggS\0" every 30 bytes: every candidate's lacing says ~60 KB. */
function garbage(size: number): Uint8Array {
  const g = new Uint8Array(size).fill(0xff);
  for (let i = 0; i + 5 <= size; i += 30) g.set([0x4f, 0x67, 0x67, 0x53, 0], i);
  return g;
}

/** Valid pages of one stream, with `gap` bytes of crafted garbage before each, and the EOS page last, also behind garbage. */
function attack(pages: number, gap: number): { bytes: Uint8Array; valid: number } {
  const w = new OggPageWriter({ serial: 7 });
  const parts: Uint8Array[] = [];
  for (let p = 0; p < pages; p++) {
    parts.push(garbage(gap));
    w.addPacket(new Uint8Array(100).fill(p), p);
    parts.push(...w.flushPage());
  }
  parts.push(garbage(gap));
  parts.push(...w.flushPage({ eos: true, eosGranule: pages }));
  const total = parts.reduce((n, p) => n + p.length, 0);
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    bytes.set(p, at);
    at += p.length;
  }
  return { bytes, valid: pages + 1 };
}

describe('lenient Ogg resync on crafted garbage', () => {
  it('reads 1 MB (64 KB chunks) in well under a second, finding every valid page, the final EOS page included', () => {
    const { bytes, valid } = attack(31, 32 * 1024);
    expect(bytes.length).toBeGreaterThan(1_000_000);
    let rejected = 0;
    const reader = new OggPageReader({ strict: false, onWarning: (w) => void (w.kind === 'crc-mismatch' && rejected++) });
    const pages: OggPage[] = [];
    const t0 = performance.now();
    for (let i = 0; i < bytes.length; i += 65536) pages.push(...reader.push(bytes.subarray(i, i + 65536)));
    pages.push(...reader.flush());
    const ms = performance.now() - t0;
    expect(pages.length).toBe(valid);
    expect(pages.at(-1)!.eos).toBe(true);
    expect(pages.map((p) => p.sequence)).toEqual(Array.from({ length: valid }, (_, i) => i));
    expect(rejected).toBeGreaterThan(30_000); // the candidates really were examined
    expect(ms).toBeLessThan(3000); // 6.9 s before (alone); ~0.1 s now (a loose bound for a loaded CI machine)
  });

  it('the same pages whether pushed whole or byte-group by byte-group', () => {
    const { bytes } = attack(3, 3000);
    const read = (step: number): string => {
      const r = new OggPageReader({ strict: false });
      const out: OggPage[] = [];
      for (let i = 0; i < bytes.length; i += step) out.push(...r.push(bytes.subarray(i, i + step)));
      out.push(...r.flush());
      return out.map((p) => `${p.offset}:${p.sequence}:${p.bytes.length}`).join(',');
    };
    const whole = read(bytes.length);
    expect(whole.split(',').length).toBe(4);
    for (const step of [1, 7, 1000, 4096]) expect(read(step)).toBe(whole);
  });
});
