/**
 * At most N tasks at once, the waiting ones served tenant by tenant in turn (a {@link FairQueue}):
 * pocketsphinx's native calls (issue 31: eight streams of one key queued first-come on libuv's
 * four threads, and another key's 4 s POST took 6 s instead of 0.8 s). A task waits with nothing
 * but its start function; each caller (a stream) has at most one call waiting, so the queue is
 * bounded by the streams, themselves bounded by their budget.
 */
import { availableParallelism } from 'node:os';
import { describeValue } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';
import { FairQueue, type TenantPath } from './fair-queue.js';

/** Default concurrency of native calls: the machine's cores, at most 3 (libuv's pool of 4 keeps one for file I/O), at least 1. */
export function defaultNativeCalls(cores: number = availableParallelism()): number {
  if (!Number.isInteger(cores) || cores < 1) throw new VoicewireError('INVALID_ARGUMENT', `defaultNativeCalls: cores must be an integer ≥ 1, got ${describeValue(cores)}`);
  return Math.max(1, Math.min(3, cores));
}

function concurrencyArg(n: unknown, what: string): number {
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1) throw new VoicewireError('INVALID_ARGUMENT', `${what} must be an integer ≥ 1, got ${describeValue(n)}`);
  return n;
}

/** Runs tasks, `concurrency` at once, the rest waiting their tenant's turn. */
export class FairLimiter {
  private running_ = 0;
  private concurrency_: number;
  private readonly waiting = new FairQueue<() => void>();

  /** `concurrency`: tasks running at once, an integer ≥ 1. */
  constructor(concurrency: number) {
    this.concurrency_ = concurrencyArg(concurrency, 'FairLimiter: concurrency');
  }

  /** Tasks running now. */
  get running(): number {
    return this.running_;
  }

  /** Tasks waiting now. */
  get queued(): number {
    return this.waiting.size;
  }

  get concurrency(): number {
    return this.concurrency_;
  }

  /** Changes the concurrency (a server's limit); running tasks above a lower one finish first. */
  setConcurrency(n: number): void {
    this.concurrency_ = concurrencyArg(n, 'FairLimiter.setConcurrency: n');
    this.next();
  }

  /** Runs `task` when `tenant`'s turn comes; settles as it does. */
  run<R>(tenant: TenantPath, task: () => Promise<R>): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const start = (): void => {
        this.running_++;
        let p: Promise<R>;
        try {
          p = task();
        } catch (err) {
          p = Promise.reject(err);
        }
        // One release whatever the task does.
        p.then(resolve, reject).finally(() => {
          this.running_--;
          this.next();
        });
      };
      this.waiting.push(tenant, start);
      this.next();
    });
  }

  private next(): void {
    while (this.running_ < this.concurrency_) {
      const start = this.waiting.shift();
      if (start === undefined) return;
      start();
    }
  }
}
