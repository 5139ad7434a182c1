/**
 * The deployment docs/operations.md describes, run for real (issue 36, short form for CI): HAProxy
 * (deploy/haproxy.cfg) in front of three built `voicewire serve` instances, one with `--workers
 * 2`, on one throwaway Postgres, health-checking /api/readyz. Under a steady load of REST, TTS
 * WebSocket and STT WebSocket loops (the tone engines), each loop spending its own organization's
 * credits, the first REST loop's a small budget that runs out mid-run (CREDITS_EXHAUSTED, refused
 * before any work, nothing spent):
 *
 * 1. a rolling restart of every instance (SIGTERM → drain → exit 0 → start again, the next one
 *    once HAProxy sees it back): no request or session fails, and every organization's usage lines
 *    are exactly what its client was delivered;
 * 2. `kill -9` of one instance: only what was in flight on it may fail; the books still balance
 *    (balance + usage = allocation); once the other instances swept the killed one's open holds
 *    (its heartbeat 1.5 s old), none is left open and an organization whose request was cut by
 *    the kill pays at most what its client was delivered, and at least what it had been delivered
 *    2 s before the kill (the sweep charges the last checkpoint, written every 250 ms heartbeat).
 *    Before issue 36's sweep such a request was charged its whole hold (a session's text plus
 *    256 characters).
 *
 * Bounded: each loop makes at most 400 requests and stops within its phase; every process is
 * killed in afterAll; everything listens on 127.0.0.1. bench/topology.ts runs the fuller table.
 */
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ensureOrganization } from '../../src/server/bootstrap.js';
import { createKey } from '../../src/server/keys.js';
import { PostgresStore } from '../../src/server/store/postgres-store.js';
import { hasPostgres, startPostgres, type PostgresCluster } from '../helpers/postgres.js';
import { describeBuilt, inCI } from './describe-built.js';
import {
  HAPROXY,
  calibrate,
  cutRequestBounds,
  exhausted,
  expectedBooks,
  fetchSttClip,
  runLoad,
  startTopology,
  usageByOrg,
  waitForSweep,
  type LoadRecord,
  type Topology,
  type UnitsPerRequest,
} from './topology.js';

const REST_LOOPS = 3;
const WS_LOOPS = 3;
const STT_LOOPS = 2;
const LOOPS = REST_LOOPS + WS_LOOPS + STT_LOOPS;
const CREDITS = 1_000_000;
/** The budget of loop 0 (a REST loop), in its requests: it runs out a few seconds into the load. */
const BUDGET_REQUESTS = 40;
/** How long before a kill a request's end may be and its settlement still not written. */
const SETTLE_WINDOW_MS = 1000;
/** Heartbeats (and checkpoints) every 250 ms; an instance silent 1.5 s is dead (its holds swept). */
const INSTANCE_FLAGS = ['--instance-heartbeat-ms', '250', '--instance-timeout-ms', '1500'];
/** How far a checkpoint may lag the delivery it records: a few heartbeats on a busy 2-core machine. */
const CHECKPOINT_LAG_MS = 2000;

let pg: PostgresCluster | undefined;
let topo: Topology | undefined;
let store: PostgresStore | undefined;
let per: UnitsPerRequest;
let sttClip: Uint8Array;

/** One API key per loop, each of its own organization `<phase>-<loop>`; with `budget`, loop 0's has that many credits. */
async function loopKeys(phase: string, n = LOOPS, budget?: number): Promise<string[]> {
  const keys: string[] = [];
  for (let i = 0; i < n; i++) {
    const org = await ensureOrganization(store!, `${phase}-${i}`, { credits: i === 0 && budget !== undefined ? budget : CREDITS });
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
    const common = ['--store', pg.url(), '--no-bootstrap', '--tts', 'tone', '--stt', 'tone', '--trusted-proxies', '127.0.0.1', ...INSTANCE_FLAGS];
    topo = await startTopology([{ args: common }, { args: common }, { args: [...common, '--workers', '2'] }]);
    const [clipKey] = await loopKeys('clip', 1);
    sttClip = await fetchSttClip(topo.balancer.base, clipKey!);
    const [rest, ws, stt] = await loopKeys('calibrate', 3);
    per = await calibrate({ ...topo.balancer, sttClip }, [rest!, ws!, stt!], ['calibrate-0', 'calibrate-1', 'calibrate-2'], (sql) => pg!.psql(sql, 'voicewire_test'));
  }, 90_000);

  afterAll(async () => {
    topo?.destroy();
    await store?.close();
    pg?.destroy();
  }, 30_000);

  it.skipIf(missing !== undefined && !inCI)(`a rolling restart of every instance under load fails nothing and bills exactly${missing ? ` [SKIPPED: ${missing} missing]` : ''}`, async () => {
    const t = topo!;
    const keys = await loopKeys('roll', LOOPS, BUDGET_REQUESTS * per.rest);
    const load = runLoad({ base: t.balancer.base, wsBase: t.balancer.wsBase, keys, restLoops: REST_LOOPS, sttLoops: STT_LOOPS, sttClip, maxMs: 120_000, maxPerLoop: 400 });
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
    // Nothing failed but the small budget's requests once it ran out.
    const failed = records.filter((r) => !r.ok && !(r.loop === 0 && exhausted(r)));
    expect(failed.map(brief)).toEqual([]);
    expect(records.filter((r) => r.loop === 0 && r.ok).length, 'the budget pays for exactly its requests').toBe(BUDGET_REQUESTS);
    expect(records.filter((r) => r.loop === 0 && exhausted(r)).length, 'the budget ran out mid-run').toBeGreaterThan(0);
    // Every instance served during the roll (the load reached them all through the balancer).
    expect(new Set(records.map((r) => r.servedBy))).toEqual(new Set(t.instances.map((i) => i.name)));
    expect(records.filter((r) => r.kind === 'ws').length).toBeGreaterThan(20);
    expect(records.filter((r) => r.kind === 'stt').length).toBeGreaterThan(10);
    const usage = usageByOrg((sql) => pg!.psql(sql, 'voicewire_test'));
    for (let loop = 0; loop < keys.length; loop++) {
      const mine = records.filter((r) => r.loop === loop);
      const want = expectedBooks(mine, per);
      const got = usage.get(`roll-${loop}`)!;
      expect({ loop, lines: got.lines, units: got.units, spent: got.allocated - got.remaining }).toEqual({ loop, lines: want.ok, units: want.okUnits, spent: got.credits });
    }
  }, 240_000);

  it.skipIf(missing !== undefined && !inCI)(`kill -9 of one instance under load: only what was on it fails; its open holds are settled to what was delivered${missing ? ` [SKIPPED: ${missing} missing]` : ''}`, async () => {
    const t = topo!;
    const keys = await loopKeys('kill', LOOPS, BUDGET_REQUESTS * per.rest);
    const load = runLoad({ base: t.balancer.base, wsBase: t.balancer.wsBase, keys, restLoops: REST_LOOPS, sttLoops: STT_LOOPS, sttClip, maxMs: 60_000, maxPerLoop: 400 });
    let killedAt = 0;
    // The victim: a single-process instance serving a WebSocket session that has heard a word
    // (so the kill cuts a session with something delivered and something still held).
    let victim = t.instances[0]!;
    try {
      await sleep(1500);
      const single = t.instances.slice(0, 2).map((i) => i.name);
      for (let waited = 0; waited < 10_000; waited += 20) {
        const busy = load.inFlight().find((r) => r.kind === 'ws' && (r.words?.length ?? 0) > 0 && single.includes(r.servedBy ?? ''));
        if (busy !== undefined) {
          victim = t.instances.find((i) => i.name === busy.servedBy)!;
          break;
        }
        await sleep(20);
      }
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
    const failed = records.filter((r) => !r.ok && !(r.loop === 0 && exhausted(r)));
    expect(failed.filter((r) => !(inFlight(r) && (r.servedBy === undefined || r.servedBy === victim.name))).map(brief)).toEqual([]);
    expect(records.filter((r) => r.ok && r.start > killedAt).length).toBeGreaterThan(10);
    const psql = (sql: string): string => pg!.psql(sql, 'voicewire_test');
    // The killed instance's holds: swept by the others (or by its successor's start-up sweep).
    await waitForSweep(psql);
    const usage = usageByOrg(psql);
    let cut = 0;
    for (let loop = 0; loop < keys.length; loop++) {
      const mine = records.filter((r) => r.loop === loop);
      const got = usage.get(`kill-${loop}`)!;
      // The books balance whatever happened: what is gone from the balance is in the usage lines.
      expect(got.allocated - got.remaining).toBe(got.credits);
      // The instance settles a request after its last message: one that ended just before the kill may not be settled.
      // (A budget's refusal took nothing: not touched.)
      const hit = mine.filter((r) => r.start <= killedAt && r.end >= killedAt - SETTLE_WINDOW_MS && !exhausted(r));
      const want = expectedBooks(
        mine.filter((r) => !hit.includes(r)),
        per,
      );
      // Each request the kill touched pays between what it had been delivered a checkpoint's lag
      // before the kill and what its client was delivered (a line only if it pays something, or
      // its settlement was written).
      // One that another instance served and finished was settled there: exactly its text.
      const bounds = hit.map((r) => (r.ok && r.servedBy !== undefined && r.servedBy !== victim.name ? { low: per[r.kind], high: per[r.kind] } : cutRequestBounds(r, per, killedAt, CHECKPOINT_LAG_MS)));
      cut += hit.filter((r) => !r.ok).length;
      const low = want.okUnits + bounds.reduce((n, b) => n + b.low, 0);
      const high = want.okUnits + bounds.reduce((n, b) => n + b.high, 0);
      const detail = { loop, units: got.units, lines: got.lines, low, high, hit: hit.map((r, i) => ({ kind: r.kind, ok: r.ok, on: r.servedBy, ...bounds[i] })) };
      expect(got.units >= low && got.units <= high, JSON.stringify(detail)).toBe(true);
      expect(got.lines >= want.ok + bounds.filter((b) => b.low > 0).length && got.lines <= want.ok + hit.length, JSON.stringify(detail)).toBe(true);
    }
    // The kill cut something (else this test would not test the sweep): a WebSocket session lives about a second.
    expect(cut).toBeGreaterThan(0);
  }, 240_000);
});
