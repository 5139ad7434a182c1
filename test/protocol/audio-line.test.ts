/**
 * The one-buffer `audio` line (issue 34, src/protocol/audio-line.ts) against the string path it
 * replaces on the server: byte for byte on random frames and fields, with each base64 backend.
 */
import { afterEach, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { encodeTtsAudioLine } from '../../src/protocol/audio-line.js';
import { serializeTtsAudioMessage, type TtsAudioFields } from '../../src/protocol/parse.js';
import { setNativeBase64 } from '../../src/util/base64.js';
import { bufferBase64 } from '../../src/node/base64.js';

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

const fields: fc.Arbitrary<TtsAudioFields> = fc.record(
  {
    start_s: fc.oneof(fc.double(), fc.integer(), fc.constant(0.08 * 3)),
    stop_s: fc.oneof(fc.double(), fc.double({ min: 0, max: 600, noNaN: true })),
    stream_id: fc.oneof(fc.constant(null), fc.integer(), fc.double()),
    // Quotes, backslashes, control characters, non-ASCII and lone surrogates: JSON.stringify escapes some, UTF-8 takes the rest.
    client_req_id: fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.constantFrom('a"b\\c\n', '\ud800x', 'é€😀')),
  },
  { requiredKeys: [] },
);

describe('encodeTtsAudioLine', () => {
  afterEach(() => setNativeBase64(bufferBase64));

  for (const backend of ['Buffer (src/node/base64.ts)', 'platform or JS'] as const) {
    it(`equals the UTF-8 of serializeTtsAudioMessage on random frames, base64 by ${backend}`, () => {
      setNativeBase64(backend === 'platform or JS' ? null : bufferBase64);
      fc.assert(
        fc.property(fc.uint8Array({ maxLength: 8000 }), fields, (audio, f) => {
          expect(Buffer.from(encodeTtsAudioLine(audio, f)).equals(Buffer.from(utf8(serializeTtsAudioMessage(audio, f))))).toBe(true);
        }),
        { numRuns: 300 },
      );
    });
  }

  it('equals it for an 80 ms frame at 48 kHz and every length mod 3 (the padding)', () => {
    for (const n of [0, 1, 2, 3, 3839, 3840, 3841]) {
      const audio = Uint8Array.from({ length: n }, (_, i) => (i * 7919) & 255);
      const f = { start_s: 0.16, stop_s: 0.24, stream_id: 0, client_req_id: 'r1' };
      expect(Buffer.from(encodeTtsAudioLine(audio, f)).toString('latin1')).toBe(serializeTtsAudioMessage(audio, f));
    }
  });
});
