/**
 * The agent's clock (issue 32 item 3): what a voice agent waits for, through each door of the
 * built server (`node dist/cli.js serve`, espeak-ng and pocketsphinx), beside the same engines
 * called in process.
 *
 *   npm run build && npx tsx bench/agent-clock.ts [--rounds 15] [--save]
 *
 * - **End of speech → final transcript.** A sentence said by the server's TTS is streamed in
 *   real time (80 ms chunks every 80 ms), then silence in real time; the clock starts when the
 *   last chunk of speech is sent and stops at the final transcript:
 *   - native WebSocket `/api/speech/asr`, turn-taking as the SDK does it (the `step`
 *     predictions' 2 s horizon above 0.5, then `delay_in_frames` silent frames at once and a
 *     `flush`; final = `flushed`);
 *   - native WebSocket, the client's own VAD knowing the end (a `flush` right at the end);
 *   - `/v1/realtime`, `server_vad` (OpenAI's defaults: threshold 0.5, silence 500 ms; final =
 *     `…transcription.completed`);
 *   - `/v1/realtime`, `turn_detection: null` and a commit right at the end (LiveKit's plugin
 *     with its own VAD);
 *   - in process: the pocketsphinx engine given the last speech frame, then its
 *     `delay_in_frames` silent frames and `end()` (the engine's own floor).
 * - **Text → first audio byte**, the socket or connection already open where the door allows:
 *   native WebSocket `/api/speech/tts` (text with `<flush>` after `ready` → first `audio`),
 *   `POST /v1/audio/speech` `stream_format: "sse"` (→ first `speech.audio.delta`), the same
 *   without SSE (→ first body byte), and the espeak-ng engine in process (open, text, flush → first frame).
 *
 * Rounds run one after another (one client: an agent's own latency, not a load figure); p50 and
 * p99 (with 15 rounds the p99 is the worst round) in milliseconds of wall time.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { startBuiltServer, type BuiltServer } from '../test/product/built-server.js';
import { createTurnTaking } from '../src/sessions/turn-taking.js';
import { createPocketsphinxSttEngine } from '../src/engines/pocketsphinx-stt.js';
import { createEspeakTtsEngine } from '../src/engines/espeak-tts.js';
import { catalogVoices } from '../src/engines/espeak-voices.js';
import { quantile, save, stopWithBench } from './util.js';

const SENTENCE = 'Please call me tomorrow morning.';
const FRAME_BYTES = 3840; // 80 ms of 24 kHz s16le
const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? fallback : Number(process.argv[i + 1]);
};
const ROUNDS = arg('rounds', 15);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, ms)));

/** A socket whose messages can be awaited. */
function socket(url: string, headers: Record<string, string>): { ws: WebSocket; next: (pred: (m: Record<string, unknown>) => boolean) => Promise<Record<string, unknown>>; on: (f: (m: Record<string, unknown>) => void) => void; open: Promise<void> } {
  const ws = new WebSocket(url, { headers });
  const seen: Array<Record<string, unknown>> = [];
  const waiters: Array<[(m: Record<string, unknown>) => boolean, (m: Record<string, unknown>) => void]> = [];
  const listeners: Array<(m: Record<string, unknown>) => void> = [];
  ws.on('message', (d) => {
    const m = JSON.parse(String(d)) as Record<string, unknown>;
    seen.push(m);
    for (const f of listeners) f(m);
    for (const w of [...waiters]) if (w[0](m)) (waiters.splice(waiters.indexOf(w), 1), w[1](m));
  });
  return {
    ws,
    open: new Promise((resolve, reject) => (ws.once('open', () => resolve()), ws.once('error', reject))),
    on: (f) => void listeners.push(f),
    next: (pred) =>
      new Promise((resolve, reject) => {
        const hit = seen.find(pred);
        if (hit) return resolve(hit);
        const t = setTimeout(() => reject(new Error(`no awaited message in 30 s (${url})`)), 30_000);
        waiters.push([pred, (m) => (clearTimeout(t), resolve(m))]);
      }),
  };
}

/** Sends `audio` in 80 ms chunks every 80 ms (drift-corrected); resolves with the time the last was sent. */
async function realTime(audio: Buffer, send: (chunk: Buffer) => void, stop: () => boolean = () => false): Promise<number> {
  const t0 = performance.now();
  let last = t0;
  for (let i = 0, k = 0; i < audio.length && !stop(); i += FRAME_BYTES, k++) {
    await sleep(t0 + k * 80 - performance.now());
    send(audio.subarray(i, i + FRAME_BYTES));
    last = performance.now();
  }
  return last;
}

/** Native STT WebSocket: `turn` (the SDK's turn-taking) or `flush` (flush at the end of speech). */
async function nativeStt(s: BuiltServer, speech: Buffer, mode: 'turn' | 'flush'): Promise<number> {
  const c = socket(`${s.wsBase}/speech/asr`, { 'x-api-key': s.key });
  await c.open;
  c.ws.send(JSON.stringify({ type: 'setup', input_format: 'pcm', close_ws_on_eos: false }));
  const ready = await c.next((m) => m['type'] === 'ready');
  const tt = createTurnTaking({ inputFormat: 'pcm' });
  tt.ready(ready as never);
  const audio = (b: Buffer | Uint8Array): void => c.ws.send(JSON.stringify({ type: 'audio', audio: Buffer.from(b).toString('base64') }));
  let speechEnd = Infinity;
  let flushed = false;
  c.on((m) => {
    if (mode !== 'turn' || flushed || m['type'] !== 'step') return;
    const d = tt.step(m as never);
    // A turn that ends before the speech does is a pause inside the sentence.
    if (tt.turnEnded && performance.now() > speechEnd && !flushed) {
      void d;
      flushed = true;
      for (const f of tt.silenceFrames()) audio(f);
      c.ws.send(JSON.stringify({ type: 'flush', flush_id: 1 }));
    }
  });
  speechEnd = await realTime(speech, audio);
  if (mode === 'flush') {
    flushed = true;
    c.ws.send(JSON.stringify({ type: 'flush', flush_id: 1 }));
  } else void realTime(Buffer.alloc(FRAME_BYTES * 50), audio, () => flushed);
  await c.next((m) => m['type'] === 'flushed');
  const t = performance.now() - speechEnd;
  c.ws.close();
  return t;
}

/** /v1/realtime: `vad` (server_vad, OpenAI's defaults) or `commit` (manual, committed at the end). */
async function realtimeStt(s: BuiltServer, speech: Buffer, mode: 'vad' | 'commit'): Promise<number> {
  const c = socket(`${s.wsBase.replace(/\/api$/, '/v1')}/realtime?intent=transcription&model=gpt-4o-transcribe`, { authorization: `Bearer ${s.key}` });
  await c.open;
  c.ws.send(JSON.stringify({ type: 'session.update', session: { type: 'transcription', audio: { input: { format: { type: 'audio/pcm', rate: 24000 }, transcription: { language: 'en' }, turn_detection: mode === 'vad' ? { type: 'server_vad' } : null } } } }));
  await c.next((m) => m['type'] === 'session.updated');
  const append = (b: Buffer): void => c.ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: b.toString('base64') }));
  const speechEnd = await realTime(speech, append);
  let done = false;
  if (mode === 'commit') c.ws.send(JSON.stringify({ type: 'input_audio_buffer.commit' }));
  else void realTime(Buffer.alloc(FRAME_BYTES * 50), append, () => done);
  await c.next((m) => m['type'] === 'conversation.item.input_audio_transcription.completed');
  done = true;
  const t = performance.now() - speechEnd;
  c.ws.close();
  return t;
}

/** pocketsphinx in process: after the last speech frame, the delay's silent frames and end() → the last word. */
async function engineStt(speech: Buffer): Promise<number> {
  const s = await createPocketsphinxSttEngine().open({ modelName: 'default', inputFormat: 'pcm', jsonConfig: {} }, () => {});
  const pcm = new Int16Array(speech.buffer.slice(speech.byteOffset, speech.byteOffset + speech.length - (speech.length % FRAME_BYTES)));
  for (let i = 0; i + 1920 <= pcm.length; i += 1920) await s.push(pcm.subarray(i, i + 1920));
  const t0 = performance.now();
  for (let i = 0; i < s.info.delayInFrames; i++) await s.push(new Int16Array(1920));
  await s.end?.();
  const t = performance.now() - t0;
  s.close();
  return t;
}

/** Native TTS WebSocket: after `ready`, the text with `<flush>` → the first `audio`. */
async function nativeTts(s: BuiltServer): Promise<number> {
  const c = socket(`${s.wsBase}/speech/tts`, { 'x-api-key': s.key });
  await c.open;
  c.ws.send(JSON.stringify({ type: 'setup', output_format: 'pcm' }));
  await c.next((m) => m['type'] === 'ready');
  const t0 = performance.now();
  c.ws.send(JSON.stringify({ type: 'text', text: `${SENTENCE} <flush>` }));
  await c.next((m) => m['type'] === 'audio');
  const t = performance.now() - t0;
  c.ws.close();
  return t;
}

/** POST /v1/audio/speech (pcm): the first SSE delta, or the first body byte. */
async function openAISpeech(s: BuiltServer, sse: boolean): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${s.base.replace(/\/api$/, '/v1')}/audio/speech`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini-tts', voice: 'alloy', input: SENTENCE, response_format: 'pcm', ...(sse ? { stream_format: 'sse' } : {}) }),
  });
  const reader = res.body!.getReader();
  let text = '';
  for (;;) {
    const r = await reader.read();
    if (r.done) throw new Error('no audio');
    if (!sse) break;
    text += Buffer.from(r.value).toString();
    if (text.includes('"speech.audio.delta"')) break;
  }
  const t = performance.now() - t0;
  await reader.cancel();
  return t;
}

/** espeak-ng in process: open, text, flush → the first frame. */
async function engineTts(): Promise<number> {
  const voices = catalogVoices();
  const engine = createEspeakTtsEngine({ resolveVoice: async (id: string | null) => voices.find((v) => v.uid === id) ?? voices[0], resolvePronunciation: async () => undefined } as never);
  const t0 = performance.now();
  let first = 0;
  const s = await engine.open({ modelName: 'default', outputFormat: 'pcm', jsonConfig: {}, voiceId: voices[0]!.uid } as never, (e) => {
    if (e.type === 'audio' && first === 0) first = performance.now() - t0;
  });
  await s.text(SENTENCE);
  await s.flush();
  await s.end?.();
  s.close();
  return first;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'voicewire-agent-clock-'));
  const s = await startBuiltServer({ dataDir: join(dir, 'data'), maxRssBytes: 3 * 2 ** 30 });
  stopWithBench(s.child);
  try {
    const r = await fetch(`${s.base.replace(/\/api$/, '/v1')}/audio/speech`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tts-1', voice: 'alloy', input: SENTENCE, response_format: 'pcm' }),
    });
    const speech = Buffer.from(await r.arrayBuffer());
    const cases: Array<[string, string, () => Promise<number>]> = [
      ['stt', 'native WS /api/speech/asr, turn-taking (2 s horizon > 0.5) + silence + flush', () => nativeStt(s, speech, 'turn')],
      ['stt', 'native WS /api/speech/asr, flush at the end (client VAD)', () => nativeStt(s, speech, 'flush')],
      ['stt', '/v1/realtime server_vad (threshold 0.5, silence 500 ms)', () => realtimeStt(s, speech, 'vad')],
      ['stt', '/v1/realtime turn_detection null, commit at the end (client VAD)', () => realtimeStt(s, speech, 'commit')],
      ['stt', 'pocketsphinx in process: delay frames + end()', () => engineStt(speech)],
      ['tts', 'native WS /api/speech/tts: text <flush> → first audio', () => nativeTts(s)],
      ['tts', 'POST /v1/audio/speech stream_format sse → first delta', () => openAISpeech(s, true)],
      ['tts', 'POST /v1/audio/speech (pcm body) → first byte', () => openAISpeech(s, false)],
      ['tts', 'espeak-ng in process: open, text, flush → first frame', () => engineTts()],
    ];
    // One warm-up round of each (engines load, connections open).
    for (const [, , f] of cases) await f();
    const times = cases.map(() => [] as number[]);
    // Interleaved rounds: a slow minute of the machine weighs on every door alike.
    for (let round = 0; round < ROUNDS; round++) for (let i = 0; i < cases.length; i++) times[i]!.push(await cases[i]![2]());
    const rows = cases.map(([kind, name], i) => ({ kind, name, p50: Math.round(quantile(times[i]!, 0.5)), p99: Math.round(quantile(times[i]!, 0.99)), rounds: ROUNDS }));
    console.log(`speech: ${(speech.length / 48000).toFixed(2)} s ("${SENTENCE}"), ${ROUNDS} rounds, ms of wall time`);
    for (const kind of ['stt', 'tts']) {
      console.log(kind === 'stt' ? '\nend of speech → final transcript' : '\ntext → first audio byte');
      console.log('| door | p50 ms | p99 ms |\n|---|---|---|');
      for (const row of rows.filter((x) => x.kind === kind)) console.log(`| ${row.name} | ${row.p50} | ${row.p99} |`);
    }
    save('agent-clock', rows);
  } finally {
    await s.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
