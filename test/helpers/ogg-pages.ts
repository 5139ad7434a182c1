/**
 * An independent reference Ogg page splitter for the tests (RFC 3533 §6 layout), written apart from
 * src/ogg.ts so that our reader and writer are checked against something they do not share.
 * Takes well-formed input only: every page must start with the capture pattern.
 */
import { expect } from 'vitest';

export interface NaiveOggPage {
  offset: number;
  headerType: number;
  granule: bigint;
  serial: number;
  sequence: number;
  lacing: number[];
  body: Uint8Array;
}

/** Splits a well-formed Ogg byte stream into its pages. */
export function naiveOggPages(file: Uint8Array): NaiveOggPage[] {
  const pages: NaiveOggPage[] = [];
  const dv = new DataView(file.buffer, file.byteOffset, file.byteLength);
  let at = 0;
  while (at < file.length) {
    expect(String.fromCharCode(...file.subarray(at, at + 4))).toBe('OggS');
    const n = file[at + 26]!;
    const lacing = [...file.subarray(at + 27, at + 27 + n)];
    const size = lacing.reduce((a, b) => a + b, 0);
    pages.push({
      offset: at,
      headerType: file[at + 5]!,
      granule: dv.getBigInt64(at + 6, true),
      serial: dv.getUint32(at + 14, true),
      sequence: dv.getUint32(at + 18, true),
      lacing,
      body: file.slice(at + 27 + n, at + 27 + n + size),
    });
    at += 27 + n + size;
  }
  return pages;
}
