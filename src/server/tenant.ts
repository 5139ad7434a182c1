/**
 * Who a request is for, as the engines' fair queues see it (issue 31): `organization/API key/n`,
 * where n numbers each engine handed out (one per socket or POST), so the shared engines serve
 * organizations in turn, then keys within one, then sockets within a key. Ids only: nothing secret.
 */
import type { Principal } from './auth.js';

let nextConnection = 0;

/** A new tenant string for one socket or POST of `who` (the engine config's `tenant`, src/sessions/engine.ts). */
export function connectionTenant(who: Principal): string {
  return `${who.org.id}/${who.key.id}/${(nextConnection++).toString(36)}`;
}

/** An engine whose every stream is opened with `tenant` in its config. */
export function withTenant<C extends { tenant?: string }, E, S>(engine: { open(config: C, emit: E): S }, tenant: string): { open(config: C, emit: E): S } {
  return { open: (config, emit) => engine.open({ ...config, tenant }, emit) };
}
