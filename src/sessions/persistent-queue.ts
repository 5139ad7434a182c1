/**
 * An immutable FIFO queue for machine states (issue 11 §3: the STT server copied its list of
 * pending `flush_id`s on every `flush` and every `flushed`, 126 s of CPU for 80,000 flushes).
 * Okasaki's two-list queue: `push` conses onto the back list, `shift` takes from the front list
 * and reverses the back list into it when the front is empty: O(1) amortized per operation when
 * each version is used once, as a machine's states are. Iterable, with a `length`.
 */
import { iterableArg } from '../util/args.js';

interface Cons<T> {
  readonly head: T;
  readonly tail: Cons<T> | null;
}

export class PersistentQueue<T> implements Iterable<T> {
  private static readonly EMPTY = new PersistentQueue<never>(null, null, 0);

  static empty<T>(): PersistentQueue<T> {
    return PersistentQueue.EMPTY as PersistentQueue<T>;
  }

  static of<T>(items: Iterable<T>): PersistentQueue<T> {
    let q = PersistentQueue.empty<T>();
    for (const item of iterableArg(items, 'PersistentQueue.of items')) q = q.push(item);
    return q;
  }

  private constructor(
    private readonly front: Cons<T> | null,
    private readonly back: Cons<T> | null,
    readonly length: number,
  ) {}

  /** This queue with `item` at the end. */
  push(item: T): PersistentQueue<T> {
    return this.front === null ? new PersistentQueue({ head: item, tail: null }, null, 1) : new PersistentQueue(this.front, { head: item, tail: this.back }, this.length + 1);
  }

  /** The oldest item, or `undefined` when empty. */
  peek(): T | undefined {
    return this.front?.head;
  }

  /** This queue without its oldest item. */
  shift(): PersistentQueue<T> {
    const front = this.front;
    if (front === null) return this;
    if (front.tail !== null) return new PersistentQueue(front.tail, this.back, this.length - 1);
    // The front is used up: the back list, reversed, becomes the front (the invariant: front is empty only when the queue is).
    let reversed: Cons<T> | null = null;
    for (let c = this.back; c !== null; c = c.tail) reversed = { head: c.head, tail: reversed };
    return reversed === null ? PersistentQueue.empty() : new PersistentQueue(reversed, null, this.length - 1);
  }

  *[Symbol.iterator](): Iterator<T> {
    for (let c = this.front; c !== null; c = c.tail) yield c.head;
    const back: T[] = [];
    for (let c = this.back; c !== null; c = c.tail) back.push(c.head);
    for (let i = back.length - 1; i >= 0; i--) yield back[i]!;
  }

  toJSON(): T[] {
    return [...this];
  }
}
