/**
 * Turn detection, WebRTC VAD against Silero (issue 33 item 2): LibriVox readings joined with
 * pauses of known length, through the STT WebSocket of the built server (`node dist/cli.js serve`,
 * pocketsphinx), read with the SDK's turn-taking defaults (the `step`s' 2 s horizon above 0.5).
 *
 *   npm run build && npx tsx bench/turn-detection.ts [--vad-model FILE] [--noise 0|60|1000] [--save]
 *
 * `--vad-model` defaults to `@livekit/agents-plugin-silero`'s dist/silero_vad.onnx (or
 * `VOICEWIRE_SILERO_VAD`).
 *
 * The audio: the five LibriVox clips of Debian's pocketsphinx-testdata (Sense and Sensibility,
 * 3–7 s each, leading and trailing silence trimmed), every ordered pair (a, b) one turn: a, a pause
 * inside the turn (0.3, 0.4, 0.5, 0.6 s in turn), b, then 2.5 s of silence (the turn's end) before
 * the next turn; 20 turns, one stream. Sent faster than real time (at most 4 s ahead of the steps);
 * times are the stream's own (`total_duration_s`), which is what an agent listening in real time
 * waits, less the network.
 *
 * - **End-of-turn latency**: from the end of a turn's last speech to the first end of turn after
 *   it (p50, p99, max); a turn with none before the next begins is missed.
 * - **False end of turn**: an end of turn while the speaker still has words to say: in an
 *   inserted pause (per pause length), or elsewhere inside the turn (the readings' own pauses).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { startBuiltServer } from '../test/product/built-server.js';
import { createClient } from '../src/node/client.js';
import { resampleInt16 } from '../src/audio/resampler.js';
import { decodeWav } from '../src/audio/wav.js';
import { createTurnTaking } from '../src/sessions/turn-taking.js';
import type { SttStepMessage } from '../src/protocol/messages.js';
import { machine, quantile, saveFile } from './util.js';

const RATE = 24000;
const CLIPS = ['0870', '0880', '0890', '0920', '0930'].map((n) => `/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-${n}.wav`);
const PAUSES = [0.3, 0.4, 0.5, 0.6];
const TURN_GAP = 2.5;

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? undefined : process.argv[i + 1];
}

function sileroFile(): string {
  const given = arg('vad-model') ?? process.env['VOICEWIRE_SILERO_VAD'];
  if (given !== undefined) return given;
  try {
    const file = join(dirname(createRequire(import.meta.url).resolve('@livekit/agents-plugin-silero')), 'silero_vad.onnx');
    if (existsSync(file)) return file;
  } catch {
    /* below */
  }
  throw new Error('no Silero VAD: npm install --save-dev @livekit/agents-plugin-silero, or pass --vad-model FILE');
}

/** A clip at 24 kHz, trimmed to its speech (20 ms blocks with RMS above 3 % of the loudest block's). */
function clip(file: string): Int16Array {
  const wav = decodeWav(readFileSync(file), { output: 'int16' });
  const pcm = resampleInt16(wav.samples, wav.format.sampleRate, RATE);
  const B = 480;
  const rms: number[] = [];
  for (let o = 0; o + B <= pcm.length; o += B) {
    let s = 0;
    for (let i = o; i < o + B; i++) s += pcm[i]! * pcm[i]!;
    rms.push(Math.sqrt(s / B));
  }
  const max = Math.max(...rms);
  const first = rms.findIndex((r) => r > max * 0.03);
  const last = rms.length - 1 - [...rms].reverse().findIndex((r) => r > max * 0.03);
  return pcm.slice(first * B, (last + 1) * B);
}

interface Turn {
  start: number;
  pause: { at: number; seconds: number };
  end: number;
}

/** `seconds` of white noise at RMS `rms` (0: digital silence), deterministic. */
function floor(seconds: number, rms: number, seed: { s: number }): Int16Array {
  const out = new Int16Array(Math.round(seconds * RATE));
  if (rms === 0) return out;
  for (let i = 0; i < out.length; i++) {
    seed.s = (seed.s * 1103515245 + 12345) & 0x7fffffff;
    out[i] = Math.round(((seed.s / 0x7fffffff) * 2 - 1) * rms * Math.sqrt(3));
  }
  return out;
}

/** The stream and where its turns and pauses are, seconds; white noise at RMS `noiseRms` (a room; 0: none) under all of it. */
function composition(noiseRms: number): { pcm: Int16Array; turns: Turn[] } {
  const seed = { s: 4242 };
  const clips = CLIPS.map(clip);
  const parts: Int16Array[] = [new Int16Array(RATE)]; // 1 s before anyone speaks
  let t = 1;
  const turns: Turn[] = [];
  let k = 0;
  const add = (p: Int16Array): void => {
    parts.push(p);
    t += p.length / RATE;
  };
  for (let a = 0; a < clips.length; a++) {
    for (let b = 0; b < clips.length; b++) {
      if (a === b) continue;
      const seconds = PAUSES[k++ % PAUSES.length]!;
      const start = t;
      add(clips[a]!);
      const at = t;
      add(new Int16Array(Math.round(seconds * RATE)));
      add(clips[b]!);
      turns.push({ start, pause: { at, seconds }, end: t });
      add(new Int16Array(Math.round(TURN_GAP * RATE)));
    }
  }
  const pcm = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) (pcm.set(p, o), (o += p.length));
  // The room's noise goes on under the readings too.
  const room = floor(pcm.length / RATE, noiseRms, seed);
  for (let i = 0; i < pcm.length; i++) pcm[i] = Math.max(-32768, Math.min(32767, pcm[i]! + (room[i] ?? 0)));
  return { pcm, turns };
}

interface Run {
  label: string;
  ends: number[];
  steps: SttStepMessage[];
  wallSeconds: number;
  audioSeconds: number;
}

async function measure(label: string, args: string[], pcm: Int16Array): Promise<Run> {
  const dataDir = mkdtempSync(join(tmpdir(), 'vw-turns-'));
  const s = await startBuiltServer({ dataDir, maxRssBytes: 2 * 2 ** 30, args });
  try {
    const c = createClient({ baseUrl: s.base, apiKey: s.key, retry: { attempts: 1 } });
    const stream = c.sttStream({ inputFormat: 'pcm', silenceFlush: false });
    const ends: number[] = [];
    const steps: SttStepMessage[] = [];
    let heard = 0;
    let wake: (() => void) | undefined;
    const reading = (async () => {
      for await (const e of stream) {
        if (e.type === 'step') (steps.push(e.step), (heard = e.step.total_duration_s));
        if (e.type === 'turn') ends.push(e.total_duration_s);
        wake?.();
      }
    })();
    const t0 = performance.now();
    const FRAME = 1920;
    for (let o = 0; o < pcm.length; o += FRAME) {
      // At most 4 s ahead of the steps: the socket's buffers stay small.
      while (o / RATE - heard > 4) await new Promise<void>((r) => (wake = r));
      const f = pcm.slice(o, o + FRAME);
      stream.write(new Uint8Array(f.buffer));
    }
    stream.end();
    await reading;
    return { label, ends, steps, wallSeconds: (performance.now() - t0) / 1000, audioSeconds: pcm.length / RATE };
  } finally {
    await s.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The ends of turn the SDK's turn-taking finds in `steps` with `threshold` (default 0.5: the ends the stream gave). */
function replay(steps: SttStepMessage[], threshold: number): number[] {
  const turn = createTurnTaking({ threshold, inputFormat: 'pcm' });
  return steps.filter((m) => turn.step(m).endOfTurn).map((m) => m.total_duration_s);
}

function score(run: Run, turns: Turn[], threshold: number) {
  run = { ...run, ends: replay(run.steps, threshold) };
  const latencies: number[] = [];
  let missed = 0;
  const falseByPause = new Map<number, { falses: number; pauses: number }>(PAUSES.map((p) => [p, { falses: 0, pauses: 0 }]));
  let falseElsewhere = 0;
  turns.forEach((turn, i) => {
    const next = turns[i + 1]?.start ?? Infinity;
    const end = run.ends.find((e) => e > turn.end && e < next);
    if (end === undefined) missed++;
    else latencies.push(end - turn.end);
    const inside = run.ends.filter((e) => e > turn.start && e <= turn.end);
    const inPause = inside.filter((e) => e > turn.pause.at && e <= turn.pause.at + turn.pause.seconds + 0.3);
    const p = falseByPause.get(turn.pause.seconds)!;
    p.pauses++;
    if (inPause.length > 0) p.falses++;
    falseElsewhere += inside.length - inPause.length;
  });
  const pauses = [...falseByPause.values()].reduce((n, p) => n + p.pauses, 0);
  const inPauses = [...falseByPause.values()].reduce((n, p) => n + p.falses, 0);
  return {
    label: run.label,
    threshold,
    turns: turns.length,
    latency_p50_s: round(quantile(latencies, 0.5)),
    latency_p99_s: round(quantile(latencies, 0.99)),
    latency_max_s: round(Math.max(...latencies)),
    missed,
    false_end_rate: round(inPauses / pauses),
    false_end_by_pause: Object.fromEntries([...falseByPause].map(([k, v]) => [`${k}s`, `${v.falses}/${v.pauses}`])),
    false_ends_elsewhere_in_turns: falseElsewhere,
    realtime_factor: round(run.audioSeconds / run.wallSeconds),
  };
}

const round = (x: number): number => Math.round(x * 1000) / 1000;

const silero = sileroFile();
/** Digital silence between the readings, and a quiet room's noise (white, RMS 60: about −55 dBFS) under everything. */
const ALL_CONDITIONS = [
  { name: 'digital silence in the pauses', rms: 0 },
  { name: 'room noise (RMS 60, about -55 dBFS)', rms: 60 },
  { name: 'loud noise (RMS 1000, about -30 dBFS)', rms: 1000 },
];
/** `--noise RMS` runs one condition; default all three. */
const only = arg('noise');
const CONDITIONS = only === undefined ? ALL_CONDITIONS : ALL_CONDITIONS.filter((c) => c.rms === Number(only));
const THRESHOLDS = [0.5, 0.6, 0.7, 0.8];
const out: unknown[] = [];
for (const cond of CONDITIONS) {
  const { pcm, turns } = composition(cond.rms);
  console.log(`${cond.name}: ${turns.length} turns, ${(pcm.length / RATE).toFixed(1)} s of audio; ${machine()}`);
  const runs = [await measure('WebRTC VAD', ['--stt', 'pocketsphinx'], pcm), await measure('Silero VAD', ['--stt', 'pocketsphinx', '--vad-model', silero], pcm)];
  for (const run of runs) {
    // The replay at the default threshold must find the ends the SDK's stream gave.
    const same = JSON.stringify(replay(run.steps, 0.5)) === JSON.stringify(run.ends);
    if (!same) throw new Error(`${run.label}: the replayed turn-taking differs from the stream's`);
    for (const threshold of THRESHOLDS) {
      const r = { condition: cond.name, ...score(run, turns, threshold) };
      console.log(JSON.stringify(r));
      out.push(r);
    }
  }
}
saveFile(only === undefined ? 'turn-detection.json' : `turn-detection-noise-${only}.json`, JSON.stringify({ machine: machine(), date: new Date().toISOString(), vadModel: silero, results: out }, null, 2) + '\n');
