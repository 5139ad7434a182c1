/**
 * voicewire against the limit (issue 22): `npx tsx bench/limit.ts [--quick] [--save] [--sessions 100,600]`
 * after `npm run build`.
 *
 * Two servers, each a child process started once: `voicewire serve` (the BUILT dist/cli.js, one
 * process, SQLite in a temp folder, `--tts tone`, PCM) and bench/bare-ws-server.ts (the same TTS
 * WebSocket protocol on bare `ws`, no auth, store or engine). For each concurrency (100, 600,
 * 1000) they run in ALTERNATING rounds (bare, voicewire, then voicewire, bare, …) so load from
 * other processes hits both alike. A run is bench/limit-client.ts (a process of its own) holding
 * that many concurrent sessions of 12 words at 150 wpm for `RUN_S` seconds, each timed from connect.
 *
 * Reported per server and concurrency (the median over rounds; ratios are voicewire / bare per round):
 * - CPU ms per session: the server child's user+system CPU (/proc/PID/stat) over the run, divided
 *   by the sessions it completed;
 * - held: the share of sessions delivered in real time with a 200 ms jitter buffer, and failures;
 * - connect / ready / TTFA p99, ms from the moment the client asks for the socket;
 * - RSS per active session: the server's RSS at the end of the run's steady part, above its RSS
 *   after the warm-up (no session open), over the peak sessions open (GC timing makes it noisy); and (once per server, before the rounds) RSS per idle
 *   session: `sessions` sockets opened, set up and left idle.
 *
 * The client shares the machine: its own CPU is printed beside the server's.
 *
 * `LIMIT_BASE_CLI=/other/checkout/dist/cli.js` adds a third server to every round, another build
 * of voicewire (e.g. before a change), so before/after ratios come from the same interleaved rounds.
 * `LIMIT_WORKERS=1,2` runs `serve --workers N` once per count (CPU and RSS are the whole process
 * tree's; a round's line adds each process's CPU per session: the primary's, then each worker's).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openStore } from '../src/server/store/open.js';
import { ensureOrganization } from '../src/server/bootstrap.js';
import { createKey } from '../src/server/keys.js';
import { machine, otherBuildKey, saveFile, spawnServer, stopWithBench } from './util.js';
import type { LimitClientConfig, LimitRunReport } from './limit-client.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const cliJs = join(root, 'dist/cli.js');
const quick = process.argv.includes('--quick');
const sessionsArg = process.argv.indexOf('--sessions');
const LEVELS = sessionsArg > 0 ? process.argv[sessionsArg + 1]!.split(',').map(Number) : [100, 600, 1000];
const ROUNDS = quick ? 1 : Number(process.env.LIMIT_ROUNDS ?? 3);
const RUN_S = quick ? 6 : Number(process.env.LIMIT_RUN_S ?? 15);
const TICK = 100; // /proc clock ticks per second (USER_HZ)
// `LIMIT_WORKERS=1,2`: one voicewire server per count (`serve --workers N`; LIMIT_BASE_CLI's gets the largest).
const WORKERS = (process.env.LIMIT_WORKERS ?? '1').split(',').map(Number);

if (!existsSync(cliJs)) {
  console.error('bench/limit: dist/cli.js missing: run npm run build first');
  process.exit(2);
}
const fdLimit = Number(spawnSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).stdout.trim());
if (fdLimit < 2 * Math.max(...LEVELS) + 200) {
  console.error(`bench/limit: ulimit -n is ${fdLimit}; ${Math.max(...LEVELS)} sessions need about ${2 * Math.max(...LEVELS) + 200} (client and server on this machine): raise it (ulimit -n 65536)`);
  process.exit(2);
}

/** The process and its children (a `--workers` primary's workers), from /proc. */
function tree(pid: number): number[] {
  const kids = readdirSync(`/proc/${pid}/task`).flatMap((t) => readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').split(' ').filter(Boolean).map(Number));
  return [pid, ...kids];
}
/** CPU ms (user+system) and RSS bytes of a process and its children; `each`: CPU ms per process of the tree. */
function procStat(pid: number): { cpuMs: number; rss: number; each: number[] } {
  const all = tree(pid).map(procStat1);
  return { cpuMs: all.reduce((a, p) => a + p.cpuMs, 0), rss: all.reduce((a, p) => a + p.rss, 0), each: all.map((p) => p.cpuMs) };
}
function procStat1(pid: number): { cpuMs: number; rss: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const rss = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
  return { cpuMs: ((Number(f[11]) + Number(f[12])) * 1000) / TICK, rss };
}
const q = (xs: number[], p: number): number => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))]!;
};
const median = (xs: number[]): number => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

const dir = mkdtempSync(join(tmpdir(), 'vw-limit-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
const store = await openStore({ data: join(dir, 'data') });
await store.migrate();
// The per-key connection limit (50 per process) is a per-customer guard: one key per 25 sessions, four keys per organization.
const keys: string[] = [];
for (let i = 0; i < Math.ceil(Math.max(...LEVELS) / 25); i++) {
  const org = await ensureOrganization(store, `limit-${Math.floor(i / 4)}`, { credits: 1_000_000_000 });
  keys.push((await createKey(store, org.id)).key);
}
await store.close();

interface Server {
  name: string;
  child: ChildProcess;
  url: string;
  keys: string[];
}

/** Another build's own data folder and keys ({@link otherBuildKey}), one key per 25 sessions as for this build. */
function otherBuildData(cli: string): { data: string; keys: string[] } {
  const data = join(dir, 'data-base');
  return { data, keys: keys.map((_, i) => otherBuildKey(cli, data, `limit-${Math.floor(i / 4)}`)) };
}

function start(name: string, cli = cliJs, workers = 1): Promise<Server> {
  const other = cli !== cliJs ? otherBuildData(cli) : null;
  const args =
    name !== 'bare'
      ? [cli, 'serve', '--data', other?.data ?? join(dir, 'data'), '--tts', 'tone', '--stt', 'tone', '--port', '0', '--no-bootstrap', '--connections-per-address', '100000', '--workers', String(workers)]
      : ['--import', 'tsx', join(root, 'bench/bare-ws-server.ts')];
  // LIMIT_NODE_ARGS: node options of every server; LIMIT_VW_NODE_ARGS: of voicewire's only (e.g. --cpu-prof).
  const nodeArgs = [process.env.LIMIT_NODE_ARGS, name !== 'bare' ? process.env.LIMIT_VW_NODE_ARGS : undefined].flatMap((a) => a?.split(' ').filter(Boolean) ?? []);
  const ready = spawnServer(name, [...nodeArgs, ...args]);
  void ready.then(({ child }) => started.push(child), () => undefined);
  return ready.then(({ child, url }) => ({ name, child, url: `${url.replace(/^http/, 'ws')}/speech/tts`, keys: name === 'bare' ? [] : (other?.keys ?? keys) }));
}
async function stop(s: Server): Promise<void> {
  s.child.removeAllListeners('exit');
  const exited = new Promise((r) => s.child.once('exit', r));
  s.child.kill('SIGTERM');
  const t = setTimeout(() => s.child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(t);
}

const started: ChildProcess[] = [];
// A failed run must not leave its servers running (they hold ports and memory).
process.on('exit', () => {
  for (const c of started) if (c.exitCode === null) c.kill('SIGKILL');
});

/** A load client; with LIMIT_TRACE=prefix its sessions are traced to `prefix.<label>` (bench/limit-client.ts). */
function client(cfg: LimitClientConfig, label = 'idle'): ChildProcess {
  const { LIMIT_TRACE: trace, ...rest } = process.env;
  const env = trace === undefined || label === 'idle' ? rest : { ...rest, LIMIT_TRACE: `${trace}.${label}` };
  const c = spawn(process.execPath, ['--import', 'tsx', join(root, 'bench/limit-client.ts'), JSON.stringify(cfg)], { stdio: ['pipe', 'pipe', 'inherit'], env });
  stopWithBench(c);
  return c;
}
const firstLine = (c: ChildProcess): Promise<string> =>
  new Promise((resolve, reject) => {
    let out = '';
    c.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const i = out.indexOf('\n');
      if (i >= 0) resolve(out.slice(0, i));
    });
    c.once('exit', (code) => reject(new Error(`client exited ${code} before a report`)));
  });
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** RSS per idle session: `n` sockets set up and left idle, RSS above the server's before. */
/** The lowest RSS of five samples 300 ms apart (the least garbage not yet collected). */
async function settledRss(pid: number): Promise<number> {
  let low = Infinity;
  for (let i = 0; i < 5; i++) {
    await sleep(300);
    low = Math.min(low, procStat(pid).rss);
  }
  return low;
}

async function idleKiB(s: Server, n: number): Promise<number> {
  const before = await settledRss(s.child.pid!);
  const c = client({ mode: 'idle', url: s.url, keys: s.keys, sessions: n });
  const opened = Number((await firstLine(c)).split(' ')[1]);
  const after = await settledRss(s.child.pid!);
  c.stdin!.end('stop\n');
  await new Promise((r) => c.once('exit', r));
  if (opened < n) console.log(`  ${s.name}: ${n - opened} of ${n} idle sessions failed to open`);
  return (after - before) / 1024 / Math.max(1, opened);
}

interface RunFigures {
  cpuMsPerSession: number;
  clientCpuMsPerSession: number;
  realTimePct: number;
  failed: number;
  completed: number;
  peakLive: number;
  connectP99: number;
  readyP99: number;
  ttfaP99: number;
  ttfaP50: number;
  activeKiB: number;
  errorSamples: string[];
  /** CPU ms per session of each process (a `--workers` primary, then its workers). */
  eachCpuMsPerSession: number[];
}

/** Each server's RSS after the warm-up, with no session open: the base of RSS per active session. */
const baseRss: Record<string, number> = {};

async function run(s: Server, sessions: number): Promise<RunFigures> {
  await sleep(300);
  const pid = s.child.pid!;
  const idle = procStat(pid);
  const c = client({ mode: 'run', url: s.url, keys: s.keys, sessions, seconds: RUN_S }, `${s.name}.${sessions}`);
  // RSS near the end of the steady part (all sessions open), before they wind down.
  let activeRss = 0;
  const sampler = setTimeout(() => (activeRss = procStat(pid).rss), (RUN_S - 0.5) * 1000);
  const r = JSON.parse(await firstLine(c)) as LimitRunReport;
  clearTimeout(sampler);
  const end = procStat(pid);
  await new Promise((res) => (c.exitCode === null ? c.once('exit', res) : res(null)));
  return {
    cpuMsPerSession: (end.cpuMs - idle.cpuMs) / Math.max(1, r.completed),
    clientCpuMsPerSession: r.clientCpuMs / Math.max(1, r.completed),
    realTimePct: (100 * r.realTime) / Math.max(1, r.completed + r.failed),
    failed: r.failed,
    completed: r.completed,
    peakLive: r.peakLive,
    connectP99: q(r.connectMs, 0.99),
    readyP99: q(r.readyMs, 0.99),
    ttfaP99: q(r.ttfaMs, 0.99),
    ttfaP50: q(r.ttfaMs, 0.5),
    activeKiB: activeRss > 0 && baseRss[s.name] !== undefined ? (activeRss - baseRss[s.name]!) / 1024 / r.peakLive : NaN,
    errorSamples: r.errorSamples,
    eachCpuMsPerSession: end.each.map((c, i) => (c - (idle.each[i] ?? 0)) / Math.max(1, r.completed)),
  };
}

console.log(`voicewire vs bare ws (TTS WebSocket, tone, PCM, 12 words at 150 wpm) on ${machine()}; load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
console.log(`levels ${LEVELS.join(', ')} concurrent sessions, ${ROUNDS} alternating round(s) of ${RUN_S} s each; ulimit -n ${fdLimit}`);
const baseCli = process.env.LIMIT_BASE_CLI;
const wName = (w: number, base = 'voicewire'): string => (w === 1 ? base : `${base}-w${w}`);
const servers = [await start('bare')];
for (const w of WORKERS) servers.push(await start(wName(w), cliJs, w));
if (baseCli) servers.push(await start(wName(Math.max(...WORKERS), 'voicewire-base'), baseCli, Math.max(...WORKERS)));
const names = servers.map((s) => s.name);
const vws = names.filter((n) => n !== 'bare');
if (baseCli) console.log(`voicewire-base: ${baseCli}`);
// Warm-up: JIT, the store's first statements, the sockets' first buffers.
for (const s of servers) await run(s, 50);
await sleep(1000);
for (const s of servers) baseRss[s.name] = procStat(s.child.pid!).rss;
const idleN = Math.max(...LEVELS);
const idleFig: Record<string, number> = {};
for (const s of servers) {
  idleFig[s.name] = await idleKiB(s, idleN);
  console.log(`  ${s.name}: ${idleFig[s.name]!.toFixed(1)} KiB RSS per idle session (${idleN} open)`);
}

const results: Record<number, Record<string, RunFigures[]>> = {};
for (const n of LEVELS) {
  results[n] = Object.fromEntries(names.map((x) => [x, []]));
  for (let round = 0; round < ROUNDS; round++) {
    // Rotated each round: every server goes first, and last, as often as the others.
    const order = servers.map((_, i) => servers[(i + round) % servers.length]!);
    for (const s of order) {
      const f = await run(s, n);
      results[n]![s.name]!.push(f);
      console.log(
        `  ${String(n).padStart(4)} ${s.name.padEnd(9)} round ${round + 1}: CPU ${f.cpuMsPerSession.toFixed(2)} ms/session (client ${f.clientCpuMsPerSession.toFixed(2)}), ` +
          `real time ${f.realTimePct.toFixed(1)} % of ${f.completed + f.failed}, peak ${f.peakLive} open, connect p99 ${f.connectP99.toFixed(0)} ms, ready p99 ${f.readyP99.toFixed(0)}, ` +
          `TTFA p50/p99 ${f.ttfaP50.toFixed(0)}/${f.ttfaP99.toFixed(0)} ms, ${f.activeKiB.toFixed(1)} KiB/active session${s.name !== 'bare' && f.eachCpuMsPerSession.length > 1 ? ` (CPU ms/session: primary ${f.eachCpuMsPerSession[0]!.toFixed(2)}, workers ${f.eachCpuMsPerSession.slice(1).map((c) => c.toFixed(2)).join(' + ')})` : ''}${f.failed ? `, ${f.failed} failed: ${f.errorSamples.join(' | ')}` : ''}`,
      );
    }
  }
}
for (const s of servers) await stop(s);

const fmt = (x: number, d = 0): string => (Number.isFinite(x) ? x.toFixed(d) : '–');
const ratioOf = (n: number, name: string, pick: (f: RunFigures) => number): number =>
  median(results[n]![name]!.map((v, i) => pick(v) / pick(results[n]!.bare![i]!)));
const med = (n: number, name: string, pick: (f: RunFigures) => number): number => median(results[n]![name]!.map(pick));
for (const v of vws) console.log(`\nidle session RSS: ${v} ${fmt(idleFig[v]!, 1)} KiB, bare ${fmt(idleFig.bare!, 1)} KiB (${fmt(idleFig[v]! / idleFig.bare!, 1)}×)`);
console.log('\n| sessions | server | CPU ms/session (× bare, median of per-round ratios) | real time | connect p99 ms | ready p99 ms | TTFA p99 ms | KiB/active session |');
console.log('|---|---|---|---|---|---|---|---|');
for (const n of LEVELS) {
  for (const name of names) {
    const m = (pick: (f: RunFigures) => number, d = 0): string => fmt(med(n, name, pick), d);
    const ratio = name === 'bare' ? '' : ` (**${fmt(ratioOf(n, name, (f) => f.cpuMsPerSession), 2)}×**)`;
    console.log(
      `| ${n} | ${name} | ${m((f) => f.cpuMsPerSession, 2)}${ratio} | ${m((f) => f.realTimePct, 1)} % | ${m((f) => f.connectP99)} | ${m((f) => f.readyP99)} | ${m((f) => f.ttfaP99)} | ${m((f) => f.activeKiB, 1)} |`,
    );
  }
}
saveFile('limit.json', JSON.stringify({ machine: machine(), date: new Date().toISOString(), rounds: ROUNDS, runSeconds: RUN_S, idleKiB: idleFig, results }, null, 2) + '\n');
