/**
 * PCM sample conversions: interleaved little-endian `s16le` / `s24le` / `s32le` / `f32le` bytes
 * ↔ `Int16Array` / `Float32Array`, float ↔ int16, and mono downmix. Platform-neutral.
 *
 * Conventions (the same ones ffmpeg's libswresample uses, except float → int, see below):
 * - Integer → float divides by 2^(bits-1): s16/32768, s24/8388608, s32/2147483648, so the
 *   range is [-1, 1).
 * - Wider integer → int16 keeps the top 16 bits (arithmetic shift: s24 >> 8, s32 >> 16).
 * - Float → integer scales by 2^(bits-1) - 1 (32767 for int16), rounds half away from zero and
 *   clamps, so +1.0 gives 32767 and never wraps (protocol-notes: "scaling by 32768 without
 *   clamping wraps +1.0"); -1.0 gives -32767; NaN gives 0.
 * - Multi-byte samples are little-endian, as in WAV and the service's raw `pcm` formats. The
 *   typed-array fast paths assume a little-endian host (every platform Node and browsers run on).
 *
 * Inputs may start at any byteOffset (a pooled Node Buffer often starts at an odd one): a
 * misaligned input is copied once, never a RangeError. Every function writes into a fresh array
 * or into the caller's `out`; none keeps or returns a view of its input.
 */
import { VoicewireError } from '../util/errors.js';
import { shown } from '../util/args.js';
import { describe } from '../util/bytes.js';

/** An interleaved little-endian PCM sample encoding. */
export type PcmEncoding = 's16le' | 's24le' | 's32le' | 'f32le';

/** Every {@link PcmEncoding}, in order of width. */
export const PCM_ENCODINGS: readonly PcmEncoding[] = ['s16le', 's24le', 's32le', 'f32le'];

const BYTES_PER_SAMPLE: Readonly<Record<PcmEncoding, number>> = { s16le: 2, s24le: 3, s32le: 4, f32le: 4 };

/** Bytes per sample of an encoding (2, 3 or 4). @throws `PCM_UNSUPPORTED_ENCODING` */
export function pcmBytesPerSample(encoding: PcmEncoding): number {
  const n = typeof encoding === 'string' ? BYTES_PER_SAMPLE[encoding] : undefined;
  if (n === undefined || !Object.hasOwn(BYTES_PER_SAMPLE, encoding)) {
    throw new VoicewireError('PCM_UNSUPPORTED_ENCODING', `unknown PCM encoding ${JSON.stringify(encoding)}; expected one of ${PCM_ENCODINGS.join(', ')}`);
  }
  return n;
}

/** True when `value` names a {@link PcmEncoding}. */
export function isPcmEncoding(value: unknown): value is PcmEncoding {
  return typeof value === 'string' && Object.hasOwn(BYTES_PER_SAMPLE, value);
}

const S16_SCALE = 1 / 32768;
const S24_SCALE = 1 / 8388608;
const S32_SCALE = 1 / 2147483648;

// ---------------------------------------------------------------------------------------------
// Argument checks (once per call, never per sample)
// ---------------------------------------------------------------------------------------------

function checkBytes(fn: string, bytes: unknown): Uint8Array {
  if (!(bytes instanceof Uint8Array)) throw new VoicewireError('INVALID_ARGUMENT', `${fn}: bytes must be a Uint8Array, got ${describe(bytes)}`);
  return bytes;
}

function wholeSamples(fn: string, bytes: Uint8Array, encoding: PcmEncoding): number {
  const size = pcmBytesPerSample(encoding);
  const n = Math.floor(bytes.byteLength / size);
  if (n * size !== bytes.byteLength) {
    throw new VoicewireError('PCM_PARTIAL_SAMPLE', `${fn}: ${bytes.byteLength} bytes is not a whole number of ${encoding} samples (${size} bytes each)`);
  }
  return n;
}

function outputOf<T extends Int16Array | Float32Array | Uint8Array>(fn: string, Ctor: { new (n: number): T; name: string }, n: number, out: T | undefined): T {
  if (out === undefined) return new Ctor(n);
  if (!(out instanceof Ctor)) throw new VoicewireError('INVALID_ARGUMENT', `${fn}: out must be a ${Ctor.name}, got ${describe(out)}`);
  if (out.length < n) throw new VoicewireError('INVALID_ARGUMENT', `${fn}: out holds ${out.length} elements, ${n} needed`);
  return out;
}

function fit<T extends Int16Array | Float32Array | Uint8Array>(out: T, n: number): T {
  return (out.length === n ? out : out.subarray(0, n)) as T;
}

/**
 * `bytes` as an aligned buffer: itself when `byteOffset % align === 0`, else one copy.
 * (`new Uint8Array(view)` copies; `Buffer#slice` would not.)
 */
function aligned(bytes: Uint8Array, align: number): Uint8Array {
  if (bytes.byteOffset % align === 0) return bytes;
  return new Uint8Array(bytes);
}

// ---------------------------------------------------------------------------------------------
// int16 ↔ float32
// ---------------------------------------------------------------------------------------------

/**
 * Int16 → Float32 by dividing by 32768 (range [-1, 1)).
 *
 * @param src - samples.
 * @param out - optional output with at least `src.length` elements. Default: a new array.
 * @returns `out` (or its first `src.length` elements as a view), or a new Float32Array.
 * @throws `INVALID_ARGUMENT` on a wrong type or a too-small `out`.
 */
export function int16ToFloat32(src: Int16Array, out?: Float32Array): Float32Array {
  if (!(src instanceof Int16Array)) throw new VoicewireError('INVALID_ARGUMENT', `int16ToFloat32: src must be an Int16Array, got ${describe(src)}`);
  const n = src.length;
  const o = outputOf('int16ToFloat32', Float32Array, n, out);
  for (let i = 0; i < n; i++) o[i] = src[i]! * S16_SCALE;
  return fit(o, n);
}

/**
 * Float32 → Int16: scales by 32767, rounds half away from zero and clamps to [-32768, 32767].
 * +1.0 → 32767 (never wraps), -1.0 → -32767, values beyond ±1 clamp, NaN → 0.
 *
 * @param src - samples, nominally in [-1, 1] (a Float64Array works too, without rounding to
 *   float32 first).
 * @param out - optional output with at least `src.length` elements. Default: a new array.
 * @returns `out` (or a view of its first `src.length` elements), or a new Int16Array.
 * @throws `INVALID_ARGUMENT` on a wrong type or a too-small `out`.
 */
export function float32ToInt16(src: Float32Array | Float64Array, out?: Int16Array): Int16Array {
  if (!(src instanceof Float32Array) && !(src instanceof Float64Array)) {
    throw new VoicewireError('INVALID_ARGUMENT', `float32ToInt16: src must be a Float32Array, got ${describe(src)}`);
  }
  const n = src.length;
  const o = outputOf('float32ToInt16', Int16Array, n, out);
  floatToInt16Into(src, o, 0);
  return fit(o, n);
}

/** The float → int16 rule on any float array, into `out` from `at`. */
function floatToInt16Into(src: Float32Array | Float64Array, out: Int16Array, at: number): void {
  const n = src.length;
  for (let i = 0; i < n; i++) {
    const v = src[i]! * 32767;
    // Branches instead of Math.round/min/max: half away from zero, clamp, and NaN falls through
    // to (NaN + 0.5) | 0 === 0. `| 0` truncates toward zero, so ±0.5 moves away from it.
    out[at + i] = v >= 32766.5 ? 32767 : v <= -32767.5 ? -32768 : v < 0 ? (v - 0.5) | 0 : (v + 0.5) | 0;
  }
}

/** Float → signed integer of `bits` bits (24 or 32): scale by 2^(bits-1)-1, round half away, clamp. */
function floatToIntScaled(v: number, max: number): number {
  const x = v * max;
  if (x >= max) return max;
  if (x <= -max - 1) return -max - 1;
  if (x !== x) return 0;
  return x < 0 ? -Math.floor(0.5 - x) : Math.floor(x + 0.5);
}

// ---------------------------------------------------------------------------------------------
// bytes → samples
// ---------------------------------------------------------------------------------------------

/**
 * Decodes interleaved little-endian PCM bytes to Float32 (see the module conventions:
 * integers / 2^(bits-1), `f32le` copied as is).
 *
 * @param bytes - whole samples; any byteOffset works (a misaligned input is copied once).
 * @param encoding - the byte encoding.
 * @param out - optional output with at least `bytes.length / bytesPerSample` elements.
 * @returns the samples (a new array, or `out` / a view of its first elements).
 * @throws `PCM_PARTIAL_SAMPLE` when the length is not a whole number of samples;
 *   `PCM_UNSUPPORTED_ENCODING`; `INVALID_ARGUMENT`.
 */
export function decodePcm(bytes: Uint8Array, encoding: PcmEncoding, out?: Float32Array): Float32Array {
  checkBytes('decodePcm', bytes);
  const n = wholeSamples('decodePcm', bytes, encoding);
  const o = outputOf('decodePcm', Float32Array, n, out);
  decodePcmToFloat32Into(bytes, encoding, o, 0);
  return fit(o, n);
}

/**
 * Decodes interleaved little-endian PCM bytes to Int16: `s16le` as is, `s24le` >> 8 and
 * `s32le` >> 16 (the top 16 bits, like ffmpeg), `f32le` by {@link float32ToInt16}'s rule.
 *
 * @param bytes - whole samples; any byteOffset works.
 * @param encoding - the byte encoding.
 * @param out - optional output with at least `bytes.length / bytesPerSample` elements.
 * @returns the samples (a new array, or `out` / a view of its first elements).
 * @throws `PCM_PARTIAL_SAMPLE`, `PCM_UNSUPPORTED_ENCODING`, `INVALID_ARGUMENT`.
 */
export function decodePcmToInt16(bytes: Uint8Array, encoding: PcmEncoding, out?: Int16Array): Int16Array {
  checkBytes('decodePcmToInt16', bytes);
  const n = wholeSamples('decodePcmToInt16', bytes, encoding);
  const o = outputOf('decodePcmToInt16', Int16Array, n, out);
  decodePcmToInt16Into(bytes, encoding, o, 0);
  return fit(o, n);
}

/** Hot path: whole samples of `bytes` → `out` from `at`. No checks. */
function decodePcmToFloat32Into(bytes: Uint8Array, encoding: PcmEncoding, out: Float32Array, at: number): void {
  const len = bytes.byteLength;
  switch (encoding) {
    case 's16le': {
      const b = aligned(bytes, 2);
      const src = new Int16Array(b.buffer, b.byteOffset, len >> 1);
      for (let i = 0, n = src.length; i < n; i++) out[at + i] = src[i]! * S16_SCALE;
      return;
    }
    case 's24le': {
      // Byte loop: 3-byte samples have no typed-array view. `<< 8 >> 8` sign-extends 24 → 32 bits.
      for (let i = 0, j = 0; j + 2 < len; i++, j += 3) {
        out[at + i] = (((bytes[j]! | (bytes[j + 1]! << 8) | (bytes[j + 2]! << 16)) << 8) >> 8) * S24_SCALE;
      }
      return;
    }
    case 's32le': {
      const b = aligned(bytes, 4);
      const src = new Int32Array(b.buffer, b.byteOffset, len >> 2);
      for (let i = 0, n = src.length; i < n; i++) out[at + i] = src[i]! * S32_SCALE;
      return;
    }
    case 'f32le': {
      const b = aligned(bytes, 4);
      out.set(new Float32Array(b.buffer, b.byteOffset, len >> 2), at);
      return;
    }
    default:
      pcmBytesPerSample(encoding); // throws PCM_UNSUPPORTED_ENCODING
  }
}

/** Hot path: whole samples of `bytes` → Int16 `out` from `at`. No checks. */
function decodePcmToInt16Into(bytes: Uint8Array, encoding: PcmEncoding, out: Int16Array, at: number): void {
  const len = bytes.byteLength;
  switch (encoding) {
    case 's16le': {
      // A byte copy into the output's own bytes: no alignment needed, one memcpy.
      new Uint8Array(out.buffer, out.byteOffset + at * 2, len).set(bytes);
      return;
    }
    case 's24le': {
      // Top 16 bits of a 24-bit sample are its two high bytes.
      for (let i = 0, j = 1; j + 1 < len; i++, j += 3) out[at + i] = bytes[j]! | (bytes[j + 1]! << 8);
      return;
    }
    case 's32le': {
      for (let i = 0, j = 2; j + 1 < len; i++, j += 4) out[at + i] = bytes[j]! | (bytes[j + 1]! << 8);
      return;
    }
    case 'f32le': {
      const b = aligned(bytes, 4);
      floatToInt16Into(new Float32Array(b.buffer, b.byteOffset, len >> 2), out, at);
      return;
    }
    default:
      pcmBytesPerSample(encoding);
  }
}

// ---------------------------------------------------------------------------------------------
// samples → bytes
// ---------------------------------------------------------------------------------------------

/**
 * Encodes samples as interleaved little-endian PCM bytes.
 *
 * Int16 input: `s16le` as is, `s24le` << 8, `s32le` << 16 (exact), `f32le` / 32768.
 * Float32 input: `f32le` as is; integer encodings scale by 2^(bits-1)-1, round half away from
 * zero and clamp ({@link float32ToInt16}'s rule at 16, 24 or 32 bits).
 *
 * @param samples - Float32Array or Int16Array.
 * @param encoding - the byte encoding.
 * @param out - optional output with at least `samples.length * bytesPerSample` bytes.
 * @returns the bytes (a new Uint8Array, or `out` / a view of its first bytes).
 * @throws `PCM_UNSUPPORTED_ENCODING`, `INVALID_ARGUMENT`.
 */
export function encodePcm(samples: Float32Array | Int16Array, encoding: PcmEncoding, out?: Uint8Array): Uint8Array {
  const size = pcmBytesPerSample(encoding);
  const isInt = samples instanceof Int16Array;
  if (!isInt && !(samples instanceof Float32Array)) {
    throw new VoicewireError('INVALID_ARGUMENT', `encodePcm: samples must be a Float32Array or Int16Array, got ${describe(samples)}`);
  }
  const n = samples.length;
  const o = outputOf('encodePcm', Uint8Array, n * size, out);
  if (isInt) encodeInt16Into(samples, encoding, o);
  else encodeFloat32Into(samples, encoding, o);
  return fit(o, n * size);
}

function encodeInt16Into(src: Int16Array, encoding: PcmEncoding, o: Uint8Array): void {
  const n = src.length;
  switch (encoding) {
    case 's16le':
      o.set(new Uint8Array(src.buffer, src.byteOffset, n * 2));
      return;
    case 's24le':
      for (let i = 0, j = 0; i < n; i++, j += 3) {
        const v = src[i]!;
        o[j] = 0;
        o[j + 1] = v;
        o[j + 2] = v >> 8;
      }
      return;
    case 's32le':
      for (let i = 0, j = 0; i < n; i++, j += 4) {
        const v = src[i]!;
        o[j] = 0;
        o[j + 1] = 0;
        o[j + 2] = v;
        o[j + 3] = v >> 8;
      }
      return;
    case 'f32le':
      if ((o.byteOffset & 3) === 0) {
        const f = new Float32Array(o.buffer, o.byteOffset, n);
        for (let i = 0; i < n; i++) f[i] = src[i]! * S16_SCALE;
      } else {
        const f = new Float32Array(n);
        for (let i = 0; i < n; i++) f[i] = src[i]! * S16_SCALE;
        o.set(new Uint8Array(f.buffer));
      }
      return;
  }
}

function encodeFloat32Into(src: Float32Array, encoding: PcmEncoding, o: Uint8Array): void {
  const n = src.length;
  switch (encoding) {
    case 's16le':
      if ((o.byteOffset & 1) === 0) {
        floatToInt16Into(src, new Int16Array(o.buffer, o.byteOffset, n), 0);
      } else {
        const t = new Int16Array(n);
        floatToInt16Into(src, t, 0);
        o.set(new Uint8Array(t.buffer));
      }
      return;
    case 's24le':
      for (let i = 0, j = 0; i < n; i++, j += 3) {
        const v = floatToIntScaled(src[i]!, 8388607);
        o[j] = v;
        o[j + 1] = v >> 8;
        o[j + 2] = v >> 16;
      }
      return;
    case 's32le':
      for (let i = 0, j = 0; i < n; i++, j += 4) {
        const v = floatToIntScaled(src[i]!, 2147483647);
        o[j] = v;
        o[j + 1] = v >> 8;
        o[j + 2] = v >> 16;
        o[j + 3] = v >> 24;
      }
      return;
    case 'f32le':
      o.set(new Uint8Array(src.buffer, src.byteOffset, n * 4));
      return;
  }
}

// ---------------------------------------------------------------------------------------------
// Downmix
// ---------------------------------------------------------------------------------------------

function checkChannels(fn: string, length: number, channels: number): void {
  if (!Number.isInteger(channels) || channels < 1) {
    throw new VoicewireError('INVALID_ARGUMENT', `${fn}: channels must be a positive integer, got ${shown(channels)}`);
  }
  if (length % channels !== 0) {
    throw new VoicewireError('PCM_PARTIAL_SAMPLE', `${fn}: ${length} samples is not a whole number of ${channels}-channel frames`);
  }
}

/**
 * Mono downmix: each output sample is the average of one frame's channels (summed left to
 * right in double precision, divided by `channels`). `channels === 1` copies.
 *
 * @param interleaved - frames of `channels` samples.
 * @param channels - channels per frame (a positive integer).
 * @param out - optional output with at least `interleaved.length / channels` elements.
 * @throws `PCM_PARTIAL_SAMPLE` when the length is not a whole number of frames; `INVALID_ARGUMENT`.
 */
export function downmixToMono(interleaved: Float32Array, channels: number, out?: Float32Array): Float32Array {
  if (!(interleaved instanceof Float32Array)) throw new VoicewireError('INVALID_ARGUMENT', `downmixToMono: interleaved must be a Float32Array, got ${describe(interleaved)}`);
  checkChannels('downmixToMono', interleaved.length, channels);
  const frames = interleaved.length / channels;
  const o = outputOf('downmixToMono', Float32Array, frames, out);
  downmixFloatInto(interleaved, channels, o, 0);
  return fit(o, frames);
}

/**
 * Mono downmix of Int16 frames: `Math.round(sum / channels)` (the average, ties toward +∞),
 * always within int16 range.
 *
 * @param interleaved - frames of `channels` samples.
 * @param channels - channels per frame (a positive integer).
 * @param out - optional output with at least `interleaved.length / channels` elements.
 * @throws `PCM_PARTIAL_SAMPLE`, `INVALID_ARGUMENT`.
 */
export function downmixInt16ToMono(interleaved: Int16Array, channels: number, out?: Int16Array): Int16Array {
  if (!(interleaved instanceof Int16Array)) throw new VoicewireError('INVALID_ARGUMENT', `downmixInt16ToMono: interleaved must be an Int16Array, got ${describe(interleaved)}`);
  checkChannels('downmixInt16ToMono', interleaved.length, channels);
  const frames = interleaved.length / channels;
  const o = outputOf('downmixInt16ToMono', Int16Array, frames, out);
  downmixInt16Into(interleaved, channels, o, 0);
  return fit(o, frames);
}

/** Float downmix of all of `src` into `out` from `at`. */
function downmixFloatInto(src: Float32Array, channels: number, out: Float32Array, at: number): void {
  const n = src.length;
  if (channels === 1) {
    out.set(src, at);
  } else if (channels === 2) {
    for (let i = 0, j = 0; j < n; i++, j += 2) out[at + i] = (src[j]! + src[j + 1]!) / 2;
  } else {
    for (let i = 0, j = 0; j < n; i++) {
      let sum = 0;
      for (let c = 0; c < channels; c++) sum += src[j++]!;
      out[at + i] = sum / channels;
    }
  }
}

/** Int16 downmix of all of `src` into `out` from `at`. */
function downmixInt16Into(src: Int16Array, channels: number, out: Int16Array, at: number): void {
  const n = src.length;
  if (channels === 1) {
    out.set(src, at);
  } else if (channels === 2) {
    // round(sum / 2) with ties toward +∞ is floor((sum + 1) / 2): one add and one shift.
    for (let i = 0, j = 0; j < n; i++, j += 2) out[at + i] = (src[j]! + src[j + 1]! + 1) >> 1;
  } else {
    for (let i = 0, j = 0; j < n; i++) {
      let sum = 0;
      for (let c = 0; c < channels; c++) sum += src[j++]!;
      out[at + i] = Math.round(sum / channels);
    }
  }
}
