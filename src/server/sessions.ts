/**
 * Live sessions and the drain state (docs/api.md §3.1): the library's pure drain machine
 * (src/protocol/drain.ts) plus counts per route (for /statusz and metrics) and per API key (the
 * connections-per-key limit). A session is a WebSocket connection or a streaming POST.
 */
import { VoicewireError } from '../util/errors.js';
import { drainInitialState, drainTransition, type DrainState } from '../protocol/drain.js';
import type { ServerMetrics } from './metrics.js';

/** The refusal of a new session while draining (§3.1): 503 over HTTP (before any work, or before a WebSocket's 101), 1013 in band. */
export function drainingError(): VoicewireError {
  return new VoicewireError('PROTOCOL_DRAINING', 'the server is draining and takes no new sessions; retry on another instance', { closeCode: 1013 });
}

export class SessionTracker {
  private drain: DrainState = drainInitialState();
  private readonly perRoute = new Map<string, number>();
  private readonly perKey = new Map<string, number>();
  private drainedWaiters: Array<() => void> = [];

  constructor(
    private readonly metrics: ServerMetrics,
    private readonly maxPerKey: number,
  ) {}

  get draining(): boolean {
    return this.drain.mode === 'draining';
  }

  get live(): number {
    return this.drain.sessions;
  }

  /** Live sessions per route, for /statusz. */
  routes(): Record<string, number> {
    return Object.fromEntries(this.perRoute);
  }

  /** Starts or stops draining (§3.1). */
  setDraining(enable: boolean): void {
    this.step({ type: 'drain', enable });
  }

  /**
   * Counts a WebSocket accepted before a drain (its 101 sent) until its session opens or fails
   * (the release function, idempotent): a drain that starts while it authenticates waits for it,
   * and its {@link open} with `admitted` is not refused, since no balancer could retry it after
   * the 101 (issue 36). Null while draining.
   */
  admit(): (() => void) | null {
    if (this.draining) return null;
    this.step({ type: 'session_opened' });
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.step({ type: 'session_closed' });
    };
  }

  /**
   * Counts a new session; returns its release function (idempotent).
   * @param admitted the session was {@link admit}ted before a drain began: a drain does not refuse it.
   * @throws VoicewireError `PROTOCOL_DRAINING` while draining (unless admitted), `LIMIT_EXCEEDED` past the per-key limit.
   */
  open(route: string, keyId: string | null, admitted = false): () => void {
    if (this.draining && !admitted) throw drainingError();
    if (keyId !== null) {
      const n = this.perKey.get(keyId) ?? 0;
      if (n >= this.maxPerKey) throw new VoicewireError('LIMIT_EXCEEDED', `this API key already has ${n} live sessions (limit ${this.maxPerKey})`);
      this.perKey.set(keyId, n + 1);
    }
    this.perRoute.set(route, (this.perRoute.get(route) ?? 0) + 1);
    this.metrics.liveSessions.inc({ route });
    this.step({ type: 'session_opened' });
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (keyId !== null) {
        const n = (this.perKey.get(keyId) ?? 1) - 1;
        if (n <= 0) this.perKey.delete(keyId);
        else this.perKey.set(keyId, n);
      }
      const r = (this.perRoute.get(route) ?? 1) - 1;
      if (r <= 0) this.perRoute.delete(route);
      else this.perRoute.set(route, r);
      this.metrics.liveSessions.dec({ route });
      this.step({ type: 'session_closed' });
    };
  }

  /** Resolves once draining with no live session. */
  whenDrained(): Promise<void> {
    if (this.draining && this.drain.sessions === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainedWaiters.push(resolve));
  }

  private step(event: Parameters<typeof drainTransition>[1]): void {
    const { state, effects } = drainTransition(this.drain, event);
    this.drain = state;
    for (const e of effects) {
      if (e.type === 'drained') for (const w of this.drainedWaiters.splice(0)) w();
    }
  }
}
