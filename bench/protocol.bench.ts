/**
 * Protocol hot paths (protocol-notes.md "Performance facts"):
 * - the TTS `audio` message of an 80 ms frame at 48 kHz (7680 bytes): hand-built line vs
 *   JSON.stringify (with Node's Buffer base64, the usual server code);
 * - base64 of that frame: voicewire (the Node entry registers Buffer's codec; the decoder also
 *   checks the input is strict base64) vs Node's Buffer vs its own JS fallback vs btoa;
 * - parsing an STT `audio` client message: validated parse vs bare JSON.parse;
 * - whole sessions through the runners with a no-op scripted engine: 1 s of STT audio in (12.5
 *   frames: parse, decode, frame, step out) and 1 s of TTS audio out (12.5 frames + words), as
 *   realtime factors.
 */
import {
  createScriptedSttEngine,
  createScriptedTtsEngine,
  createSttServerSession,
  createTtsServerSession,
  decodeBase64,
  encodeBase64,
  parseSttClientMessage,
  serializeTtsAudioMessage,
} from '../src/node/index.js'; // the Node entry: Buffer's base64 registered with the core
import { decodeBase64Js, encodeBase64Js } from '../src/util/base64.js';
import { runGroup, save, type GroupResult } from './util.js';

const frame = new Uint8Array(7680);
for (let i = 0; i < frame.length; i++) frame[i] = (i * 7919) & 255;
const b64 = Buffer.from(frame).toString('base64');
const fields = { start_s: 1.28, stop_s: 1.36, stream_id: 0, client_req_id: 'req-42' };
let sink = 0;

const groups: GroupResult[] = [];
groups.push(
  runGroup('TTS audio message, 80 ms at 48 kHz (7680 bytes), bytes → JSON line', [
    { name: 'voicewire serializeTtsAudioMessage', fn: () => (sink += serializeTtsAudioMessage(frame, fields).length) },
    { name: 'Buffer base64 + template string', fn: () => (sink += `{"type":"audio","audio":"${Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength).toString('base64')}","start_s":${fields.start_s},"stop_s":${fields.stop_s},"stream_id":${fields.stream_id},"client_req_id":${JSON.stringify(fields.client_req_id)}}`.length) },
    { name: 'JSON.stringify + Buffer base64', fn: () => (sink += JSON.stringify({ type: 'audio', audio: Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength).toString('base64'), ...fields }).length) },
  ], 0.08),
);
groups.push(
  runGroup('TTS audio message, base64 already computed → JSON line', [
    { name: 'voicewire serializeTtsAudioMessage', fn: () => (sink += serializeTtsAudioMessage(b64, fields).length) },
    { name: 'JSON.stringify', fn: () => (sink += JSON.stringify({ type: 'audio', audio: b64, ...fields }).length) },
  ], 0.08),
);
groups.push(
  runGroup('base64 encode 7680 bytes', [
    { name: 'voicewire encodeBase64', fn: () => (sink += encodeBase64(frame).length) },
    { name: 'Buffer.toString(base64)', fn: () => (sink += Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength).toString('base64').length) },
    { name: 'voicewire JS fallback (no native codec)', fn: () => (sink += encodeBase64Js(frame).length) },
    { name: 'btoa(String.fromCharCode)', fn: () => (sink += btoa(String.fromCharCode.apply(null, frame as unknown as number[])).length) },
  ], 0.08),
);
groups.push(
  runGroup('base64 decode 10240 characters', [
    { name: 'voicewire decodeBase64', fn: () => (sink += decodeBase64(b64).length) },
    { name: 'Buffer.from(base64)', fn: () => (sink += Buffer.from(b64, 'base64').length) },
    { name: 'voicewire JS fallback (no native codec)', fn: () => (sink += decodeBase64Js(b64).length) },
    { name: 'atob + charCodeAt loop', fn: () => {
      const s = atob(b64);
      const out = new Uint8Array(s.length);
      for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
      sink += out.length;
    } },
  ], 0.08),
);
const sttLine = JSON.stringify({ type: 'audio', audio: Buffer.alloc(3840).toString('base64'), client_req_id: 'a' });
groups.push(
  runGroup('STT audio client message (80 ms at 24 kHz), parse', [
    { name: 'voicewire parseSttClientMessage', fn: () => (sink += (parseSttClientMessage(sttLine) as { audio: string }).audio.length) },
    { name: 'JSON.parse (no validation)', fn: () => (sink += (JSON.parse(sttLine) as { audio: string }).audio.length) },
  ], 0.08),
);

// Whole sessions: one request per call, sync scripted engines (the model costs nothing).
const sttFrames = Array.from({ length: 25 }, () => JSON.stringify({ type: 'audio', audio: Buffer.alloc(1920).toString('base64') }));
const sttEngine = createScriptedSttEngine({ delayInFrames: 0 });
groups.push(
  runGroup('STT server session, 1 s of pcm in 40 ms messages (setup … end_of_stream)', [
    {
      name: 'voicewire createSttServerSession',
      fn: () => {
        const s = createSttServerSession({ engine: sttEngine, transport: { send: (t) => (sink += t.length), close: () => undefined }, requestId: () => 'r' });
        s.receive('{"type":"setup","input_format":"pcm"}');
        for (const f of sttFrames) s.receive(f);
        s.receive('{"type":"end_of_stream"}');
      },
    },
  ], 1),
);
const words = 'one two three four five six seven eight nine ten eleven twelve'.split(' ');
const ttsEngine = createScriptedTtsEngine({ lookaheadWords: 1 });
groups.push(
  runGroup('TTS server session, 12 words → 12 frames of pcm (0.96 s)', [
    {
      name: 'voicewire createTtsServerSession',
      fn: () => {
        const s = createTtsServerSession({ engine: ttsEngine, transport: { send: (t) => (sink += t.length), close: () => undefined }, requestId: () => 'r' });
        s.receive('{"type":"setup","output_format":"pcm"}');
        for (const w of words) s.receive(`{"type":"text","text":"${w}"}`);
        s.receive('{"type":"end_of_stream"}');
      },
    },
  ], 0.96),
);
if (sink === 42) console.log('');
save('protocol', groups);
