/**
 * benchmark.js glue shared by every suite: run peers side by side in one process, print ops/s,
 * realtime factors and ratios against voicewire, and save the figures as JSON for the README.
 */
import Benchmark from 'benchmark';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';

export interface Case {
  /** e.g. "voicewire", "alawmulaw". The first case of a group is the reference for ratios. */
  name: string;
  fn: () => void;
}

export interface GroupResult {
  group: string;
  /** Seconds of audio one call processes, for the realtime factor (optional). */
  audioSeconds?: number;
  results: { name: string; hz: number; rme: number; meanUs: number; medianUs: number; realtime?: number; ratio: number }[];
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Runs one group of side-by-side cases; ratio = case's speed relative to the first case. */
export function runGroup(group: string, cases: Case[], audioSeconds?: number, maxTime = Number(process.env.BENCH_TIME ?? 1)): GroupResult {
  const suite = new Benchmark.Suite(group);
  for (const c of cases) suite.add(c.name, c.fn, { maxTime, minSamples: 10 });
  suite.run({ async: false });
  const benches = suite.map((b: Benchmark) => b) as Benchmark[];
  const ref = benches[0]!.hz;
  const results = benches.map((b) => {
    const r: GroupResult['results'][number] = {
      name: b.name ?? '?',
      hz: b.hz,
      rme: b.stats.rme,
      meanUs: b.stats.mean * 1e6,
      medianUs: median(b.stats.sample) * 1e6,
      ratio: b.hz / ref,
    };
    if (audioSeconds !== undefined) r.realtime = b.hz * audioSeconds;
    return r;
  });
  const out: GroupResult = { group, results };
  if (audioSeconds !== undefined) out.audioSeconds = audioSeconds;
  printGroup(out);
  return out;
}

export function printGroup(g: GroupResult): void {
  console.log(`\n${g.group}`);
  const ref = g.results[0]!;
  for (const r of g.results) {
    const rt = r.realtime !== undefined ? `  ${r.realtime.toFixed(0).padStart(8)}x realtime` : '';
    const vs = r === ref ? '' : `  voicewire is ${(ref.hz / r.hz).toFixed(2)}x ${r.name}`;
    console.log(`  ${r.name.padEnd(34)} ${r.medianUs.toFixed(2).padStart(10)} us median ±${r.rme.toFixed(1)}%${rt}${vs}`);
  }
}

/** The machine line the README quotes beside the figures. */
export function machine(): string {
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  return `${cpu}, ${os.cpus().length} cores, Node ${process.version}, ${os.platform()} ${os.arch()}`;
}

/**
 * True when results are to be saved: `npm run bench -- --save` (bench/run.ts passes it on through
 * VOICEWIRE_BENCH_SAVE) or `--save` on a suite run by hand. bench/results/ is tracked, so a run
 * to try something must not overwrite the figures the README quotes.
 */
export function saving(): boolean {
  return process.env.VOICEWIRE_BENCH_SAVE === '1' || process.argv.includes('--save');
}

/** Writes bench/results/<file> when {@link saving}; otherwise says it did not. */
export function saveFile(file: string, text: string): void {
  if (!saving()) {
    console.log(`bench/results/${file} not saved (pass --save to write it)`);
    return;
  }
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  writeFileSync(new URL(`./results/${file}`, import.meta.url), text);
  console.log(`saved bench/results/${file}`);
}

/** Saves a suite's groups to bench/results/<name>.json (only with --save). */
export function save(name: string, groups: unknown): void {
  saveFile(`${name}.json`, JSON.stringify({ machine: machine(), date: new Date().toISOString(), groups }, null, 2) + '\n');
}
