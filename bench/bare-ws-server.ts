/**
 * The limit bench/limit.ts measures voicewire against (issue 22): a bare `ws` server that speaks
 * the TTS WebSocket protocol (§4.5) and does nothing else — no auth, store, engine, metrics or
 * limits. `setup` → `ready`; each word of a `text` → its 80 ms frames as pre-serialized `audio`
 * lines (the tone engine's count: 2 silent frames between words, one tone per character, PCM
 * 48 kHz); `end_of_stream` → `end_of_stream` and a 1000 close (`close_ws_on_eos` default).
 *
 * The lines are built once (a tone per character at phase 0, base64 by Buffer): the cost left is
 * what any server pays to parse the client's messages and write frames to sockets. They carry no
 * timestamps (voicewire's carry `start_s`/`stop_s`, ~30 bytes more of 10.3 kB) and there are no
 * word `text` messages: the minimum the protocol needs to deliver the audio.
 *
 * Prints `listening on http://127.0.0.1:PORT/api` once bound; SIGTERM stops it.
 */
import { randomUUID } from 'node:crypto';
import { WebSocketServer } from 'ws';
import { TONE_ALPHABET, TONE_BASE_HZ, TONE_STEP_HZ } from '../src/engines/tone.js';

const RATE = 48000;
const FRAME = 3840;
const line = (pcm: Int16Array): Buffer =>
  Buffer.from(`{"type":"audio","audio":"${Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength).toString('base64')}","stream_id":0}`);
const silence = line(new Int16Array(FRAME));
const tones = [...TONE_ALPHABET].map((_, i) => {
  const w = (2 * Math.PI * (TONE_BASE_HZ + i * TONE_STEP_HZ)) / RATE;
  const pcm = new Int16Array(FRAME);
  for (let n = 0; n < FRAME; n++) pcm[n] = Math.round(8000 * Math.sin(w * n));
  return line(pcm);
});
const toneOf = (c: string): Buffer => tones[TONE_ALPHABET.indexOf(c) < 0 ? TONE_ALPHABET.length - 1 : TONE_ALPHABET.indexOf(c)]!;
const ready = (): string => `{"type":"ready","request_id":"${randomUUID()}","model_name":"tone","sample_rate":48000,"frame_size":3840,"audio_stream_names":["main"],"text_stream_names":["main"]}`;
const EOS = Buffer.from('{"type":"end_of_stream"}');

const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, maxPayload: 1 << 20 });
wss.on('connection', (ws) => {
  let spoken = 0;
  let pending = '';
  const say = (word: string): void => {
    if (word === '') return;
    if (spoken++ > 0) for (let i = 0; i < 2; i++) ws.send(silence);
    for (const c of word.toLowerCase()) ws.send(toneOf(c));
  };
  ws.on('message', (data) => {
    let m: { type?: string; text?: string };
    try {
      m = JSON.parse(String(data)) as typeof m;
    } catch {
      ws.close(1008);
      return;
    }
    if (m.type === 'setup') ws.send(ready());
    else if (m.type === 'text' && typeof m.text === 'string') {
      // As the tone engine: the last word waits for whitespace (it may continue in the next piece).
      const words = (pending + m.text).split(/\s+/);
      pending = words.pop()!;
      for (const w of words) say(w);
    } else if (m.type === 'end_of_stream') {
      say(pending);
      pending = '';
      ws.send(EOS, () => ws.close(1000));
    }
  });
  ws.on('error', () => undefined);
});
wss.on('listening', () => {
  const { port } = wss.address() as { port: number };
  process.stdout.write(`listening on http://127.0.0.1:${port}/api\n`);
});
process.once('SIGTERM', () => {
  for (const c of wss.clients) c.terminate();
  wss.close(() => process.exit(0));
});
