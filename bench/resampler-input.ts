/**
 * The resampler benches' shared input: the six rate pairs (bench/resampler.bench.ts and
 * bench/soxr.bench.ts), the speech-like test audio and its 80 ms chunks (bench/resampler.bench.ts;
 * bench/soxr.bench.ts streams recorded speech instead).
 */

/** The speed pairs: 2:1, 3:2, 3:1, 6:1 and the two fractional service conversions. */
export const SPEED_PAIRS: readonly (readonly [number, number])[] = [
  [48000, 24000],
  [24000, 16000],
  [24000, 8000],
  [48000, 8000],
  [44100, 24000],
  [22050, 48000],
];

/** Speech-like test audio: a few tones with a slow envelope and some noise. */
export function audio(rate: number, seconds: number): Float32Array {
  const n = Math.round(rate * seconds);
  const x = new Float32Array(n);
  let s = 12345;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    const t = i / rate;
    const env = 0.5 + 0.5 * Math.sin(2 * Math.PI * 3 * t);
    x[i] = env * (0.3 * Math.sin(2 * Math.PI * 220 * t) + 0.2 * Math.sin(2 * Math.PI * 1375 * t)) + 0.05 * (s / 2 ** 32 - 0.5);
  }
  return x;
}

/** `x` cut into `ms`-long chunks (views). */
export function chunked(x: Float32Array, rate: number, ms = 80): Float32Array[] {
  const n = Math.round((rate * ms) / 1000);
  const out: Float32Array[] = [];
  for (let i = 0; i < x.length; i += n) out.push(x.subarray(i, Math.min(x.length, i + n)));
  return out;
}
