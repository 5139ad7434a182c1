/**
 * A mutable first-in first-out queue with O(1) `push` and `shift` (issue 11 §3: `Array.shift` on a
 * queue of 160,000 tasks made each step O(n)). Items live in an array read from a moving head;
 * the consumed prefix is dropped once it is at least half the array, so memory stays O(length)
 * and each item is copied O(1) times on average. An emptied queue drops its array's storage.
 */
export class Fifo<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  /** The oldest item, left in place; `undefined` when empty. */
  peek(): T | undefined {
    return this.head < this.items.length ? this.items[this.head] : undefined;
  }

  /** The oldest item, removed; `undefined` when empty. */
  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined; // let it be collected
    if (this.head === this.items.length) {
      // Empty: the array's storage goes too (an idle session's queues hold none, issue 22).
      this.items.length = 0;
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  clear(): void {
    this.items = [];
    this.head = 0;
  }
}
