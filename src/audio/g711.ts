/**
 * G.711 μ-law and A-law, bit-exact with the ITU-T G.191 reference implementation
 * (openitu/STL `src/g711/g711.c`: `ulaw_compress`, `ulaw_expand`, `alaw_compress`, `alaw_expand`)
 * for all 65,536 16-bit inputs and all 256 codes.
 *
 * Samples are 16-bit linear PCM (`Int16Array`, host order); codes are one byte each (`Uint8Array`).
 * Every function can write into a preallocated output: a 64 K-entry encode table (indexed by the
 * sample's bit pattern as uint16) and a 256-entry decode table per law are built once at module
 * load, so the hot loops are one table load per sample, reading and writing 32-bit words, and
 * allocate nothing per sample (at most two small views per call; see "The hot loops").
 *
 * Note: ffmpeg and sox decode exactly like the reference but do not encode like it (ffmpeg picks
 * the nearest decoded value, sox rounds before quantising); the reference truncates, as below.
 */
import { VoicewireError } from '../util/errors.js';
import { describe } from '../util/bytes.js';

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

/**
 * The input, or a copy of it when it shares memory with the output: the loops write each output
 * word before reading all of the input (a decode writes 2 bytes per byte read), so an `out` that
 * overlaps the input would turn later input into earlier output (issue 11 §13).
 */
function apart<T extends Int16Array | Uint8Array>(input: T, out: ArrayBufferView): T {
  if (input.buffer !== out.buffer || input.byteOffset >= out.byteOffset + out.byteLength || out.byteOffset >= input.byteOffset + input.byteLength) return input;
  return input.slice() as T;
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

// The hot loops, measured in bench/g711.bench.ts. Why they are written as they are (V8, Node 20):
// - V8 guards every typed-array access with a bounds check and, once any ArrayBuffer in the
//   process has been detached (web streams, fetch bodies, a transferring postMessage; most servers
//   and the bench's own tsx loader), a detached-buffer check; it also re-checks each array's map
//   and reloads its length and data pointer on every loop iteration. So the main loops move 32-bit
//   words: encode reads 2 samples and writes 4 codes per access, decode reads 4 codes and writes
//   2 samples, which halves the accesses per sample, and each iteration does 32 samples
//   (1.2-1.5x the throughput of the former one-load-one-store loop unrolled by 4 on 80 ms frames,
//   2.2-2.3x on 60 s).
// - Words are little-endian in memory (the first sample or code is the low part of a word). A
//   big-endian host, an array whose byteOffset is not a multiple of 4, fewer than WORDS_MIN
//   samples, and what is left after the words take the per-sample loop: same results.
// - Each loop sits alone at the end of its own function. A first call long enough to be compiled
//   while it runs (on-stack replacement) would otherwise compile the code after its loop without
//   type feedback, and Node 20's V8 then re-enters that code and deoptimizes on every later call.
// - `& 0x0ffffff8` keeps the loop bounds below 2^28, so V8 adds no overflow checks to the indices
//   (callers never pass more: the word loops stop before 2^30 samples, the per-sample loop ends).
//   Lengths are combined with `* 4` and `>>>`, never `<< 2` or `>> 1`, which wrap at 2^31.
// - One function per law names its table (a module constant): V8 embeds it instead of loading
//   it, and checking its map, through a parameter (measured 5-25% faster).
// `& 0xffff` maps a signed sample to its uint16 bit pattern, the encode tables' index.

/** Whether this host stores the low byte of a 16/32-bit word first (every current JS engine). */
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
/** Below this many samples the word loops' views (~0.1 µs to create) are not worth it. */
const WORDS_MIN = 128;
/** The decode tables' entries as uint16 bit patterns (views of the same memory), to pack words. */
const MULAW_DECODE_BITS = new Uint16Array(MULAW_DECODE.buffer);
const ALAW_DECODE_BITS = new Uint16Array(ALAW_DECODE.buffer);

// A 32-bit view of the caller's preallocated output, kept from one call to the next: a streaming
// caller passes the same `out` every time, and a new view costs as much as coding ~100 samples.
// One slot per output type; another `out` replaces it (the module holds a reference to the last
// `out` it was given, nothing else). The view has the array's buffer, offset and a fixed length,
// and the word loops never go past its length, so a resized or detached buffer stays correct.
let codeWordsOwner: Uint8Array | undefined;
let codeWords: Int32Array = new Int32Array(0);
let sampleWordsOwner: Int16Array | undefined;
let sampleWords: Int32Array = new Int32Array(0);

function codeWordsOf(out: Uint8Array): Int32Array {
  if (out !== codeWordsOwner) {
    codeWords = new Int32Array(out.buffer, out.byteOffset, out.byteLength >>> 2);
    codeWordsOwner = out;
  }
  return codeWords;
}

function sampleWordsOf(out: Int16Array): Int32Array {
  if (out !== sampleWordsOwner) {
    sampleWords = new Int32Array(out.buffer, out.byteOffset, out.byteLength >>> 2);
    sampleWordsOwner = out;
  }
  return sampleWords;
}

type WordLoop = (src: Int32Array, dst: Int32Array, words: number) => void;
type EncodeSampleLoop = (pcm: Int16Array, out: Uint8Array, from: number, n: number) => void;
type DecodeSampleLoop = (codes: Uint8Array, out: Int16Array, from: number, n: number) => void;

/** Encodes `pcm` into `out` (`fresh`: allocated by this call, so not worth caching a view of). */
function encodeWith(
  words: WordLoop,
  samples: EncodeSampleLoop,
  pcm: Int16Array,
  out: Uint8Array,
  fresh: boolean,
): Uint8Array {
  const n = pcm.length;
  let done = 0;
  if (n >= WORDS_MIN && ((pcm.byteOffset | out.byteOffset) & 3) === 0 && LITTLE_ENDIAN) {
    const dst = fresh ? new Int32Array(out.buffer, 0, n >>> 2) : codeWordsOf(out); // 4 codes per word
    done = Math.min(n, dst.length * 4) & 0x3fffffe0; // whole iterations of 32 samples, < 2^30
    words(new Int32Array(pcm.buffer, pcm.byteOffset, n >>> 1), dst, done >> 2); // 2 samples per word
  }
  samples(pcm, out, done, n);
  return out.length === n ? out : out.subarray(0, n);
}

/** Decodes `codes` into `out` (`fresh` as in encodeWith). */
function decodeWith(
  words: WordLoop,
  samples: DecodeSampleLoop,
  codes: Uint8Array,
  out: Int16Array,
  fresh: boolean,
): Int16Array {
  const n = codes.length;
  let done = 0;
  if (n >= WORDS_MIN && ((codes.byteOffset | out.byteOffset) & 3) === 0 && LITTLE_ENDIAN) {
    const dst = fresh ? new Int32Array(out.buffer, 0, n >>> 1) : sampleWordsOf(out); // 2 samples per word
    done = Math.min(n, dst.length * 2) & 0x3fffffe0;
    words(new Int32Array(codes.buffer, codes.byteOffset, n >>> 2), dst, done >> 2); // 4 codes per word
  }
  samples(codes, out, done, n);
  return out.length === n ? out : out.subarray(0, n);
}

function encodeMulawWords(src: Int32Array, dst: Int32Array, words: number): void {
  const E = MULAW_ENCODE;
  const end = words & 0x0ffffff8;
  let a = 0;
  let b = 0;
  for (let w = 0, h = 0; w < end; w += 8, h += 16) {
    a = src[h]!;
    b = src[h + 1]!;
    dst[w] = E[a & 0xffff]! | (E[a >>> 16]! << 8) | (E[b & 0xffff]! << 16) | (E[b >>> 16]! << 24);
    a = src[h + 2]!;
    b = src[h + 3]!;
    dst[w + 1] = E[a & 0xffff]! | (E[a >>> 16]! << 8) | (E[b & 0xffff]! << 16) | (E[b >>> 16]! << 24);
    a = src[h + 4]!;
    b = src[h + 5]!;
    dst[w + 2] = E[a & 0xffff]! | (E[a >>> 16]! << 8) | (E[b & 0xffff]! << 16) | (E[b >>> 16]! << 24);
    a = src[h + 6]!;
    b = src[h + 7]!;
    dst[w + 3] = E[a & 0xffff]! | (E[a >>> 16]! << 8) | (E[b & 0xffff]! << 16) | (E[b >>> 16]! << 24);
    a = src[h + 8]!;
    b = src[h + 9]!;
    dst[w + 4] = E[a & 0xffff]! | (E[a >>> 16]! << 8) | (E[b & 0xffff]! << 16) | (E[b >>> 16]! << 24);
    a = src[h + 10]!;
    b = src[h + 11]!;
    dst[w + 5] = E[a & 0xffff]! | (E[a >>> 16]! << 8) | (E[b & 0xffff]! << 16) | (E[b >>> 16]! << 24);
    a = src[h + 12]!;
    b = src[h + 13]!;
    dst[w + 6] = E[a & 0xffff]! | (E[a >>> 16]! << 8) | (E[b & 0xffff]! << 16) | (E[b >>> 16]! << 24);
    a = src[h + 14]!;
    b = src[h + 15]!;
    dst[w + 7] = E[a & 0xffff]! | (E[a >>> 16]! << 8) | (E[b & 0xffff]! << 16) | (E[b >>> 16]! << 24);
  }
}

function encodeAlawWords(src: Int32Array, dst: Int32Array, words: number): void {
  const E = ALAW_ENCODE;
  const end = words & 0x0ffffff8;
  let a = 0;
  let b = 0;
  for (let w = 0, h = 0; w < end; w += 8, h += 16) {
    a = src[h]!;
    b = src[h + 1]!;
    dst[w] = E[a & 0xffff]! | (E[a >>> 16]! << 8) | (E[b & 0xffff]! << 16) | (E[b >>> 16]! << 24);
    a = src[h + 2]!;
    b = src[h + 3]!;
    dst[w + 1] = E[a & 0xffff]! | (E[a >>> 16]! << 8) | (E[b & 0xffff]! << 16) | (E[b >>> 16]! << 24);
    a = src[h + 4]!;
    b = src[h + 5]!;
    dst[w + 2] = E[a & 0xffff]! | (E[a >>> 16]! << 8) | (E[b & 0xffff]! << 16) | (E[b >>> 16]! << 24);
    a = src[h + 6]!;
    b = src[h + 7]!;
    dst[w + 3] = E[a & 0xffff]! | (E[a >>> 16]! << 8) | (E[b & 0xffff]! << 16) | (E[b >>> 16]! << 24);
    a = src[h + 8]!;
    b = src[h + 9]!;
    dst[w + 4] = E[a & 0xffff]! | (E[a >>> 16]! << 8) | (E[b & 0xffff]! << 16) | (E[b >>> 16]! << 24);
    a = src[h + 10]!;
    b = src[h + 11]!;
    dst[w + 5] = E[a & 0xffff]! | (E[a >>> 16]! << 8) | (E[b & 0xffff]! << 16) | (E[b >>> 16]! << 24);
    a = src[h + 12]!;
    b = src[h + 13]!;
    dst[w + 6] = E[a & 0xffff]! | (E[a >>> 16]! << 8) | (E[b & 0xffff]! << 16) | (E[b >>> 16]! << 24);
    a = src[h + 14]!;
    b = src[h + 15]!;
    dst[w + 7] = E[a & 0xffff]! | (E[a >>> 16]! << 8) | (E[b & 0xffff]! << 16) | (E[b >>> 16]! << 24);
  }
}

function encodeMulawSamples(pcm: Int16Array, out: Uint8Array, from: number, n: number): void {
  const E = MULAW_ENCODE;
  let i = from;
  for (const head = i + ((n - i) & 7); i < head; i++) out[i] = E[pcm[i]! & 0xffff]!;
  for (; i < n; i += 8) {
    out[i] = E[pcm[i]! & 0xffff]!; out[i + 1] = E[pcm[i + 1]! & 0xffff]!;
    out[i + 2] = E[pcm[i + 2]! & 0xffff]!; out[i + 3] = E[pcm[i + 3]! & 0xffff]!;
    out[i + 4] = E[pcm[i + 4]! & 0xffff]!; out[i + 5] = E[pcm[i + 5]! & 0xffff]!;
    out[i + 6] = E[pcm[i + 6]! & 0xffff]!; out[i + 7] = E[pcm[i + 7]! & 0xffff]!;
  }
}

function encodeAlawSamples(pcm: Int16Array, out: Uint8Array, from: number, n: number): void {
  const E = ALAW_ENCODE;
  let i = from;
  for (const head = i + ((n - i) & 7); i < head; i++) out[i] = E[pcm[i]! & 0xffff]!;
  for (; i < n; i += 8) {
    out[i] = E[pcm[i]! & 0xffff]!; out[i + 1] = E[pcm[i + 1]! & 0xffff]!;
    out[i + 2] = E[pcm[i + 2]! & 0xffff]!; out[i + 3] = E[pcm[i + 3]! & 0xffff]!;
    out[i + 4] = E[pcm[i + 4]! & 0xffff]!; out[i + 5] = E[pcm[i + 5]! & 0xffff]!;
    out[i + 6] = E[pcm[i + 6]! & 0xffff]!; out[i + 7] = E[pcm[i + 7]! & 0xffff]!;
  }
}

function decodeMulawWords(src: Int32Array, dst: Int32Array, words: number): void {
  const B = MULAW_DECODE_BITS;
  const end = words & 0x0ffffff8;
  let c = 0;
  for (let h = 0, w = 0; h < end; h += 8, w += 16) {
    c = src[h]!;
    dst[w] = B[c & 0xff]! | (B[(c >>> 8) & 0xff]! << 16);
    dst[w + 1] = B[(c >>> 16) & 0xff]! | (B[c >>> 24]! << 16);
    c = src[h + 1]!;
    dst[w + 2] = B[c & 0xff]! | (B[(c >>> 8) & 0xff]! << 16);
    dst[w + 3] = B[(c >>> 16) & 0xff]! | (B[c >>> 24]! << 16);
    c = src[h + 2]!;
    dst[w + 4] = B[c & 0xff]! | (B[(c >>> 8) & 0xff]! << 16);
    dst[w + 5] = B[(c >>> 16) & 0xff]! | (B[c >>> 24]! << 16);
    c = src[h + 3]!;
    dst[w + 6] = B[c & 0xff]! | (B[(c >>> 8) & 0xff]! << 16);
    dst[w + 7] = B[(c >>> 16) & 0xff]! | (B[c >>> 24]! << 16);
    c = src[h + 4]!;
    dst[w + 8] = B[c & 0xff]! | (B[(c >>> 8) & 0xff]! << 16);
    dst[w + 9] = B[(c >>> 16) & 0xff]! | (B[c >>> 24]! << 16);
    c = src[h + 5]!;
    dst[w + 10] = B[c & 0xff]! | (B[(c >>> 8) & 0xff]! << 16);
    dst[w + 11] = B[(c >>> 16) & 0xff]! | (B[c >>> 24]! << 16);
    c = src[h + 6]!;
    dst[w + 12] = B[c & 0xff]! | (B[(c >>> 8) & 0xff]! << 16);
    dst[w + 13] = B[(c >>> 16) & 0xff]! | (B[c >>> 24]! << 16);
    c = src[h + 7]!;
    dst[w + 14] = B[c & 0xff]! | (B[(c >>> 8) & 0xff]! << 16);
    dst[w + 15] = B[(c >>> 16) & 0xff]! | (B[c >>> 24]! << 16);
  }
}

function decodeAlawWords(src: Int32Array, dst: Int32Array, words: number): void {
  const B = ALAW_DECODE_BITS;
  const end = words & 0x0ffffff8;
  let c = 0;
  for (let h = 0, w = 0; h < end; h += 8, w += 16) {
    c = src[h]!;
    dst[w] = B[c & 0xff]! | (B[(c >>> 8) & 0xff]! << 16);
    dst[w + 1] = B[(c >>> 16) & 0xff]! | (B[c >>> 24]! << 16);
    c = src[h + 1]!;
    dst[w + 2] = B[c & 0xff]! | (B[(c >>> 8) & 0xff]! << 16);
    dst[w + 3] = B[(c >>> 16) & 0xff]! | (B[c >>> 24]! << 16);
    c = src[h + 2]!;
    dst[w + 4] = B[c & 0xff]! | (B[(c >>> 8) & 0xff]! << 16);
    dst[w + 5] = B[(c >>> 16) & 0xff]! | (B[c >>> 24]! << 16);
    c = src[h + 3]!;
    dst[w + 6] = B[c & 0xff]! | (B[(c >>> 8) & 0xff]! << 16);
    dst[w + 7] = B[(c >>> 16) & 0xff]! | (B[c >>> 24]! << 16);
    c = src[h + 4]!;
    dst[w + 8] = B[c & 0xff]! | (B[(c >>> 8) & 0xff]! << 16);
    dst[w + 9] = B[(c >>> 16) & 0xff]! | (B[c >>> 24]! << 16);
    c = src[h + 5]!;
    dst[w + 10] = B[c & 0xff]! | (B[(c >>> 8) & 0xff]! << 16);
    dst[w + 11] = B[(c >>> 16) & 0xff]! | (B[c >>> 24]! << 16);
    c = src[h + 6]!;
    dst[w + 12] = B[c & 0xff]! | (B[(c >>> 8) & 0xff]! << 16);
    dst[w + 13] = B[(c >>> 16) & 0xff]! | (B[c >>> 24]! << 16);
    c = src[h + 7]!;
    dst[w + 14] = B[c & 0xff]! | (B[(c >>> 8) & 0xff]! << 16);
    dst[w + 15] = B[(c >>> 16) & 0xff]! | (B[c >>> 24]! << 16);
  }
}

function decodeMulawSamples(codes: Uint8Array, out: Int16Array, from: number, n: number): void {
  const D = MULAW_DECODE;
  let i = from;
  for (const head = i + ((n - i) & 7); i < head; i++) out[i] = D[codes[i]!]!;
  for (; i < n; i += 8) {
    out[i] = D[codes[i]!]!; out[i + 1] = D[codes[i + 1]!]!;
    out[i + 2] = D[codes[i + 2]!]!; out[i + 3] = D[codes[i + 3]!]!;
    out[i + 4] = D[codes[i + 4]!]!; out[i + 5] = D[codes[i + 5]!]!;
    out[i + 6] = D[codes[i + 6]!]!; out[i + 7] = D[codes[i + 7]!]!;
  }
}

function decodeAlawSamples(codes: Uint8Array, out: Int16Array, from: number, n: number): void {
  const D = ALAW_DECODE;
  let i = from;
  for (const head = i + ((n - i) & 7); i < head; i++) out[i] = D[codes[i]!]!;
  for (; i < n; i += 8) {
    out[i] = D[codes[i]!]!; out[i + 1] = D[codes[i + 1]!]!;
    out[i + 2] = D[codes[i + 2]!]!; out[i + 3] = D[codes[i + 3]!]!;
    out[i + 4] = D[codes[i + 4]!]!; out[i + 5] = D[codes[i + 5]!]!;
    out[i + 6] = D[codes[i + 6]!]!; out[i + 7] = D[codes[i + 7]!]!;
  }
}

// Warm-up, once at module load (~2 ms; building the tables takes 5-20 ms): every function above
// runs a dozen times on a short input that takes each of its paths (word loop, per-sample loop,
// fresh, reused and larger outputs, a misaligned input). V8 starts recording type feedback only
// after a function's first calls; without this, a long first call (a whole file) is compiled
// while it runs with no feedback for its other paths, and Node 20's V8 then intermittently kept
// later calls 2-2.5x slower (in 2 of 9 benchmark runs without the warm-up, none of 8 with it).
{
  const pcm = new Int16Array(WORDS_MIN + 10); // 4-byte aligned; 128 + 9 samples used below
  const codes = new Uint8Array(WORDS_MIN + 12);
  const codesOut = new Uint8Array(WORDS_MIN + 12);
  const pcmOut = new Int16Array(WORDS_MIN + 10);
  for (let k = 0; k < 12; k++) {
    for (const [words, samples] of [
      [encodeMulawWords, encodeMulawSamples],
      [encodeAlawWords, encodeAlawSamples],
    ] as const) {
      encodeWith(words, samples, pcm.subarray(0, WORDS_MIN + 9), new Uint8Array(WORDS_MIN + 9), true);
      encodeWith(words, samples, pcm.subarray(0, WORDS_MIN + 9), codesOut, false);
      encodeWith(words, samples, pcm.subarray(1, WORDS_MIN + 10), codesOut.subarray(0, WORDS_MIN + 9), false);
    }
    for (const [words, samples] of [
      [decodeMulawWords, decodeMulawSamples],
      [decodeAlawWords, decodeAlawSamples],
    ] as const) {
      decodeWith(words, samples, codes.subarray(0, WORDS_MIN + 9), new Int16Array(WORDS_MIN + 9), true);
      decodeWith(words, samples, codes.subarray(0, WORDS_MIN + 9), pcmOut, false);
      decodeWith(words, samples, codes.subarray(1, WORDS_MIN + 10), pcmOut.subarray(0, WORDS_MIN + 9), false);
    }
  }
  codeWordsOwner = undefined;
  codeWords = new Int32Array(0);
  sampleWordsOwner = undefined;
  sampleWords = new Int32Array(0);
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
  const checked = checkEncodeArgs('encodeMulaw', pcm, out);
  return encodeWith(encodeMulawWords, encodeMulawSamples, apart(pcm, checked), checked, out === undefined);
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
  const checked = checkDecodeArgs('decodeMulaw', codes, out);
  return decodeWith(decodeMulawWords, decodeMulawSamples, apart(codes, checked), checked, out === undefined);
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
  const checked = checkEncodeArgs('encodeAlaw', pcm, out);
  return encodeWith(encodeAlawWords, encodeAlawSamples, apart(pcm, checked), checked, out === undefined);
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
  const checked = checkDecodeArgs('decodeAlaw', codes, out);
  return decodeWith(decodeAlawWords, decodeAlawSamples, apart(codes, checked), checked, out === undefined);
}
