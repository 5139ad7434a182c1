/**
 * Engine calls of one request stream, one after another: each starts once the previous one
 * settled, synchronously while they are synchronous; a failure kills the queue and is reported once.
 */
import { Fifo } from './fifo.js';
import type { MaybePromise } from './engine.js';
import { isPromise } from './maybe-promise.js';

/** A strictly sequential task queue: a task starts once the previous one settled. O(1) per task. */
export class TaskQueue {
  private readonly tasks = new Fifo<() => MaybePromise<void>>();
  private busy: Promise<void> | null = null;
  private dead = false;

  constructor(private readonly onError: (err: unknown) => void) {}

  run(task: () => MaybePromise<void>): void {
    if (this.dead) return;
    this.tasks.push(task);
    if (this.busy === null) this.pump();
  }

  kill(): void {
    this.dead = true;
    this.tasks.clear();
  }

  get pending(): Promise<void> | null {
    return this.busy;
  }

  private pump(): void {
    while (!this.dead && this.tasks.length > 0) {
      const task = this.tasks.shift()!;
      let r: MaybePromise<void>;
      try {
        r = task();
      } catch (err) {
        this.fail(err);
        return;
      }
      if (isPromise(r)) {
        this.busy = r.then(
          () => {
            this.busy = null;
            this.pump();
          },
          (err: unknown) => {
            this.busy = null;
            this.fail(err);
          },
        );
        return;
      }
    }
  }

  private fail(err: unknown): void {
    if (this.dead) return;
    this.kill();
    this.onError(err);
  }
}
