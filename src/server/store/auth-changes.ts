/**
 * Changes to API keys (a revocation), announced per store object in this process, so that the
 * authentication caches over that store forget the key at once (src/server/auth-cache.ts, issue
 * 34). A store announces the keys it changes ({@link announceAuthChange}); Postgres also tells the
 * other instances (NOTIFY on {@link AUTH_CHANNEL}, heard by `PostgresStore.watchAuthChanges`).
 * Another process on the same SQLite file is not told: its cache's TTL bounds the delay.
 */

/** A changed key's id; null: any key may have changed (e.g. the notification link was lost). */
export type AuthChangeListener = (keyId: string | null) => void;

/** The Postgres channel of key changes (payload: the key's id, empty for "any"). */
export const AUTH_CHANNEL = 'voicewire_auth';

const listeners = new WeakMap<object, Set<AuthChangeListener>>();

/** Tells every listener of `store` that a key changed. A listener's throw reaches no one else. */
export function announceAuthChange(store: object, keyId: string | null): void {
  const set = listeners.get(store);
  if (set === undefined) return;
  for (const l of set) {
    try {
      l(keyId);
    } catch {
      // A cache that cannot forget is the listener's own failure; the revocation stands.
    }
  }
}

/** Listens to the key changes of `store`; returns the unsubscribe. */
export function listenAuthChanges(store: object, listener: AuthChangeListener): () => void {
  let set = listeners.get(store);
  if (set === undefined) listeners.set(store, (set = new Set()));
  set.add(listener);
  return () => set.delete(listener);
}
