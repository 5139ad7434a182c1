/**
 * An async iterable fed by callbacks: the SDK's streams push server events here and the
 * application reads them with `for await`. Unbounded on purpose: what the server sends for one
 * request is bounded by the request, and dropping events would lose audio or words.
 */
export class EventQueue<T> implements AsyncIterable<T> {
  private items: T[] = [];
  private head = 0;
  private waiter: (() => void) | null = null;
  private ended = false;
  private failure: unknown = undefined;
  private failed = false;

  /** Adds one event (ignored after end or fail). */
  push(item: T): void {
    if (this.ended || this.failed) return;
    this.items.push(item);
    this.wake();
  }

  /** No more events: the iteration ends after the queued ones. */
  end(): void {
    if (this.ended || this.failed) return;
    this.ended = true;
    this.wake();
  }

  /** The iteration throws `error` after the queued events. */
  fail(error: unknown): void {
    if (this.ended || this.failed) return;
    this.failed = true;
    this.failure = error;
    this.wake();
  }

  /** True once end() or fail() was called. */
  get closed(): boolean {
    return this.ended || this.failed;
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = null;
    w?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      if (this.head < this.items.length) {
        const item = this.items[this.head]!;
        this.items[this.head++] = undefined as T;
        // Compact now and then so a long stream does not keep every event it delivered.
        if (this.head > 1024 && this.head * 2 > this.items.length) {
          this.items = this.items.slice(this.head);
          this.head = 0;
        }
        yield item;
        continue;
      }
      if (this.failed) throw this.failure;
      if (this.ended) return;
      await new Promise<void>((resolve) => (this.waiter = resolve));
    }
  }
}
