/**
 * The load generator of bench/load.ts, in a process of its own so its CPU is not the server's:
 * real sockets (`ws`, `fetch`) against a running `voicewire serve`, a realistic mix held at a
 * target concurrency that ramps step by step:
 *
 * - TTS WebSocket sessions (share `tts`): 10–40 words (sentences of 6–10) sent one word at a time at speaking pace
 *   (150 words a minute), then `end_of_stream`; time to first audio from the first word sent.
 * - STT WebSocket sessions (share `stt`): a tone-engine clip streamed in 80 ms chunks at real
 *   time; one in three carries two multiplexed requests (`client_req_id`); time to first text
 *   from the first chunk sent.
 * - HTTP TTS (the rest): POST /post/speech/tts of 10–40 words; time to first body byte.
 *
 * Sessions started in the first second of a step (the jump to the new target, a burst no real
 * traffic has) are run but not timed.
 *
 * Argument: one JSON {@link ClientConfig}. Prints one JSON line per step ({@link StepReport});
 * stops after the first step whose p99 time to first audio is over `p99LimitMs` or that saw an
 * error, or after the last step.
 */
import { readFileSync } from 'node:fs';
import { WebSocket } from 'ws';

export interface ClientConfig {
  base: string;
  keys: string[];
  format: string;
  steps: number[];
  stepMs: number;
  p99LimitMs: number;
  /** Raw s16le 24 kHz mono clip the STT sessions stream. */
  clipPath: string;
  mix: { tts: number; stt: number };
}

export interface StepReport {
  concurrency: number;
  live: number;
  started: number;
  ttfa: number[];
  ttft: number[];
  errors: number;
  errorSamples: string[];
  over: boolean;
}

const cfg = JSON.parse(process.argv[2]!) as ClientConfig;
const wsBase = cfg.base.replace(/^http/, 'ws');
const clip = readFileSync(cfg.clipPath);
const CHUNK = 3840; // 80 ms of 24 kHz s16 mono
const WORD_MS = 400; // 150 words a minute
const WORDS = 'the quick brown fox jumps over a lazy dog while seven bright stars shine above quiet hills and rivers'.split(' ');

let keyIndex = 0;
const nextKey = (): string => cfg.keys[keyIndex++ % cfg.keys.length]!;
let seed = 12345;
const rand = (): number => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
/** 10–40 words in sentences of 6–10 (text as an LLM streams it has punctuation; espeak speaks per sentence). */
const words = (): string[] => {
  const n = 10 + Math.floor(rand() * 31);
  let untilStop = 6 + Math.floor(rand() * 5);
  return Array.from({ length: n }, (_, i) => {
    const w = WORDS[(i + Math.floor(rand() * 100)) % WORDS.length]!;
    if (--untilStop > 0 && i < n - 1) return w;
    untilStop = 6 + Math.floor(rand() * 5);
    return `${w}.`;
  });
};

/** Sessions started in a step's first second (the generator's jump to the new target) are not timed: steady state only. */
const RAMP_MS = 1000;
let stepStart = 0;
const timed = (): boolean => performance.now() >= stepStart + RAMP_MS;
let step: StepReport = fresh(0);
let live = 0;
let target = 0;
let stopping = false;
const sockets = new Set<WebSocket>();

/**
 * A timed session's wait for its first output, kept in the step it started in. A wait still open
 * when that step ends counts as its length so far (a lower bound): a first output that comes late,
 * or never, weighs on its step instead of vanishing from it (which made a slow engine look fast).
 */
interface Wait {
  list: number[];
  t0: number;
}
const openWaits = new Set<Wait>();

function startWait(list: number[]): Wait {
  const w = { list, t0: performance.now() };
  openWaits.add(w);
  return w;
}

function endWait(w: Wait | undefined): void {
  if (w === undefined || !openWaits.delete(w)) return;
  w.list.push(performance.now() - w.t0);
}

function closeWaits(s: StepReport): void {
  for (const w of openWaits) if (w.list === s.ttfa || w.list === s.ttft) endWait(w);
}

function fresh(concurrency: number): StepReport {
  return { concurrency, live: 0, started: 0, ttfa: [], ttft: [], errors: 0, errorSamples: [], over: false };
}
function fail(what: string): void {
  if (stopping) return;
  step.errors++;
  if (step.errorSamples.length < 5) step.errorSamples.push(what.slice(0, 200));
}

function ttsWs(done: () => void): void {
  const ws = new WebSocket(`${wsBase}/speech/tts`, { headers: { 'x-api-key': nextKey() } });
  sockets.add(ws);
  const list = words();
  let wait: Wait | undefined;
  let timer: NodeJS.Timeout | undefined;
  const first = timed();
  ws.on('open', () => {
    ws.send(JSON.stringify({ type: 'setup', output_format: cfg.format }));
    let i = 0;
    const sendWord = (): void => {
      if (ws.readyState !== ws.OPEN) return;
      if (i === 0 && first) wait = startWait(step.ttfa);
      ws.send(JSON.stringify({ type: 'text', text: `${list[i]} ` }));
      i++;
      if (i < list.length) timer = setTimeout(sendWord, WORD_MS);
      else ws.send(JSON.stringify({ type: 'end_of_stream' }));
    };
    sendWord();
  });
  ws.on('message', (data) => {
    const s = String(data);
    if (s.startsWith('{"type":"audio"')) endWait(wait);
    else if (s.startsWith('{"type":"error"')) fail(`tts ws: ${s}`);
  });
  ws.on('error', (e) => fail(`tts ws: ${e.message}`));
  ws.on('close', (code) => {
    clearTimeout(timer);
    sockets.delete(ws);
    if (code !== 1000 && !stopping) fail(`tts ws closed ${code}`);
    done();
  });
}

function sttWs(done: () => void): void {
  const ws = new WebSocket(`${wsBase}/speech/asr`, { headers: { 'x-api-key': nextKey() } });
  sockets.add(ws);
  const ids = rand() < 1 / 3 ? ['a', 'b'] : [undefined];
  let wait: Wait | undefined;
  const first = timed();
  let timer: NodeJS.Timeout | undefined;
  let ended = 0;
  ws.on('open', () => {
    for (const id of ids) ws.send(JSON.stringify({ type: 'setup', input_format: 'pcm', close_ws_on_eos: ids.length === 1, ...(id ? { client_req_id: id } : {}) }));
    let o = 0;
    const start = performance.now();
    const sendChunk = (): void => {
      if (ws.readyState !== ws.OPEN) return;
      if (o === 0 && first) wait = startWait(step.ttft);
      const audio = clip.subarray(o, o + CHUNK).toString('base64');
      for (const id of ids) ws.send(JSON.stringify({ type: 'audio', audio, ...(id ? { client_req_id: id } : {}) }));
      o += CHUNK;
      if (o < clip.length) {
        // Real time against the start, so timer slack does not accumulate.
        timer = setTimeout(sendChunk, Math.max(0, start + (o / CHUNK) * 80 - performance.now()));
      } else for (const id of ids) ws.send(JSON.stringify({ type: 'end_of_stream', ...(id ? { client_req_id: id } : {}) }));
    };
    sendChunk();
  });
  ws.on('message', (data) => {
    const s = String(data);
    if (s.startsWith('{"type":"text"')) endWait(wait);
    else if (s.startsWith('{"type":"error"')) fail(`stt ws: ${s}`);
    else if (ids.length > 1 && s.startsWith('{"type":"end_of_stream"') && ++ended === ids.length) ws.close(1000);
  });
  ws.on('error', (e) => fail(`stt ws: ${e.message}`));
  ws.on('close', (code) => {
    clearTimeout(timer);
    sockets.delete(ws);
    if (code !== 1000 && code !== 1005 && !stopping) fail(`stt ws closed ${code}`);
    done();
  });
}

function httpTts(done: () => void): void {
  const wait = timed() ? startWait(step.ttfa) : undefined;
  const ac = new AbortController();
  void (async () => {
    try {
      const r = await fetch(`${cfg.base}/post/speech/tts`, {
        method: 'POST',
        headers: { 'x-api-key': nextKey() },
        body: JSON.stringify({ text: words().join(' '), output_format: cfg.format, only_audio: true }),
        signal: ac.signal,
      });
      if (r.status !== 200) {
        fail(`http ${r.status}: ${await r.text()}`);
        return;
      }
      const reader = r.body!.getReader();
      for (;;) {
        const { done: end, value } = await reader.read();
        if (end) break;
        if (value.length > 0) endWait(wait);
      }
    } catch (e) {
      fail(`http: ${(e as Error).message}`);
    } finally {
      done();
    }
  })();
}

function startOne(): void {
  live++;
  step.started++;
  const r = rand();
  const done = (): void => {
    live--;
    fill();
  };
  if (r < cfg.mix.tts) ttsWs(done);
  else if (r < cfg.mix.tts + cfg.mix.stt) sttWs(done);
  else httpTts(done);
}

/** Tops up to the target, spreading new sessions over ~1 s so a step is not one burst. */
let filling = false;
function fill(): void {
  if (stopping || filling) return;
  const missing = target - live;
  if (missing <= 0) return;
  filling = true;
  const batch = Math.max(1, Math.ceil(missing / 20));
  for (let i = 0; i < Math.min(batch, missing); i++) startOne();
  setTimeout(() => {
    filling = false;
    fill();
  }, 50);
}

const p99 = (xs: number[]): number => {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(0.99 * s.length) - 1)]!;
};

for (const c of cfg.steps) {
  target = c;
  stepStart = performance.now();
  step = fresh(c);
  fill();
  await new Promise((r) => setTimeout(r, cfg.stepMs));
  closeWaits(step);
  step.live = live;
  step.over = p99(step.ttfa) > cfg.p99LimitMs || step.errors > 0;
  process.stdout.write(`${JSON.stringify(step)}\n`);
  if (step.over) break;
}
stopping = true;
for (const ws of sockets) ws.terminate();
setTimeout(() => process.exit(0), 200);
