/**
 * A TTS `audio` message (§4.5) written once into one buffer, as the UTF-8 bytes of its text frame
 * (issue 34): the line's head, the base64 straight from the audio bytes, then the fields. The
 * string path ({@link serializeTtsAudioMessage}) made a base64 string, then the line's string,
 * then the socket its Buffer: three copies and three objects of ~10 kB per 80 ms frame, most of a
 * loaded server's garbage. Byte-identical to the UTF-8 of `serializeTtsAudioMessage(audio, fields)`
 * (test/protocol/audio-line.test.ts). Platform-neutral: a platform's fast base64 comes in through
 * `setNativeBase64`'s `encodeInto` (src/node/base64.ts on Node).
 */
import { base64Length, encodeBase64Into } from '../util/base64.js';
import { VoicewireError } from '../util/errors.js';
import { TTS_AUDIO_HEAD, ttsAudioTail, type TtsAudioFields } from './parse.js';

const UTF8 = new TextEncoder();
const HEAD = UTF8.encode(TTS_AUDIO_HEAD);

/**
 * Encodes a TTS `audio` message for `audio` (the output format's bytes) with `fields` as the UTF-8
 * bytes of its text frame: equal to `new TextEncoder().encode(serializeTtsAudioMessage(audio, fields))`.
 * The result is a fresh array the caller may hand to a socket as is.
 */
export function encodeTtsAudioLine(audio: Uint8Array, fields: TtsAudioFields = {}): Uint8Array {
  if (!(audio instanceof Uint8Array)) throw new VoicewireError('INVALID_ARGUMENT', 'encodeTtsAudioLine: audio must be a Uint8Array');
  if (fields === null || typeof fields !== 'object') throw new VoicewireError('INVALID_ARGUMENT', 'encodeTtsAudioLine: fields must be an object');
  const tail = ttsAudioTail(fields);
  const b64 = base64Length(audio.length);
  const tailAt = HEAD.length + b64;
  // The tail is ASCII but for a client_req_id's own characters: each UTF-16 unit is at most 3 bytes.
  const out = new Uint8Array(tailAt + (fields.client_req_id === undefined ? tail.length : tail.length * 3));
  out.set(HEAD, 0);
  encodeBase64Into(audio, out, HEAD.length);
  const { written } = UTF8.encodeInto(tail, out.subarray(tailAt));
  const end = tailAt + written;
  return end === out.length ? out : out.subarray(0, end);
}
