/**
 * The one measuring harness of every suite, built to hold on a noisy shared machine (issue 12 §1):
 *
 * - peers run side by side in one process, in INTERLEAVED rounds: each round times one sample of
 *   every case, in a rotating order, so a burst of load from other processes hits all cases alike;
 * - a sample is a batch of calls calibrated (once, before the rounds) to last about `sampleMs`, so
 *   timer resolution does not matter;
 * - time is this process's CPU time (`process.cpuUsage`, user + system, µs resolution), not wall
 *   time: with 8 people on 2 cores a sample's wall time is mostly time spent descheduled, which
 *   says nothing about the code (BENCH_CLOCK=wall measures wall time instead);
 * - the figure reported for a peer is the MEDIAN OF PER-ROUND RATIOS (its time over the reference
 *   case's time in the same round), with the 10th–90th percentile spread of those ratios;
 * - rounds stop at `rounds` or when the group's time budget runs out (at least `minRounds`).
 *
 * Usage: `runGroup(name, [{ name: 'voicewire', fn }, { name: 'peer', fn }], audioSeconds?)`. The
 * first case is the reference. Environment: BENCH_ROUNDS (default 60), BENCH_SAMPLE_MS (default 10),
 * BENCH_GROUP_S (time budget per group, default 6 s) keep a suite within about a minute.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';

export interface Case {
  /** e.g. "voicewire", "alawmulaw". The first case of a group is the reference for ratios. */
  name: string;
  fn: () => void;
}

export interface CaseResult {
  name: string;
  /** Calls per second at the median sample time. */
  hz: number;
  /** Median time per call over the rounds, µs. */
  medianUs: number;
  /** Mean time per call over the rounds, µs. */
  meanUs: number;
  /** Half the p10–p90 spread of the per-call time, as a percentage of the median (for old readers). */
  rme: number;
  /** Seconds of audio per second of CPU (when the group gives `audioSeconds`). */
  realtime?: number;
  /**
   * Median over rounds of (reference's time / this case's time) in the same round: how many
   * times faster than the reference this case is (1 for the reference itself).
   */
  ratio: number;
  /** 10th and 90th percentiles of that per-round ratio. */
  ratioP10: number;
  ratioP90: number;
  /**
   * Median over rounds of (this case's time / reference's time): how many times the reference's
   * speed the reference is against this case ("voicewire is N× peer"), with its p10–p90.
   */
  refSpeedup: number;
  refSpeedupP10: number;
  refSpeedupP90: number;
}

export interface GroupResult {
  group: string;
  /** Seconds of audio one call processes, for the realtime factor (optional). */
  audioSeconds?: number;
  /** Interleaved rounds measured. */
  rounds?: number;
  results: CaseResult[];
}

/** The q-quantile (0…1) of `xs` by linear interpolation. */
export function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.min(s.length - 1, lo + 1);
  return s[lo]! + (s[hi]! - s[lo]!) * (pos - lo);
}

export const median = (xs: readonly number[]): number => quantile(xs, 0.5);

export interface GroupOptions {
  /** Most interleaved rounds. Default BENCH_ROUNDS or 60. */
  rounds?: number;
  /** Fewest rounds even past the budget. Default 15. */
  minRounds?: number;
  /** Target duration of one sample (a batch of calls), ms. Default BENCH_SAMPLE_MS or 10. */
  sampleMs?: number;
  /** Time budget of the group, s (calibration and warm-up included). Default BENCH_GROUP_S or 6. */
  budgetS?: number;
}

const CPU_CLOCK = (process.env.BENCH_CLOCK ?? 'cpu') !== 'wall';

/** Milliseconds on the bench clock: this process's CPU time, or wall time with BENCH_CLOCK=wall. */
export function now(): number {
  if (!CPU_CLOCK) return performance.now();
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/** Which clock {@link now} reads. */
export const CLOCK = CPU_CLOCK ? 'process CPU time' : 'wall time';

/** Calls per sample so that one sample lasts about `ms` (at least 1). Also warms the JIT. */
function calibrate(fn: () => void, ms: number): number {
  let n = 1;
  for (;;) {
    const t0 = now();
    for (let i = 0; i < n; i++) fn();
    const dt = now() - t0;
    if (dt >= ms / 4 || n >= 1 << 24) return Math.max(1, Math.round((n * ms) / Math.max(dt, 1e-3)));
    n *= 4;
  }
}

/**
 * Times `cases` in interleaved rounds and prints each case's median time per call and the median
 * of its per-round ratio to the first case, with the p10–p90 spread. See the file comment.
 */
export function runGroup(group: string, cases: Case[], audioSeconds?: number, options: GroupOptions = {}): GroupResult {
  const maxRounds = options.rounds ?? Number(process.env.BENCH_ROUNDS ?? 60);
  const minRounds = Math.min(maxRounds, options.minRounds ?? 15);
  const sampleMs = options.sampleMs ?? Number(process.env.BENCH_SAMPLE_MS ?? 10);
  const budgetMs = (options.budgetS ?? Number(process.env.BENCH_GROUP_S ?? 6)) * 1000;
  const start = performance.now();
  const reps = cases.map((c) => calibrate(c.fn, sampleMs));
  for (const [k, c] of cases.entries()) for (let i = 0; i < reps[k]!; i++) c.fn(); // one warm sample each
  const times = cases.map(() => [] as number[]); // µs per call, by round
  let rounds = 0;
  while (rounds < maxRounds && (rounds < minRounds || performance.now() - start < budgetMs)) {
    for (let j = 0; j < cases.length; j++) {
      const k = (j + rounds) % cases.length; // rotate who goes first
      const fn = cases[k]!.fn;
      const n = reps[k]!;
      const t0 = now();
      for (let i = 0; i < n; i++) fn();
      times[k]!.push(((now() - t0) * 1000) / n);
    }
    rounds++;
  }
  const ref = times[0]!;
  const results = cases.map((c, k): CaseResult => {
    const t = times[k]!;
    const faster = t.map((x, r) => ref[r]! / x);
    const slower = t.map((x, r) => x / ref[r]!);
    const med = median(t);
    const r: CaseResult = {
      name: c.name,
      hz: 1e6 / med,
      medianUs: med,
      meanUs: t.reduce((a, b) => a + b, 0) / t.length,
      rme: ((quantile(t, 0.9) - quantile(t, 0.1)) / 2 / med) * 100,
      ratio: median(faster),
      ratioP10: quantile(faster, 0.1),
      ratioP90: quantile(faster, 0.9),
      refSpeedup: median(slower),
      refSpeedupP10: quantile(slower, 0.1),
      refSpeedupP90: quantile(slower, 0.9),
    };
    if (audioSeconds !== undefined) r.realtime = audioSeconds / (med / 1e6);
    return r;
  });
  const out: GroupResult = { group, rounds, results };
  if (audioSeconds !== undefined) out.audioSeconds = audioSeconds;
  printGroup(out);
  return out;
}

/** "1.23x (p10–p90 1.10–1.31)" */
export function fmtRatio(m: number, lo: number, hi: number): string {
  return `${m.toFixed(2)}x (p10-p90 ${lo.toFixed(2)}-${hi.toFixed(2)})`;
}

export function printGroup(g: GroupResult): void {
  console.log(`\n${g.group}${g.rounds !== undefined ? `  [${g.rounds} interleaved rounds, ${CLOCK}]` : ''}`);
  const ref = g.results[0]!;
  for (const r of g.results) {
    const rt = r.realtime !== undefined ? `  ${r.realtime.toFixed(0).padStart(8)}x realtime` : '';
    const vs = r === ref ? '' : `  ${ref.name.split(' ')[0]} is ${fmtRatio(r.refSpeedup, r.refSpeedupP10, r.refSpeedupP90)} ${r.name}`;
    console.log(`  ${r.name.padEnd(40)} ${r.medianUs.toFixed(2).padStart(10)} us median${rt}${vs}`);
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

/** Children to stop if this bench is interrupted. */
const children = new Set<ChildProcess>();
let trapped = false;

/**
 * Stops `child` when this bench is interrupted (Ctrl-C, `timeout`'s SIGTERM): a server child
 * left running holds its port and CPU after the bench is gone.
 */
export function stopWithBench(child: ChildProcess): void {
  children.add(child);
  child.once('exit', () => children.delete(child));
  if (trapped) return;
  trapped = true;
  const stop = (): void => {
    for (const c of children) c.kill('SIGTERM');
    process.exit(130);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

/**
 * Starts a server child (`node …args`, logs at error level, production mode), stopped with the
 * bench, and resolves it with the address it prints (`listening on <url>`); rejects if it exits
 * first. The child's `exit` listeners are the caller's to remove before stopping it.
 */
export function spawnServer(name: string, args: readonly string[]): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, VOICEWIRE_LOG_LEVEL: 'error', NODE_ENV: 'production' },
  });
  stopWithBench(child);
  return new Promise((resolve, reject) => {
    let out = '';
    child.once('exit', (c) => reject(new Error(`${name} exited ${c}`)));
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (\S+)\n/.exec(out);
      if (m) resolve({ child, url: m[1]! });
    });
  });
}

/**
 * Makes a key with another build's own CLI (`voicewire keys create`) in its own data folder
 * `data`, for organization `org` with a large budget: a store this build migrated may be at a
 * schema version the other build refuses to open, so benches that run an older build beside
 * this one give it a store of its own.
 */
export function otherBuildKey(cli: string, data: string, org: string): string {
  const r = spawnSync(process.execPath, [cli, 'keys', 'create', '--org', org, '--credits', '1000000000', '--data', data], { encoding: 'utf8' });
  const key = r.stdout.trim();
  if (r.status !== 0 || !/^vw_\S+$/.test(key)) throw new Error(`${cli} keys create failed: ${r.stderr}`);
  return key;
}
