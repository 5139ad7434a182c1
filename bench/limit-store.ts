/**
 * The store work of one TTS WebSocket session of bench/limit.ts, alone (issue 34):
 * `npx tsx bench/limit-store.ts [--sessions 5000] [--rounds 5]`.
 *
 * What the server does on the event loop per session, against a SQLite file as `serve` opens it
 * (WAL, NORMAL), behind the catalog as `createVoiceServer` puts it: the voice resolved twice (the
 * default voice, then the engine's lookup: `findVoice(…, "default")`), one credit hold, one
 * settlement. Measured: process CPU µs per session (user+system), with the voice lookup cache
 * (voice-cache.ts) and without it (TTL 0), in alternating rounds, medians. The machine's load
 * moves both alike; on a loaded machine compare the ratio, not the microseconds.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { LIBRARY_DEFAULT_VOICE_ID } from '../src/engines/library-voices.js';
import { withCatalogVoices } from '../src/server/catalog-voices.js';
import { SqliteStore } from '../src/server/store/sqlite-store.js';
import type { Store, VoiceRecord } from '../src/server/store/store.js';
import { VoiceCache, withVoiceCache } from '../src/server/voice-cache.js';
import { findVoice } from '../src/server/voice-lookup.js';

const arg = (name: string, dflt: number): number => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const SESSIONS = arg('--sessions', 5000);
const ROUNDS = arg('--rounds', 5);

const dir = mkdtempSync(join(tmpdir(), 'vw-limit-store-'));
try {
  const sqlite = SqliteStore.open(join(dir, 'voicewire.db'));
  await sqlite.migrate();
  const org = await sqlite.createOrganization({ name: 'bench', region: null, allocatedCredits: 1e12, remainingCredits: 1e12, billingPeriod: 'monthly', nextRolloverDate: '2026-12-01', planName: 'free' });
  const catalogVoice = (uid: string, name: string): VoiceRecord => ({ uid, orgId: null, name, description: '', language: 'en', filename: '', startS: 0, tags: ['en'], isProClone: false, params: { engine: 'tone', pitch: 50 }, createdAt: new Date().toISOString() });
  const catalog = [catalogVoice(LIBRARY_DEFAULT_VOICE_ID, 'Emma'), ...Array.from({ length: 20 }, (_, i) => catalogVoice(`tone-${i}`, `Tone ${i}`))];
  const base = withCatalogVoices(sqlite, catalog);
  const stores: Record<string, Store> = { cached: withVoiceCache(base, new VoiceCache()), uncached: withVoiceCache(base, new VoiceCache(0)) };

  /** CPU µs per session over `SESSIONS` sessions, 50 at a time (as many sessions start in one turn). */
  const run = async (store: Store): Promise<number> => {
    const t = process.cpuUsage();
    for (let i = 0; i < SESSIONS; i += 50) {
      await Promise.all(
        Array.from({ length: 50 }, async () => {
          await findVoice(store, org.id, 'default');
          await findVoice(store, org.id, 'default');
          const hold = (await store.reserveCredits(org.id, 256, { keyId: null, kind: 'tts', units: 256 }, undefined, { holder: 'bench', delivered: { units: 0, credits: 0 } }))!;
          await store.settleCredits(org.id, hold.holdId, { units: 60, credits: 60 }, 'bench');
        }),
      );
    }
    const u = process.cpuUsage(t);
    return (u.user + u.system) / SESSIONS;
  };

  const results: Record<string, number[]> = { cached: [], uncached: [] };
  await run(stores.uncached!); // warm-up
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? ['cached', 'uncached'] : ['uncached', 'cached'];
    for (const name of order) results[name]!.push(await run(stores[name]!));
  }
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(`store work per session (2 voice lookups, 1 hold, 1 settlement), ${SESSIONS} sessions × ${ROUNDS} rounds, load ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  for (const [name, xs] of Object.entries(results)) console.log(`  ${name.padEnd(9)} ${median(xs).toFixed(1)} µs CPU per session (rounds: ${xs.map((x) => x.toFixed(1)).join(', ')})`);
  console.log(`  cached / uncached: ${(median(results.cached!) / median(results.uncached!)).toFixed(2)}`);
  await sqlite.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
