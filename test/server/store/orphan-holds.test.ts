/**
 * A killed instance's open holds (issue 36), on both SQL stores: a sweep settles the holds of an
 * instance whose heartbeat stopped to what its last checkpoint says was delivered, once, and leaves
 * a live instance's holds alone; a late settlement by the holder changes nothing, a settlement
 * before the sweep wins, and sweeps racing each other and settlements settle every hold exactly
 * once (balance + usage = allocation, each line at one of the two charges). Postgres: two stores
 * (two pools, as two instances) on one throwaway cluster; SQLite: two handles on one file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../../src/server/store/postgres-store.js';
import { SqliteStore } from '../../../src/server/store/sqlite-store.js';
import type { Store } from '../../../src/server/store/store.js';
import { isVoicewireError } from '../../../src/util/errors.js';
import { hasPostgres, needsPostgres, startPostgres, type PostgresCluster } from '../../helpers/postgres.js';

const ORG = { region: null, allocatedCredits: 1000, remainingCredits: 1000, billingPeriod: 'monthly', nextRolloverDate: '2026-12-01', planName: 'free' };
const TTS = { keyId: null, kind: 'tts' as const };
/** Instances: A dies (never beats after its holds), B lives (its heartbeat is past every cutoff used here). */
const A = 'instance-a';
const B = 'instance-b';
const owner = (holder: string, delivered = 0): { holder: string; delivered: { units: number; credits: number } } => ({ holder, delivered: { units: delivered, credits: delivered } });

/** Two stores on one database (two instances), and their cleanup. */
interface Pair {
  x: Store;
  y: Store;
  cleanup(): Promise<void>;
}

/** An organization's books: its balance, and its usage lines (count, units, credits). */
async function books(s: Store, orgId: string): Promise<{ remaining: number; lines: number; units: number; credits: number }> {
  const o = (await s.getOrganization(orgId))!;
  const u = await s.usageSummary(orgId, '1970-01-01T00:00:00Z');
  return { remaining: o.remainingCredits, lines: u.tts.requests + u.stt.requests, units: u.tts.units + u.stt.units, credits: u.tts.credits + u.stt.credits };
}

function orphanHoldsSuite(name: string, make: () => Promise<Pair>): void {
  describe(`open holds of a dead instance: ${name}`, () => {
    it('an orphan hold is settled once, to its last checkpoint (capped at its hold); a live instance’s hold is untouched', async () => {
      const { x, y, cleanup } = await make();
      try {
        const org = await x.createOrganization({ ...ORG, name: 'acme' });
        await x.heartbeat(B, Date.now() + 3_600_000, []);
        // A's hold, grown once with 50 delivered, then checkpointed at 120 by a heartbeat.
        const h1 = (await x.reserveCredits(org.id, 300, { ...TTS, units: 300 }, undefined, owner(A)))!.holdId;
        expect(await x.reserveCredits(org.id, 100, { ...TTS, units: 100 }, h1, owner(A, 50))).not.toBeNull();
        await x.heartbeat(A, Date.now() - 3_600_000, [{ holdId: h1, units: 120, credits: 120 }]);
        // A's second hold delivered nothing: no line is left of it. Its checkpoint above its hold is capped.
        const h2 = (await x.reserveCredits(org.id, 30, { ...TTS, units: 30 }, undefined, owner(A)))!.holdId;
        const h3 = (await x.reserveCredits(org.id, 40, { ...TTS, units: 40 }, undefined, owner(A)))!.holdId;
        await x.heartbeat(A, Date.now() - 3_600_000, [{ holdId: h3, units: 500, credits: 500 }]);
        // B's hold: alive, whatever the sweep.
        await y.reserveCredits(org.id, 200, { ...TTS, units: 200 }, undefined, owner(B));
        expect(await books(x, org.id)).toEqual({ remaining: 1000 - 400 - 30 - 40 - 200, lines: 4, units: 670, credits: 670 });

        const cutoff = Date.now() + 1000;
        const swept = await y.sweepOrphanHolds(cutoff);
        expect(swept.map((h) => ({ id: h.holdId, held: h.held, credits: h.credits, units: h.units, holder: h.holder })).sort((a, b) => Number(a.id) - Number(b.id))).toEqual([
          { id: h1, held: 400, credits: 120, units: 120, holder: A },
          { id: h2, held: 30, credits: 0, units: 0, holder: A },
          { id: h3, held: 40, credits: 40, units: 40, holder: A },
        ]);
        // 120 + 40 charged for A, B's 200 still held; h2 removed.
        expect(await books(x, org.id)).toEqual({ remaining: 1000 - 120 - 40 - 200, lines: 3, units: 360, credits: 360 });
        // Once: a second sweep, on either instance, finds nothing.
        expect(await x.sweepOrphanHolds(cutoff)).toEqual([]);
        expect(await y.sweepOrphanHolds(cutoff + 1000)).toEqual([]);
        expect(await books(x, org.id)).toEqual({ remaining: 640, lines: 3, units: 360, credits: 360 });
      } finally {
        await cleanup();
      }
    });

    it('after a sweep, the holder’s late settlement changes nothing and growing the hold takes nothing; a settlement before the sweep wins', async () => {
      const { x, y, cleanup } = await make();
      try {
        const org = await x.createOrganization({ ...ORG, name: 'acme' });
        const late = (await x.reserveCredits(org.id, 300, { ...TTS, units: 300 }, undefined, owner(A, 10)))!.holdId;
        const early = (await x.reserveCredits(org.id, 100, { ...TTS, units: 100 }, undefined, owner(A)))!.holdId;
        // `early` is settled by its holder before any sweep: 80 charged.
        await x.settleCredits(org.id, early, { units: 80, credits: 80 }, A);
        expect(await y.sweepOrphanHolds(Date.now() + 1000)).toMatchObject([{ holdId: late, credits: 10 }]);
        const after = await books(x, org.id);
        expect(after).toEqual({ remaining: 1000 - 10 - 80, lines: 2, units: 90, credits: 90 });
        // A comes back (it was only unreachable): its settlement of the swept hold is a no-op…
        expect(await x.settleCredits(org.id, late, { units: 300, credits: 300 }, A)).toBe(910);
        expect(await books(x, org.id)).toEqual(after);
        // …and growing it is refused with nothing taken.
        const grown = await x.reserveCredits(org.id, 50, { ...TTS, units: 50 }, late, owner(A, 20)).then(
          () => 'resolved',
          (e: unknown) => (isVoicewireError(e) ? e.code : String(e)),
        );
        expect(grown).toBe('STORE_UNAVAILABLE');
        expect(await books(x, org.id)).toEqual(after);
      } finally {
        await cleanup();
      }
    });

    it('two sweeps and the holder’s own settlements racing over 120 holds: each hold settled exactly once, no credit lost or made', async () => {
      const { x, y, cleanup } = await make();
      try {
        const orgs = await Promise.all(['o1', 'o2', 'o3', 'o4'].map((n) => x.createOrganization({ ...ORG, name: n, allocatedCredits: 100_000, remainingCredits: 100_000 })));
        const holds: Array<{ orgId: string; holdId: string }> = [];
        for (let i = 0; i < 120; i++) {
          const orgId = orgs[i % 4]!.id;
          // Held 50, checkpointed at 10; the holder would settle at 30.
          holds.push({ orgId, holdId: (await x.reserveCredits(orgId, 50, { ...TTS, units: 50 }, undefined, owner(A, 10)))!.holdId });
        }
        const cutoff = Date.now() + 1000;
        const settled = holds.map((h, i) => (i % 2 === 0 ? x.settleCredits(h.orgId, h.holdId, { units: 30, credits: 30 }, A) : Promise.resolve(0)));
        const [s1, s2] = await Promise.all([x.sweepOrphanHolds(cutoff), y.sweepOrphanHolds(cutoff), ...settled]);
        const sweptIds = [...(s1 as { holdId: string }[]), ...(s2 as { holdId: string }[])].map((h) => h.holdId);
        expect(new Set(sweptIds).size, 'no hold swept twice').toBe(sweptIds.length);
        // Every odd hold (never settled by its holder) was swept.
        for (let i = 1; i < 120; i += 2) expect(sweptIds).toContain(holds[i]!.holdId);
        let charged = 0;
        for (const o of orgs) {
          const b = await books(x, o.id);
          expect(b.remaining + b.credits, `${o.name}: balance + usage = allocation`).toBe(100_000);
          expect(b.lines).toBe(30);
          charged += b.credits;
        }
        // Each line at exactly one of the two charges: 10 if swept, 30 if its holder settled first.
        expect(charged).toBe(sweptIds.length * 10 + (120 - sweptIds.length) * 30);
        expect(await x.sweepOrphanHolds(cutoff + 1000)).toEqual([]);
      } finally {
        await cleanup();
      }
    });

    it('a hold newer than the cutoff is left even when its instance has no heartbeat yet (it is starting)', async () => {
      const { x, cleanup } = await make();
      try {
        const org = await x.createOrganization({ ...ORG, name: 'acme' });
        await x.reserveCredits(org.id, 100, { ...TTS, units: 100 }, undefined, owner('just-started'));
        expect(await x.sweepOrphanHolds(Date.now() - 1000)).toEqual([]);
        expect((await books(x, org.id)).credits).toBe(100);
      } finally {
        await cleanup();
      }
    });
  });
}

orphanHoldsSuite('SqliteStore (two handles on one file)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'vw-orphans-'));
  const [x, y] = [SqliteStore.open(join(dir, 'voicewire.db')), SqliteStore.open(join(dir, 'voicewire.db'))];
  await x.migrate();
  await y.migrate();
  return {
    x,
    y,
    cleanup: async () => {
      await x.close();
      await y.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

describe.skipIf(!hasPostgres())(needsPostgres('PostgresStore'), () => {
  let cluster: PostgresCluster;
  let admin: pg.Pool;
  let schemas = 0;
  beforeAll(async () => {
    cluster = await startPostgres();
    admin = new pg.Pool({ connectionString: cluster.url(), max: 2 });
  }, 40_000);
  afterAll(async () => {
    await admin?.end().catch(() => undefined);
    cluster?.destroy();
  }, 20_000);

  orphanHoldsSuite('PostgresStore (two pools on one database)', async () => {
    const schema = `orphans${++schemas}`;
    await admin.query(`CREATE SCHEMA ${schema}`);
    const url = `${cluster.url()}?options=${encodeURIComponent(`-c search_path=${schema}`)}`;
    const [x, y] = [new PostgresStore(url), new PostgresStore(url)];
    await Promise.all([x.migrate(), y.migrate()]);
    return {
      x,
      y,
      cleanup: async () => {
        await x.close();
        await y.close();
        await admin.query(`DROP SCHEMA ${schema} CASCADE`);
      },
    };
  });
});
