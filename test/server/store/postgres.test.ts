/**
 * The Store contract on Postgres (issue 16: "the same test suite as SQLite"), on a throwaway
 * cluster (pg-cluster.ts), plus what only a shared database has: two instances (two pools)
 * migrating and spending one budget at once. Skipped, saying so, where Postgres is not installed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../../src/server/store/postgres-store.js';
import { openStore } from '../../../src/server/store/open.js';
import { isVoicewireError } from '../../../src/util/errors.js';
import { canRunPostgres, startCluster, type PgCluster } from './pg-cluster.js';
import { storeSuite } from './store-suite.js';

let cluster: PgCluster;
let n = 0;
const fresh = async (): Promise<string> => cluster.createDatabase(`t${process.pid}_${++n}`);

const title = canRunPostgres()
  ? 'PostgresStore (oracle: a throwaway Postgres cluster)'
  : 'PostgresStore [SKIPPED: Postgres (initdb, pg_ctl, a postgres user) not installed; apt-get install postgresql]';

describe.skipIf(!canRunPostgres())(title, () => {
  beforeAll(async () => {
    cluster = await startCluster();
  }, 60_000);
  afterAll(() => cluster?.stop());

  storeSuite('PostgresStore', async () => {
    const store = PostgresStore.open(await fresh());
    await store.migrate();
    return { store, cleanup: () => store.close() };
  });

  it('two instances migrating one database at once both succeed, once', async () => {
    const url = await fresh();
    const [x, y] = [PostgresStore.open(url), PostgresStore.open(url)];
    await Promise.all([x.migrate(), y.migrate()]);
    expect(await x.schemaVersion()).toBe(1);
    await x.createOrganization({ name: 'seen by both', region: null, allocatedCredits: 1, remainingCredits: 1, billingPeriod: 'monthly', nextRolloverDate: '2027-01-01', planName: 'p' });
    expect(await y.countOrganizations()).toBe(1);
    await Promise.all([x.close(), y.close()]);
  });

  it('two instances, 2x200 concurrent debits on a budget of 300: exactly 300 succeed, every balance seen once', async () => {
    const url = await fresh();
    const [x, y] = [PostgresStore.open(url), PostgresStore.open(url)];
    await x.migrate();
    const org = await x.createOrganization({ name: 'shared', region: null, allocatedCredits: 300, remainingCredits: 300, billingPeriod: 'monthly', nextRolloverDate: '2027-01-01', planName: 'p' });
    const spend = (s: PostgresStore) => Array.from({ length: 200 }, () => s.debitCredits(org.id, 1, { keyId: null, kind: 'tts', units: 1 }));
    const results = await Promise.all([...spend(x), ...spend(y)]);
    const ok = results.filter((r): r is number => r !== null).sort((p, q) => p - q);
    expect(ok).toEqual(Array.from({ length: 300 }, (_, i) => i));
    expect((await y.getOrganization(org.id))!.remainingCredits).toBe(0);
    expect((await y.usageSummary(org.id, '1970-01-01T00:00:00Z')).tts).toEqual({ units: 300, credits: 300, requests: 300 });
    await Promise.all([x.close(), y.close()]);
  });

  it('the database going away: STORE_UNAVAILABLE within the connect timeout, then it recovers by itself', async () => {
    const s = PostgresStore.open(await fresh(), { connectTimeoutMs: 1000 });
    await s.migrate();
    const org = await s.createOrganization({ name: 'o', region: null, allocatedCredits: 5, remainingCredits: 5, billingPeriod: 'monthly', nextRolloverDate: '2027-01-01', planName: 'p' });
    await s.ping(); // a pooled connection now idles, and will be cut
    cluster.pause();
    try {
      const t = performance.now();
      const err = await s.debitCredits(org.id, 1, { keyId: null, kind: 'tts', units: 1 }).then(() => undefined, (e: unknown) => e);
      expect(isVoicewireError(err, 'STORE_UNAVAILABLE'), String(err)).toBe(true);
      expect(isVoicewireError(await s.ping().then(() => undefined, (e: unknown) => e), 'STORE_UNAVAILABLE')).toBe(true);
      expect(performance.now() - t).toBeLessThan(5000);
    } finally {
      cluster.resume();
    }
    await s.ping();
    expect(await s.debitCredits(org.id, 1, { keyId: null, kind: 'tts', units: 1 })).toBe(4); // the refused debit took nothing
    await s.close();
  });

  it('openStore opens postgres:// URLs and migrates', async () => {
    const store = await openStore({ store: await fresh() });
    expect(store).toBeInstanceOf(PostgresStore);
    expect(await (store as PostgresStore).schemaVersion()).toBe(1);
    await store.close();
  });

  it('purgeExpired deletes expired tokens and candidates and nothing else', async () => {
    const s = PostgresStore.open(await fresh());
    await s.migrate();
    const org = await s.createOrganization({ name: 'o', region: null, allocatedCredits: 1, remainingCredits: 1, billingPeriod: 'monthly', nextRolloverDate: '2027-01-01', planName: 'p' });
    await s.createApiKey({ id: 'k', orgId: org.id, hash: 'h', admin: false, prefix: 'p' });
    const t0 = Date.parse('2031-01-01T00:00:00Z');
    await s.createToken({ hash: 'old', keyId: 'k', expiresAt: new Date(t0 - 1).toISOString() });
    await s.createToken({ hash: 'new', keyId: 'k', expiresAt: new Date(t0 + 1).toISOString() });
    expect(await s.purgeExpired(new Date(t0))).toEqual({ tokens: 1, candidates: 0 });
    expect(await s.findToken('new', new Date(t0))).toBeDefined();
    await s.close();
  });
});

describe('PostgresStore without a server', () => {
  it('fails STORE_UNAVAILABLE, bounded in time, without repeating the password', async () => {
    const t = performance.now();
    const err = await openStore({ store: 'postgres://vw:s3cret@127.0.0.1:1/vw' }).then(() => undefined, (e: unknown) => e);
    expect(isVoicewireError(err, 'STORE_UNAVAILABLE')).toBe(true);
    expect((err as Error).message).not.toContain('s3cret');
    expect(performance.now() - t).toBeLessThan(10_000);
  });
});
