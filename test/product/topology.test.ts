/**
 * The deployment docs/operations.md describes, run for real (issue 36, short form for CI): HAProxy
 * (deploy/haproxy.cfg) in front of three built `voicewire serve` instances, one with `--workers
 * 2`, on one throwaway Postgres, health-checking /api/readyz. Under a steady load of REST and TTS
 * WebSocket loops (the tone engine), each loop spending its own organization's credits:
 *
 * 1. a rolling restart of every instance (SIGTERM → drain → exit 0 → start again, the next one
 *    once HAProxy sees it back): no request or session fails, and every organization's usage lines
 *    are exactly what its client was delivered;
 * 2. `kill -9` of one instance: only what was in flight on it may fail; the books still balance
 *    (balance + usage = allocation), and an organization whose request was in flight at the kill
 *    pays at most that request's hold beyond what it was delivered.
 *
 * Bounded: each loop makes at most 400 requests and stops within its phase; every process is
 * killed in afterAll; everything listens on 127.0.0.1. bench/topology.ts runs the fuller table.
 */
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { HOLD_AHEAD_MAX } from '../../src/server/credits.js';
import { ensureOrganization } from '../../src/server/bootstrap.js';
import { createKey } from '../../src/server/keys.js';
import { PostgresStore } from '../../src/server/store/postgres-store.js';
import { hasPostgres, startPostgres, type PostgresCluster } from '../helpers/postgres.js';
import { describeBuilt, inCI } from './describe-built.js';
import { HAPROXY, calibrate, expectedBooks, runLoad, startTopology, usageByOrg, type LoadRecord, type Topology, type UnitsPerRequest } from './topology.js';

const REST_LOOPS = 3;
const WS_LOOPS = 3;
const CREDITS = 1_000_000;
/** How long before a kill a request's end may be and its settlement still not written. */
const SETTLE_WINDOW_MS = 1000;

let pg: PostgresCluster | undefined;
let topo: Topology | undefined;
let store: PostgresStore | undefined;
let per: UnitsPerRequest;

/** One API key per loop, each of its own organization `<phase>-<loop>`. */
async function loopKeys(phase: string, n = REST_LOOPS + WS_LOOPS): Promise<string[]> {
  const keys: string[] = [];
  for (let i = 0; i < n; i++) {
    const org = await ensureOrganization(store!, `${phase}-${i}`, { credits: CREDITS });
    keys.push((await createKey(store!, org.id)).key);
  }
  return keys;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const brief = (r: LoadRecord): string => `${r.kind} loop ${r.loop} on ${r.servedBy ?? '?'}: ${r.error}`;

const missing = !existsSync(HAPROXY) ? 'HAProxy (/usr/sbin/haproxy, Debian haproxy)' : !hasPostgres() ? 'Postgres (Debian postgresql)' : undefined;

describeBuilt('the topology: HAProxy, three serve instances (one --workers 2), one Postgres', () => {
  beforeAll(async () => {
    if (missing !== undefined) {
      if (inCI) throw new Error(`CI must have ${missing}: .ci/run installs it`);
      return;
    }
    pg = await startPostgres();
    store = new PostgresStore(pg.url());
    await store.migrate();
    const common = ['--store', pg.url(), '--no-bootstrap', '--tts', 'tone', '--stt', 'tone', '--trusted-proxies', '127.0.0.1'];
    topo = await startTopology([{ args: common }, { args: common }, { args: [...common, '--workers', '2'] }]);
    const [rest, ws] = await loopKeys('calibrate', 2);
    per = await calibrate(topo.balancer, [rest!, ws!], ['calibrate-0', 'calibrate-1'], (sql) => pg!.psql(sql, 'voicewire_test'));
  }, 90_000);

  afterAll(async () => {
    topo?.destroy();
    await store?.close();
    pg?.destroy();
  }, 30_000);

  it.skipIf(missing !== undefined && !inCI)(`a rolling restart of every instance under load fails nothing and bills exactly${missing ? ` [SKIPPED: ${missing} missing]` : ''}`, async () => {
    const t = topo!;
    const keys = await loopKeys('roll');
    const load = runLoad({ base: t.balancer.base, wsBase: t.balancer.wsBase, keys, restLoops: REST_LOOPS, maxMs: 120_000, maxPerLoop: 400 });
    try {
      await sleep(1500);
      for (const inst of t.instances) {
        expect(await inst.stop(), `${inst.name} exits 0 after its drain`).toBe(0);
        await inst.start();
        // As a rollout does: the next instance goes once the balancer has this one back.
        await t.balancer.waitUp(t.instances.map((i) => i.name));
      }
      await sleep(1000);
    } finally {
      load.stop();
    }
    const records = await load.done;
    const failed = records.filter((r) => !r.ok);
    expect(failed.map(brief)).toEqual([]);
    // Every instance served during the roll (the load reached them all through the balancer).
    expect(new Set(records.map((r) => r.servedBy))).toEqual(new Set(t.instances.map((i) => i.name)));
    expect(records.filter((r) => r.kind === 'ws').length).toBeGreaterThan(20);
    const usage = usageByOrg((sql) => pg!.psql(sql, 'voicewire_test'));
    for (let loop = 0; loop < keys.length; loop++) {
      const mine = records.filter((r) => r.loop === loop);
      const want = expectedBooks(mine, per);
      const got = usage.get(`roll-${loop}`)!;
      expect({ loop, lines: got.lines, units: got.units, spent: got.allocated - got.remaining }).toEqual({ loop, lines: want.ok, units: want.okUnits, spent: got.credits });
    }
  }, 240_000);

  it.skipIf(missing !== undefined && !inCI)(`kill -9 of one instance under load: only what was on it fails; the books balance${missing ? ` [SKIPPED: ${missing} missing]` : ''}`, async () => {
    const t = topo!;
    const keys = await loopKeys('kill');
    const victim = t.instances[0]!;
    const load = runLoad({ base: t.balancer.base, wsBase: t.balancer.wsBase, keys, restLoops: REST_LOOPS, maxMs: 60_000, maxPerLoop: 400 });
    let killedAt = 0;
    try {
      await sleep(1500);
      killedAt = performance.now();
      await victim.kill();
      await sleep(2000);
      await victim.start();
      await t.balancer.waitUp(t.instances.map((i) => i.name));
      await sleep(1000);
    } finally {
      load.stop();
    }
    const records = await load.done;
    const inFlight = (r: LoadRecord): boolean => r.start <= killedAt && r.end >= killedAt;
    // A failure is a request that was in flight at the kill, on the killed instance (or with no answer to say where).
    const failed = records.filter((r) => !r.ok);
    expect(failed.filter((r) => !(inFlight(r) && (r.servedBy === undefined || r.servedBy === victim.name))).map(brief)).toEqual([]);
    expect(records.filter((r) => r.ok && r.start > killedAt).length).toBeGreaterThan(10);
    const usage = usageByOrg((sql) => pg!.psql(sql, 'voicewire_test'));
    for (let loop = 0; loop < keys.length; loop++) {
      const mine = records.filter((r) => r.loop === loop);
      const want = expectedBooks(mine, per);
      const got = usage.get(`kill-${loop}`)!;
      // The books balance whatever happened: what is gone from the balance is in the usage lines.
      expect(got.allocated - got.remaining).toBe(got.credits);
      // The instance settles a request after its last message: one that ended just before the kill may not be settled.
      const hit = mine.filter((r) => r.start <= killedAt && r.end >= killedAt - SETTLE_WINDOW_MS);
      if (hit.length === 0) {
        expect({ loop, lines: got.lines, units: got.units }).toEqual({ loop, lines: want.ok, units: want.okUnits });
      } else {
        // A request cut by the kill may have left its hold charged (a REST one the balancer
        // retried elsewhere too): at most its text plus the hold's margin.
        const margin = hit.reduce((n, r) => n + per[r.kind] + HOLD_AHEAD_MAX.tts, 0);
        expect(got.units).toBeGreaterThanOrEqual(want.okUnits);
        expect(got.units).toBeLessThanOrEqual(want.okUnits + margin);
        expect(got.lines).toBeGreaterThanOrEqual(want.ok);
        expect(got.lines).toBeLessThanOrEqual(want.ok + hit.length);
      }
    }
  }, 240_000);
});
