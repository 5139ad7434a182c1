/**
 * Catalog voices are derived from the engine at every start, served from memory, never stored
 * (issue 23: `tone-*` voices outlived a change to espeak-ng and the README's SDK snippet picked
 * `tone-en`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'libsql';
import { afterEach, describe, expect, it } from 'vitest';
import { createVoiceServer } from '../../src/server/server.js';
import { bootstrap } from '../../src/server/bootstrap.js';
import { SqliteStore } from '../../src/server/store/sqlite-store.js';
import { SQLITE_MIGRATIONS } from '../../src/server/store/sqlite-migrations.js';
import { MemoryStore } from '../../src/server/store/memory-store.js';
import { withCatalogVoices } from '../../src/server/catalog-voices.js';
import type { VoiceRecord } from '../../src/server/store/store.js';
import { isVoicewireError } from '../../src/util/errors.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const tmp = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'vw-catalog-'));
  dirs.push(d);
  return d;
};

/** Starts a server on the SQLite file `path` with `tts`, lists the voices over HTTP, stops. */
async function voicesListed(path: string, tts: string, apiKey?: string): Promise<{ uids: string[]; apiKey: string }> {
  const store = SqliteStore.open(path);
  await store.migrate();
  const boot = await bootstrap(store);
  const key = boot?.apiKey ?? apiKey!;
  const server = await createVoiceServer({ store, tts, stt: 'tone', logDestination: { write: () => undefined } });
  const { port } = await server.listen(0, '127.0.0.1');
  try {
    const res = await fetch(`http://127.0.0.1:${port}/api/voices/`, { headers: { 'x-api-key': key } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { uid: string }[] | { voices?: { uid: string }[]; items?: { uid: string }[] };
    const list = Array.isArray(body) ? body : (body.voices ?? body.items ?? []);
    return { uids: list.map((v) => v.uid), apiKey: key };
  } finally {
    await server.close();
    await store.close();
  }
}

describe('catalog voices follow the engine', () => {
  it('start with tone, stop, start with espeak-ng: no tone-* voice is listed, the espeak-ng and library voices are', async () => {
    const path = join(tmp(), 'voicewire.db');
    const first = await voicesListed(path, 'tone');
    expect(first.uids).toContain('tone-en');
    const second = await voicesListed(path, 'espeak', first.apiKey);
    expect(second.uids.filter((u) => u.startsWith('tone-'))).toEqual([]);
    expect(second.uids).toContain('espeak-en-ava');
    expect(second.uids).toContain('YTpq7expH9539ERJ'); // Emma, mapped onto an espeak-ng voice
    // And back: nothing of espeak-ng stays behind either.
    const third = await voicesListed(path, 'tone', first.apiKey);
    expect(third.uids.filter((u) => u.startsWith('espeak-'))).toEqual([]);
  }, 60_000);

  it('the store holds no catalog row: migration 3 deletes the rows earlier versions seeded, and a start writes none', async () => {
    const path = join(tmp(), 'voicewire.db');
    const old = SqliteStore.open(path, { migrations: SQLITE_MIGRATIONS.slice(0, 2) });
    await old.migrate();
    await old.putVoice({ uid: 'tone-en', orgId: null, name: 'Tone English', description: '', language: 'en', filename: '', startS: 0, tags: [], isProClone: false, params: { engine: 'tone' }, createdAt: new Date().toISOString() });
    await old.close();
    await voicesListed(path, 'tone');
    const raw = new Database(path);
    expect(Number((raw.prepare('SELECT COUNT(*) AS n FROM voices WHERE org_id IS NULL').get() as { n: number }).n)).toBe(0);
    raw.close();
  }, 60_000);

  it('a listing pages over the catalog and the organization\'s voices as one list (catalog first)', async () => {
    const inner = new MemoryStore();
    const org = await inner.createOrganization({ name: 'acme', allocatedCredits: 10, remainingCredits: 10, region: null, billingPeriod: 'monthly', nextRolloverDate: '2026-02-01', planName: '' } as never);
    const voice = (uid: string, orgId: string | null, at: number): VoiceRecord => ({ uid, orgId, name: uid, description: '', language: 'en', filename: '', startS: 0, tags: [], isProClone: false, params: {}, createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, at)).toISOString() });
    // A stale catalog row in the store is not listed.
    await inner.putVoice(voice('stale-tone', null, 0));
    for (let i = 0; i < 4; i++) await inner.putVoice(voice(`own-${i}`, org.id, i));
    const store = withCatalogVoices(inner, ['c-0', 'c-1', 'c-2'].map((u) => voice(u, null, 0)));
    const all = ['c-0', 'c-1', 'c-2', 'own-0', 'own-1', 'own-2', 'own-3'];
    for (const limit of [null, 0, 1, 2, 3, 5, 10]) {
      for (let offset = 0; offset <= 8; offset++) {
        const page = await store.listVoices(org.id, { includeCatalog: true, limit, offset });
        expect(page.total).toBe(7);
        expect(page.items.map((v) => v.uid)).toEqual(all.slice(offset, limit === null ? undefined : offset + limit));
      }
    }
    expect((await store.listVoices(org.id, { includeCatalog: false, limit: null, offset: 0 })).items.map((v) => v.uid)).toEqual(all.slice(3));
    expect(await store.getVoice(org.id, 'stale-tone')).toBeUndefined();
    expect((await store.getVoice(org.id, 'c-1'))?.uid).toBe('c-1');
    const refused = await store.putVoice(voice('c-9', null, 0)).catch((e: unknown) => e);
    expect(isVoicewireError(refused, 'INVALID_ARGUMENT')).toBe(true);
  });
});
