/**
 * What a TTS `voice_id` (or the POST body's `voice`) may name, as the service's clients send it:
 * a voice uid (the organization's, or a catalog one such as the library's `YTpq7expH9539ERJ`);
 * `"default"` (Emma, the voice of the service's examples, else the first catalog voice); a live
 * voice-design candidate of the organization (§2.2: heard before it is kept); or a voice's name
 * (case-insensitive; the organization's voices first, then the catalog).
 */
import { LIBRARY_DEFAULT_VOICE_ID } from '../engines/library-voices.js';
import type { Store, VoiceRecord } from './store/store.js';
import { voiceCacheOf } from './voice-cache.js';

/**
 * The voice `idOrName` names for `orgId`, or undefined. A store given a cache by `withVoiceCache`
 * (voice-cache.ts) answers from it while the answer is fresh.
 */
export async function findVoice(store: Store, orgId: string, idOrName: string, now: Date = new Date()): Promise<VoiceRecord | undefined> {
  const cache = voiceCacheOf(store);
  if (cache === undefined) return (await lookUp(store, orgId, idOrName, now)).voice;
  const kept = cache.get(orgId, idOrName);
  if (kept.hit) return kept.voice;
  const version = cache.version;
  const found = await lookUp(store, orgId, idOrName, now);
  cache.set(orgId, idOrName, found.voice, version, found.expiresMs);
  return found.voice;
}

/** The store's answer, and when it stops being true by itself (a candidate's expiry). */
async function lookUp(store: Store, orgId: string, idOrName: string, now: Date): Promise<{ voice: VoiceRecord | undefined; expiresMs?: number }> {
  const byId = await store.getVoice(orgId, idOrName);
  if (byId !== undefined) return { voice: byId };
  const candidate = await store.getCandidate(orgId, idOrName, now);
  if (candidate !== undefined) {
    const voice: VoiceRecord = {
      uid: candidate.embeddingId,
      orgId,
      name: candidate.prompt.slice(0, 60),
      description: candidate.prompt,
      language: candidate.language,
      filename: '',
      startS: 0,
      tags: [candidate.language],
      isProClone: false,
      // As POST /voices/from-embedding keeps it, without the engine name the route adds.
      params: { ...candidate.params, prompt: candidate.prompt },
      createdAt: now.toISOString(),
    };
    return { voice, expiresMs: Date.parse(candidate.expiresAt) };
  }
  if (idOrName === 'default') {
    const emma = await store.getVoice(orgId, LIBRARY_DEFAULT_VOICE_ID);
    if (emma !== undefined) return { voice: emma };
  }
  // Names are not unique: the organization's own voice wins over a catalog voice of that name.
  const all = (await store.listVoices(orgId, { includeCatalog: true, limit: null, offset: 0 })).items;
  if (idOrName === 'default') return { voice: all.find((v) => v.orgId === null) };
  const name = idOrName.toLowerCase();
  const named = all.filter((v) => v.name.toLowerCase() === name);
  return { voice: named.find((v) => v.orgId !== null) ?? named[0] };
}
