/**
 * What a voice id or name resolved to, kept for a moment (issue 34): every TTS WebSocket session
 * resolved its voice twice (the default voice, then the engine's lookup), each time two to three
 * SQLite queries on the event loop (`getVoice` by id, `getCandidate`, `getVoice` of the default),
 * 4 % of a server's CPU at 1000 concurrent sessions. The same shape as auth-cache.ts.
 *
 * How stale an answer can be (docs/server.md "Voice lookup cache"):
 * - a voice or candidate written through this process's store (put, update, delete, a new
 *   candidate): at once, the organization's answers are dropped;
 * - written by another process (another `--workers` worker or instance, the CLI): for at most
 *   {@link VOICE_CACHE_TTL_MS} a deleted voice still resolves, or a name still resolves to what it
 *   named (a miss too: a voice created elsewhere is found that much later by a name looked up just before);
 * - a candidate's answer never outlives the candidate's own expiry.
 */
import { cloneVoice } from './catalog-voices.js';
import type { Store, VoiceRecord } from './store/store.js';

/** How long an answer is reused, ms. */
export const VOICE_CACHE_TTL_MS = 2000;
/** Most answers kept (the oldest goes first past it): ~1 KiB each. */
export const VOICE_CACHE_ENTRIES = 10_000;

interface Entry {
  orgId: string;
  voice: VoiceRecord | undefined;
  until: number;
}

/** Answers of `findVoice` per organization and id or name. */
export class VoiceCache {
  private readonly entries = new Map<string, Entry>();
  /** Bumped by every invalidation: an answer read before one is not kept (it may be stale). */
  private generation = 0;

  /**
   * @param ttlMs how long an answer is reused, ms (0: never). Default {@link VOICE_CACHE_TTL_MS}.
   * @param maxEntries most answers kept. Default {@link VOICE_CACHE_ENTRIES}.
   * @param now the clock, ms (tests). Default `Date.now` (a candidate's expiry is wall-clock time).
   */
  constructor(
    readonly ttlMs = VOICE_CACHE_TTL_MS,
    private readonly maxEntries = VOICE_CACHE_ENTRIES,
    private readonly now: () => number = Date.now,
  ) {}

  private static key(orgId: string, idOrName: string): string {
    return `${orgId}\n${idOrName}`;
  }

  /** The answer kept for `idOrName` in `orgId` (`hit` false when none is, or it is too old). */
  get(orgId: string, idOrName: string): { hit: false } | { hit: true; voice: VoiceRecord | undefined } {
    const k = VoiceCache.key(orgId, idOrName);
    const e = this.entries.get(k);
    if (e === undefined) return { hit: false };
    if (e.until <= this.now()) {
      this.entries.delete(k);
      return { hit: false };
    }
    // A copy, as the store gives: a receiver that changes its record does not change the next one's.
    return { hit: true, voice: e.voice && cloneVoice(e.voice) };
  }

  /** The generation to pass to {@link set}, read before the store is asked. */
  get version(): number {
    return this.generation;
  }

  /** Keeps an answer read at `version`; `expiresMs`: when what it names stops existing (a candidate). */
  set(orgId: string, idOrName: string, voice: VoiceRecord | undefined, version: number, expiresMs = Infinity): void {
    if (this.ttlMs <= 0 || version !== this.generation) return;
    const k = VoiceCache.key(orgId, idOrName);
    this.entries.delete(k);
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(k, { orgId, voice: voice && cloneVoice(voice), until: Math.min(this.now() + this.ttlMs, expiresMs) });
  }

  /** Forgets the answers of `orgId` (null: all). */
  invalidate(orgId: string | null): void {
    this.generation++;
    if (orgId === null) return this.entries.clear();
    for (const [k, e] of this.entries) if (e.orgId === orgId) this.entries.delete(k);
  }

  get size(): number {
    return this.entries.size;
  }
}

/** The cache a store was given by {@link withVoiceCache} (findVoice looks here). */
const caches = new WeakMap<Store, VoiceCache>();

/** The cache of `store`, if it has one. */
export function voiceCacheOf(store: Store): VoiceCache | undefined {
  return caches.get(store);
}

/** Store writes that change what a voice id or name resolves to, and the organization each names. */
const WRITES: Record<string, (args: unknown[]) => string | null> = {
  putVoice: (a) => (a[0] as VoiceRecord).orgId,
  updateVoice: (a) => a[0] as string,
  deleteVoice: (a) => a[0] as string,
  putCandidates: () => null,
  deleteCandidate: (a) => a[0] as string,
};

/**
 * `store`, whose voice lookups through findVoice (voice-lookup.ts) are kept in `cache`, and whose
 * voice and candidate writes drop the organization's answers (before and after the write: an
 * answer read while it runs is not kept).
 */
export function withVoiceCache(store: Store, cache: VoiceCache): Store {
  const wrapped = new Proxy(store, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target) as unknown;
      if (typeof v !== 'function') return v;
      const f = (v as (...a: unknown[]) => unknown).bind(target);
      const org = typeof prop === 'string' ? WRITES[prop] : undefined;
      if (org === undefined) return f;
      return async (...args: unknown[]) => {
        const orgId = org(args);
        cache.invalidate(orgId);
        try {
          return await f(...args);
        } finally {
          cache.invalidate(orgId);
        }
      };
    },
  });
  caches.set(wrapped, cache);
  return wrapped;
}
