/**
 * Chunking helpers for the "streaming equals one-shot" tests: split an input at random cut points,
 * byte by byte, or with empty chunks in between.
 */
import fc from 'fast-check';

/** Splits `data` at the given cut positions (any order, duplicates give empty chunks). */
export function splitAt<T extends { length: number; subarray(a: number, b: number): T }>(data: T, cuts: number[]): T[] {
  const points = cuts.map((c) => Math.max(0, Math.min(data.length, c))).sort((a, b) => a - b);
  const out: T[] = [];
  let prev = 0;
  for (const p of points) {
    out.push(data.subarray(prev, p));
    prev = p;
  }
  out.push(data.subarray(prev, data.length));
  return out;
}

/** Every element on its own (1-sample or 1-byte chunks). */
export function oneByOne<T extends { length: number; subarray(a: number, b: number): T }>(data: T): T[] {
  const out: T[] = [];
  for (let i = 0; i < data.length; i++) out.push(data.subarray(i, i + 1));
  return out;
}

/** A fast-check arbitrary of cut positions into an input of `length` elements. */
export function cutsArb(length: number, maxCuts = 20): fc.Arbitrary<number[]> {
  return fc.array(fc.integer({ min: 0, max: length }), { maxLength: maxCuts });
}

/** Concatenates typed arrays of one kind. */
export function concat<T extends Uint8Array | Int16Array | Float32Array>(parts: readonly T[]): T {
  const total = parts.reduce((n, p) => n + p.length, 0);
  const first = parts[0];
  const Ctor = (first?.constructor ?? Uint8Array) as new (n: number) => T;
  const out = new Ctor(total);
  let at = 0;
  for (const p of parts) {
    out.set(p as never, at);
    at += p.length;
  }
  return out;
}
