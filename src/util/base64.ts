/**
 * Base64 (RFC 4648 §4, standard alphabet, `=` padding) for the `audio` field of the WebSocket
 * messages (docs/api.md §4.4, §4.5). Platform-neutral: no `Buffer`.
 *
 * Native first: the platform's own codec is 10× faster than any JS loop (issue 12 §2). Used, in
 * this order: a codec registered with {@link setNativeBase64} (the Node entry `voicewire/node`
 * registers Buffer's), else `Uint8Array.prototype.toBase64` / `Uint8Array.fromBase64` where the
 * platform has them, else the JS fallback below. A native decoder's answer is only taken when it
 * provably equals the fallback's (see {@link decodeBase64}): native decoders are lenient
 * (whitespace, the URL-safe alphabet, data after `=`), this API is not, and errors must not
 * depend on the platform.
 *
 * JS fallback: encoding uses a 4096-entry table that maps 12 input bits to two output characters,
 * written into a reused scratch buffer and turned into a string with one `TextDecoder` call (ASCII
 * only, so UTF-8 decoding is exact).
 */
import { VoicewireError } from './errors.js';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const CODES = new Uint8Array(64);
for (let i = 0; i < 64; i++) CODES[i] = ALPHABET.charCodeAt(i);

// Two output characters per 12 bits, stored as one little-or-big-endian 16-bit unit so that one
// Uint16Array store writes both bytes in the right order.
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const PAIRS = new Uint16Array(4096);
for (let i = 0; i < 4096; i++) {
  const a = CODES[i >> 6]!;
  const b = CODES[i & 63]!;
  PAIRS[i] = LITTLE_ENDIAN ? a | (b << 8) : (a << 8) | b;
}

// Character code → 6-bit value, 255 for characters outside the alphabet.
const VALUES = new Uint8Array(256).fill(255);
for (let i = 0; i < 64; i++) VALUES[CODES[i]!] = i;

const ASCII = new TextDecoder();
const UTF8_IN = new TextEncoder();
let inScratch = new Uint8Array(8192);
let scratch = new Uint8Array(8192);
let scratch16 = new Uint16Array(scratch.buffer);

/** A platform base64 codec (standard alphabet, padded output), e.g. Node's Buffer. */
export interface NativeBase64 {
  /** Bytes → padded standard base64. Must equal RFC 4648 §4 output exactly. */
  encode(bytes: Uint8Array): string;
  /**
   * Text → bytes, as lenient as it likes about skipping characters or stopping early (its answer
   * is used only when it has every byte the length promises, see {@link decodeBase64}), but it
   * must never read a character outside the alphabet as one inside it (Node's Buffer reads
   * U+0141 as `A`: its registered decoder returns null for non-ASCII text). May return null or
   * throw: the JS decoder then decides.
   */
  decode(text: string): Uint8Array | null;
  /**
   * Optional: writes the padded standard base64 of `bytes` into `out` at `offset` (ASCII bytes) and
   * returns the offset after it ({@link encodeBase64Into}; issue 34: an `audio` line written once
   * into one buffer). `out` has room for `4 * ceil(bytes.length / 3)` bytes from `offset`.
   */
  encodeInto?(bytes: Uint8Array, out: Uint8Array, offset: number): number;
}

type ToBase64 = (this: Uint8Array) => string;
type FromBase64 = (text: string) => Uint8Array; // strict about the alphabet; skips whitespace
const protoToBase64 = (Uint8Array.prototype as unknown as { toBase64?: ToBase64 }).toBase64;
const ctorFromBase64 = (Uint8Array as unknown as { fromBase64?: FromBase64 }).fromBase64;

/** The platform's codec (TC39 `Uint8Array` base64), or null where it is missing. */
const PLATFORM: NativeBase64 | null =
  typeof protoToBase64 === 'function' && typeof ctorFromBase64 === 'function'
    ? { encode: (b) => protoToBase64.call(b), decode: (t) => ctorFromBase64.call(Uint8Array, t) }
    : null;

let nativeEncode: ((bytes: Uint8Array) => string) | null = PLATFORM?.encode ?? null;
let nativeDecode: ((text: string) => Uint8Array | null) | null = PLATFORM?.decode ?? null;
let nativeEncodeInto: ((bytes: Uint8Array, out: Uint8Array, offset: number) => number) | null = null;

/**
 * Registers a native base64 codec for {@link encodeBase64} and {@link decodeBase64} (the core
 * cannot import `node:`; the Node entry registers Buffer's on import). `null` goes back to the
 * platform's `Uint8Array` base64 when present, else the JS fallback.
 *
 * @returns the name of the codec now in use: `'registered'`, `'platform'` or `'js'`.
 */
export function setNativeBase64(codec: NativeBase64 | null): 'registered' | 'platform' | 'js' {
  if (codec !== null && (typeof codec !== 'object' || typeof codec.encode !== 'function' || typeof codec.decode !== 'function')) {
    throw new VoicewireError('INVALID_ARGUMENT', 'setNativeBase64: expected { encode, decode } functions or null');
  }
  const c = codec ?? PLATFORM;
  nativeEncode = c?.encode ?? null;
  nativeDecode = c?.decode ?? null;
  nativeEncodeInto = c?.encodeInto ?? null;
  return base64Backend();
}

/** Which codec {@link encodeBase64} and {@link decodeBase64} use: `'registered'`, `'platform'` or `'js'`. */
export function base64Backend(): 'registered' | 'platform' | 'js' {
  if (nativeEncode === null) return 'js';
  return PLATFORM !== null && nativeEncode === PLATFORM.encode ? 'platform' : 'registered';
}

/**
 * Encodes bytes as standard base64 with padding (RFC 4648 §4). Output equals Node's
 * `Buffer.toString('base64')`.
 */
export function encodeBase64(bytes: Uint8Array): string {
  if (!(bytes instanceof Uint8Array)) throw new VoicewireError('INVALID_ARGUMENT', 'encodeBase64: expected a Uint8Array');
  if (nativeEncode !== null) return nativeEncode(bytes);
  return encodeBase64Js(bytes);
}

/** Length of the padded base64 of `n` bytes. */
export function base64Length(n: number): number {
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) throw new VoicewireError('INVALID_ARGUMENT', 'base64Length: n must be a non-negative integer');
  return Math.ceil(n / 3) * 4;
}

/**
 * Writes the padded standard base64 of `bytes` (RFC 4648 §4) into `out` from `offset`, as ASCII
 * bytes, and returns the offset after it: no string in between (issue 34). `out` must have
 * {@link base64Length}`(bytes.length)` bytes of room from `offset`. The registered codec's
 * `encodeInto` when it has one, else the JS table encoder.
 * @throws VoicewireError `INVALID_ARGUMENT` when `out` is too short.
 */
export function encodeBase64Into(bytes: Uint8Array, out: Uint8Array, offset: number): number {
  checkInto('encodeBase64Into', bytes, out, offset);
  if (nativeEncodeInto !== null) return nativeEncodeInto(bytes, out, offset);
  return writeBase64Js(bytes, out, offset);
}

/** The JS encoder of {@link encodeBase64Into}, whatever codec is registered (for tests that compare the two). */
export function encodeBase64IntoJs(bytes: Uint8Array, out: Uint8Array, offset: number): number {
  checkInto('encodeBase64IntoJs', bytes, out, offset);
  return writeBase64Js(bytes, out, offset);
}

function checkInto(fn: string, bytes: unknown, out: unknown, offset: unknown): void {
  if (!(bytes instanceof Uint8Array) || !(out instanceof Uint8Array)) throw new VoicewireError('INVALID_ARGUMENT', `${fn}: expected Uint8Arrays`);
  if (typeof offset !== 'number' || !Number.isInteger(offset) || offset < 0) throw new VoicewireError('INVALID_ARGUMENT', `${fn}: offset must be a non-negative integer`);
  const end = offset + base64Length(bytes.length);
  if (end > out.length) throw new VoicewireError('INVALID_ARGUMENT', `${fn}: no room for ${end - offset} bytes at ${offset} of ${out.length}`);
}

function writeBase64Js(bytes: Uint8Array, out: Uint8Array, offset: number): number {
  const n = bytes.length;
  const whole = n - (n % 3);
  let j = offset;
  for (let i = 0; i < whole; i += 3) {
    const v = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out[j] = CODES[v >>> 18]!;
    out[j + 1] = CODES[(v >>> 12) & 63]!;
    out[j + 2] = CODES[(v >>> 6) & 63]!;
    out[j + 3] = CODES[v & 63]!;
    j += 4;
  }
  const rest = n - whole;
  if (rest === 1) {
    const v = bytes[whole]!;
    out[j] = CODES[v >> 2]!;
    out[j + 1] = CODES[(v & 3) << 4]!;
    out[j + 2] = out[j + 3] = 61; // '='
    j += 4;
  } else if (rest === 2) {
    const v = (bytes[whole]! << 8) | bytes[whole + 1]!;
    out[j] = CODES[v >> 10]!;
    out[j + 1] = CODES[(v >> 4) & 63]!;
    out[j + 2] = CODES[(v & 15) << 2]!;
    out[j + 3] = 61;
    j += 4;
  }
  return j;
}

/** The JS encoder (exported for tests that compare it with the native one). */
export function encodeBase64Js(bytes: Uint8Array): string {
  if (!(bytes instanceof Uint8Array)) throw new VoicewireError('INVALID_ARGUMENT', 'encodeBase64Js: expected a Uint8Array');
  const n = bytes.length;
  const whole = n - (n % 3);
  const outLength = (whole / 3) * 4;
  if (scratch.length < outLength) {
    scratch = new Uint8Array(Math.max(outLength, scratch.length * 2));
    scratch16 = new Uint16Array(scratch.buffer);
  }
  const out = scratch16;
  let j = 0;
  for (let i = 0; i < whole; i += 3) {
    const v = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out[j] = PAIRS[v >>> 12]!;
    out[j + 1] = PAIRS[v & 4095]!;
    j += 2;
  }
  let text = outLength === 0 ? '' : ASCII.decode(scratch.subarray(0, outLength));
  const rest = n - whole;
  if (rest === 1) {
    const v = bytes[whole]!;
    text += ALPHABET[v >> 2]! + ALPHABET[(v & 3) << 4]! + '==';
  } else if (rest === 2) {
    const v = (bytes[whole]! << 8) | bytes[whole + 1]!;
    text += ALPHABET[v >> 10]! + ALPHABET[(v >> 4) & 63]! + ALPHABET[(v & 15) << 2]! + '=';
  }
  return text;
}

function invalid(reason: string): VoicewireError {
  return new VoicewireError('INVALID_ARGUMENT', `Invalid base64: ${reason}`);
}

/**
 * Decodes standard base64 (RFC 4648 §4). Padding is optional (a length of 2 or 3 mod 4 is read as
 * if padded); whitespace, the URL-safe alphabet and data after padding are rejected. Non-zero
 * bits left over in the last character are ignored (as Node and browsers do).
 *
 * The characters are first written as bytes with one `TextEncoder.encodeInto` call (reading a
 * byte array is about twice as fast as `charCodeAt`), then decoded with a 256-entry table.
 *
 * @throws VoicewireError `INVALID_ARGUMENT` for a non-string, a character outside the alphabet,
 *   misplaced `=`, or a length of 1 mod 4.
 */
export function decodeBase64(text: string): Uint8Array {
  if (typeof text !== 'string') throw invalid(`expected a string, got ${text === null ? 'null' : typeof text}`);
  if (nativeDecode !== null) {
    // The native answer is the strict one when it has exactly the bytes the length promises: a
    // lenient decoder skips (or stops at) anything outside the alphabet, and every skipped
    // character costs 6 bits, so fewer bytes come out (a length of 1 mod 4 is rejected below
    // before that could hide it). The URL-safe `-` and `_` are the only characters a lenient
    // decoder reads as data: they are looked for apart. Otherwise the JS decoder decides (and
    // throws the one error every platform gives).
    let out: Uint8Array | null = null;
    try {
      out = nativeDecode(text);
    } catch {
      out = null;
    }
    if (out !== null && out.length === strictLength(text) && text.indexOf('-') < 0 && text.indexOf('_') < 0) return out;
  }
  return decodeBase64Js(text);
}

/** Bytes a valid `text` decodes to: 3 per 4 characters after stripping up to two `=` (when padded), −1 for a length of 1 mod 4. */
function strictLength(text: string): number {
  let end = text.length;
  if (end % 4 === 0 && end > 0) {
    if (text.charCodeAt(end - 1) === 61) end--;
    if (text.charCodeAt(end - 1) === 61) end--;
  }
  const tail = end % 4;
  if (tail === 1) return -1;
  return ((end - tail) / 4) * 3 + (tail === 0 ? 0 : tail - 1);
}

/** The JS decoder (exported for tests that compare it with the native one); same contract as {@link decodeBase64}. */
export function decodeBase64Js(text: string): Uint8Array {
  if (typeof text !== 'string') throw invalid(`expected a string, got ${text === null ? 'null' : typeof text}`);
  let end = text.length;
  if (end % 4 === 0 && end > 0) {
    if (text.charCodeAt(end - 1) === 61) end--;
    if (text.charCodeAt(end - 1) === 61) end--;
  }
  const tail = end % 4;
  if (tail === 1) throw invalid(`length ${text.length} leaves a single trailing character`);
  if (inScratch.length < end) inScratch = new Uint8Array(Math.max(end, inScratch.length * 2));
  const { read, written } = UTF8_IN.encodeInto(end === text.length ? text : text.slice(0, end), inScratch);
  // A character above U+007F takes more than one byte (or is cut): not base64.
  if (read !== end || written !== end) throw invalid(`character outside the base64 alphabet in ${describeAt(text, end)}`);
  const src = inScratch;
  const wholeChars = end - tail;
  const out = new Uint8Array((wholeChars / 4) * 3 + (tail === 0 ? 0 : tail - 1));
  let j = 0;
  let bad = 0;
  for (let i = 0; i < wholeChars; i += 4) {
    const a = VALUES[src[i]!]!;
    const b = VALUES[src[i + 1]!]!;
    const c = VALUES[src[i + 2]!]!;
    const d = VALUES[src[i + 3]!]!;
    bad |= a | b | c | d; // 255 marks a character outside the alphabet
    const v = (a << 18) | (b << 12) | (c << 6) | d;
    out[j] = v >> 16;
    out[j + 1] = (v >> 8) & 255;
    out[j + 2] = v & 255;
    j += 3;
  }
  if ((bad & 0xc0) !== 0) throw invalid(`character outside the base64 alphabet in ${describeAt(text, end)}`);
  if (tail > 0) {
    const a = code(text, wholeChars, end);
    const b = code(text, wholeChars + 1, end);
    out[j++] = (a << 2) | (b >> 4);
    if (tail === 3) {
      const c = code(text, wholeChars + 2, end);
      out[j++] = ((b & 15) << 4) | (c >> 2);
    }
  }
  return out;
}

function code(text: string, index: number, end: number): number {
  const ch = text.charCodeAt(index);
  const v = ch < 256 ? VALUES[ch]! : 255;
  if (v === 255) throw invalid(`character outside the base64 alphabet in ${describeAt(text, end)}`);
  return v;
}

function describeAt(text: string, end: number): string {
  for (let i = 0; i < end; i++) {
    const ch = text.charCodeAt(i);
    if (ch > 255 || VALUES[ch] === 255) return `position ${i} (${JSON.stringify(text[i])})`;
  }
  return 'the input';
}
