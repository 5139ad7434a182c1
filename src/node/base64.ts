/**
 * Node's Buffer base64 as the core's native codec (issue 12 §2: 10× the JS loop). Registered on
 * import of `voicewire/node` and of `voicewire` on Node; the core stays free of `node:` and `Buffer`.
 */
import { Buffer } from 'node:buffer';
import { setNativeBase64, type NativeBase64 } from '../util/base64.js';

/** Buffer's encoder and decoder, shaped for {@link setNativeBase64}. */
export const bufferBase64: NativeBase64 = {
  encode: (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64'),
  decode: (text) => {
    // Buffer reads only the low byte of a character above U+00FF (U+0141 decodes as `A`): valid
    // base64 is ASCII, so anything else goes to the strict JS decoder (which names the culprit).
    if (Buffer.byteLength(text, 'utf8') !== text.length) return null;
    const b = Buffer.from(text, 'base64');
    // Small Buffers are views of a shared 8 KiB pool: copy them, so `.buffer` holds only our bytes.
    return b.byteLength < Buffer.poolSize >>> 1 ? new Uint8Array(b) : new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  },
  // Node has no base64 encoder into a buffer: its native encoder's string, copied in as latin1 (4× the
  // JS table loop into the buffer for an 80 ms frame, issue 34). The string is ASCII: latin1 is exact.
  encodeInto: (bytes, out, offset) => {
    const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
    return offset + Buffer.from(out.buffer, out.byteOffset, out.byteLength).write(text, offset, 'latin1');
  },
};

/**
 * Makes {@link bufferBase64} the core's codec. A call, not an import side effect: package.json's
 * "sideEffects" lists the dist/ entries only, so esbuild drops a bare `import './base64.js'` from
 * the sources (and warned so on every build, at `npm install` too — issue 23).
 */
export function registerNativeBase64(): void {
  setNativeBase64(bufferBase64);
}
