/**
 * The server under load, with the tone engines (model time ≈ 0, so what is measured is the
 * server: HTTP/WebSocket, auth, metering, the runner, encoding). The server runs in a child
 * process (bench/server-child.ts) so the clients' CPU is not counted as its own.
 *
 * For 1, 50 and 200 concurrent clients, each client runs sessions back to back:
 * - POST /post/speech/tts (pcm, only_audio): request sent → first body byte;
 * - TTS WebSocket (pcm): `setup` sent (socket already open) → first `audio`;
 * - STT WebSocket (pcm): `setup` sent → first `text` (one word of tones, sent at once).
 * Reports p50/p99 of each, and server CPU per second of audio produced or consumed
 * (utime+stime of the server process / audio seconds). Clients are paced like live streams: a
 * client starts its next session once the previous one's audio would have finished playing (and
 * the first after a random offset), so N clients are N concurrent real-time sessions; the tone
 * engine itself delivers audio at once, so each session's bytes arrive in a burst.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WebSocket } from 'ws';
import { machine, save, stopWithBench } from './util.js';

const root = join(fileURLToPath(new URL('.', import.meta.url)), '..');
const TEXT = 'hello world this is voicewire';
const TTS_AUDIO_S = 0.08 * (TEXT.replace(/ /g, '').length + 2 * (TEXT.split(' ').length - 1));

function cpuSeconds(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) / 100; // utime + stime in clock ticks (USER_HZ = 100)
}

/** Cumulative histogram buckets of a metric for a route, from /metrics. */
async function buckets(base: string, metric: string, route: string): Promise<Map<string, number>> {
  const text = await (await fetch(base.replace(/\/api$/, '/metrics'))).text();
  const out = new Map<string, number>();
  const re = new RegExp(`^${metric}_bucket\\{le="([^"]+)",route="${route}"\\} (\\d+)$`, 'gm');
  for (const m of text.matchAll(re)) out.set(m[1]!, Number(m[2]));
  return out;
}

/** The bucket bound under which fraction `p` of the observations between two snapshots fall (server-side time, ms). */
function bucketQuantile(before: Map<string, number>, after: Map<string, number>, p: number): string {
  const les = [...after.keys()];
  const total = (after.get('+Inf') ?? 0) - (before.get('+Inf') ?? 0);
  for (const le of les) if ((after.get(le)! - (before.get(le) ?? 0)) >= p * total) return le === '+Inf' ? '>5000' : `≤${Number(le) * 1000}`;
  return '?';
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

async function postTts(base: string, key: string): Promise<number> {
  const t0 = performance.now();
  const r = await fetch(`${base}/post/speech/tts`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify({ text: TEXT, output_format: 'pcm', only_audio: true }) });
  const reader = r.body!.getReader();
  await reader.read();
  const t = performance.now() - t0;
  while (!(await reader.read()).done);
  return t;
}

function openWs(url: string, key: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: { 'x-api-key': key } });
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

async function wsSession(url: string, key: string, first: string, messages: (ws: WebSocket) => void): Promise<number> {
  const ws = await openWs(url, key);
  let t0 = 0;
  let t = -1;
  await new Promise<void>((resolve) => {
    ws.on('message', (d) => {
      if (t < 0 && String(d).startsWith(first)) t = performance.now() - t0;
    });
    ws.once('close', () => resolve());
    t0 = performance.now();
    messages(ws);
  });
  return t;
}

// 0.08 s tones for "hi", then silence: one word the tone STT reads back.
function sttAudio(): string {
  const pcm = new Int16Array(1920 * 6);
  for (let c = 0; c < 2; c++) {
    const f = 300 + 80 * 'hi'.charCodeAt(c) - 80 * 97;
    for (let n = 0; n < 1920; n++) pcm[c * 1920 + n] = Math.round(8000 * Math.sin((2 * Math.PI * f * (c * 1920 + n)) / 24000));
  }
  return Buffer.from(pcm.buffer).toString('base64');
}

async function main(): Promise<void> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'bench/server-child.ts')], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  stopWithBench(child);
  let out = '';
  const [base, key] = await new Promise<[string, string]>((resolve) => child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    const m = /listening on (\S+) (\S+)/.exec(out);
    if (m) resolve([m[1]!, m[2]!]);
  }));
  const wsBase = base.replace('http', 'ws');
  const audio = sttAudio();
  console.log(`server.bench on ${machine()}; text of ${TEXT.length} chars = ${TTS_AUDIO_S.toFixed(2)} s of audio per TTS session`);
  const results: Record<string, unknown> = {};
  for (const c of [1, 50, 200]) {
    const perClient = c === 1 ? 20 : 3;
    const routes: Array<[string, () => Promise<number>, number, string, string]> = [
      ['POST /post/speech/tts', () => postTts(base, key), TTS_AUDIO_S, 'voicewire_time_to_first_audio_seconds', 'tts_post'],
      [
        'WS /speech/tts',
        () =>
          wsSession(`${wsBase}/speech/tts`, key, '{"type":"audio"', (ws) => {
            ws.send(JSON.stringify({ type: 'setup', output_format: 'pcm' }));
            ws.send(JSON.stringify({ type: 'text', text: TEXT }));
            ws.send(JSON.stringify({ type: 'end_of_stream' }));
          }),
        TTS_AUDIO_S,
        'voicewire_time_to_first_audio_seconds',
        'tts_ws',
      ],
      [
        'WS /speech/asr',
        () =>
          wsSession(`${wsBase}/speech/asr`, key, '{"type":"text"', (ws) => {
            ws.send(JSON.stringify({ type: 'setup', input_format: 'pcm' }));
            ws.send(JSON.stringify({ type: 'audio', audio }));
            ws.send(JSON.stringify({ type: 'end_of_stream' }));
          }),
        0.48,
        'voicewire_time_to_first_text_seconds',
        'stt_ws',
      ],
    ];
    for (const [name, run, audioS, metric, label] of routes) {
      await Promise.all(Array.from({ length: Math.min(c, 10) }, () => run())); // warm
      const times: number[] = [];
      const h0 = await buckets(base, metric, label);
      const cpu0 = cpuSeconds(child.pid!);
      const w0 = performance.now();
      const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, ms)));
      await Promise.all(Array.from({ length: c }, async () => {
        await sleep(Math.random() * audioS * 1000);
        for (let i = 0; i < perClient; i++) {
          const s0 = performance.now();
          times.push(await run());
          await sleep(audioS * 1000 - (performance.now() - s0));
        }
      }));
      const wall = (performance.now() - w0) / 1000;
      const cpu = cpuSeconds(child.pid!) - cpu0;
      const sessions = c * perClient;
      const h1 = await buckets(base, metric, label);
      const server = { p50: bucketQuantile(h0, h1, 0.5), p99: bucketQuantile(h0, h1, 0.99) };
      const missing = times.filter((t) => t < 0).length;
      if (missing > 0) console.log(`  ${missing} sessions of ${name} gave no first output`);
      const row = { concurrency: c, sessions, p50_ms: +pct(times, 50).toFixed(2), p99_ms: +pct(times, 99).toFixed(2), server_side_ms: server, cpu_ms_per_audio_s: +((cpu * 1000) / (sessions * audioS)).toFixed(2), sessions_per_s: +(sessions / wall).toFixed(1) };
      results[`${name} @${c}`] = row;
      console.log(`${name.padEnd(22)} c=${String(c).padStart(3)}  p50 ${row.p50_ms.toFixed(2).padStart(7)} ms  p99 ${row.p99_ms.toFixed(2).padStart(7)} ms  (server-side p50 ${server.p50} p99 ${server.p99} ms)  server CPU ${row.cpu_ms_per_audio_s.toFixed(2)} ms per audio-s  ${row.sessions_per_s} sessions/s`);
    }
  }
  save('server', results);
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
}

void main();
