/** Seeded test inputs: the same bytes on every run (issue 25: never /dev/urandom). */

/** `n` bytes of xorshift32 noise from `seed`. */
export function seededBytes(n: number, seed = 1): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}
