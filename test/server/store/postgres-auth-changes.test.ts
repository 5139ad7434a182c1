/**
 * Key revocations across instances on Postgres (issue 34): instance A revokes, instance B's
 * authentication cache forgets the key at once (NOTIFY → `watchAuthChanges`'s LISTEN), where the
 * TTL alone would have kept accepting it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authenticate } from '../../../src/server/auth.js';
import { AuthCache } from '../../../src/server/auth-cache.js';
import { listenAuthChanges } from '../../../src/server/store/auth-changes.js';
import { ensureOrganization } from '../../../src/server/bootstrap.js';
import { createKey } from '../../../src/server/keys.js';
import { PostgresStore } from '../../../src/server/store/postgres-store.js';
import { VoicewireError } from '../../../src/util/errors.js';
import { hasPostgres, needsPostgres, startPostgres, type PostgresCluster } from '../../helpers/postgres.js';

describe.skipIf(!hasPostgres())(needsPostgres('Postgres key revocations across instances'), () => {
  let cluster: PostgresCluster;
  beforeAll(async () => {
    cluster = await startPostgres();
  }, 40_000);
  afterAll(() => cluster?.destroy(), 20_000);

  it('a key revoked on one instance is refused by the other at once (long TTL)', async () => {
    const a = new PostgresStore(cluster.url());
    const b = new PostgresStore(cluster.url());
    await a.migrate();
    const org = await ensureOrganization(a, 'acme', { credits: 10 });
    const { key, record } = await createKey(a, org.id);
    const cache = new AuthCache(3_600_000);
    const stopListening = listenAuthChanges(b, (id) => cache.invalidate(id));
    const heard: Array<string | null> = [];
    const stopHeard = listenAuthChanges(b, (id) => heard.push(id));
    const stopWatch = b.watchAuthChanges();
    try {
      // Listening: the watcher announces "any key" once its LISTEN is in place.
      await expect.poll(() => heard.includes(null), { timeout: 10_000 }).toBe(true);
      const auth = () => authenticate(b, { headers: { 'x-api-key': key }, route: 'tts' }, { region: null, cache });
      await auth();
      expect(cache.size).toBe(1);
      await a.revokeApiKey(record.id);
      await expect.poll(() => heard.includes(record.id), { timeout: 10_000 }).toBe(true);
      await expect(auth()).rejects.toSatisfy((e: unknown) => e instanceof VoicewireError && e.code === 'PROTOCOL_UNAUTHORIZED');
    } finally {
      stopListening();
      stopHeard();
      await stopWatch();
      await a.close();
      await b.close();
    }
  }, 60_000);
});
