/**
 * The agent's clock through voicewire/livekit (issue 33 item 3), against the built `voicewire
 * serve` with its default engines (espeak-ng, pocketsphinx; step messages from the WebRTC VAD):
 *
 * - TTS: an LLM answer arrives as tokens, one every TOKEN_MS (about 33 tokens/s, a hosted LLM's
 *   pace). Through the plugin each token is pushed as it comes; through the OpenAI door
 *   (`POST /v1/audio/speech`, what LiveKit's OpenAI plugin calls) the text can only go once the
 *   answer is complete. Measured: first token → first audio (frame, or first body byte), ms.
 * - STT: the LibriVox clip then silence, pushed as 20 ms frames at real time (a room's pace).
 *   Measured: end of the speaker's audio → FINAL_TRANSCRIPT (the plugin's turn-taking on the
 *   service's steps), and, for comparison, the OpenAI door's `POST /v1/audio/transcriptions` of the
 *   same clip sent at that moment (which needs a client-side end-of-turn decision it does not
 *   have: a lower bound).
 *
 *   npm run build && npx tsx bench/livekit-clock.ts            # 5 rounds
 *   npx tsx bench/livekit-clock.ts --short                     # 2 rounds
 *   npx tsx bench/livekit-clock.ts --silero                    # steps from Silero VAD (serve --vad-model)
 *
 * Rounds interleave the two paths; p50 and max over rounds. A 2-core machine shared with other
 * work: read the ratios, not the absolute milliseconds.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';
import { initializeLogger, stt as lkstt, tts as lktts } from '@livekit/agents';
import { AudioFrame } from '@livekit/rtc-node';
import { STT, TTS } from '../src/livekit/index.js';
import { resampleInt16 } from '../src/audio/resampler.js';
import { fetchFresh, startBuiltServer } from '../test/product/built-server.js';
import { quantile } from './util.js';

initializeLogger({ pretty: false, level: 'warn' });
const rounds = process.argv.includes('--short') ? 2 : 5;
const TOKEN_MS = 30;
const ANSWER =
  'Sure, I can help with that. Your order shipped this morning and should arrive on Thursday. Would you like me to send the tracking number to your email?';
// Tokens as an LLM cuts them: words and pieces of words with their spaces.
const TOKENS = ANSWER.match(/\s?\S{1,4}/g)!;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const dir = mkdtempSync(join(tmpdir(), 'vw-livekit-clock-'));
// --silero: the server's steps (so the plugin's end of turn) come from the real Silero VAD (issue 33).
const silero = process.argv.includes('--silero') ? join(dirname(createRequire(import.meta.url).resolve('@livekit/agents-plugin-silero')), 'silero_vad.onnx') : undefined;
const s = await startBuiltServer({ dataDir: join(dir, 'data'), maxRssBytes: 2 * 2 ** 30, args: silero === undefined ? [] : ['--vad-model', silero] });

async function pluginTts(tts: TTS): Promise<number> {
  const stream = tts.stream();
  const t0 = performance.now();
  const feeding = (async () => {
    for (const token of TOKENS) {
      stream.pushText(token);
      await sleep(TOKEN_MS);
    }
    stream.endInput();
  })();
  let first = NaN;
  for await (const a of stream) {
    if (a === lktts.SynthesizeStream.END_OF_STREAM) break;
    if (Number.isNaN(first)) first = performance.now() - t0;
  }
  await feeding;
  return first;
}

async function openaiTts(): Promise<number> {
  const t0 = performance.now();
  // The door takes the whole text: the answer must be complete first.
  for (let i = 0; i < TOKENS.length; i++) await sleep(TOKEN_MS);
  const r = await fetchFresh(s.base.replace(/\/api$/, '/v1/audio/speech'), {
    method: 'POST',
    headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'tts-1', voice: 'alloy', input: ANSWER, response_format: 'pcm' }),
  });
  const reader = r.body!.getReader();
  await reader.read();
  const first = performance.now() - t0;
  while (!(await reader.read()).done);
  return first;
}

const wav = readFileSync(new URL('../fixtures/speech/librivox-0880.wav', import.meta.url));
const clip16k = new Int16Array(wav.buffer.slice(wav.byteOffset + 44, wav.byteOffset + wav.length));
const RATE = 48000;
const clip = resampleInt16(clip16k, 16000, RATE);
const FRAME = RATE / 50;

async function pluginStt(stt: STT): Promise<number> {
  const stream = stt.stream();
  const audio = new Int16Array(clip.length + RATE * 5);
  audio.set(clip);
  let speechEnd = NaN;
  let finalAt = NaN;
  let done = false;
  const start = performance.now();
  const reading = (async () => {
    for await (const e of stream) {
      if (e.type === lkstt.SpeechEventType.FINAL_TRANSCRIPT && Number.isNaN(finalAt)) finalAt = performance.now();
      if (e.type === lkstt.SpeechEventType.END_OF_SPEECH) done = true;
    }
  })();
  for (let i = 0; i + FRAME <= audio.length && !done; i += FRAME) {
    // Real time: frame i goes out when its audio would have been captured.
    const due = start + ((i + FRAME) / RATE) * 1000;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    stream.pushFrame(new AudioFrame(audio.slice(i, i + FRAME), RATE, 1, FRAME));
    if (i + FRAME >= clip.length && Number.isNaN(speechEnd)) speechEnd = performance.now();
  }
  stream.endInput();
  await reading;
  return finalAt - speechEnd;
}

async function openaiStt(): Promise<number> {
  const form = new FormData();
  form.append('file', new Blob([wav], { type: 'audio/wav' }), 'clip.wav');
  form.append('model', 'whisper-1');
  const t0 = performance.now();
  const r = await fetch(s.base.replace(/\/api$/, '/v1/audio/transcriptions'), { method: 'POST', headers: { authorization: `Bearer ${s.key}` }, body: form });
  await r.text();
  return performance.now() - t0;
}

const tts = new TTS({ baseUrl: s.base, apiKey: s.key });
const stt = new STT({ baseUrl: s.base, apiKey: s.key });
stt.on('error', (e) => console.error(`STT error: ${e.error.message}`));
tts.on('error', (e) => console.error(`TTS error: ${e.error.message}`));
const results: Record<string, number[]> = { 'TTS plugin: first token → first frame': [], 'TTS OpenAI door: first token → first byte': [], 'STT plugin: end of speech → final transcript': [], 'STT OpenAI door: upload at end of speech → text': [] };
const [a, b, c, d] = Object.values(results);
try {
  // One warm-up of each (engines, sockets), not counted.
  await pluginTts(tts);
  await openaiTts();
  for (let i = 0; i < rounds; i++) {
    a!.push(await pluginTts(tts));
    b!.push(await openaiTts());
    c!.push(await pluginStt(stt));
    d!.push(await openaiStt());
  }
} finally {
  await tts.close();
  await stt.close();
  await s.stop();
  rmSync(dir, { recursive: true, force: true });
}
console.log(`steps from ${silero === undefined ? 'the WebRTC VAD' : 'Silero VAD'}`);
console.log(`${TOKENS.length} tokens at ${TOKEN_MS} ms (${((TOKENS.length * TOKEN_MS) / 1000).toFixed(2)} s of LLM output); LibriVox clip ${(clip16k.length / 16000).toFixed(2)} s + silence at real time; ${rounds} rounds`);
for (const [name, xs] of Object.entries(results)) console.log(`${name.padEnd(50)} p50 ${quantile(xs, 0.5).toFixed(0).padStart(5)} ms   max ${Math.max(...xs).toFixed(0).padStart(5)} ms`);
console.log(`TTS: the plugin's first audio comes ${(quantile(b!, 0.5) / quantile(a!, 0.5)).toFixed(1)}× sooner than the OpenAI door's`);
