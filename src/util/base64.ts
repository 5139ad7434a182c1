/**
 * Base64 (RFC 4648 §4, standard alphabet, `=` padding) for the `audio` field of the WebSocket
 * messages (service-api.md §4.4, §4.5). Platform-neutral: no `Buffer`. Encoding uses
 * `Uint8Array.prototype.toBase64` when the platform has it, else a 4096-entry table that maps 12
 * input bits to two output characters, written into a reused scratch buffer and turned into a
 * string with one `TextDecoder` call (ASCII only, so UTF-8 decoding is exact).
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

type ToBase64 = (this: Uint8Array) => string;
const nativeToBase64 = (Uint8Array.prototype as unknown as { toBase64?: ToBase64 }).toBase64;

/**
 * Encodes bytes as standard base64 with padding (RFC 4648 §4). Output equals Node's
 * `Buffer.toString('base64')`.
 */
export function encodeBase64(bytes: Uint8Array): string {
  if (nativeToBase64 !== undefined) return nativeToBase64.call(bytes);
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
