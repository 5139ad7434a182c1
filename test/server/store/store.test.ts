/**
 * The Store contract on every implementation (store-suite.ts), then what only the SQLite store
 * has: its file, its journal, its migrations, its URL forms, its lock waits.
 */
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'libsql';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../../src/server/store/memory-store.js';
import { SqliteStore } from '../../../src/server/store/sqlite-store.js';
import { SQLITE_MIGRATIONS } from '../../../src/server/store/sqlite-migrations.js';
import { openStore, resolveStoreLocation } from '../../../src/server/store/open.js';
import { bootstrap } from '../../../src/server/bootstrap.js';
import { isVoicewireError, type ErrorCode } from '../../../src/util/errors.js';
import { storeSuite } from './store-suite.js';

const tmp = (): string => mkdtempSync(join(tmpdir(), 'vw-store-'));

storeSuite('MemoryStore', async () => ({ store: new MemoryStore(), cleanup: async () => undefined }));

storeSuite('SqliteStore (file)', async () => {
  const dir = tmp();
  const store = SqliteStore.open(join(dir, 'voicewire.db'));
  await store.migrate();
  return {
    store,
    cleanup: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

async function codeOf(p: Promise<unknown> | (() => unknown)): Promise<ErrorCode | 'resolved' | 'not a VoicewireError'> {
  try {
    await (typeof p === 'function' ? p() : p);
    return 'resolved';
  } catch (e) {
    return isVoicewireError(e) ? e.code : 'not a VoicewireError';
  }
}

const ORG = { region: null, allocatedCredits: 10, remainingCredits: 10, billingPeriod: 'monthly', nextRolloverDate: '2026-12-01', planName: 'free' };

describe('SqliteStore', () => {
  let dir: string;
  beforeEach(() => {
    dir = tmp();
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps its data across close and reopen, in WAL mode, in a file only its owner can read', async () => {
    const path = join(dir, 'a.db');
    const s1 = SqliteStore.open(path);
    await s1.migrate();
    expect(s1.journalMode).toBe('wal');
    expect(s1.synchronous).toBe('NORMAL');
    const org = await s1.createOrganization({ ...ORG, name: 'kept' });
    await s1.debitCredits(org.id, 3, { keyId: null, kind: 'tts', units: 3 });
    await s1.close();
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const s2 = SqliteStore.open(path);
    await s2.migrate();
    expect(await s2.getOrganization(org.id)).toEqual({ ...org, remainingCredits: 7 });
    expect(await s2.integrityCheck()).toEqual([]);
    await s2.close();
  });

  it('migrations apply once each, in order, recorded with their version; a newer schema is refused', async () => {
    const path = join(dir, 'm.db');
    const V1 = SQLITE_MIGRATIONS.slice(0, 1); // the shipped list grows: this test is about 1 → 2
    const v1 = SqliteStore.open(path, { migrations: V1 });
    expect(await v1.schemaVersion()).toBe(0);
    await v1.migrate();
    await v1.migrate();
    expect(await v1.schemaVersion()).toBe(1);
    await v1.createOrganization({ ...ORG, name: 'before upgrade' });
    await v1.close();

    const next = [...V1, { version: 2, name: 'test: a column', sql: "ALTER TABLE organizations ADD COLUMN note TEXT NOT NULL DEFAULT 'x'" }];
    const v2 = SqliteStore.open(path, { migrations: next });
    await v2.migrate();
    await v2.migrate(); // a second ALTER would fail: it must not run again
    expect(await v2.schemaVersion()).toBe(2);
    expect(await v2.getOrganizationByName('before upgrade')).toBeDefined();
    await v2.close();

    const raw = new Database(path);
    expect(raw.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all().map((r) => (r as { version: number }).version)).toEqual([1, 2]);
    raw.close();

    const old = SqliteStore.open(path, { migrations: V1 }); // knows only version 1
    const err = await old.migrate().then(() => undefined, (e: unknown) => e);
    expect(isVoicewireError(err, 'STORE_UNAVAILABLE')).toBe(true);
    expect(String((err as Error).message)).toMatch(/schema version 2 is newer/);
    await old.close();
  });

  it('a failing migration leaves the previous version intact', async () => {
    const path = join(dir, 'f.db');
    const bad = [...SQLITE_MIGRATIONS.slice(0, 1), { version: 2, name: 'broken', sql: 'CREATE TABLE good_part (x INTEGER); THIS IS NOT SQL' }];
    const v1 = SqliteStore.open(path, { migrations: SQLITE_MIGRATIONS.slice(0, 1) });
    await v1.migrate();
    await v1.close();
    const s = SqliteStore.open(path, { migrations: bad });
    expect(await codeOf(s.migrate())).toBe('STORE_UNAVAILABLE');
    expect(await s.schemaVersion()).toBe(1);
    await s.close();
    const fresh = SqliteStore.open(join(dir, 'fresh.db'), { migrations: bad });
    expect(await codeOf(fresh.migrate())).toBe('STORE_UNAVAILABLE');
    expect(await fresh.schemaVersion()).toBe(0); // one transaction: not even version 1 stays half-done
    await fresh.close();
    const raw = new Database(path);
    expect(raw.prepare("SELECT COUNT(*) AS n FROM sqlite_master WHERE name = 'good_part'").get()).toMatchObject({ n: 0 });
    raw.close();
  });

  it('two stores migrating one file at once both succeed, once', async () => {
    const path = join(dir, 'two.db');
    const [x, y] = [SqliteStore.open(path), SqliteStore.open(path)];
    await Promise.all([x.migrate(), y.migrate()]);
    await x.createOrganization({ ...ORG, name: 'seen by both' });
    expect(await y.countOrganizations()).toBe(1);
    expect(await y.schemaVersion()).toBe(SQLITE_MIGRATIONS.at(-1)!.version);
    await Promise.all([x.close(), y.close()]);
  });

  it('purgeExpired deletes expired tokens and candidates and nothing else', async () => {
    const s = SqliteStore.open(join(dir, 'p.db'));
    await s.migrate();
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

  it('a closed store rejects with STORE_UNAVAILABLE; close is idempotent', async () => {
    const s = SqliteStore.open(join(dir, 'c.db'));
    await s.migrate();
    await s.close();
    await s.close();
    expect(await codeOf(s.ping())).toBe('STORE_UNAVAILABLE');
    expect(await codeOf(s.countOrganizations())).toBe('STORE_UNAVAILABLE');
    expect(await codeOf(s.debitCredits('x', 1, { keyId: null, kind: 'tts', units: 1 }))).toBe('STORE_UNAVAILABLE');
  });

  it('a write waits for another process’s lock up to busyTimeoutMs, then fails STORE_UNAVAILABLE; works once released', async () => {
    const path = join(dir, 'busy.db');
    const s = SqliteStore.open(path, { busyTimeoutMs: 200 });
    await s.migrate();
    const org = await s.createOrganization({ ...ORG, name: 'o' });
    const other = new Database(path);
    other.exec('BEGIN IMMEDIATE');
    const t = performance.now();
    expect(await codeOf(s.debitCredits(org.id, 1, { keyId: null, kind: 'tts', units: 1 }))).toBe('STORE_UNAVAILABLE');
    const waited = performance.now() - t;
    expect(waited).toBeGreaterThanOrEqual(150);
    expect(waited).toBeLessThan(5000);
    expect(await s.getOrganization(org.id)).toMatchObject({ remainingCredits: 10 }); // reads go on under WAL
    other.exec('ROLLBACK');
    other.close();
    expect(await s.debitCredits(org.id, 1, { keyId: null, kind: 'tts', units: 1 })).toBe(9);
    await s.close();
  });

  it('a file that is not a database fails STORE_UNAVAILABLE', async () => {
    const path = join(dir, 'junk.db');
    writeFileSync(path, 'this is not an SQLite file, just text long enough to have a header'.repeat(20));
    const err = await (async () => {
      const s = SqliteStore.open(path);
      try {
        await s.migrate();
      } finally {
        await s.close();
      }
    })().then(() => undefined, (e: unknown) => e);
    expect(isVoicewireError(err, 'STORE_UNAVAILABLE')).toBe(true);
  });
});

describe('openStore', () => {
  let dir: string;
  beforeEach(() => {
    dir = tmp();
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('defaults to <data>/voicewire.db, creating the data folder (0700), migrated', async () => {
    const data = join(dir, 'nested', 'voicewire-data');
    const store = await openStore({ data });
    expect(existsSync(join(data, 'voicewire.db'))).toBe(true);
    expect(statSync(data).mode & 0o777).toBe(0o700);
    expect(store).toBeInstanceOf(SqliteStore);
    expect(await (store as SqliteStore).schemaVersion()).toBe(SQLITE_MIGRATIONS.at(-1)!.version);
    await store.createOrganization({ ...ORG, name: 'default' });
    await store.close();
    const again = await openStore({ data });
    expect(await again.countOrganizations()).toBe(1);
    await again.close();
  });

  it('keeps the data folder 0700 and the database, its WAL and SHM 0600, even where they existed looser (a clone shipped them 0755/0644)', async () => {
    const data = join(dir, 'data');
    const mode = (p: string): string => (statSync(p).mode & 0o777).toString(8);
    const first = await openStore({ data });
    await first.createOrganization({ ...ORG, name: 'o' });
    for (const f of ['', 'voicewire.db', 'voicewire.db-wal', 'voicewire.db-shm']) expect(mode(join(data, f)), f || 'folder').toBe(f ? '600' : '700');
    await first.close();
    // As a checkout (or a careless cp) leaves them: group- and world-readable.
    chmodSync(data, 0o755);
    chmodSync(join(data, 'voicewire.db'), 0o644);
    const again = await openStore({ data });
    await again.createOrganization({ ...ORG, name: 'p' });
    for (const f of ['', 'voicewire.db', 'voicewire.db-wal', 'voicewire.db-shm']) expect(mode(join(data, f)), f || 'folder').toBe(f ? '600' : '700');
    await again.close();
  });

  it('resolves the store URL forms', () => {
    expect(resolveStoreLocation({})).toEqual({ kind: 'sqlite', path: join('./voicewire-data', 'voicewire.db') });
    expect(resolveStoreLocation({ data: '/srv/vw' })).toEqual({ kind: 'sqlite', path: '/srv/vw/voicewire.db' });
    expect(resolveStoreLocation({ data: '/srv/vw', store: 'sqlite:rel/x.db' })).toEqual({ kind: 'sqlite', path: 'rel/x.db' });
    expect(resolveStoreLocation({ store: 'sqlite:/abs/x.db' })).toEqual({ kind: 'sqlite', path: '/abs/x.db' });
    expect(resolveStoreLocation({ store: 'sqlite:///abs/x.db' })).toEqual({ kind: 'sqlite', path: '/abs/x.db' });
    expect(resolveStoreLocation({ store: 'sqlite::memory:' })).toEqual({ kind: 'sqlite', path: ':memory:' });
    expect(resolveStoreLocation({ store: 'postgresql://u:pw@h/db' })).toEqual({ kind: 'postgres', url: 'postgresql://u:pw@h/db' });
    expect(resolveStoreLocation({ store: '', data: '/d' })).toEqual({ kind: 'sqlite', path: '/d/voicewire.db' });
    expect(resolveStoreLocation({ store: 'sqlite:/d/x.db?synchronous=full' })).toEqual({ kind: 'sqlite', path: '/d/x.db', synchronous: 'FULL' });
    expect(() => resolveStoreLocation({ store: 'sqlite:/d/x.db?synchronous=off' })).toThrow(/normal or full/);
  });

  it('opens sqlite:PATH, creating its folder', async () => {
    const path = join(dir, 'sub', 'custom.db');
    const store = await openStore({ store: `sqlite:${path}?synchronous=FULL`, data: join(dir, 'ignored') });
    expect((store as SqliteStore).synchronous).toBe('FULL');
    await store.createOrganization({ ...ORG, name: 'o' });
    await store.close();
    expect(existsSync(path)).toBe(true);
    expect(existsSync(join(dir, 'ignored'))).toBe(false);
  });

  it('bad URLs are INVALID_ARGUMENT, naming the scheme only', async () => {
    const err = await openStore({ store: 'mysql://root:hunter2@db/x' }).then(() => undefined, (e: unknown) => e);
    expect(isVoicewireError(err, 'INVALID_ARGUMENT')).toBe(true);
    expect((err as Error).message).toMatch(/unknown scheme "mysql:"/);
    expect((err as Error).message).not.toContain('hunter2');
    expect(await codeOf(openStore({ store: 'sqlite:' }))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(openStore({ store: 'just-a-path.db' }))).toBe('INVALID_ARGUMENT');
  });

  it('options of the wrong type are INVALID_ARGUMENT, with nothing opened; so is bootstrap without a store', async () => {
    for (const options of [null, 'sqlite::memory:', { store: 5 }, { store: { toString: 1 } }, { data: ['x'] }]) {
      expect(await codeOf(openStore(options as never)), JSON.stringify(options)).toBe('INVALID_ARGUMENT');
    }
    expect(await codeOf(() => SqliteStore.open({} as never))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(() => SqliteStore.open(':memory:', null as never))).toBe('INVALID_ARGUMENT');
    for (const store of [undefined, null, {}, new Map()]) expect(await codeOf(bootstrap(store as never))).toBe('INVALID_ARGUMENT');
  });

  it('a data folder that cannot be created fails STORE_UNAVAILABLE', async () => {
    writeFileSync(join(dir, 'file'), 'x');
    expect(await codeOf(openStore({ data: join(dir, 'file', 'sub') }))).toBe('STORE_UNAVAILABLE');
  });
});
