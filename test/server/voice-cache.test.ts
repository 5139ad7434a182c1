/**
 * Voice lookups kept for a moment (issue 34, src/server/voice-cache.ts): a session's repeated
 * lookups of one voice read the store once; a voice or candidate written through this store is
 * seen at once; written by another process, within the TTL; a candidate's answer never outlives it.
 */
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/server/store/memory-store.js';
import type { Store, VoiceRecord } from '../../src/server/store/store.js';
import { VoiceCache, withVoiceCache } from '../../src/server/voice-cache.js';
import { findVoice } from '../../src/server/voice-lookup.js';

const ORG = { region: null, allocatedCredits: 1000, remainingCredits: 1000, billingPeriod: 'monthly', nextRolloverDate: '2026-12-01', planName: 'free' };

function voice(uid: string, orgId: string | null, name: string): VoiceRecord {
  return { uid, orgId, name, description: '', language: 'en', filename: '', startS: 0, tags: [], isProClone: false, params: {}, createdAt: new Date().toISOString() };
}

/** `store`, counting the voice and candidate reads that reach it. */
function counted(store: Store): { store: Store; reads: () => number } {
  let n = 0;
  const reads = new Set(['getVoice', 'getCandidate', 'listVoices']);
  const proxy = new Proxy(store, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target) as unknown;
      if (typeof v !== 'function') return v;
      const f = (v as (...a: unknown[]) => unknown).bind(target);
      return typeof prop === 'string' && reads.has(prop) ? (...a: unknown[]) => (n++, f(...a)) : f;
    },
  });
  return { store: proxy, reads: () => n };
}

async function setup(now: () => number = Date.now) {
  const inner = new MemoryStore();
  const org = await inner.createOrganization({ ...ORG, name: 'voices' });
  await inner.putVoice(voice('v-catalog', null, 'Narrator'));
  const c = counted(inner);
  const cache = new VoiceCache(2000, 100, now);
  return { inner, org, cache, reads: c.reads, store: withVoiceCache(c.store, cache) };
}

describe('voice lookup cache', () => {
  it('a voice looked up again (a session resolves its voice twice) reads the store once', async () => {
    const { org, store, reads } = await setup();
    expect((await findVoice(store, org.id, 'narrator'))?.uid).toBe('v-catalog');
    const first = reads();
    expect(first).toBeGreaterThan(0);
    for (let i = 0; i < 5; i++) expect((await findVoice(store, org.id, 'narrator'))?.uid).toBe('v-catalog');
    expect(reads()).toBe(first);
    // A miss is kept too (a mistyped name costs the store once per TTL).
    expect(await findVoice(store, org.id, 'nobody')).toBeUndefined();
    const missed = reads();
    expect(await findVoice(store, org.id, 'nobody')).toBeUndefined();
    expect(reads()).toBe(missed);
  });

  it('a voice written through this store is seen at once: created, renamed, deleted', async () => {
    const { org, store } = await setup();
    expect(await findVoice(store, org.id, 'mine')).toBeUndefined();
    await store.putVoice(voice('v-own', org.id, 'Mine'));
    expect((await findVoice(store, org.id, 'mine'))?.uid).toBe('v-own');
    // Names are not unique: the organization's own voice wins over the catalog's, at once.
    await store.putVoice(voice('v-own2', org.id, 'Narrator'));
    expect((await findVoice(store, org.id, 'narrator'))?.uid).toBe('v-own2');
    await store.updateVoice(org.id, 'v-own', { name: 'Renamed' });
    expect(await findVoice(store, org.id, 'mine')).toBeUndefined();
    expect(await store.deleteVoice(org.id, 'v-own')).toBe(true);
    expect(await findVoice(store, org.id, 'v-own')).toBeUndefined();
  });

  it('written by another process (past this store), seen within the TTL', async () => {
    let t = 1_000_000;
    const { inner, org, store } = await setup(() => t);
    expect(await findVoice(store, org.id, 'elsewhere')).toBeUndefined();
    await inner.putVoice(voice('v-else', org.id, 'Elsewhere'));
    t += 1999;
    expect(await findVoice(store, org.id, 'elsewhere')).toBeUndefined();
    t += 1;
    expect((await findVoice(store, org.id, 'elsewhere'))?.uid).toBe('v-else');
  });

  it("a candidate's answer is not kept past the candidate's expiry", async () => {
    let t = Date.now();
    const { org, store } = await setup(() => t);
    await store.putCandidates([{ embeddingId: 'cand-1', orgId: org.id, language: 'en', prompt: 'a warm voice', params: {}, expiresAt: new Date(t + 500).toISOString() }]);
    expect((await findVoice(store, org.id, 'cand-1', new Date(t)))?.uid).toBe('cand-1');
    t += 500;
    expect(await findVoice(store, org.id, 'cand-1', new Date(t))).toBeUndefined();
  });

  it('keeps at most its budget of answers, and nothing at TTL 0', async () => {
    const { org, store, cache } = await setup();
    for (let i = 0; i < 150; i++) await findVoice(store, org.id, `name-${i}`);
    expect(cache.size).toBe(100);
    const none = new VoiceCache(0);
    const off = withVoiceCache(new MemoryStore(), none);
    await findVoice(off, org.id, 'x');
    expect(none.size).toBe(0);
  });
});

describe('voice lookup cache: copies', () => {
  it('a receiver that changes its record does not change what the next lookup gets', async () => {
    const { org, store } = await setup();
    const first = (await findVoice(store, org.id, 'narrator'))!;
    first.name = 'changed';
    first.tags.push('changed');
    first.params.changed = true;
    const again = (await findVoice(store, org.id, 'narrator'))!;
    expect(again.name).toBe('Narrator');
    expect(again.tags).toEqual([]);
    expect(again.params).toEqual({});
  });
});
