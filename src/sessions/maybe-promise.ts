/**
 * Steps over values that may or may not be promises, staying synchronous while they are not (an
 * engine that answers synchronously runs a whole request without a microtask).
 */
import type { MaybePromise } from './engine.js';

/** True for a thenable. */
export function isPromise<T>(value: MaybePromise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | undefined)?.then === 'function';
}

/** Runs `f(items[i])` in order, synchronously while the calls are synchronous. */
export function sequence<T>(items: readonly T[], f: (item: T, index: number) => MaybePromise<void>, from = 0): MaybePromise<void> {
  for (let i = from; i < items.length; i++) {
    const r = f(items[i]!, i);
    if (isPromise(r)) return r.then(() => sequence(items, f, i + 1));
  }
  return undefined;
}

/**
 * `f(value)` once `value` is there: at once for a plain value, after it resolves for a promise.
 * Not named `then`: a module exporting `then` is a thenable, and `await import()` would call it.
 */
export function after<T>(value: MaybePromise<T>, f: (v: T) => MaybePromise<void>): MaybePromise<void> {
  return isPromise(value) ? value.then(f) : f(value);
}

/** `f(value)` once `value` is there, with what `f` returns (at once for a plain value). */
export function mapMaybe<T, U>(value: MaybePromise<T>, f: (v: T) => MaybePromise<U>): MaybePromise<U> {
  return isPromise(value) ? value.then(f) : f(value);
}
