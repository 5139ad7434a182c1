/**
 * The deployment under faults (issue 36), the fuller table of test/product/topology.test.ts:
 * HAProxy (deploy/haproxy.cfg) in front of three built `voicewire serve` instances (vw3 with
 * `--workers 2`) on one Postgres, the tone engines, a steady load of REST and TTS WebSocket loops
 * (each loop its own organization), and in turn: a rolling restart of every instance, `kill -9`
 * of one, one worker of vw3 killed, Postgres restarted, the balancer reloaded. Each fault gets a
 * fresh load, measured for `--before` seconds before it and until `--after` seconds after it.
 *
 *   npm run build && npx tsx bench/topology.ts [--rest 4] [--ws 8] [--before 4] [--after 3]
 *
 * Per fault: requests (REST / WebSocket), those that failed without retries, the same load with
 * the SDK's retries (src/client: a refused upgrade or a 503 is tried again, at most twice): how
 * many were retried and still failed, the p99 time to first audio before the fault and during it
 * (from the fault to `--after` s after it), and whether every organization's books balance
 * (allocated − remaining = the sum of its usage lines) and match what its client was delivered.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { ensureOrganization } from '../src/server/bootstrap.js';
import { createKey } from '../src/server/keys.js';
import { PostgresStore } from '../src/server/store/postgres-store.js';
import { startPostgres, type PostgresCluster } from '../test/helpers/postgres.js';
import { calibrate, expectedBooks, p99, runLoad, startTopology, usageByOrg, type LoadRecord, type Topology, type UnitsPerRequest } from '../test/product/topology.js';

function flag(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i < 0 ? fallback : Number(process.argv[i + 1]);
  if (!(v > 0)) throw new Error(`--${name} takes a positive number`);
  return v;
}
const REST = flag('rest', 4);
const WS = flag('ws', 8);
const BEFORE_MS = flag('before', 4) * 1000;
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
    const common = ['--store', pg.url(), '--no-bootstrap', '--tts', 'tone', '--stt', 'tone', '--trusted-proxies', '127.0.0.1'];
    topo = await startTopology([{ args: common }, { args: common }, { args: [...common, '--workers', '2'] }]);
    const t = topo;
    const psql = (sql: string): string => pg!.psql(sql, 'voicewire_test');
    let orgN = 0;
    const keys = async (n: number): Promise<{ keys: string[]; orgs: string[] }> => {
      const k: string[] = [];
      const orgs: string[] = [];
      for (let i = 0; i < n; i++) {
        const name = `org-${orgN++}`;
        const org = await ensureOrganization(store!, name, { credits: 10_000_000 });
        k.push((await createKey(store!, org.id)).key);
        orgs.push(name);
      }
      return { keys: k, orgs };
    };
    const cal = await keys(2);
    const per: UnitsPerRequest = await calibrate(t.balancer, [cal.keys[0]!, cal.keys[1]!], [cal.orgs[0]!, cal.orgs[1]!], psql);
    const all = (): string[] => t.instances.map((i) => i.name);

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
    for (const [name, fault] of faults) {
      const measure = async (retry: boolean): Promise<{ records: LoadRecord[]; at: number; end: number; orgs: string[] }> => {
        const k = await keys(REST + WS);
        const load = runLoad({ base: t.balancer.base, wsBase: t.balancer.wsBase, keys: k.keys, restLoops: REST, maxMs: 300_000, maxPerLoop: 5000, retry });
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
      const usage = usageByOrg(psql);
      let balanced = true;
      let exact = 0;
      let orgsChecked = 0;
      for (const run of [bare, sdk]) {
        run.orgs.forEach((org, loop) => {
          const got = usage.get(org)!;
          if (got.allocated - got.remaining !== got.credits) balanced = false;
          const want = expectedBooks(
            run.records.filter((r) => r.loop === loop),
            per,
          );
          orgsChecked++;
          if (got.units === want.okUnits && got.lines === want.ok) exact++;
        });
      }
      const ttfa = (rs: LoadRecord[], from: number, to: number): number => p99(rs.filter((r) => r.ok && r.start >= from && r.start < to && r.ttfa !== undefined).map((r) => r.ttfa!));
      rows.push({
        fault: name,
        rest: bare.records.filter((r) => r.kind === 'rest').length,
        ws: bare.records.filter((r) => r.kind === 'ws').length,
        failed: bare.records.filter((r) => !r.ok).length,
        retriedOk: sdk.records.filter((r) => r.ok && r.retries > 0).length,
        failedWithRetries: sdk.records.filter((r) => !r.ok).length,
        p99Before: ttfa(bare.records, 0, bare.at),
        p99During: ttfa(bare.records, bare.at, bare.end),
        books: `${balanced ? 'balance' : 'DO NOT BALANCE'}; ${exact}/${orgsChecked} orgs exact`,
      });
      process.stderr.write(`${name}: done\n`);
      for (const r of bare.records.filter((x) => !x.ok).slice(0, 5)) process.stderr.write(`  failed ${r.kind} on ${r.servedBy ?? '?'}: ${r.error}\n`);
    }
    const ms = (v: number): string => (Number.isNaN(v) ? '–' : `${v.toFixed(0)} ms`);
    const cpu = cpus();
    process.stdout.write(
      [
        `machine: ${cpu.length} cores (${cpu[0]?.model.trim()}), ${(totalmem() / 2 ** 30).toFixed(1)} GB, Node ${process.version}, ${REST} REST + ${WS} TTS WebSocket loops, tone engines`,
        '',
        '| fault | requests (REST / WS) | failed, no retries | SDK: retried and succeeded / failed | p99 TTFA before → during | books |',
        '|---|---|---|---|---|---|',
        ...rows.map((r) => `| ${r.fault} | ${r.rest} / ${r.ws} | ${r.failed} | ${r.retriedOk} / ${r.failedWithRetries} | ${ms(r.p99Before)} → ${ms(r.p99During)} | ${r.books} |`),
        '',
      ].join('\n'),
    );
  } finally {
    topo?.destroy();
    await store?.close().catch(() => undefined);
    pg?.destroy();
  }
}

await main();
