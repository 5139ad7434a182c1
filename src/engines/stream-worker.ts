/**
 * One worker thread serving many streams (sherpa-vad.ts's segmenting VAD, silero-steps.ts's step
 * VAD): started by the first stream, referenced only while a stream is open (an idle worker never
 * keeps the process alive), and when it dies or is closed every open stream is failed — none waits
 * forever for an answer that cannot come.
 */
import type { Worker } from 'node:worker_threads';
import { VoicewireError } from '../util/errors.js';

/**
 * Worker-source snippet both Silero workers run (sherpa-vad.ts, silero-steps.ts): a stream's end
 * resets its VAD and keeps it for the next stream, up to `workerData.keepIdle`. Expects
 * `streams` (id → { vad }) and `idle` in scope.
 */
export const WORKER_RELEASE = `const release = (id) => {
  const s = streams.get(id);
  if (s === undefined) return;
  streams.delete(id);
  s.vad.reset();
  if (idle.length < workerData.keepIdle) idle.push(s.vad);
};`;

/** A message from the worker: about stream `id`. */
export interface StreamWorkerMessage {
  type: string;
  id: number;
}

/** What a {@link StreamWorker} is told to do by its owner. */
export interface StreamWorkerHooks<S, M extends StreamWorkerMessage> {
  /** Names the worker in errors: `Silero VAD (/path/to/model.onnx)`. */
  name: string;
  /** Starts the thread (evalWorker). */
  spawn(): Worker;
  /** A message about the open stream `s` (its id is `m.id`). */
  onMessage(m: M, s: S): void;
  /** Fails `s`: the worker stopped (`lost`) or was closed. */
  fail(s: S, err: VoicewireError, why: 'lost' | 'closed'): void;
}

export class StreamWorker<S, M extends StreamWorkerMessage> {
  private worker: Worker | undefined;
  private readonly streams = new Map<number, S>();
  private nextId = 0;
  private closed = false;

  constructor(private readonly hooks: StreamWorkerHooks<S, M>) {}

  /** Streams open now. */
  get open(): number {
    return this.streams.size;
  }

  /** True while the thread runs. */
  get running(): boolean {
    return this.worker !== undefined;
  }

  /** Stream `id`, while open. */
  get(id: number): S | undefined {
    return this.streams.get(id);
  }

  /**
   * Opens a stream with `entry` (the thread started if needed) and returns its id.
   * @throws VoicewireError `INVALID_STATE` after {@link close}.
   */
  add(entry: S): number {
    if (this.closed) throw new VoicewireError('INVALID_STATE', 'the Silero VAD worker is closed');
    const worker = (this.worker ??= this.spawn());
    const id = this.nextId++;
    this.streams.set(id, entry);
    if (this.streams.size === 1) worker.ref();
    return id;
  }

  /** Forgets stream `id` (the thread unreferenced once none is open); its entry, or undefined when it was gone. */
  remove(id: number): S | undefined {
    const s = this.streams.get(id);
    if (s === undefined) return undefined;
    this.streams.delete(id);
    if (this.streams.size === 0) this.worker?.unref();
    return s;
  }

  /** Posts to the thread, if it runs. */
  post(message: unknown, transfer?: ArrayBuffer[]): void {
    this.worker?.postMessage(message, transfer);
  }

  /** Stops the thread; every open stream is failed (`closed`, `INVALID_STATE`). */
  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = undefined;
    this.failAll(new VoicewireError('INVALID_STATE', 'the Silero VAD worker closed'), 'closed');
    await worker?.terminate();
  }

  private failAll(err: VoicewireError, why: 'lost' | 'closed'): void {
    for (const id of [...this.streams.keys()]) {
      const s = this.remove(id);
      if (s !== undefined) this.hooks.fail(s, err, why);
    }
  }

  private spawn(): Worker {
    const worker = this.hooks.spawn();
    worker.on('message', (m: M) => {
      const s = this.streams.get(m.id);
      if (s !== undefined) this.hooks.onMessage(m, s);
    });
    const lost = (err: Error | undefined): void => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.failAll(new VoicewireError('PROTOCOL_INTERNAL', `${this.hooks.name}: its worker stopped${err ? `: ${err.message}` : ''}`, err ? { cause: err } : undefined), 'lost');
    };
    worker.on('error', lost);
    worker.on('exit', () => lost(undefined));
    worker.unref();
    return worker;
  }
}
