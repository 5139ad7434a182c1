/**
 * This instance's open holds, its heartbeat, and the sweep of dead instances' holds (issue 36).
 *
 * A request's credits are held before work and settled at its end (credits.ts); an instance that
 * stops between the two (`kill -9`, a crash, a killed `--workers` worker) cannot settle. So every
 * server process is an instance with a random id: its holds name it, and every
 * `limits.instanceHeartbeatMs` it writes its heartbeat with what each open hold has delivered since
 * the last (one store write, whatever the number of holds), then sweeps: the open holds of an
 * instance with no heartbeat for `limits.instanceTimeoutMs` are settled to what they had delivered
 * at their last checkpoint, the rest returned (Store.sweepOrphanHolds, atomic across instances).
 * A hold also records what it delivered each time it grows, in the same statement.
 *
 * What a killed instance's live request pays: what it delivered up to its last checkpoint (the
 * last heartbeat or hold growth before the kill), never more than it delivered; what it delivered
 * after that checkpoint (at most one heartbeat interval of audio) is not charged.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { isVoicewireError } from '../util/errors.js';
import type { ServerMetrics } from './metrics.js';
import type { HoldCheckpoint, Store } from './store/store.js';

/** An open hold, as {@link OpenHolds} sees it (a request's bill). */
export interface OpenHold {
  /** What it delivered since its last recorded checkpoint, or undefined when nothing changed. */
  checkpoint(): HoldCheckpoint | undefined;
  /** `c` (from {@link checkpoint}) is recorded in the store. */
  recorded(c: HoldCheckpoint): void;
}

/** Options of {@link OpenHolds}. */
export interface OpenHoldsOptions {
  /** Heartbeat and sweep interval, ms (`limits.instanceHeartbeatMs`). */
  heartbeatMs: number;
  /** An instance silent for this long is dead, ms (`limits.instanceTimeoutMs`). */
  timeoutMs: number;
}

/** One server process's instance: its id, its open holds, its heartbeat and sweep timer. */
export class OpenHolds {
  /** This instance's id, random per process (never reused: a restarted instance is a new one). */
  readonly instanceId = randomUUID();
  private readonly holds = new Set<OpenHold>();
  /** Settlements the store refused (it was down), retried after each heartbeat until written. */
  private retries: Array<() => Promise<void>> = [];
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  /** The last tick failed (logged once per outage, not once per tick). */
  private failing = false;

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    private readonly metrics: ServerMetrics,
    private readonly options: OpenHoldsOptions,
  ) {}

  /** A hold was taken: checkpointed by every heartbeat until {@link close}d. */
  open(hold: OpenHold): void {
    this.holds.add(hold);
  }

  /** The hold was settled (or its settlement failed: a sweep settles it once this instance is gone). */
  close(hold: OpenHold): void {
    this.holds.delete(hold);
  }

  /**
   * A settlement the store refused: `write` is tried again after every heartbeat written until it
   * resolves (the hold stays open in the store, named by this live instance, meanwhile).
   */
  retry(write: () => Promise<void>): void {
    this.retries.push(write);
  }

  /** Holds open now, and settlements waiting for a retry. */
  get size(): { open: number; retrying: number } {
    return { open: this.holds.size, retrying: this.retries.length };
  }

  /** Beats and sweeps now (the start-up sweep), then every `heartbeatMs`. */
  start(): void {
    if (this.timer !== undefined) return;
    void this.tick();
    this.timer = setInterval(() => void this.tick(), this.options.heartbeatMs);
    // The heartbeat alone never keeps a process alive.
    this.timer.unref();
  }

  /** Stops the timer; resolves once a tick in progress is over. The instance's row ages out (a sweep removes it). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One heartbeat and one sweep; never throws (a failure is logged, and the next tick tries again). Ticks never overlap. */
  tick(): Promise<void> {
    this.running ??= this.beatAndSweep().finally(() => (this.running = undefined));
    return this.running;
  }

  private async beatAndSweep(): Promise<void> {
    const checkpoints: Array<[OpenHold, HoldCheckpoint]> = [];
    for (const h of this.holds) {
      const c = h.checkpoint();
      if (c !== undefined) checkpoints.push([h, c]);
    }
    try {
      await this.store.heartbeat(
        this.instanceId,
        Date.now(),
        checkpoints.map(([, c]) => c),
      );
      for (const [h, c] of checkpoints) h.recorded(c);
      await this.retrySettlements();
      const swept = await this.store.sweepOrphanHolds(Date.now() - this.options.timeoutMs);
      if (this.failing) this.log.info({ instance: this.instanceId }, 'instance heartbeat written again');
      this.failing = false;
      if (swept.length === 0) return;
      let held = 0;
      let charged = 0;
      for (const s of swept) {
        held += s.held;
        charged += s.credits;
        this.metrics.orphanHolds.inc({ kind: s.kind });
        if (s.credits > 0) this.metrics.credits.inc({ kind: s.kind }, s.credits);
      }
      this.log.warn(
        { holds: swept.length, instances: [...new Set(swept.map((s) => s.holder))], organizations: new Set(swept.map((s) => s.orgId)).size, held, charged, returned: held - charged },
        'settled the open holds of dead instances to what they had delivered',
      );
    } catch (err) {
      if (!this.failing) this.log.error({ instance: this.instanceId, error: (err as Error).message }, 'instance heartbeat or sweep failed: retried every heartbeat');
      this.failing = true;
    }
  }

  /** The store answered a heartbeat: the settlements it refused before are written now, in turn. */
  private async retrySettlements(): Promise<void> {
    const waiting = this.retries;
    this.retries = [];
    for (const [i, write] of waiting.entries()) {
      try {
        await write();
      } catch (err) {
        // Down again: this and the rest wait for the next heartbeat. Anything else is logged and dropped.
        if (isVoicewireError(err, 'STORE_UNAVAILABLE')) {
          this.retries.push(...waiting.slice(i));
          return;
        }
        this.log.error({ error: (err as Error).message }, 'credits settlement retry refused: dropped');
      }
    }
    if (waiting.length > 0) this.log.info({ settled: waiting.length }, 'credits settled on retry');
  }
}
