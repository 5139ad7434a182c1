/**
 * The deployment under faults (issue 36), the fuller table of test/product/topology.test.ts:
 * HAProxy (deploy/haproxy.cfg) in front of three built `voicewire serve` instances (vw3 with
 * `--workers 2`) on one Postgres, the tone engines, a steady load of REST, TTS WebSocket and STT
 * WebSocket loops (each loop its own organization; the first `--budget` REST loops' organizations
 * have a budget for `--budget-requests` requests, which runs out mid-run: CREDITS_EXHAUSTED), and
 * in turn: a rolling restart of every instance, `kill -9` of one, one worker of vw3 killed,
 * Postgres restarted, the balancer reloaded. Each fault gets a fresh load, measured for `--before`
 * seconds before it and until `--after` seconds after it. Instances heartbeat every second and
 * are dead after 5 s (`--instance-heartbeat-ms 1000 --instance-timeout-ms 5000`): after each
 * fault the bench waits until no hold is left open (a killed instance's swept) before reading the
 * books.
 *
 *   npm run build && npx tsx bench/topology.ts [--rest 4] [--ws 8] [--stt 4] [--budget 2] [--budget-requests 30] [--before 4] [--after 3] [--only WORD]
 *
 * `--only WORD` runs the faults whose name contains WORD (`kill`, `Postgres`, …). A run that fails
 * prints the end of every instance's log.
 *
 * Per fault: requests (REST / WebSocket), those that failed without retries, the same load with
 * the SDK's retries (src/client: a refused upgrade or a 503 is tried again, at most twice): how
 * many were retried and still failed, the p99 time to first audio before the fault and during it
 * (from the fault to `--after` s after it; TTS: first audio, STT: first text), and whether every
 * organization's books balance (allocated − remaining = the sum of its usage lines) and match
 * what its client was delivered: exactly (one line per successful request, its units), and for a
 * request a kill cut or that failed after some work, between what it had been delivered 3 s
 * before the kill (the sweep charges its last checkpoint; 0 for a failure) and what its client
 * was delivered (test/product/topology.ts cutRequestBounds).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { ensureOrganization } from '../src/server/bootstrap.js';
import { createKey } from '../src/server/keys.js';
import { PostgresStore } from '../src/server/store/postgres-store.js';
import { startPostgres, type PostgresCluster } from '../test/helpers/postgres.js';
import {
  calibrate,
  cutRequestBounds,
  exhausted,
  expectedBooks,
  fetchSttClip,
  p99,
  runLoad,
  startTopology,
  usageByOrg,
  waitForSweep,
  type LoadRecord,
  type Topology,
  type UnitsPerRequest,
} from '../test/product/topology.js';

function flag(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i < 0 ? fallback : Number(process.argv[i + 1]);
  if (!(v > 0)) throw new Error(`--${name} takes a positive number`);
  return v;
}
const REST = flag('rest', 4);
const WS = flag('ws', 8);
const STT = flag('stt', 4);
const BUDGET = Math.min(REST, flag('budget', 2));
const BUDGET_REQUESTS = flag('budget-requests', 30);
/** What a kill may leave unpaid: what was delivered after the last checkpoint (heartbeat every 1 s), with slack for a busy machine. */
const CHECKPOINT_LAG_MS = 3000;
/** A request that ended this long before a kill may not have had its settlement written. */
const SETTLE_WINDOW_MS = 1000;
const BEFORE_MS = flag('before', 4) * 1000;
const ONLY = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] ?? '' : '';
const AFTER_MS = flag('after', 3) * 1000;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The pids whose parent is `pid` (Linux /proc). */
function childPids(pid: number): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

interface Row {
  fault: string;
  rest: number;
  ws: number;
  stt: number;
  exhausted: number;
  failed: number;
  retriedOk: number;
  failedWithRetries: number;
  p99Before: number;
  p99During: number;
  books: string;
}

async function main(): Promise<void> {
  let pg: PostgresCluster | undefined;
  let topo: Topology | undefined;
  let store: PostgresStore | undefined;
  try {
    pg = await startPostgres();
    store = new PostgresStore(pg.url());
    await store.migrate();
    const common = ['--store', pg.url(), '--no-bootstrap', '--tts', 'tone', '--stt', 'tone', '--trusted-proxies', '127.0.0.1', '--instance-heartbeat-ms', '1000', '--instance-timeout-ms', '5000'];
    topo = await startTopology([{ args: common }, { args: common }, { args: [...common, '--workers', '2'] }]);
    const t = topo;
    const psql = (sql: string): string => pg!.psql(sql, 'voicewire_test');
    let orgN = 0;
    const keys = async (n: number, budgets = 0, budget = 0): Promise<{ keys: string[]; orgs: string[] }> => {
      const k: string[] = [];
      const orgs: string[] = [];
      for (let i = 0; i < n; i++) {
        const name = `org-${orgN++}`;
        const org = await ensureOrganization(store!, name, { credits: i < budgets ? budget : 10_000_000 });
        k.push((await createKey(store!, org.id)).key);
        orgs.push(name);
      }
      return { keys: k, orgs };
    };
    const sttClip = await fetchSttClip(t.balancer.base, (await keys(1)).keys[0]!);
    const cal = await keys(3);
    const per: UnitsPerRequest = await calibrate({ ...t.balancer, sttClip }, [cal.keys[0]!, cal.keys[1]!, cal.keys[2]!], [cal.orgs[0]!, cal.orgs[1]!, cal.orgs[2]!], psql);
    const all = (): string[] => t.instances.map((i) => i.name);

    // Which faults kill an instance (their cut requests are bounded, not exact).
    const kills = new Set(['kill -9 of vw1', 'kill -9 of one worker of vw3 (--workers 2)']);
    const faults: Array<[string, () => Promise<void>]> = [
      [
        'rolling restart (SIGTERM → drain → exit → start, each)',
        async () => {
          for (const inst of t.instances) {
            const code = await inst.stop();
            if (code !== 0) throw new Error(`${inst.name} exited ${code} after SIGTERM`);
            await inst.start();
            await t.balancer.waitUp(all());
          }
        },
      ],
      [
        'kill -9 of vw1',
        async () => {
          await t.instances[0]!.kill();
          await sleep(2000);
          await t.instances[0]!.start();
          await t.balancer.waitUp(all());
        },
      ],
      [
        'kill -9 of one worker of vw3 (--workers 2)',
        async () => {
          const worker = childPids(t.instances[2]!.proc!.pid!)[0];
          if (worker === undefined) throw new Error('vw3 has no worker process');
          process.kill(worker, 'SIGKILL');
          await sleep(3000);
        },
      ],
      [
        'Postgres restarted (pg_ctl stop -m fast, 2 s, start)',
        async () => {
          pg!.stop();
          await sleep(2000);
          pg!.start();
          await t.balancer.waitUp(all(), 30_000);
        },
      ],
      [
        'balancer reloaded (HAProxy -W, SIGUSR2)',
        async () => {
          t.balancer.reload();
          await sleep(1000);
          await t.balancer.waitUp(all());
        },
      ],
    ];

    const rows: Row[] = [];
    for (const [name, fault] of faults.filter(([n]) => n.includes(ONLY))) {
      const measure = async (retry: boolean): Promise<{ records: LoadRecord[]; at: number; end: number; orgs: string[] }> => {
        const k = await keys(REST + WS + STT, BUDGET, BUDGET_REQUESTS * per.rest);
        const load = runLoad({ base: t.balancer.base, wsBase: t.balancer.wsBase, keys: k.keys, restLoops: REST, sttLoops: STT, sttClip, maxMs: 300_000, maxPerLoop: 5000, retry });
        let at = 0;
        let end = 0;
        try {
          await sleep(BEFORE_MS);
          at = performance.now();
          await fault();
          end = performance.now() + AFTER_MS;
          await sleep(AFTER_MS);
        } finally {
          load.stop();
        }
        return { records: await load.done, at, end, orgs: k.orgs };
      };
      // The fault twice: once with clients that never retry (what the balancer alone keeps whole),
      // once with the SDK's retries.
      const bare = await measure(false);
      const sdk = await measure(true);
      // Every hold settled: the live instances' by their requests (a settlement the store refused
      // during an outage, on a later heartbeat), a killed one's by a sweep.
      await waitForSweep(psql, 60_000);
      const usage = usageByOrg(psql);
      let balanced = true;
      let exact = 0;
      let within = 0;
      let over = 0;
      let orgsChecked = 0;
      let cut = 0;
      for (const run of [bare, sdk]) {
        run.orgs.forEach((org, loop) => {
          const got = usage.get(org)!;
          if (got.allocated - got.remaining !== got.credits) balanced = false;
          const mine = run.records.filter((r) => r.loop === loop);
          // A kill's cut requests (and those that ended just before it), and any request that failed
          // after some work (an outage cut it: it pays what it delivered), are bounded; the rest exact.
          const touched = (r: LoadRecord): boolean => kills.has(name) && r.start <= run.at && r.end >= run.at - SETTLE_WINDOW_MS;
          const hit = mine.filter((r) => !exhausted(r) && (touched(r) || !r.ok));
          const want = expectedBooks(
            mine.filter((r) => !hit.includes(r)),
            per,
          );
          const bounds = hit.map((r) => cutRequestBounds(r, per, run.at, CHECKPOINT_LAG_MS));
          const low = want.okUnits + bounds.reduce((n, b) => n + b.low, 0);
          const high = want.okUnits + bounds.reduce((n, b) => n + b.high, 0);
          orgsChecked++;
          if (got.units === high && got.lines >= want.ok) exact++;
          else if (got.units >= low && got.units <= high) within++;
          else if (got.units > high) over++;
          cut += hit.filter((r) => !r.ok).length;
        });
      }
      const ttfa = (rs: LoadRecord[], from: number, to: number): number => p99(rs.filter((r) => r.ok && r.start >= from && r.start < to && r.ttfa !== undefined).map((r) => r.ttfa!));
      // A small budget's refusals once it ran out are expected, not failures.
      const failedOf = (rs: LoadRecord[]): number => rs.filter((r) => !r.ok && !exhausted(r)).length;
      rows.push({
        fault: name,
        rest: bare.records.filter((r) => r.kind === 'rest').length,
        ws: bare.records.filter((r) => r.kind === 'ws').length,
        stt: bare.records.filter((r) => r.kind === 'stt').length,
        exhausted: bare.records.filter(exhausted).length,
        failed: failedOf(bare.records),
        retriedOk: sdk.records.filter((r) => r.ok && r.retries > 0).length,
        failedWithRetries: failedOf(sdk.records),
        p99Before: ttfa(bare.records, 0, bare.at),
        p99During: ttfa(bare.records, bare.at, bare.end),
        books:
          `${balanced ? 'balance' : 'DO NOT BALANCE'}; ${exact}/${orgsChecked} orgs exact` +
          (within + over > 0 ? `, ${within} within bounds, ${over} charged beyond delivery` : '') +
          (cut > 0 ? `; ${cut} failed or cut requests` : ''),
      });
      process.stderr.write(`${name}: done\n`);
      for (const r of bare.records.filter((x) => !x.ok && !exhausted(x)).slice(0, 5)) process.stderr.write(`  failed ${r.kind} on ${r.servedBy ?? '?'}: ${r.error}\n`);
    }
    const ms = (v: number): string => (Number.isNaN(v) ? '–' : `${v.toFixed(0)} ms`);
    const cpu = cpus();
    process.stdout.write(
      [
        `machine: ${cpu.length} cores (${cpu[0]?.model.trim()}), ${(totalmem() / 2 ** 30).toFixed(1)} GB, Node ${process.version}, load ${loadavg()[0]!.toFixed(1)} at the end; ` +
          `${REST} REST (${BUDGET} on a budget of ${BUDGET_REQUESTS} requests) + ${WS} TTS WebSocket + ${STT} STT WebSocket loops, tone engines`,
        '',
        '| fault | requests (REST / TTS WS / STT WS) | budget refusals | failed, no retries | SDK: retried and succeeded / failed | p99 TTFA/TTFT before → during | books |',
        '|---|---|---|---|---|---|---|',
        ...rows.map((r) => `| ${r.fault} | ${r.rest} / ${r.ws} / ${r.stt} | ${r.exhausted} | ${r.failed} | ${r.retriedOk} / ${r.failedWithRetries} | ${ms(r.p99Before)} → ${ms(r.p99During)} | ${r.books} |`),
        '',
      ].join('\n'),
    );
  } catch (err) {
    for (const i of topo?.instances ?? []) process.stderr.write(`--- ${i.name} (${i.proc === null ? 'stopped' : `pid ${i.proc.pid}, exit ${i.proc.exitCode ?? i.proc.signalCode ?? 'running'}`}):\n${i.stderr.slice(-3000)}\n`);
    throw err;
  } finally {
    topo?.destroy();
    await store?.close().catch(() => undefined);
    pg?.destroy();
  }
}

await main();
