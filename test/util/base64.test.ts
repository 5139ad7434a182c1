import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { bufferBase64 } from '../../src/node/base64.js';
import { base64Backend, decodeBase64, decodeBase64Js, encodeBase64, encodeBase64Js, setNativeBase64 } from '../../src/util/base64.js';
import { VoicewireError } from '../../src/util/errors.js';

/** The outcome of a decode: its bytes, or its error's code and message. */
function outcome(f: (t: string) => Uint8Array, text: string): { bytes: number[] } | { code: string; message: string } {
  try {
    return { bytes: [...f(text)] };
  } catch (e) {
    if (!(e instanceof VoicewireError)) throw e;
    return { code: e.code, message: e.message };
  }
}

/** Strings near base64: valid encodings with a character changed, inserted, or padding moved. */
const nearBase64 = fc
  .tuple(
    fc.uint8Array({ maxLength: 40 }),
    fc.nat(),
    fc.constantFrom('=', '-', '_', ' ', '\n', '.', 'Ł', 'ń', 'Ā', '\u0000', '\uFFFF', '😀', 'A', '==', '', 'é'),
    fc.constantFrom('replace', 'insert', 'append', 'strip'),
  )
  .map(([bytes, at, ch, how]) => {
    const s = Buffer.from(bytes).toString('base64');
    const i = s.length === 0 ? 0 : at % s.length;
    if (how === 'replace') return s.slice(0, i) + ch + s.slice(i + 1);
    if (how === 'insert') return s.slice(0, i) + ch + s.slice(i);
    if (how === 'append') return s + ch;
    return s.replace(/=+$/, '');
  });

describe('base64: native codecs agree with the JS fallback byte for byte, errors included', () => {
  afterEach(() => {
    setNativeBase64(bufferBase64); // the state the Node entry leaves
  });

  it('the Node entry registers Buffer base64; null goes back to the platform codec or JS', () => {
    setNativeBase64(bufferBase64);
    expect(base64Backend()).toBe('registered');
    const fallback = setNativeBase64(null);
    expect(fallback).toBe(typeof (Uint8Array as unknown as { fromBase64?: unknown }).fromBase64 === 'function' ? 'platform' : 'js');
    expect(() => setNativeBase64({ encode: 1 } as never)).toThrow(VoicewireError);
  });

  it('encode: Buffer-backed, JS fallback and Buffer itself give the same text (random bytes)', () => {
    setNativeBase64(bufferBase64);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 3000 }), fc.nat(7), (bytes, off) => {
        const view = bytes.subarray(Math.min(off, bytes.length)); // non-zero byteOffset
        const want = Buffer.from(view).toString('base64');
        expect(encodeBase64(view)).toBe(want);
        expect(encodeBase64Js(view)).toBe(want);
      }),
      { numRuns: 300 },
    );
  });

  it('decode: valid text decodes alike, and round-trips', () => {
    setNativeBase64(bufferBase64);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 3000 }), fc.boolean(), (bytes, unpadded) => {
        let text = Buffer.from(bytes).toString('base64');
        if (unpadded) text = text.replace(/=+$/, '');
        const a = decodeBase64(text);
        expect([...a]).toEqual([...bytes]);
        expect([...decodeBase64Js(text)]).toEqual([...bytes]);
      }),
      { numRuns: 300 },
    );
  });

  it('decode: near-valid and arbitrary text gives the same bytes or the same error as the JS decoder', () => {
    setNativeBase64(bufferBase64);
    fc.assert(
      fc.property(fc.oneof(nearBase64, fc.string({ maxLength: 24 }), fc.string({ unit: 'binary', maxLength: 12 })), (text) => {
        expect(outcome(decodeBase64, text)).toEqual(outcome(decodeBase64Js, text));
      }),
      { numRuns: 3000 },
    );
  });

  it('decode: the cases a lenient decoder gets wrong are rejected (Buffer would accept each)', () => {
    setNativeBase64(bufferBase64);
    for (const text of ['QUJń', 'QŁJD', 'QU-D', 'QU_D', 'QUJD\n', 'QUJ=QUJD', 'QQ=', 'QUJDQ===', 'QUJD====', ' QUJD']) {
      expect(Buffer.from(text, 'base64').length, text).toBeGreaterThan(0);
      expect(() => decodeBase64(text), JSON.stringify(text)).toThrow(VoicewireError);
    }
    expect(() => decodeBase64(5 as never)).toThrow(/expected a string, got number/);
    expect(() => encodeBase64('x' as never)).toThrow(VoicewireError);
  });

  it('a platform-style strict decoder (TC39 Uint8Array.fromBase64 semantics: skips whitespace) agrees too', () => {
    // Node 20 has no Uint8Array.fromBase64: stand in a decoder with its documented leniency
    // (ASCII whitespace skipped, loose last chunk), strict about the alphabet.
    const tc39Like = {
      encode: (b: Uint8Array) => Buffer.from(b).toString('base64'),
      decode: (t: string) => {
        const s = t.replace(/[\t\n\f\r ]/g, '');
        if (/[^A-Za-z0-9+/=]/.test(s)) throw new SyntaxError('bad base64');
        return new Uint8Array(Buffer.from(s, 'base64'));
      },
    };
    setNativeBase64(tc39Like);
    fc.assert(
      fc.property(fc.oneof(nearBase64, fc.string({ maxLength: 24 })), (text) => {
        expect(outcome(decodeBase64, text)).toEqual(outcome(decodeBase64Js, text));
      }),
      { numRuns: 1000 },
    );
  });

  it('decoded bytes own their memory (no view of Buffer\'s shared pool)', () => {
    setNativeBase64(bufferBase64);
    const out = decodeBase64('QUJD');
    expect(out.buffer.byteLength).toBe(3);
    expect(Object.getPrototypeOf(out)).toBe(Uint8Array.prototype);
  });
});
