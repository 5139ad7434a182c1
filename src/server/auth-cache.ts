/**
 * The key → principal lookups of authentication, kept for a while (issue 34): every WebSocket
 * connection read its key and its organization from the store on the event loop (two queries of
 * SQLite, synchronous, per connection). A hit is as good as the store's answer was when read.
 *
 * The revocation delay (docs/server.md "Authentication cache"):
 * - revoked through a store of this process (the store announces it, store/auth-changes.ts; a
 *   store of another kind revoked through `ctx.store`: {@link withAuthInvalidation}): at once;
 * - revoked by another instance on Postgres: at once too, as soon as its NOTIFY arrives
 *   (`PostgresStore.watchAuthChanges`, LISTEN on a connection of its own);
 * - revoked by another process on the same SQLite file (the CLI, another worker of `serve
 *   --workers`), or while the Postgres link is down: a cached key keeps opening sessions for at
 *   most `ttlMs` (`limits.authCacheSeconds`, default 5 s).
 * Sessions already open are not affected either way (they never were). Unknown, revoked and
 * admin keys are never cached (a wrong key costs the store every time, as before); temporary
 * tokens are not cached (each expires on its own clock).
 */
import type { ApiKeyRecord, Organization, Store } from './store/store.js';

/** A cached lookup: the key record and its organization, as the store gave them. */
export interface CachedPrincipal {
  key: ApiKeyRecord & { orgId: string };
  org: Organization;
}

/** Most lookups kept (the oldest goes first past it): ~1 KiB each. */
export const AUTH_CACHE_ENTRIES = 10_000;

interface Entry extends CachedPrincipal {
  until: number;
}

export class AuthCache {
  /** SHA-256 of the key → its lookup, oldest first. */
  private readonly byHash = new Map<string, Entry>();
  /** Bumped by every invalidation: a lookup read before one is not kept (it may be stale). */
  private generation = 0;

  /**
   * @param ttlMs how long a lookup is reused, ms (0: never: every connection reads the store).
   * @param maxEntries most lookups kept. Default {@link AUTH_CACHE_ENTRIES}.
   * @param now the clock (tests). Default `performance.now`.
   */
  constructor(
    readonly ttlMs: number,
    private readonly maxEntries = AUTH_CACHE_ENTRIES,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** The lookup of the key with this hash, when kept and fresh. */
  get(hash: string): CachedPrincipal | undefined {
    const e = this.byHash.get(hash);
    if (e === undefined) return undefined;
    if (e.until <= this.now()) {
      this.byHash.delete(hash);
      return undefined;
    }
    return e;
  }

  /** The generation to pass to {@link set}, read before the store is asked. */
  get version(): number {
    return this.generation;
  }

  /** Keeps a lookup read at `version` (dropped when an invalidation came in between). */
  set(hash: string, value: CachedPrincipal, version: number): void {
    if (this.ttlMs <= 0 || version !== this.generation) return;
    this.byHash.delete(hash);
    if (this.byHash.size >= this.maxEntries) this.byHash.delete(this.byHash.keys().next().value!);
    this.byHash.set(hash, { key: value.key, org: value.org, until: this.now() + this.ttlMs });
  }

  /** Forgets the key with this id (null: every key), e.g. revoked. */
  invalidate(keyId: string | null): void {
    this.generation++;
    if (keyId === null) return this.byHash.clear();
    for (const [hash, e] of this.byHash) if (e.key.id === keyId) this.byHash.delete(hash);
  }

  get size(): number {
    return this.byHash.size;
  }
}

/** `store`, whose `revokeApiKey` also drops the key from `cache` (at once, on this instance). */
export function withAuthInvalidation(store: Store, cache: AuthCache): Store {
  const revokeApiKey = async (id: string): Promise<boolean> => {
    // Before and after: a lookup in flight during the write is not kept (the generation moved).
    cache.invalidate(id);
    try {
      return await store.revokeApiKey(id);
    } finally {
      cache.invalidate(id);
    }
  };
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'revokeApiKey') return revokeApiKey;
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}
