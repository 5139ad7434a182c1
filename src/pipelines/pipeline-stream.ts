/**
 * Bounded buffering between a synchronous audio core and a stream transport, counted in frames.
 *
 * The platform adapters (`toWebTransformStream`, `toNodeTransform`) hand every output of one
 * `push` downstream at once, so one large written chunk (a 60 s upload, a burst of frames) lands
 * in the readable queue whole, however slow the consumer. {@link FramePump} instead cuts each
 * written chunk into slices (about one frame of input each), runs the core one slice at a time and
 * holds the outputs in its own queue with two marks: it stops running the core when
 * `highWaterMark` frames wait, and resumes only once the consumer has taken the queue down to
 * `lowWaterMark`; the written chunk's completion (the writer's backpressure signal) waits until
 * every slice ran. Memory is therefore bounded by `highWaterMark` frames plus the outputs of one
 * slice (and, at the very end, of the final flush), plus what the writer itself buffers while its
 * writes are pending.
 *
 * {@link createPipelineStream} puts a pump between a WritableStream and a ReadableStream (a
 * `{ writable, readable }` pair, what `pipeThrough` takes); `voicewire/node` puts the same pump in
 * a Node Duplex. Platform-neutral: web streams are globals in browsers and Node ≥ 18.
 */
import { VoicewireError } from '../util/errors.js';
import { functionArg, objectArg, optionsArg, shown } from '../util/args.js';
import { incrementalArg } from '../util/stream-core.js';

/** A synchronous core a pump drives: the {@link Incremental} shape plus `reset` (and optionally `destroy`). */
export interface PipelineCore<In, Out> {
  push(chunk: In): readonly Out[];
  flush(): readonly Out[];
  /** Drops buffered audio (barge-in). */
  reset(): void;
  /** Frees native resources (libopus) when the stream is aborted. Optional. */
  destroy?(): void;
}

/** High/low water marks, in frames (one output chunk is one frame). */
export interface PipelineWaterMarks {
  /** The core stops running once this many frames wait for the consumer. Default 8 (640 ms of audio). */
  highWaterMark?: number;
  /** ...and runs again once the consumer has taken the queue down to this many. Default 2. */
  lowWaterMark?: number;
}

/** Default {@link PipelineWaterMarks.highWaterMark}. */
export const PIPELINE_HIGH_WATER_MARK = 8;
/** Default {@link PipelineWaterMarks.lowWaterMark}. */
export const PIPELINE_LOW_WATER_MARK = 2;

/** Options of {@link FramePump}. */
export interface FramePumpOptions<In, Out> extends PipelineWaterMarks {
  /** Cuts a written chunk into the pieces the core runs one at a time. Default: the chunk whole. */
  slice?: (chunk: In) => readonly In[];
  /** Hands one output downstream; returns false when downstream wants no more until {@link FramePump.pull}. */
  sink: (out: Out) => boolean;
  /** Called once when the core was flushed and every output was handed downstream. */
  onEnd: () => void;
  /** Called once when the core throws (before the pending write completes with the error). */
  onError: (err: unknown) => void;
}

/** A core has push, flush and reset methods (and destroy, when present). */
function checkCore(core: PipelineCore<unknown, unknown>, what: string): void {
  incrementalArg(core, `${what} core`);
  functionArg(core.reset, `${what} core.reset`);
  if (core.destroy !== undefined) functionArg(core.destroy, `${what} core.destroy`);
}

/** Checks and defaults water marks. @throws `INVALID_ARGUMENT` unless `0 ≤ low < high`, integers. */
export function checkWaterMarks(marks: PipelineWaterMarks | undefined): { high: number; low: number } {
  const m = optionsArg(marks, 'water marks');
  const high = m.highWaterMark ?? PIPELINE_HIGH_WATER_MARK;
  const low = m.lowWaterMark ?? (typeof high === 'number' ? Math.min(PIPELINE_LOW_WATER_MARK, high - 1) : 0);
  if (typeof high !== 'number' || !Number.isInteger(high) || high < 1 || typeof low !== 'number' || !Number.isInteger(low) || low < 0 || low >= high) {
    throw new VoicewireError('INVALID_ARGUMENT', `water marks must be integers with 0 ≤ lowWaterMark < highWaterMark, got high ${shown(high)}, low ${shown(low)}`);
  }
  return { high, low };
}

/**
 * The bounded queue between a core and a transport (see the module note). Transport contract:
 * call {@link write} with one chunk at a time and write the next only after `done`; call
 * {@link pull} whenever downstream has room again; call {@link end} after the last write.
 */
export class FramePump<In, Out> {
  private queue: Out[] = [];
  private head = 0;
  private slices: readonly In[] | null = null;
  private sliceAt = 0;
  private done: ((err?: unknown) => void) | null = null;
  private canDeliver = true;
  private producing = true;
  private running = false;
  private ending = false;
  private ended = false;
  private failed = false;
  private endWaiting: ((err?: unknown) => void) | null = null;
  private readonly high: number;
  private readonly low: number;
  private readonly slice: (chunk: In) => readonly In[];
  private readonly sink: (out: Out) => boolean;
  private readonly onEnd: () => void;
  private readonly onError: (err: unknown) => void;

  constructor(
    private readonly core: PipelineCore<In, Out>,
    options: FramePumpOptions<In, Out>,
  ) {
    checkCore(core, 'FramePump');
    objectArg(options, 'FramePump options');
    const { high, low } = checkWaterMarks(options);
    this.high = high;
    this.low = low;
    this.slice = options.slice === undefined ? (chunk: In) => [chunk] : functionArg(options.slice, 'FramePump slice');
    this.sink = functionArg(options.sink, 'FramePump sink');
    this.onEnd = functionArg(options.onEnd, 'FramePump onEnd');
    this.onError = functionArg(options.onError, 'FramePump onError');
  }

  /** Frames waiting in the pump's queue (not yet handed downstream). */
  get buffered(): number {
    return this.queue.length - this.head;
  }

  /** Runs `chunk` through the core as the queue allows; `done` is called once all of it ran (or with the error). */
  write(chunk: In, done: (err?: unknown) => void): void {
    if (this.failed || this.ending) {
      done(new VoicewireError('INVALID_STATE', `pipeline stream written after ${this.failed ? 'an error' : 'its end'}`));
      return;
    }
    let slices: readonly In[];
    try {
      slices = this.slice(chunk);
    } catch (err) {
      this.fail(err, done);
      return;
    }
    this.slices = slices;
    this.sliceAt = 0;
    this.done = done;
    this.run();
  }

  /**
   * Ends the input: flushes the core (after the pending write, if any, has run); `onEnd` follows
   * once the queue has drained downstream.
   */
  end(done: (err?: unknown) => void): void {
    if (this.slices !== null) {
      this.endWaiting = done;
      return;
    }
    if (this.failed) {
      done(new VoicewireError('INVALID_STATE', 'pipeline stream ended after an error'));
      return;
    }
    let outs: readonly Out[];
    try {
      outs = this.core.flush();
    } catch (err) {
      this.fail(err, done);
      return;
    }
    for (const o of outs) this.queue.push(o);
    this.ending = true;
    this.run();
    done();
  }

  /** Downstream has room again. */
  pull(): void {
    this.canDeliver = true;
    this.run();
  }

  /**
   * Barge-in: drops every queued frame and the unprocessed rest of the pending write (which then
   * completes), and resets the core. Frames already handed downstream are out of reach.
   */
  reset(): void {
    this.queue = [];
    this.head = 0;
    const done = this.done;
    this.slices = null;
    this.done = null;
    this.producing = true;
    this.core.reset();
    if (done !== null) done();
    this.run(); // an end() that waited for the dropped write proceeds
  }

  /** Stops everything (the stream was cancelled or destroyed) and frees the core. */
  abort(): void {
    this.failed = true;
    this.queue = [];
    this.head = 0;
    this.slices = null;
    this.done = null;
    this.core.destroy?.();
  }

  private fail(err: unknown, done: (err?: unknown) => void): void {
    const end = this.endWaiting;
    this.endWaiting = null;
    this.abort();
    this.onError(err);
    done(err);
    end?.(err);
  }

  private run(): void {
    // Re-entrancy: `sink` and `done` may call back into write/pull/reset synchronously (a Node
    // 'data' listener, a writer's next write); those calls only change fields this loop re-reads.
    if (this.running) return;
    this.running = true;
    try {
      for (;;) {
        while (this.canDeliver && this.head < this.queue.length) {
          const out = this.queue[this.head]!;
          this.queue[this.head++] = undefined as never;
          if (!this.sink(out)) this.canDeliver = false;
        }
        if (this.head === this.queue.length) {
          this.queue.length = 0;
          this.head = 0;
        } else if (this.head > 1024) {
          this.queue = this.queue.slice(this.head);
          this.head = 0;
        }
        if (this.ending) {
          if (this.queue.length === 0 && !this.ended && !this.failed) {
            this.ended = true;
            this.onEnd();
          }
          return;
        }
        const slices = this.slices;
        if (slices === null) {
          const end = this.endWaiting;
          if (end === null) return;
          this.endWaiting = null;
          this.end(end); // re-enters run() through the guard: this loop goes on
          continue;
        }
        if (this.sliceAt >= slices.length) {
          const done = this.done!;
          this.slices = null;
          this.done = null;
          done();
          continue;
        }
        const size = this.queue.length - this.head;
        if (!this.producing) {
          if (size > this.low) return;
          this.producing = true;
        }
        if (size >= this.high) {
          this.producing = false;
          return;
        }
        let outs: readonly Out[];
        try {
          outs = this.core.push(slices[this.sliceAt++]!);
        } catch (err) {
          this.fail(err, this.done!);
          return;
        }
        for (const o of outs) this.queue.push(o);
      }
    } finally {
      this.running = false;
    }
  }
}

/** A `{ writable, readable }` pair with bounded buffering (pass it to `pipeThrough`). */
export interface PipelineStream<In, Out> {
  readonly writable: WritableStream<In>;
  readonly readable: ReadableStream<Out>;
  /** Barge-in: drops queued frames and the core's buffered audio (see {@link FramePump.reset}). */
  reset(): void;
  /** Frames produced and not yet read: the pump's queue plus the readable side's (at most one). */
  readonly bufferedFrames: number;
}

/** Options of {@link createPipelineStream}. */
export interface PipelineStreamOptions<In> extends PipelineWaterMarks {
  /** See {@link FramePumpOptions.slice}. */
  slice?: (chunk: In) => readonly In[];
}

/**
 * Wraps a core as a web stream pair with high/low water marks in frames. The readable side's own
 * queue holds at most one frame; the rest wait in the pump, and a write resolves only once its
 * chunk ran through the core, so a writer that awaits its writes (as `pipeTo` does) is held back
 * by a slow reader. An error in the core errors both sides.
 */
export function createPipelineStream<In, Out>(core: PipelineCore<In, Out>, opts?: PipelineStreamOptions<In>): PipelineStream<In, Out> {
  const options = optionsArg(opts, 'createPipelineStream options');
  let controller!: ReadableStreamDefaultController<Out>;
  const pumpOptions: FramePumpOptions<In, Out> = {
    highWaterMark: options.highWaterMark ?? PIPELINE_HIGH_WATER_MARK,
    sink: (out) => {
      controller.enqueue(out);
      return (controller.desiredSize ?? 0) > 0;
    },
    onEnd: () => controller.close(),
    onError: (err) => controller.error(err),
  };
  if (options.lowWaterMark !== undefined) pumpOptions.lowWaterMark = options.lowWaterMark;
  if (options.slice !== undefined) pumpOptions.slice = options.slice;
  const pump = new FramePump<In, Out>(core, pumpOptions);
  const readable = new ReadableStream<Out>(
    {
      start(c) {
        controller = c;
      },
      pull() {
        pump.pull();
      },
      cancel() {
        pump.abort();
      },
    },
    { highWaterMark: 1 },
  );
  const settle = (resolve: () => void, reject: (e: unknown) => void) => (err?: unknown) => (err === undefined ? resolve() : reject(err));
  const writable = new WritableStream<In>(
    {
      write(chunk) {
        return new Promise<void>((resolve, reject) => pump.write(chunk, settle(resolve, reject)));
      },
      close() {
        return new Promise<void>((resolve, reject) => pump.end(settle(resolve, reject)));
      },
      abort(reason) {
        pump.abort();
        try {
          controller.error(reason);
        } catch {
          // the readable side already closed or errored
        }
      },
    },
    { highWaterMark: 1 },
  );
  return {
    writable,
    readable,
    reset: () => pump.reset(),
    get bufferedFrames() {
      return pump.buffered + Math.max(0, 1 - (controller.desiredSize ?? 1));
    },
  };
}
