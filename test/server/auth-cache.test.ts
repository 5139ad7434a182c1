/**
 * The authentication cache's revocation delay (issue 34, src/server/auth-cache.ts): a key revoked
 * through this instance's store is refused at once; revoked elsewhere (the CLI, another instance),
 * it is refused once `authCacheSeconds` passed, never later; meanwhile a connection costs no store query.
 */
import { describe, expect, it } from 'vitest';
import { authenticate } from '../../src/server/auth.js';
import { AuthCache, withAuthInvalidation } from '../../src/server/auth-cache.js';
import { ensureOrganization } from '../../src/server/bootstrap.js';
import { createKey } from '../../src/server/keys.js';
import { MemoryStore } from '../../src/server/store/memory-store.js';
import type { Store } from '../../src/server/store/store.js';
import { VoicewireError } from '../../src/util/errors.js';
import { startServer } from './harness.js';

const TTL_MS = 5000;

async function setup(): Promise<{ raw: MemoryStore; store: Store; cache: AuthCache; clock: { t: number }; key: string; keyId: string; lookups: () => number }> {
  const raw = new MemoryStore();
  await raw.migrate();
  const org = await ensureOrganization(raw, 'acme', { credits: 100 });
  const { key, record } = await createKey(raw, org.id);
  const clock = { t: 1000 };
  const cache = new AuthCache(TTL_MS, 100, () => clock.t);
  let n = 0;
  const find = raw.findApiKeyByHash.bind(raw);
  raw.findApiKeyByHash = (hash: string) => {
    n++;
    return find(hash);
  };
  return { raw, store: withAuthInvalidation(raw, cache), cache, clock, key, keyId: record.id, lookups: () => n };
}

const auth = (store: Store, cache: AuthCache, key: string) => authenticate(store, { headers: { 'x-api-key': key }, route: 'tts' }, { region: null, cache });
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => 'accepted',
    (e: unknown) => (e instanceof VoicewireError ? e.code : String(e)),
  );

describe('authentication cache', () => {
  it('a kept lookup costs no store query until it expires', async () => {
    const { store, cache, clock, key, lookups } = await setup();
    await auth(store, cache, key);
    for (let i = 0; i < 5; i++) await auth(store, cache, key);
    expect(lookups()).toBe(1);
    clock.t += TTL_MS;
    await auth(store, cache, key);
    expect(lookups()).toBe(2);
  });

  it('a key revoked through this instance\'s store is refused at once', async () => {
    const { store, cache, key, keyId } = await setup();
    await auth(store, cache, key);
    expect(await store.revokeApiKey(keyId)).toBe(true);
    expect(await refusal(auth(store, cache, key))).toBe('PROTOCOL_UNAUTHORIZED');
  });

  it('a key revoked elsewhere is accepted for at most the TTL (the documented delay), then refused', async () => {
    const { raw, store, cache, clock, key, keyId } = await setup();
    await auth(store, cache, key);
    await raw.revokeApiKey(keyId); // another instance, or `voicewire keys revoke`
    clock.t += TTL_MS - 1;
    expect(await refusal(auth(store, cache, key))).toBe('accepted');
    clock.t += 1;
    expect(await refusal(auth(store, cache, key))).toBe('PROTOCOL_UNAUTHORIZED');
    // A store that reports the change (Postgres NOTIFY) drops it at once: invalidate(keyId).
  });

  it('a lookup in flight while the key is revoked is not kept', async () => {
    const { raw, store, cache, key, keyId } = await setup();
    const find = raw.findApiKeyByHash;
    let revoke: Promise<boolean> | undefined;
    // The revocation lands between the key's read and the organization's.
    raw.findApiKeyByHash = async (hash: string) => {
      const k = await find(hash);
      revoke = store.revokeApiKey(keyId);
      await revoke;
      return k;
    };
    expect(await refusal(auth(store, cache, key))).toBe('accepted'); // read before the revocation
    raw.findApiKeyByHash = find;
    expect(await refusal(auth(store, cache, key))).toBe('PROTOCOL_UNAUTHORIZED');
  });

  it('unknown keys are not kept, and the cache holds at most its bound', async () => {
    const { store, key } = await setup();
    const cache = new AuthCache(TTL_MS, 1);
    expect(await refusal(auth(store, cache, 'vw_nope'))).toBe('PROTOCOL_UNAUTHORIZED');
    expect(cache.size).toBe(0);
    await auth(store, cache, key);
    expect(cache.size).toBe(1);
  });
});

describe('authentication cache on the server', () => {
  it('the usage summary shows the balance as stored, not the cached lookup\'s', async () => {
    const h = await startServer();
    try {
      const summary = async () => (await (await fetch(`${h.base}/usages/summary`, { headers: { 'x-api-key': h.apiKey } })).json()) as { remaining_credits: number };
      const before = (await summary()).remaining_credits; // the key's lookup is kept now
      const key = (await h.store.listApiKeys()).find((k) => !k.admin)!;
      await h.store.debitCredits(key.orgId!, 7, { keyId: key.id, kind: 'tts', units: 7 });
      expect((await summary()).remaining_credits).toBe(before - 7);
    } finally {
      await h.close();
    }
  });
});
