/**
 * A per-process time budget for handling peers' frames in one turn of the event loop (issue 34).
 *
 * In libuv's poll phase every socket with data has its frames handled in the same turn (up to
 * 1024 epoll events): at 1000 TTS sessions such turns ran 66 ms at p90 and 255 ms at p99, and a
 * new connection waited for about two of them (accept, then its upgrade request). Past the budget
 * a frame is queued instead (one FIFO across sockets, each socket's order kept: a socket with
 * frames queued queues its later ones too), and the queue drains in setImmediate slices of the
 * same budget, so the poll phase (accepts, upgrade requests) runs between slices.
 *
 * Bounded: a socket with `maxQueuedPerOwner` frames queued is held (its reading paused, TCP
 * backpressure reaches the peer) until half of them are handled; its queue holds at most that
 * many frames plus what one read already parsed. `drop` releases a closed socket's frames.
 */

/** Options of {@link FrameBudget}. */
export interface FrameBudgetOptions<O, F> {
  /** Handles one frame of `owner` (must not throw: it is the runner's own guard). */
  run(owner: O, frame: F, isBinary: boolean): void;
  /** Pauses (`true`) or resumes (`false`) reading from `owner`. */
  hold(owner: O, on: boolean): void;
  /** Milliseconds of frames per turn (from its first frame) and per drain slice. Default 8. */
  budgetMs?: number;
  /** Frames queued for one owner before its reading is paused. Default 16. */
  maxQueuedPerOwner?: number;
  /** The clock (ms). Default `performance.now`. */
  now?: () => number;
}

/** A queued frame (an object per frame, no closure). */
interface Queued<O, F> {
  owner: O;
  frame: F | undefined;
  isBinary: boolean;
}

/** Frames handled at once while the turn's budget lasts, queued after it (see the file's head). */
export class FrameBudget<O, F> {
  readonly budgetMs: number;
  readonly maxQueuedPerOwner: number;
  private readonly run: (owner: O, frame: F, isBinary: boolean) => void;
  private readonly hold: (owner: O, on: boolean) => void;
  private readonly now: () => number;
  /** The FIFO from `head` on (compacted as it drains). */
  private queue: Queued<O, F>[] = [];
  private head = 0;
  /** Frames queued per owner (owners with none are not listed). */
  private readonly counts = new Map<O, number>();
  private readonly held = new Set<O>();
  /** When the current turn's first frame came (NaN: no turn open). */
  private turnStart = NaN;
  private tickScheduled = false;

  constructor(options: FrameBudgetOptions<O, F>) {
    this.run = options.run;
    this.hold = options.hold;
    this.budgetMs = options.budgetMs ?? 8;
    this.maxQueuedPerOwner = options.maxQueuedPerOwner ?? 16;
    this.now = options.now ?? (() => performance.now());
  }

  /** Frames waiting. */
  get queued(): number {
    return this.queue.length - this.head;
  }

  /** Frames of `owner` waiting. */
  queuedOf(owner: O): number {
    return this.counts.get(owner) ?? 0;
  }

  /** A frame from `owner`: handled now while the turn's budget lasts and `owner` has none queued, else queued. */
  offer(owner: O, frame: F, isBinary: boolean): void {
    const n = this.counts.get(owner);
    if (n === undefined && !this.spent()) return this.run(owner, frame, isBinary);
    this.queue.push({ owner, frame, isBinary });
    const queued = (n ?? 0) + 1;
    this.counts.set(owner, queued);
    if (queued >= this.maxQueuedPerOwner && !this.held.has(owner)) {
      this.held.add(owner);
      this.hold(owner, true);
    }
    this.schedule();
  }

  /** `owner` is gone (closed, aborted): its queued frames are dropped and its hold released. */
  drop(owner: O): void {
    if (this.counts.delete(owner)) {
      // Compacts the queue without the owner's frames (rare: a socket that closes with frames queued).
      this.queue = this.queue.slice(this.head).filter((q) => q.owner !== owner);
      this.head = 0;
    }
    if (this.held.delete(owner)) this.hold(owner, false);
  }

  /** Whether the current turn spent its budget; the first frame of a turn opens it (closed in the check phase). */
  private spent(): boolean {
    const now = this.now();
    if (Number.isNaN(this.turnStart)) {
      this.turnStart = now;
      this.schedule();
      return false;
    }
    return now - this.turnStart > this.budgetMs;
  }

  private schedule(): void {
    if (this.tickScheduled) return;
    this.tickScheduled = true;
    setImmediate(this.tick);
  }

  /** The check phase: the turn is over; a slice of the queue is handled, the next one after another poll. */
  private readonly tick = (): void => {
    this.tickScheduled = false;
    const start = this.now();
    this.turnStart = start;
    try {
      // At least one frame per slice, then while the budget lasts.
      do {
        if (this.head >= this.queue.length) break;
        const q = this.queue[this.head]!;
        this.queue[this.head++] = undefined as unknown as Queued<O, F>;
        const left = this.counts.get(q.owner)! - 1;
        if (left === 0) this.counts.delete(q.owner);
        else this.counts.set(q.owner, left);
        if (left <= this.maxQueuedPerOwner >> 1 && this.held.delete(q.owner)) this.hold(q.owner, false);
        const frame = q.frame as F;
        q.frame = undefined;
        try {
          this.run(q.owner, frame, q.isBinary);
        } catch {
          // `run` guards its own session; one frame's throw must not stop the others nor end the process.
        }
      } while (this.now() - start <= this.budgetMs);
    } finally {
      if (this.head >= this.queue.length) {
        this.queue = [];
        this.head = 0;
      } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
        this.queue = this.queue.slice(this.head);
        this.head = 0;
      }
      this.turnStart = NaN;
      if (this.queued > 0) this.schedule();
    }
  };
}
