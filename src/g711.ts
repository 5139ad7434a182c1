/**
 * G.711 μ-law and A-law, bit-exact with the ITU-T G.191 reference implementation
 * (openitu/STL `src/g711/g711.c`: `ulaw_compress`, `ulaw_expand`, `alaw_compress`, `alaw_expand`)
 * for all 65,536 16-bit inputs and all 256 codes.
 *
 * Samples are 16-bit linear PCM (`Int16Array`, host order); codes are one byte each (`Uint8Array`).
 * Every function writes into a preallocated output: a 64 K-entry encode table (indexed by the
 * sample's bit pattern as uint16) and a 256-entry decode table per law are built once at module
 * load, so the hot loops are one table load per sample and allocate nothing.
 *
 * Note: ffmpeg and sox decode exactly like the reference but do not encode like it (ffmpeg picks
 * the nearest decoded value, sox rounds before quantising); the reference truncates, as below.
 */
import { VoicewireError } from './errors.js';
import { describe } from './bytes.js';

// ---------------------------------------------------------------------------------------------
// Reference rules (G.191 g711.c), used once to fill the tables.
// ---------------------------------------------------------------------------------------------

/** μ-law encode of one sample (G.191 `ulaw_compress`): 14-bit magnitude, bias 33, 8 segments. */
function mulawCode(sample: number): number {
  // Negative samples use the one's complement (~x = -x-1), so -1 and 0 share a magnitude.
  let magnitude = (sample < 0 ? ~sample : sample) >> 2; // 16-bit -> 14-bit
  magnitude += 33; // bias
  if (magnitude > 0x1fff) magnitude = 0x1fff;
  let segment = 1;
  for (let i = magnitude >> 6; i !== 0; i >>= 1) segment++;
  const high = 8 - segment;
  const low = 15 - ((magnitude >> segment) & 0x0f);
  const code = (high << 4) | low;
  return sample >= 0 ? code | 0x80 : code;
}

/** μ-law decode of one code (G.191 `ulaw_expand`). */
function mulawSample(code: number): number {
  const inverted = ~code;
  const exponent = (inverted >> 4) & 0x07;
  const mantissa = inverted & 0x0f;
  const step = 4 << (exponent + 1);
  const magnitude = (0x80 << exponent) + step * mantissa + step / 2 - 4 * 33;
  return code < 0x80 ? -magnitude : magnitude;
}

/** A-law encode of one sample (G.191 `alaw_compress`): 13-bit magnitude, even bits toggled. */
function alawCode(sample: number): number {
  // One's complement for negatives (as the reference), then 16-bit -> 12-bit magnitude.
  let ix = (sample < 0 ? ~sample : sample) >> 4;
  if (ix > 15) {
    let exponent = 1;
    while (ix > 16 + 15) {
      ix >>= 1;
      exponent++;
    }
    ix = ix - 16 + (exponent << 4);
  }
  if (sample >= 0) ix |= 0x80;
  return ix ^ 0x55;
}

/** A-law decode of one code (G.191 `alaw_expand`). */
function alawSample(code: number): number {
  const ix = (code ^ 0x55) & 0x7f;
  const exponent = ix >> 4;
  let mantissa = ix & 0x0f;
  if (exponent > 0) mantissa += 16;
  mantissa = (mantissa << 4) + 8;
  if (exponent > 1) mantissa <<= exponent - 1;
  return code > 0x7f ? mantissa : -mantissa;
}

// ---------------------------------------------------------------------------------------------
// Tables, built once at module load (64 KiB + 64 KiB + 2 × 512 bytes).
// ---------------------------------------------------------------------------------------------

function buildEncodeTable(encode: (sample: number) => number): Uint8Array {
  const table = new Uint8Array(65536);
  for (let u = 0; u < 65536; u++) table[u] = encode((u << 16) >> 16); // index = uint16 bit pattern
  return table;
}

function buildDecodeTable(decode: (code: number) => number): Int16Array {
  const table = new Int16Array(256);
  for (let c = 0; c < 256; c++) table[c] = decode(c);
  return table;
}

const MULAW_ENCODE = buildEncodeTable(mulawCode);
const ALAW_ENCODE = buildEncodeTable(alawCode);
const MULAW_DECODE = buildDecodeTable(mulawSample);
const ALAW_DECODE = buildDecodeTable(alawSample);

// ---------------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------------

function checkEncodeArgs(name: string, pcm: unknown, out: unknown): Uint8Array {
  if (!(pcm instanceof Int16Array)) {
    throw new VoicewireError('INVALID_ARGUMENT', `${name}: pcm must be an Int16Array, got ${describe(pcm)}`);
  }
  if (out === undefined) return new Uint8Array(pcm.length);
  if (!(out instanceof Uint8Array)) {
    throw new VoicewireError('INVALID_ARGUMENT', `${name}: out must be a Uint8Array, got ${describe(out)}`);
  }
  if (out.length < pcm.length) {
    throw new VoicewireError('INVALID_ARGUMENT', `${name}: out holds ${out.length} codes, ${pcm.length} needed`);
  }
  return out;
}

function checkDecodeArgs(name: string, codes: unknown, out: unknown): Int16Array {
  if (!(codes instanceof Uint8Array)) {
    throw new VoicewireError('INVALID_ARGUMENT', `${name}: codes must be a Uint8Array, got ${describe(codes)}`);
  }
  if (out === undefined) return new Int16Array(codes.length);
  if (!(out instanceof Int16Array)) {
    throw new VoicewireError('INVALID_ARGUMENT', `${name}: out must be an Int16Array, got ${describe(out)}`);
  }
  if (out.length < codes.length) {
    throw new VoicewireError('INVALID_ARGUMENT', `${name}: out holds ${out.length} samples, ${codes.length} needed`);
  }
  return out;
}

// The hot loops: one table load per sample, unrolled by 4 (measured 1.1-1.7x faster than the
// plain loop on Node 20, the loop overhead being comparable to the load itself).
function encodeWith(table: Uint8Array, pcm: Int16Array, out: Uint8Array): Uint8Array {
  const n = pcm.length;
  const n4 = n & ~3;
  let i = 0;
  // `& 0xffff` maps the signed sample to its uint16 index.
  for (; i < n4; i += 4) {
    out[i] = table[pcm[i]! & 0xffff]!;
    out[i + 1] = table[pcm[i + 1]! & 0xffff]!;
    out[i + 2] = table[pcm[i + 2]! & 0xffff]!;
    out[i + 3] = table[pcm[i + 3]! & 0xffff]!;
  }
  for (; i < n; i++) out[i] = table[pcm[i]! & 0xffff]!;
  return out.length === n ? out : out.subarray(0, n);
}

function decodeWith(table: Int16Array, codes: Uint8Array, out: Int16Array): Int16Array {
  const n = codes.length;
  const n4 = n & ~3;
  let i = 0;
  for (; i < n4; i += 4) {
    out[i] = table[codes[i]!]!;
    out[i + 1] = table[codes[i + 1]!]!;
    out[i + 2] = table[codes[i + 2]!]!;
    out[i + 3] = table[codes[i + 3]!]!;
  }
  for (; i < n; i++) out[i] = table[codes[i]!]!;
  return out.length === n ? out : out.subarray(0, n);
}

/**
 * Encodes 16-bit linear PCM to G.711 μ-law, bit-exact with G.191 `ulaw_compress`.
 *
 * @param pcm - samples, any length.
 * @param out - optional output of at least `pcm.length` bytes (reused, no allocation).
 *   Default: a new `Uint8Array(pcm.length)`.
 * @returns the codes: `out` itself when its length is exactly `pcm.length`, else its first
 *   `pcm.length` bytes (a view).
 * @throws VoicewireError `INVALID_ARGUMENT` when `pcm` is not an Int16Array, or `out` is not a
 *   Uint8Array or is too small.
 */
export function encodeMulaw(pcm: Int16Array, out?: Uint8Array): Uint8Array {
  return encodeWith(MULAW_ENCODE, pcm, checkEncodeArgs('encodeMulaw', pcm, out));
}

/**
 * Decodes G.711 μ-law to 16-bit linear PCM, bit-exact with G.191 `ulaw_expand`
 * (range ±32124; code 0xFF and 0x7F decode to 0).
 *
 * @param codes - μ-law bytes, any length (a Node Buffer works).
 * @param out - optional output of at least `codes.length` samples. Default: a new Int16Array.
 * @returns the samples: `out` itself when its length is exactly `codes.length`, else a view of
 *   its first `codes.length` samples.
 * @throws VoicewireError `INVALID_ARGUMENT` on a non-Uint8Array input or a bad/too-small `out`.
 */
export function decodeMulaw(codes: Uint8Array, out?: Int16Array): Int16Array {
  return decodeWith(MULAW_DECODE, codes, checkDecodeArgs('decodeMulaw', codes, out));
}

/**
 * Encodes 16-bit linear PCM to G.711 A-law, bit-exact with G.191 `alaw_compress`
 * (even bits toggled, as transmitted).
 *
 * @param pcm - samples, any length.
 * @param out - optional output of at least `pcm.length` bytes. Default: a new Uint8Array.
 * @returns the codes (`out`, or a view of its first `pcm.length` bytes).
 * @throws VoicewireError `INVALID_ARGUMENT` on a non-Int16Array input or a bad/too-small `out`.
 */
export function encodeAlaw(pcm: Int16Array, out?: Uint8Array): Uint8Array {
  return encodeWith(ALAW_ENCODE, pcm, checkEncodeArgs('encodeAlaw', pcm, out));
}

/**
 * Decodes G.711 A-law to 16-bit linear PCM, bit-exact with G.191 `alaw_expand`
 * (range ±32256, smallest magnitude 8).
 *
 * @param codes - A-law bytes, any length.
 * @param out - optional output of at least `codes.length` samples. Default: a new Int16Array.
 * @returns the samples (`out`, or a view of its first `codes.length` samples).
 * @throws VoicewireError `INVALID_ARGUMENT` on a non-Uint8Array input or a bad/too-small `out`.
 */
export function decodeAlaw(codes: Uint8Array, out?: Int16Array): Int16Array {
  return decodeWith(ALAW_DECODE, codes, checkDecodeArgs('decodeAlaw', codes, out));
}
