/**
 * The Store contract on PostgresStore (store-suite.ts, the suite SQLite and memory pass), then what
 * only Postgres has: concurrent debits from two pools (two server instances), the pool bound, the
 * database going away and coming back, a hung server, its migrations and URL. One throwaway
 * cluster for the file (test/helpers/postgres.ts); each contract test gets a fresh schema.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../../src/server/store/open.js';
import { POSTGRES_MIGRATIONS } from '../../../src/server/store/postgres-migrations.js';
import { PostgresStore, type PostgresStoreOptions } from '../../../src/server/store/postgres-store.js';
import { isVoicewireError, type ErrorCode } from '../../../src/util/errors.js';
import { freePort, hasPostgres, needsPostgres, startPostgres, type PostgresCluster } from '../../helpers/postgres.js';
import { storeSuite } from './store-suite.js';

const ORG = { region: null, allocatedCredits: 10, remainingCredits: 10, billingPeriod: 'monthly', nextRolloverDate: '2026-12-01', planName: 'free' };

async function codeOf(p: Promise<unknown>): Promise<ErrorCode | 'resolved' | 'not a VoicewireError'> {
  try {
    await p;
    return 'resolved';
  } catch (e) {
    return isVoicewireError(e) ? e.code : 'not a VoicewireError';
  }
}

describe.skipIf(!hasPostgres())(needsPostgres('PostgresStore'), () => {
  let cluster: PostgresCluster;
  let admin: pg.Pool;
  let schemas = 0;

  /** A URL whose connections see only a fresh, empty schema (search_path set at connection start). */
  async function freshSchemaUrl(): Promise<string> {
    const schema = `t${++schemas}`;
    await admin.query(`CREATE SCHEMA ${schema}`);
    return `${cluster.url()}?options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  }

  async function freshStore(options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const store = new PostgresStore(await freshSchemaUrl(), options);
    await store.migrate();
    return store;
  }

  beforeAll(async () => {
    cluster = await startPostgres();
    admin = new pg.Pool({ connectionString: cluster.url(), max: 2 });
    admin.on('error', () => undefined); // the restart tests cut its idle connections too
  }, 40_000);

  afterAll(async () => {
    await admin?.end().catch(() => undefined);
    cluster?.destroy();
  }, 20_000);

  storeSuite('PostgresStore', async () => {
    const url = await freshSchemaUrl();
    const store = new PostgresStore(url);
    await store.migrate();
    const schema = `t${schemas}`;
    return {
      store,
      cleanup: async () => {
        await store.close();
        await admin.query(`DROP SCHEMA ${schema} CASCADE`);
      },
    };
  });

  describe('what only Postgres has', () => {
    it('two stores (two pools, as two server instances) spending one budget: 2×200 concurrent debits on 300 credits spend exactly 300', async () => {
      const url = await freshSchemaUrl();
      const [x, y] = [new PostgresStore(url), new PostgresStore(url)];
      await Promise.all([x.migrate(), y.migrate()]); // concurrent migrations: one wins, the other finds it done
      const org = await x.createOrganization({ ...ORG, name: 'shared', allocatedCredits: 300, remainingCredits: 300 });
      const debit = (s: PostgresStore): Promise<number | null> => s.debitCredits(org.id, 1, { keyId: null, kind: 'tts', units: 1 });
      const results = await Promise.all(Array.from({ length: 400 }, (_, i) => debit(i % 2 ? x : y)));
      const ok = results.filter((r): r is number => r !== null);
      expect(ok).toHaveLength(300);
      expect([...ok].sort((p, q) => p - q)).toEqual(Array.from({ length: 300 }, (_, i) => i)); // every balance 299…0 seen once
      expect((await y.getOrganization(org.id))!.remainingCredits).toBe(0);
      expect((await x.usageSummary(org.id, '1970-01-01T00:00:00Z')).tts).toEqual({ units: 300, credits: 300, requests: 300 });
      // What one instance writes, the other reads.
      await x.createApiKey({ id: 'k1', orgId: org.id, hash: 'h1', admin: false, prefix: 'vw_x' });
      expect((await y.findApiKeyByHash('h1'))?.id).toBe('k1');
      await Promise.all([x.close(), y.close()]);
    });

    it('the pool is bounded: 200 concurrent calls on maxConnections 3 open at most 3 connections', async () => {
      const store = await freshStore({ maxConnections: 3 });
      const org = await store.createOrganization({ ...ORG, name: 'pool', remainingCredits: 1000 });
      let peak = 0;
      await Promise.all(
        Array.from({ length: 200 }, async () => {
          await store.debitCredits(org.id, 1, { keyId: null, kind: 'stt', units: 1 });
          peak = Math.max(peak, store.poolStats().total);
        }),
      );
      const server = Number((await admin.query("SELECT COUNT(*) AS n FROM pg_stat_activity WHERE application_name = 'voicewire'")).rows[0].n);
      expect(peak).toBeGreaterThanOrEqual(2); // it did run calls side by side
      expect(peak).toBeLessThanOrEqual(3);
      expect(server).toBeLessThanOrEqual(3);
      expect((await store.getOrganization(org.id))!.remainingCredits).toBe(800);
      await store.close();
      expect(store.poolStats()).toEqual({ total: 0, idle: 0, waiting: 0 });
    });

    it('the database goes away: ping and debits reject STORE_UNAVAILABLE within seconds, nothing is spent; the same store works once it is back', async () => {
      const store = await freshStore({ connectionTimeoutMs: 2000, queryTimeoutMs: 3000 });
      const org = await store.createOrganization({ ...ORG, name: 'outage' });
      await store.ping(); // a pooled connection is open when the server stops
      cluster.stop();
      try {
        for (let i = 0; i < 2; i++) {
          const t = performance.now();
          expect(await codeOf(store.ping())).toBe('STORE_UNAVAILABLE');
          expect(performance.now() - t).toBeLessThan(3000);
        }
        expect(await codeOf(store.debitCredits(org.id, 4, { keyId: null, kind: 'tts', units: 4 }))).toBe('STORE_UNAVAILABLE');
        expect(await codeOf(store.getOrganization(org.id))).toBe('STORE_UNAVAILABLE');
      } finally {
        cluster.start();
      }
      await expect(store.ping()).resolves.toBeUndefined();
      expect(await store.debitCredits(org.id, 4, { keyId: null, kind: 'tts', units: 4 })).toBe(6); // the refused debit took nothing
      expect((await store.usageSummary(org.id, '1970-01-01T00:00:00Z')).tts.requests).toBe(1);
      await store.close();
    });

    it('a server that stops answering (processes frozen): ping rejects STORE_UNAVAILABLE by the client-side timeouts, then recovers', async () => {
      const store = await freshStore({ connectionTimeoutMs: 1000, queryTimeoutMs: 1500 });
      await Promise.all([store.ping(), store.ping()]); // two idle pooled connections when it freezes
      expect(store.poolStats().idle).toBe(2);
      // The cluster's own processes, by id: the postmaster (first line of postmaster.pid) and its children.
      const postmaster = Number(readFileSync(join(cluster.dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
      const children = readFileSync(`/proc/${postmaster}/task/${postmaster}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
      const pids = [postmaster, ...children];
      for (const pid of pids) process.kill(pid, 'SIGSTOP');
      try {
        const t = performance.now();
        expect(await codeOf(store.ping())).toBe('STORE_UNAVAILABLE'); // an idle connection: query timeout
        const first = performance.now() - t;
        expect(first).toBeGreaterThan(1400);
        expect(first).toBeLessThan(4000);
        // A transaction on the other: one query timeout, no second wait for a ROLLBACK that cannot answer.
        const t1 = performance.now();
        expect(await codeOf(store.listVoices('x', { includeCatalog: true, limit: null, offset: 0 }))).toBe('STORE_UNAVAILABLE');
        expect(performance.now() - t1).toBeLessThan(2800);
        expect(store.poolStats().total).toBe(0); // both timed-out connections were destroyed, not pooled
        const t2 = performance.now();
        expect(await codeOf(store.ping())).toBe('STORE_UNAVAILABLE'); // a new connection: connection timeout
        expect(performance.now() - t2).toBeLessThan(4000);
      } finally {
        for (const pid of pids) process.kill(pid, 'SIGCONT');
      }
      await expect(store.ping()).resolves.toBeUndefined();
      await store.close();
    });

    it('a refused connection is STORE_UNAVAILABLE at once; a bad URL is INVALID_ARGUMENT; neither repeats the password', async () => {
      const port = await freePort();
      const t = performance.now();
      const err = await openStore({ store: `postgres://vw:s3cret@127.0.0.1:${port}/vw` }).then(() => undefined, (e: unknown) => e);
      expect(isVoicewireError(err, 'STORE_UNAVAILABLE')).toBe(true);
      expect(performance.now() - t).toBeLessThan(2000);
      expect((err as Error).message).not.toContain('s3cret');
      const bad = await openStore({ store: 'postgres://vw:s3cret@[bad/vw' }).then(() => undefined, (e: unknown) => e);
      expect(isVoicewireError(bad, 'INVALID_ARGUMENT')).toBe(true);
      expect((bad as Error).message).not.toContain('s3cret');
      expect(() => new PostgresStore(cluster.url(), { maxConnections: 0 })).toThrow(/maxConnections/);
      expect(() => new PostgresStore(cluster.url(), { statementTimeoutMs: -1 })).toThrow(/statementTimeoutMs/);
    });

    it('openStore(postgres://…) migrates and returns a PostgresStore; a second open, over TCP or the Unix socket, sees the same data', async () => {
      const url = await freshSchemaUrl();
      const first = await openStore({ store: url });
      expect(first).toBeInstanceOf(PostgresStore);
      expect(await (first as PostgresStore).schemaVersion()).toBe(POSTGRES_MIGRATIONS.at(-1)!.version);
      await first.createOrganization({ ...ORG, name: 'persisted' });
      await first.close();
      const again = await openStore({ store: url.replace(/^postgres:/, 'postgresql:') });
      expect((await again.getOrganizationByName('persisted'))?.remainingCredits).toBe(10);
      await again.close();
      // libpq's Unix-socket form: no host in the authority, the socket's folder as `host`.
      const search = new URL(url).searchParams.get('options')!;
      const socket = await openStore({ store: `postgres://postgres@/voicewire_test?host=${encodeURIComponent(cluster.dir)}&port=${cluster.port}&options=${encodeURIComponent(search)}` });
      expect(await socket.countOrganizations()).toBe(1);
      await socket.close();
    });

    it('migrations apply once each, in order; a newer schema is refused; a failing one leaves the previous version whole', async () => {
      const url = await freshSchemaUrl();
      const V1 = POSTGRES_MIGRATIONS.slice(0, 1); // the shipped list grows: this test is about 1 → 2 → 3
      const v1 = new PostgresStore(url, { migrations: V1 });
      expect(await v1.schemaVersion()).toBe(0);
      await v1.migrate();
      await v1.migrate();
      expect(await v1.schemaVersion()).toBe(1);
      await v1.createOrganization({ ...ORG, name: 'before upgrade' });
      await v1.close();

      const next = [...V1, { version: 2, name: 'test: a column', sql: "ALTER TABLE organizations ADD COLUMN note TEXT NOT NULL DEFAULT 'x'" }];
      const v2 = new PostgresStore(url, { migrations: next });
      await v2.migrate();
      await v2.migrate(); // a second ALTER would fail: it must not run again
      expect(await v2.schemaVersion()).toBe(2);
      expect(await v2.getOrganizationByName('before upgrade')).toBeDefined();
      await v2.close();

      const old = new PostgresStore(url, { migrations: V1 });
      const err = await old.migrate().then(() => undefined, (e: unknown) => e);
      expect(isVoicewireError(err, 'STORE_UNAVAILABLE')).toBe(true);
      expect(String((err as Error).message)).toMatch(/schema version 2 is newer/);
      await old.close();

      const bad = [...next, { version: 3, name: 'broken', sql: 'CREATE TABLE good_part (x INTEGER); THIS IS NOT SQL' }];
      const v3 = new PostgresStore(url, { migrations: bad });
      expect(await codeOf(v3.migrate())).toBe('STORE_UNAVAILABLE');
      expect(await v3.schemaVersion()).toBe(2);
      expect(Number((await admin.query("SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_name = 'good_part'")).rows[0].n)).toBe(0);
      await v3.close();
    });

    it('schema 2: an existing admin key becomes an instance-admin key (no organization, its tokens deleted); other keys and tokens stay', async () => {
      const url = await freshSchemaUrl();
      const v1 = new PostgresStore(url, { migrations: POSTGRES_MIGRATIONS.slice(0, 1) });
      await v1.migrate();
      const org = await v1.createOrganization({ ...ORG, name: 'default' });
      await v1.close();
      const schema = new URL(url).searchParams.get('options')!.replace('-c search_path=', '');
      await admin.query(`INSERT INTO ${schema}.api_keys (id, org_id, hash, admin, prefix, created_at) VALUES ('api', $1, 'h-api', FALSE, 'p', '2026-01-01'), ('adm', $1, 'h-adm', TRUE, 'p', '2026-01-02')`, [org.id]);
      await admin.query(`INSERT INTO ${schema}.tokens (hash, key_id, expires_at, expires_ms) VALUES ('t-api', 'api', '2099-01-01T00:00:00.000Z', 4070908800000), ('t-adm', 'adm', '2099-01-01T00:00:00.000Z', 4070908800000)`);
      const v2 = new PostgresStore(url);
      await v2.migrate();
      expect(await v2.getApiKey('adm')).toMatchObject({ admin: true, orgId: null });
      expect(await v2.getApiKey('api')).toMatchObject({ admin: false, orgId: org.id });
      expect(await v2.findToken('t-api', new Date())).toMatchObject({ keyId: 'api' });
      expect(await v2.findToken('t-adm', new Date())).toBeUndefined();
      expect(await codeOf(v2.createApiKey({ id: 'x', orgId: org.id, hash: 'hx', admin: true, prefix: 'p' }))).toBe('INVALID_ARGUMENT');
      await v2.close();
    });

    it('purgeExpired deletes expired tokens and candidates and nothing else', async () => {
      const s = await freshStore();
      const org = await s.createOrganization({ ...ORG, name: 'o' });
      await s.createApiKey({ id: 'k', orgId: org.id, hash: 'h', admin: false, prefix: 'p' });
      const t0 = Date.parse('2031-01-01T00:00:00Z');
      const at = (ms: number): string => new Date(t0 + ms).toISOString();
      await s.createToken({ hash: 'old', keyId: 'k', expiresAt: at(-1) });
      await s.createToken({ hash: 'new', keyId: 'k', expiresAt: at(1000) });
      await s.putCandidates([
        { embeddingId: 'c-old', orgId: org.id, language: 'en', prompt: 'p', params: {}, expiresAt: at(0) },
        { embeddingId: 'c-new', orgId: org.id, language: 'en', prompt: 'p', params: {}, expiresAt: at(1) },
      ]);
      expect(await s.purgeExpired(new Date(t0))).toEqual({ tokens: 1, candidates: 1 });
      expect(await s.purgeExpired(new Date(t0))).toEqual({ tokens: 0, candidates: 0 });
      expect(await s.findToken('new', new Date(t0))).toBeDefined();
      expect(await s.getCandidate(org.id, 'c-new', new Date(t0))).toBeDefined();
      await s.close();
    });

    it('text Postgres cannot hold (a NUL byte) is INVALID_ARGUMENT; a closed store is STORE_UNAVAILABLE; close is idempotent', async () => {
      const s = await freshStore();
      expect(await codeOf(s.createOrganization({ ...ORG, name: 'nul\u0000byte' }))).toBe('INVALID_ARGUMENT');
      expect(await s.countOrganizations()).toBe(0);
      await s.close();
      await s.close();
      expect(await codeOf(s.ping())).toBe('STORE_UNAVAILABLE');
      expect(await codeOf(s.countOrganizations())).toBe('STORE_UNAVAILABLE');
      expect(await codeOf(s.debitCredits('x', 1, { keyId: null, kind: 'tts', units: 1 }))).toBe('STORE_UNAVAILABLE');
      expect(await codeOf(s.listVoices('x', { includeCatalog: true, limit: null, offset: 0 }))).toBe('STORE_UNAVAILABLE');
    });
  });
});
