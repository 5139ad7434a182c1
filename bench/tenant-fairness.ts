/**
 * One tenant's saturating load against another's latency (issue 31, finding 2), on the BUILT
 * server (`node dist/cli.js serve`, default engines: espeak-ng WebAssembly and pocketsphinx):
 * `npx tsx bench/tenant-fairness.ts [--quick]` after `npm run build`.
 *
 * - TTS: another organization's TTS WebSocket sessions (one short sentence each, one after the
 *   other), time to first audio from the setup sent, idle and while ONE socket of the first
 *   organization holds {@link FLOOD_REQUESTS} multiplexed long requests (each ended is replaced,
 *   so the flood lasts the whole measure). Refusals of the other organization are counted.
 * - STT: another organization's 4 s POST /post/speech/asr, time to the whole answer, idle and
 *   while one key runs {@link STT_FLOOD_STREAMS} STT WebSocket streams of long speech sent as fast
 *   as the server takes it.
 *
 * Printed: p50/p90 of each, the ratios loaded/idle, refusals. test/product/tenant-fairness.test.ts
 * runs a shorter version with the same functions and asserts the ratios.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import WebSocket from 'ws';
import { CLI, fetchFresh, root, startBuiltServer, type BuiltServer } from '../test/product/built-server.js';

/** Multiplexed long requests the flooding socket keeps open (issue 31: 70). */
export const FLOOD_REQUESTS = 70;
/** STT streams of the flooding key (its limit `sttDecodersPerKey`, 8). */
export const STT_FLOOD_STREAMS = 8;

/** One sentence of a flooding request (~120 characters: one synthesis of ~6 s of speech). */
const FLOOD_SENTENCE = (i: number): string => `Sentence number ${i} of a long request keeps the speech engine busy for a while, and then it carries on with more words.`;
/** ~3,600 characters of sentences: a long request, many syntheses one after the other. */
const LONG_TEXT = Array.from({ length: 30 }, (_, i) => FLOOD_SENTENCE(i)).join(' ');

/** Percentile `p` (0–1) of `xs`, nearest rank. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))]!;
}

/** Creates an API key of organization `org` on a server's data folder (`voicewire keys create`). */
export function createKeyIn(dataDir: string, org: string): string {
  const r = spawnSync(process.execPath, [CLI, 'keys', 'create', '--org', org, '--credits', '1000000000', '--data', dataDir], { encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) throw new Error(`keys create --org ${org} failed: ${r.stderr}`);
  return r.stdout.trim().split('\n').at(-1)!;
}

/** What one short TTS session got: time to first audio and to its end (ms), or why it was refused. */
export interface TtsProbe {
  ttfaMs: number;
  endMs: number;
  refused?: string;
}

/** One TTS WebSocket session of one sentence; TTFA from the setup sent. */
export function ttsProbe(wsBase: string, key: string, text = 'Hello there, this is a quick check of the voice.', timeoutMs = 60_000): Promise<TtsProbe> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${wsBase}/speech/tts`, { headers: { 'x-api-key': key } });
    let t0 = 0;
    let ttfa = NaN;
    let end = NaN;
    let refused: string | undefined;
    const done = (): void => {
      clearTimeout(timer);
      resolve(refused === undefined ? { ttfaMs: ttfa, endMs: end } : { ttfaMs: ttfa, endMs: end, refused });
    };
    const timer = setTimeout(() => {
      refused ??= `no end in ${timeoutMs} ms`;
      ws.terminate();
    }, timeoutMs);
    ws.on('open', () => {
      t0 = performance.now();
      ws.send(JSON.stringify({ type: 'setup', model_name: 'default', output_format: 'pcm' }));
      ws.send(JSON.stringify({ type: 'text', text }));
      ws.send(JSON.stringify({ type: 'end_of_stream' }));
    });
    ws.on('message', (d) => {
      const m = JSON.parse(String(d)) as { type: string; message?: string };
      if (m.type === 'audio' && Number.isNaN(ttfa)) ttfa = performance.now() - t0;
      if (m.type === 'end_of_stream') end = performance.now() - t0;
      if (m.type === 'error') refused ??= m.message ?? 'error';
    });
    ws.on('close', (code, reason) => {
      if (code !== 1000 && code !== 1005) refused ??= `close ${code} ${String(reason)}`;
      if (Number.isNaN(ttfa)) refused ??= 'no audio';
      done();
    });
    ws.on('error', (err) => {
      refused ??= err.message;
    });
  });
}

/** A running flood: what it saw, and its stop. */
export interface Flood {
  /** Requests (or streams) refused or failed so far, by message. */
  errors: string[];
  /** Audio or step messages received so far. */
  received(): number;
  stop(): void;
}

/** One socket holding `n` multiplexed long TTS requests; each ended (or refused) is replaced. */
export function ttsFlood(wsBase: string, key: string, n = FLOOD_REQUESTS): Flood {
  const ws = new WebSocket(`${wsBase}/speech/tts`, { headers: { 'x-api-key': key } });
  const errors: string[] = [];
  let received = 0;
  let next = 0;
  let stopped = false;
  const start = (): void => {
    if (stopped || ws.readyState !== WebSocket.OPEN) return;
    const id = `f${next++}`;
    ws.send(JSON.stringify({ type: 'setup', model_name: 'default', output_format: 'pcm', close_ws_on_eos: false, client_req_id: id }));
    ws.send(JSON.stringify({ type: 'text', text: LONG_TEXT, client_req_id: id }));
    ws.send(JSON.stringify({ type: 'end_of_stream', client_req_id: id }));
  };
  ws.on('open', () => {
    for (let i = 0; i < n; i++) start();
  });
  ws.on('message', (d) => {
    const m = JSON.parse(String(d)) as { type: string; message?: string };
    if (m.type === 'audio') received++;
    else if (m.type === 'error') {
      errors.push(m.message ?? 'error');
      // A refused request is tried again a little later, as a client with a backlog would.
      setTimeout(start, 200);
    } else if (m.type === 'end_of_stream') start();
  });
  ws.on('error', (err) => errors.push(err.message));
  return {
    errors,
    received: () => received,
    stop() {
      stopped = true;
      ws.terminate();
    },
  };
}

/** 16-bit mono PCM of a WAV file (its data chunk) and its rate. */
function wavPcm(wav: Buffer): { pcm: Buffer; rate: number } {
  const at = wav.indexOf('data', 12, 'latin1');
  return { pcm: wav.subarray(at + 8, at + 8 + wav.readUInt32LE(at + 4)), rate: wav.readUInt32LE(24) };
}

/** A 16-bit mono WAV of `seconds` of English speech (the librivox clip repeated). */
export function speechWav(seconds: number): Buffer {
  const { pcm, rate } = wavPcm(readFileSync(join(root, 'fixtures/speech/librivox-0880.wav')));
  const n = Math.round(seconds * rate) * 2;
  const data = Buffer.alloc(n);
  for (let o = 0; o < n; o += pcm.length) pcm.copy(data, o, 0, Math.min(pcm.length, n - o));
  const head = Buffer.alloc(44);
  head.write('RIFF', 0, 'latin1');
  head.writeUInt32LE(36 + n, 4);
  head.write('WAVEfmt ', 8, 'latin1');
  head.writeUInt32LE(16, 16);
  head.writeUInt16LE(1, 20);
  head.writeUInt16LE(1, 22);
  head.writeUInt32LE(rate, 24);
  head.writeUInt32LE(rate * 2, 28);
  head.writeUInt16LE(2, 32);
  head.writeUInt16LE(16, 34);
  head.write('data', 36, 'latin1');
  head.writeUInt32LE(n, 40);
  return Buffer.concat([head, data]);
}

/** What one STT POST got: time to the whole answer (ms), or why it failed. */
export interface SttProbe {
  ms: number;
  failed?: string;
}

/** One POST /post/speech/asr of `wav`, timed to the last byte of the answer. */
export async function sttProbe(base: string, key: string, wav: Uint8Array<ArrayBuffer>): Promise<SttProbe> {
  const t0 = performance.now();
  try {
    const r = await fetchFresh(`${base}/post/speech/asr`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'audio/wav' }, body: wav });
    const text = await r.text();
    const ms = performance.now() - t0;
    if (r.status !== 200) return { ms, failed: `${r.status} ${text.slice(0, 200)}` };
    const err = /"type":"error"[^\n]*/.exec(text);
    return err ? { ms, failed: err[0].slice(0, 200) } : { ms };
  } catch (e) {
    return { ms: performance.now() - t0, failed: (e as Error).message };
  }
}

/** `n` STT WebSocket streams of one key, each on its own socket, sending `wav` as fast as it goes; each ended is replaced. */
export function sttFlood(wsBase: string, key: string, wav: Uint8Array, n = STT_FLOOD_STREAMS): Flood {
  const errors: string[] = [];
  let received = 0;
  let stopped = false;
  const sockets = new Set<WebSocket>();
  const open = (): void => {
    if (stopped) return;
    const ws = new WebSocket(`${wsBase}/speech/asr`, { headers: { 'x-api-key': key } });
    sockets.add(ws);
    ws.on('open', () => {
      ws.send(JSON.stringify({ type: 'setup', model_name: 'default', input_format: 'wav' }));
      for (let i = 0; i < wav.length; i += 4096) ws.send(JSON.stringify({ type: 'audio', audio: Buffer.from(wav.subarray(i, i + 4096)).toString('base64') }));
      ws.send(JSON.stringify({ type: 'end_of_stream' }));
    });
    ws.on('message', (d) => {
      const m = JSON.parse(String(d)) as { type: string; message?: string };
      if (m.type === 'step') received++;
      else if (m.type === 'error') errors.push(m.message ?? 'error');
    });
    ws.on('error', (err) => errors.push(err.message));
    ws.on('close', () => {
      sockets.delete(ws);
      setTimeout(open, errors.length > 0 ? 200 : 0);
    });
  };
  for (let i = 0; i < n; i++) open();
  return {
    errors,
    received: () => received,
    stop() {
      stopped = true;
      for (const ws of sockets) ws.terminate();
    },
  };
}

/** Waits until `flood` has received `count` messages (it is up to speed), at most `ms`. */
export async function warmUp(flood: Flood, count: number, ms = 60_000): Promise<void> {
  const until = Date.now() + ms;
  while (flood.received() < count && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
}

/** Summary of one side of a measure. */
export interface Figures {
  p50: number;
  p90: number;
  refused: string[];
}

function figures(xs: ReadonlyArray<{ ms: number; refused?: string | undefined }>): Figures {
  const ok = xs.filter((x) => x.refused === undefined).map((x) => x.ms);
  return { p50: percentile(ok, 0.5), p90: percentile(ok, 0.9), refused: xs.flatMap((x) => (x.refused === undefined ? [] : [x.refused])) };
}

/**
 * The other organization's TTS sessions (`sessions`, one after another), idle then under one
 * socket's flood; `sentenceMs`: the p50 time of a whole session of one flood sentence, idle (what
 * a synthesis already running costs whoever comes next: syntheses are not interrupted).
 */
export async function measureTts(s: BuiltServer, floodKey: string, otherKey: string, sessions: number): Promise<{ idle: Figures; loaded: Figures; sentenceMs: number; floodErrors: number }> {
  const run = async (): Promise<Figures> => {
    const out: Array<{ ms: number; refused?: string | undefined }> = [];
    for (let i = 0; i < sessions; i++) {
      const p = await ttsProbe(s.wsBase, otherKey);
      out.push({ ms: p.ttfaMs, refused: p.refused });
    }
    return figures(out);
  };
  await ttsProbe(s.wsBase, otherKey); // the engine's first load is nobody's latency
  const idle = await run();
  const sentence: number[] = [];
  for (let i = 0; i < 3; i++) sentence.push((await ttsProbe(s.wsBase, otherKey, FLOOD_SENTENCE(i))).endMs);
  const sentenceMs = percentile(sentence, 0.5);
  const flood = ttsFlood(s.wsBase, floodKey);
  try {
    await warmUp(flood, 400);
    const loaded = await run();
    return { idle, loaded, sentenceMs, floodErrors: flood.errors.length };
  } finally {
    flood.stop();
  }
}

/** The other organization's 4 s STT POSTs (`posts`, one after another), idle then under one key's streams. */
export async function measureStt(s: BuiltServer, floodKey: string, otherKey: string, posts: number): Promise<{ idle: Figures; loaded: Figures; floodErrors: number }> {
  const clip = new Uint8Array(speechWav(4));
  // Whatever a flood before left running (its streams close with their socket) settles first.
  await new Promise((r) => setTimeout(r, 2000));
  const run = async (): Promise<Figures> => {
    const out: Array<{ ms: number; refused?: string | undefined }> = [];
    for (let i = 0; i < posts; i++) {
      const p = await sttProbe(s.base, otherKey, clip);
      out.push({ ms: p.ms, refused: p.failed });
    }
    return figures(out);
  };
  await sttProbe(s.base, otherKey, clip); // a decoder loaded is nobody's latency
  const idle = await run();
  const flood = sttFlood(s.wsBase, floodKey, new Uint8Array(speechWav(120)));
  try {
    await warmUp(flood, 8 * 50);
    const loaded = await run();
    return { idle, loaded, floodErrors: flood.errors.length };
  } finally {
    flood.stop();
  }
}

/** Starts a built server (`cli`'s checkout) with two organizations: `strangers` (its key floods) and `others`. */
export async function startTwoTenants(dataDir: string): Promise<{ s: BuiltServer; otherKey: string }> {
  const otherKey = createKeyIn(dataDir, 'others');
  const s = await startBuiltServer({ dataDir, maxRssBytes: 3 * 2 ** 30 });
  return { s, otherKey };
}

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick');
  const dir = mkdtempSync(join(tmpdir(), 'vw-fair-'));
  const { s, otherKey } = await startTwoTenants(dir);
  const show = (f: Figures): string => `p50 ${f.p50.toFixed(0)} ms, p90 ${f.p90.toFixed(0)} ms, refused ${f.refused.length}${f.refused.length ? ` (${[...new Set(f.refused)].slice(0, 2).join(' | ')})` : ''}`;
  try {
    console.log(`server: ${CLI}`);
    const tts = await measureTts(s, s.key, otherKey, quick ? 8 : 20);
    console.log(`TTS TTFA of another organization, idle:   ${show(tts.idle)}; one flood sentence's whole session, idle: ${tts.sentenceMs.toFixed(0)} ms`);
    console.log(`TTS TTFA under one socket's ${FLOOD_REQUESTS} requests: ${show(tts.loaded)}  (ratio p50 ${(tts.loaded.p50 / tts.idle.p50).toFixed(2)}; the flood's own refusals ${tts.floodErrors})`);
    const stt = await measureStt(s, s.key, otherKey, quick ? 4 : 8);
    console.log(`STT 4 s POST of another organization, idle: ${show(stt.idle)}`);
    console.log(`STT 4 s POST under one key's ${STT_FLOOD_STREAMS} streams: ${show(stt.loaded)}  (ratio p50 ${(stt.loaded.p50 / stt.idle.p50).toFixed(2)}; the flood's own errors ${stt.floodErrors})`);
  } finally {
    await s.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
