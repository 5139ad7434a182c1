/**
 * Store health for readiness (README "Many instances"): the store is pinged every `intervalMs`;
 * `failuresBeforeDown` pings in a row that fail or take longer than `timeoutMs` mark the store
 * down, the next one that answers marks it up again. One slow ping is not enough: under load the
 * ping waits for a pooled connection behind the debits (bench/load.ts saw 2 s waits), and a busy
 * store is not a lost one. While down, /readyz answers 503 (the load balancer stops sending new
 * sessions here) and new sessions are refused at once with `STORE_UNAVAILABLE` instead of each
 * waiting out the driver's connection timeout; live sessions are left alone.
 */
import { functionArg, optionsArg, shown } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';
import { storeErrorReason } from './store/validate.js';
import type { Store } from './store/store.js';

/** Options of {@link StoreHealth}. */
export interface StoreHealthOptions {
  /** How often the store is pinged, ms. Default 1000. */
  intervalMs?: number;
  /** A ping slower than this counts as failed, ms. Default 5000 (the Postgres pool's connection timeout). */
  timeoutMs?: number;
  /** Failed pings in a row before the store counts as down. Default 2. */
  failuresBeforeDown?: number;
  /** Called when the state changes (for logs). */
  onChange?: (up: boolean, error: string | null) => void;
}

/** Defaults of {@link StoreHealthOptions}, as documented in the README. */
export const STORE_HEALTH_DEFAULTS = { intervalMs: 1000, timeoutMs: 5000, failuresBeforeDown: 2 } as const;

/** Periodic store pings; `up` is the last answer (true until a ping says otherwise). */
export class StoreHealth {
  #up = true;
  #error: string | null = null;
  #timer: NodeJS.Timeout | undefined;
  #inFlight = false;
  #failures = 0;
  readonly intervalMs: number;
  readonly timeoutMs: number;
  readonly failuresBeforeDown: number;

  constructor(
    private readonly store: Store,
    private readonly options: StoreHealthOptions = {},
  ) {
    options = optionsArg(options, 'store health options');
    if (options.onChange !== undefined) functionArg(options.onChange, 'store health: onChange');
    this.intervalMs = options.intervalMs ?? STORE_HEALTH_DEFAULTS.intervalMs;
    this.timeoutMs = options.timeoutMs ?? STORE_HEALTH_DEFAULTS.timeoutMs;
    this.failuresBeforeDown = options.failuresBeforeDown ?? STORE_HEALTH_DEFAULTS.failuresBeforeDown;
    for (const [k, v] of [['intervalMs', this.intervalMs], ['timeoutMs', this.timeoutMs], ['failuresBeforeDown', this.failuresBeforeDown]] as const) {
      if (!Number.isFinite(v) || v <= 0) throw new VoicewireError('INVALID_ARGUMENT', `store health: ${k} must be a positive number, got ${shown(v)}`);
    }
    // setTimeout's longest delay: a longer interval would ping every millisecond.
    for (const [k, v] of [['intervalMs', this.intervalMs], ['timeoutMs', this.timeoutMs]] as const) {
      if (v > 2 ** 31 - 1) throw new VoicewireError('INVALID_ARGUMENT', `store health: ${k} must be at most ${2 ** 31 - 1} ms, got ${v}`);
    }
  }

  /** Whether the last ping answered in time. */
  get up(): boolean {
    return this.#up;
  }

  /** Why the store is down (the last ping's error), or null. */
  get error(): string | null {
    return this.#error;
  }

  /** Starts pinging (idempotent). The timer does not keep the process alive. */
  start(): void {
    if (this.#timer !== undefined) return;
    this.#timer = setInterval(() => void this.check(), this.intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** One ping now; resolves with the new state. Overlapping calls share nothing: a ping in flight is not doubled. */
  async check(): Promise<boolean> {
    if (this.#inFlight) return this.#up;
    this.#inFlight = true;
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`ping took over ${this.timeoutMs} ms`)), this.timeoutMs);
      });
      await Promise.race([this.store.ping(), timeout]);
      this.#failures = 0;
      this.#set(true, null);
    } catch (err) {
      this.#failures++;
      if (this.#failures >= this.failuresBeforeDown) this.#set(false, storeErrorReason(err));
    } finally {
      clearTimeout(timer);
      this.#inFlight = false;
    }
    return this.#up;
  }

  /** Throws `STORE_UNAVAILABLE` while the store is down (a new session's fast refusal). */
  assertUp(): void {
    // The reason (`connect ECONNREFUSED 10.0.0.5:5432`…) is logged when the store goes down, never sent (issue 20 §8).
    if (!this.#up) throw new VoicewireError('STORE_UNAVAILABLE', 'store unavailable', { details: { operation: 'ping', reason: this.#error ?? 'ping failed' } });
  }

  #set(up: boolean, error: string | null): void {
    const changed = up !== this.#up;
    this.#up = up;
    this.#error = error;
    if (changed) this.options.onChange?.(up, error);
  }
}
