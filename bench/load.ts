/**
 * Load benchmark (issue 16; a benchmark, not a test): `npx tsx bench/load.ts [--save] [--quick] [--postgres]`
 * after `npm run build`. For each worker count (1, 2), engine (tone; espeak when installed) and
 * output format (pcm, ulaw_8000, opus), it starts `voicewire serve --workers N` (dist/cli.js, a
 * SQLite store in a temp folder), runs the load generator (bench/load-client.ts, its own process)
 * against it over real sockets, and ramps the concurrency of a realistic mix (70 % TTS WebSocket
 * at speaking pace, 15 % STT WebSocket at real time, a third of them multiplexed, 15 % HTTP TTS)
 * until p99 time to first audio exceeds 300 ms or an error appears.
 *
 * Timing covers steady state: sessions started in a step's first second are run but not timed.
 * Reported per run: the concurrency held (the last step within the limit), p50/p99 time to first
 * audio and to first text there, the server's CPU per session (% of one core, all worker
 * processes summed, from /proc) and memory per session (RSS above the idle server, summed).
 * The generator shares the machine's cores with the server (and, on the team machine, with other
 * work): figures are a floor, not the server's ceiling. STT always uses the tone engine.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openStore } from '../src/server/store/open.js';
import { ensureOrganization } from '../src/server/bootstrap.js';
import { createKey } from '../src/server/keys.js';
import { machine, saveFile, spawnServer, stopWithBench } from './util.js';
import type { ClientConfig, StepReport } from './load-client.js';
import { startPostgres } from '../test/helpers/postgres.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const cliJs = join(root, 'dist/cli.js');
const quick = process.argv.includes('--quick');
// --postgres: the store is a throwaway local Postgres cluster (durable settings) instead of SQLite:
// with --workers, SQLite's one-writer lock is shared by the worker processes.
const usePostgres = process.argv.includes('--postgres');
const STEPS = quick ? [50, 200, 500] : [10, 25, 50, 100, 200, 300, 400, 500, 600, 800, 1000, 1200];
const STEP_MS = quick ? 3000 : 4000;
const P99_LIMIT_MS = 300;
const TICK = 100; // /proc clock ticks per second (USER_HZ)

if (!existsSync(cliJs) || !spawnSync(process.execPath, [cliJs, 'serve', '--help'], { encoding: 'utf8' }).stdout.includes('--workers')) {
  console.error('bench/load: dist/cli.js missing or older than --workers: run npm run build first');
  process.exit(2);
}
const hasEspeak = spawnSync('sh', ['-c', 'command -v espeak-ng'], { stdio: 'ignore' }).status === 0;

/** CPU seconds (user+system) and RSS bytes of a process, from /proc. */
function procStat(pid: number): { cpu: number; rss: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rss = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
    return { cpu: (Number(f[11]) + Number(f[12])) / TICK, rss };
  } catch {
    return { cpu: 0, rss: 0 };
  }
}
/** The server's processes: the primary and, under --workers, its children. */
function serverPids(pid: number): number[] {
  const r = spawnSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' });
  return [pid, ...r.stdout.split('\n').filter(Boolean).map(Number)];
}
function sample(pids: number[]): { cpu: number; rss: number; at: number } {
  let cpu = 0;
  let rss = 0;
  for (const p of pids) {
    const s = procStat(p);
    cpu += s.cpu;
    rss += s.rss;
  }
  return { cpu, rss, at: performance.now() };
}
const q = (xs: number[], p: number): number => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))]!;
};

const dir = mkdtempSync(join(tmpdir(), 'vw-load-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
const pg = usePostgres ? await startPostgres({ durable: true }) : null;
process.on('exit', () => pg?.destroy());
const storeArgs = pg ? ['--store', pg.url()] : ['--data', join(dir, 'data')];
const store = await openStore(pg ? { data: join(dir, 'data'), store: pg.url() } : { data: join(dir, 'data') });
await store.migrate();
// The per-key connection limit (50 per process) is a per-customer guard, not a capacity figure:
// one key per 25 sessions. A server serves many customers: four keys per organization, so the
// debits are not all queued on one organization's row (one organization alone: the store
// figures under "Storage").
const keys: string[] = [];
for (let i = 0; i < Math.ceil(Math.max(...STEPS) / 25); i++) {
  const org = await ensureOrganization(store, `load-${Math.floor(i / 4)}`, { credits: 1_000_000_000 });
  keys.push((await createKey(store, org.id)).key);
}
await store.close();
const clipPath = join(dir, 'clip.pcm');

function startServer(workers: number, tts: string): Promise<{ child: ChildProcess; base: string }> {
  return spawnServer('serve', [cliJs, 'serve', '--workers', String(workers), ...storeArgs, '--tts', tts, '--stt', 'tone', '--port', '0', '--no-bootstrap', '--connections-per-address', '100000']).then(({ child, url }) => ({ child, base: url }));
}
async function stopServer(child: ChildProcess): Promise<void> {
  child.removeAllListeners('exit');
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const t = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(t);
}

interface RunResult {
  workers: number;
  engine: string;
  format: string;
  held: number;
  p50TtfaMs: number;
  p99TtfaMs: number;
  p50TtftMs: number;
  p99TtftMs: number;
  cpuPctPerSession: number;
  memKiBPerSession: number;
  stoppedAt: { concurrency: number; p99TtfaMs: number; errors: number; errorSamples: string[] } | null;
  /** Mean ms per stage of the first audio of TTS WebSocket sessions in the held step (server's /metrics). */
  stagesMs: Record<string, number>;
}

/** Sum and count per stage of `voicewire_first_output_stage_seconds` for the TTS WebSocket route. */
type StageTotals = Record<string, { sum: number; count: number }>;

async function stageTotals(base: string): Promise<StageTotals> {
  const text = await (await fetch(base.replace(/\/api$/, '/metrics'))).text();
  const out: StageTotals = {};
  for (const m of text.matchAll(/^voicewire_first_output_stage_seconds_(sum|count)\{route="tts_ws",stage="(\w+)"\} ([\d.e+-]+)$/gm)) {
    const entry = (out[m[2]!] ??= { sum: 0, count: 0 });
    entry[m[1] as 'sum' | 'count'] = Number(m[3]);
  }
  return out;
}

/** Mean ms per stage between two snapshots. */
function stageMeans(before: StageTotals, after: StageTotals): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [stage, a] of Object.entries(after)) {
    const b = before[stage] ?? { sum: 0, count: 0 };
    if (a.count > b.count) out[stage] = ((a.sum - b.sum) / (a.count - b.count)) * 1000;
  }
  return out;
}

const STAGES = ['auth', 'input', 'engine', 'output'];
const showStages = (m: Record<string, number>): string => STAGES.map((s) => `${s} ${m[s]?.toFixed(1) ?? '-'}`).join(', ');

async function run(workers: number, engine: string, format: string): Promise<RunResult> {
  const { child, base } = await startServer(workers, engine);
  const key = keys[0]!;
  if (!existsSync(clipPath)) {
    // The STT clip: tone-engine speech at 24 kHz, what `--stt tone` reads back.
    const r = await fetch(`${base}/post/speech/tts`, { method: 'POST', headers: { 'x-api-key': key }, body: JSON.stringify({ text: 'hello there how are you today', output_format: 'pcm_24000', only_audio: true }) });
    writeFileSync(clipPath, Buffer.from(await r.arrayBuffer()));
  }
  // Warm-up: a few requests so JIT and first-use costs are not the first step's.
  for (let i = 0; i < 20; i++) await (await fetch(`${base}/post/speech/tts`, { method: 'POST', headers: { 'x-api-key': key }, body: JSON.stringify({ text: 'warm up now', output_format: format, only_audio: true }) })).arrayBuffer();
  const pids = serverPids(child.pid!);
  const idle = sample(pids);
  const cfg: ClientConfig = { base, keys, format, steps: STEPS, stepMs: STEP_MS, p99LimitMs: P99_LIMIT_MS, clipPath, mix: { tts: 0.7, stt: 0.15 } };
  const client = spawn(process.execPath, ['--import', 'tsx', join(root, 'bench/load-client.ts'), JSON.stringify(cfg)], { stdio: ['ignore', 'pipe', 'inherit'] });
  stopWithBench(client);
  const steps: Array<StepReport & { cpuPct: number; rss: number; stages: Promise<StageTotals> }> = [];
  const initialStages = stageTotals(base);
  let last = sample(pids);
  let buf = '';
  await new Promise<void>((resolve) => {
    client.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        const now = sample(pids);
        const cpuPct = (100 * (now.cpu - last.cpu)) / ((now.at - last.at) / 1000);
        last = now;
        const s = JSON.parse(line) as StepReport;
        // Taken as each step's report arrives; with several workers, /metrics is one worker's (a sample).
        steps.push({ ...s, cpuPct, rss: now.rss, stages: stageTotals(base).catch(() => ({})) });
        process.stdout.write(
          `  ${String(s.concurrency).padStart(5)} sessions: TTFA p50 ${q(s.ttfa, 0.5).toFixed(0)} p99 ${q(s.ttfa, 0.99).toFixed(0)} ms, TTFT p50 ${q(s.ttft, 0.5).toFixed(0)} ms, server CPU ${cpuPct.toFixed(0)} %, RSS ${(now.rss / 2 ** 20).toFixed(0)} MiB, errors ${s.errors}${s.over ? '  ← over' : ''}\n`,
        );
      }
    });
    client.once('exit', () => resolve());
  });
  const ok = steps.filter((s) => !s.over);
  const held = ok.at(-1);
  const heldIndex = held === undefined ? -1 : steps.indexOf(held);
  const stagesMs = heldIndex < 0 ? {} : stageMeans(await (heldIndex === 0 ? initialStages : steps[heldIndex - 1]!.stages), await held!.stages);
  await stopServer(child);
  if (held) console.log(`  first audio by stage at ${held.concurrency} sessions, mean ms: ${showStages(stagesMs)}`);
  const bad = steps.find((s) => s.over);
  return {
    workers,
    engine,
    format,
    held: held?.concurrency ?? 0,
    p50TtfaMs: held ? q(held.ttfa, 0.5) : NaN,
    p99TtfaMs: held ? q(held.ttfa, 0.99) : NaN,
    p50TtftMs: held ? q(held.ttft, 0.5) : NaN,
    p99TtftMs: held ? q(held.ttft, 0.99) : NaN,
    cpuPctPerSession: held ? held.cpuPct / held.concurrency : NaN,
    memKiBPerSession: held ? (held.rss - idle.rss) / 1024 / Math.max(1, held.live) : NaN,
    stoppedAt: bad ? { concurrency: bad.concurrency, p99TtfaMs: q(bad.ttfa, 0.99), errors: bad.errors, errorSamples: bad.errorSamples } : null,
    stagesMs,
  };
}

console.log(`voicewire load bench on ${machine()}; store ${pg ? 'Postgres (local, durable)' : 'SQLite'}; steps ${STEPS.join(', ')} (${STEP_MS / 1000} s each), limit p99 TTFA ${P99_LIMIT_MS} ms or any error`);
const results: RunResult[] = [];
const engines = hasEspeak ? ['tone', 'espeak'] : ['tone'];
if (!hasEspeak) console.log('espeak-ng not installed: tone engine only');
for (const workers of [1, 2]) {
  for (const engine of engines) {
    for (const format of engine === 'tone' ? ['pcm', 'ulaw_8000', 'opus'] : ['pcm']) {
      console.log(`\n${workers} worker(s), ${engine}, ${format}`);
      results.push(await run(workers, engine, format));
    }
  }
}

console.log('\nworkers | engine | format    | held | TTFA p50/p99 ms | TTFT p50/p99 ms | CPU %/session | KiB/session | stopped by');
for (const r of results) {
  const why = r.stoppedAt === null ? 'last step' : r.stoppedAt.errors > 0 ? `${r.stoppedAt.errors} errors at ${r.stoppedAt.concurrency}` : `p99 ${r.stoppedAt.p99TtfaMs.toFixed(0)} ms at ${r.stoppedAt.concurrency}`;
  console.log(
    `${String(r.workers).padEnd(7)} | ${r.engine.padEnd(6)} | ${r.format.padEnd(9)} | ${String(r.held).padStart(4)} | ${r.p50TtfaMs.toFixed(0).padStart(6)} / ${r.p99TtfaMs.toFixed(0).padEnd(6)} | ${r.p50TtftMs.toFixed(0).padStart(6)} / ${r.p99TtftMs.toFixed(0).padEnd(6)} | ${r.cpuPctPerSession.toFixed(2).padStart(13)} | ${r.memKiBPerSession.toFixed(0).padStart(11)} | ${why}`,
  );
}
console.log('\nfirst audio of TTS WebSocket sessions in the held step, mean ms by stage (auth | input → engine | engine | → socket):');
for (const r of results) console.log(`  ${r.workers}w ${r.engine} ${r.format.padEnd(9)} ${showStages(r.stagesMs)}`);
for (const r of results) if (r.stoppedAt?.errorSamples.length) console.log(`errors (${r.workers}w ${r.engine} ${r.format}): ${r.stoppedAt.errorSamples.join(' | ')}`);
saveFile(pg ? 'load-postgres.json' : 'load.json', JSON.stringify({ machine: machine(), store: pg ? 'postgres' : 'sqlite', date: new Date().toISOString(), steps: STEPS, stepMs: STEP_MS, results }, null, 2) + '\n');
