/**
 * The resampler against libsoxr as users run both (issue 34): one continuous stream of 80 ms
 * chunks of speech per process, no flush, process CPU time around the measured stretch.
 *
 * - libsoxr HQ at its own speed: bench/soxr-stream.c (compiled here with gcc against the installed
 *   `libsoxr.so.0`; `soxr_create` SOXR_HQ, one thread, float32), no FFI in between.
 * - voicewire `'high'` from the BUILT package entry (`import 'voicewire'`: on Node the `node`
 *   export condition, dist/index-node.js; run `npm run build` first), by
 *   bench/resampler-stream-child.mjs under plain `node`.
 * - optional: another build (`RESAMPLER_BASE=/path/to/dist/index-node.js`, e.g. the start commit's)
 *   and the sources (`RESAMPLER_SRC=1`: src/audio/resampler.ts through tsx), for before/after and
 *   built-vs-source in the same rounds.
 *
 * Every runner is its own process; each round runs every pair and runner once, in an order
 * rotating per round, so load from other processes hits all alike. Printed per pair: median CPU ms
 * per second of audio, and the median of per-round ratios to soxr HQ (p10–p90). Speech: the
 * LibriVox fixture (16 kHz), brought to each input rate by voicewire `'best'`, looped.
 *
 * Run: `npm run build && npm run bench -- soxr` (about a minute and a half).
 * Environment: STREAM_ROUNDS (default 7), STREAM_SECONDS (audio timed per run, default 300),
 * STREAM_WARM (audio streamed untimed first, default 20), BENCH_PAIRS=48000:24000,…,
 * RESAMPLER_BASE, RESAMPLER_SRC=1, STREAM_QUALITY (default high). `--save` writes
 * bench/results/soxr.json. Needs gcc and libsoxr0; exits 0 with a note without them.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { resample } from '../src/audio/resampler.js';
import { decodeWav } from '../src/audio/wav.js';
import { SPEED_PAIRS } from './resampler-input.js';
import { machine, median, quantile, save } from './util.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const rounds = Number(process.env.STREAM_ROUNDS ?? 7);
const seconds = Number(process.env.STREAM_SECONDS ?? 300);
const warm = Number(process.env.STREAM_WARM ?? 300);
const quality = process.env.STREAM_QUALITY ?? 'high';
const pairs = process.env.BENCH_PAIRS ? process.env.BENCH_PAIRS.split(',').map((p) => p.split(':').map(Number) as [number, number]) : SPEED_PAIRS;
const work = join(os.tmpdir(), `voicewire-resampler-stream-${process.pid}`);
mkdirSync(work, { recursive: true });
process.once('exit', () => rmSync(work, { recursive: true, force: true }));

// libsoxr's harness, built once per run.
const soxrBin = join(work, 'soxr-stream');
const cc = spawnSync('gcc', ['-O2', '-o', soxrBin, join(here, 'soxr-stream.c'), '-l:libsoxr.so.0'], { encoding: 'utf8' });
if (cc.error !== undefined || cc.status !== 0) {
  console.log(`skipped: cannot build bench/soxr-stream.c (gcc and libsoxr0 needed): ${cc.error?.message ?? cc.stderr}`);
  process.exit(0);
}
const built = join(here, '..', 'dist', 'index-node.js');
if (!existsSync(built)) {
  console.log('skipped: no dist/index-node.js (run npm run build first)');
  process.exit(0);
}
// The built entry is what is timed: say so when the resampler's sources are newer than it.
const audioDir = join(here, '..', 'src', 'audio');
const stale = readdirSync(audioDir).filter((f) => f.startsWith('resampler') && statSync(join(audioDir, f)).mtimeMs > statSync(built).mtimeMs);
if (stale.length > 0) console.log(`WARNING: ${stale.join(', ')} newer than dist/ (npm run build): the built entry timed here is not the sources`);

// Speech at every input rate.
const wav = decodeWav(readFileSync(join(here, '..', 'fixtures', 'speech', 'librivox-0880.wav')), { mono: true });
const speech = wav.samples;
const speechRate = wav.format.sampleRate;
const inputs = new Map<number, string>();
for (const [from] of pairs) {
  if (inputs.has(from)) continue;
  const x = from === speechRate ? speech : resample(speech, speechRate, from, { quality: 'best' });
  const file = join(work, `speech-${from}.f32`);
  writeFileSync(file, new Uint8Array(x.buffer, x.byteOffset, x.byteLength));
  inputs.set(from, file);
}

interface Runner {
  name: string;
  cmd: (from: number, to: number, file: string) => [string, string[]];
}
const child = join(here, 'resampler-stream-child.mjs');
const node = (mod: string, extra: string[] = []) => (from: number, to: number, file: string): [string, string[]] => [
  process.execPath,
  [...extra, child, mod, String(from), String(to), file, String(warm), String(seconds), quality],
];
const runners: Runner[] = [
  { name: 'soxr HQ (C)', cmd: (from, to, file) => [soxrBin, [String(from), String(to), file, String(warm), String(seconds)]] },
  { name: `voicewire ${quality} (built)`, cmd: node('voicewire') },
];
if (process.env.RESAMPLER_BASE) runners.push({ name: `base ${quality} (built)`, cmd: node(process.env.RESAMPLER_BASE) });
if (process.env.RESAMPLER_SRC === '1') runners.push({ name: `voicewire ${quality} (src, tsx)`, cmd: node(join(here, '..', 'src', 'audio', 'resampler.ts'), ['--import', 'tsx']) });

interface Sample {
  cpuMs: number;
  warmCpuMs: number;
  audioS: number;
  outSamples: number;
  engine: string;
}
/** ms of CPU per second of audio, by pair then runner, one entry per round. */
const perAudioS = pairs.map(() => runners.map(() => [] as number[]));
/** The same for the untimed warm-up stretch (the stream's first `warm` seconds: JIT compilation included). */
const warmPerAudioS = pairs.map(() => runners.map(() => [] as number[]));
const engines = pairs.map(() => runners.map(() => ''));
const loads: number[] = [];

console.log(`${machine()}; ${rounds} rounds × ${pairs.length} pairs × ${runners.length} runners, ${seconds} s of speech timed per run after ${warm} s untimed`);
for (let round = 0; round < rounds; round++) {
  loads.push(os.loadavg()[0]!);
  // Rotate pairs and runners so no runner always follows another.
  for (let pi = 0; pi < pairs.length; pi++) {
    const p = (pi + round) % pairs.length;
    const [from, to] = pairs[p]!;
    for (let ri = 0; ri < runners.length; ri++) {
      const r = (ri + round + pi) % runners.length;
      const [cmd, args] = runners[r]!.cmd(from, to, inputs.get(from)!);
      const res = spawnSync(cmd, args, { encoding: 'utf8', cwd: join(here, '..') });
      if (res.status !== 0) throw new Error(`${runners[r]!.name} ${from}->${to} failed: ${res.stderr || res.error?.message}`);
      const s = JSON.parse(res.stdout.trim().split('\n').pop()!) as Sample;
      perAudioS[p]![r]!.push(s.cpuMs / s.audioS);
      warmPerAudioS[p]![r]!.push(s.warmCpuMs / warm);
      engines[p]![r] = s.engine;
    }
  }
  process.stdout.write(`  round ${round + 1}/${rounds} (load ${os.loadavg()[0]!.toFixed(2)})\n`);
}

const summary: { pair: string; cpuMsPerAudioS: Record<string, number>; warmCpuMsPerAudioS: Record<string, number>; overSoxr: Record<string, { median: number; p10: number; p90: number }>; engines: Record<string, string> }[] = [];
console.log(`\nCPU ms per second of audio (median of ${rounds}); ratio to soxr HQ (median of per-round ratios, p10–p90); load ${quantile(loads, 0).toFixed(2)}–${quantile(loads, 1).toFixed(2)}`);
console.log(`  ${'pair'.padEnd(12)} ${runners.map((r) => r.name.padStart(24)).join(' ')}`);
for (let p = 0; p < pairs.length; p++) {
  const [from, to] = pairs[p]!;
  const cpu: Record<string, number> = {};
  const cold: Record<string, number> = {};
  const over: Record<string, { median: number; p10: number; p90: number }> = {};
  const eng: Record<string, string> = {};
  const cells: string[] = [];
  for (let r = 0; r < runners.length; r++) {
    const name = runners[r]!.name;
    cpu[name] = median(perAudioS[p]![r]!);
    cold[name] = median(warmPerAudioS[p]![r]!);
    eng[name] = engines[p]![r]!;
    const ratios = perAudioS[p]![r]!.map((v, i) => v / perAudioS[p]![0]![i]!);
    over[name] = { median: median(ratios), p10: quantile(ratios, 0.1), p90: quantile(ratios, 0.9) };
    cells.push(r === 0 ? `${cpu[name]!.toFixed(4)}`.padStart(24) : `${cpu[name]!.toFixed(4)} ${over[name]!.median.toFixed(2)}x (${over[name]!.p10.toFixed(2)}-${over[name]!.p90.toFixed(2)})`.padStart(24));
  }
  console.log(`  ${`${from}->${to}`.padEnd(12)} ${cells.join(' ')}`);
  summary.push({ pair: `${from}->${to}`, cpuMsPerAudioS: cpu, warmCpuMsPerAudioS: cold, overSoxr: over, engines: eng });
}
console.log(`\nThe stream's first ${warm} s (untimed above; JIT compilation of the JS layer, soxr's table set-up), CPU ms per second of audio (median):`);
for (const sm of summary) console.log(`  ${sm.pair.padEnd(12)} ${runners.map((r) => sm.warmCpuMsPerAudioS[r.name]!.toFixed(4).padStart(24)).join(' ')}`);
console.log(`engines: ${[...new Set(engines.flat())].join(', ')}`);
save('soxr', { rounds, seconds, warm, quality, loads, summary });
