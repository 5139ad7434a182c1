/**
 * The generic part of a server session runner, shared by STT and TTS: the event queue feeding the
 * pure machine, its effects on the transport (send, close, notices), backpressure, the per-stream
 * engine drivers and the bound on input queued before them (issue 11 §3).
 */
import { shown } from '../util/args.js';
import { VoicewireError, toVoicewireError } from '../util/errors.js';
import type { RawMessage } from '../protocol/parse.js';
import type { MaybePromise } from './engine.js';
import { Fifo } from './fifo.js';
import { after, isPromise } from './maybe-promise.js';
import type { RequestKey, ServerSessionNotice, SessionMachine } from './multiplex.js';
import { DEFAULT_MAX_QUEUED_BYTES, DEFAULT_MAX_QUEUED_MESSAGES, type AudioLineSpan, type ServerSession, type ServerSessionOptions, type ServerTransport } from './server-session.js';
import { TaskQueue } from './task-queue.js';

let counter = 0;
function defaultRequestId(): string {
  const c = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  return c?.randomUUID ? c.randomUUID() : `req-${Date.now().toString(36)}-${(++counter).toString(36)}`;
}

/** Marks a failure of the client's data (bad audio, bad tags) rather than of the engine. */
export function clientFault(err: unknown, code: 'PROTOCOL_INVALID_AUDIO' | 'PROTOCOL_INVALID_MESSAGE', what: string): VoicewireError {
  if (err instanceof VoicewireError && err.closeCode !== undefined) return err;
  return new VoicewireError(code, `${what}: ${err instanceof Error ? err.message : shown(err)}`, { cause: err });
}

/** Marks a failure of the engine (or the output encoder): `PROTOCOL_INTERNAL`, unless it already carries a close code. */
export function engineFault(err: unknown, route: string): VoicewireError {
  if (err instanceof VoicewireError && err.closeCode !== undefined) return err;
  return new VoicewireError('PROTOCOL_INTERNAL', `${route} engine failed: ${err instanceof Error ? err.message : shown(err)}`, { cause: err });
}

/** What every per-stream driver holds: its task queue and its engine stream (null until opened). */
export interface DriverBase {
  queue: TaskQueue;
  closed: boolean;
  stream: { close(): void } | null;
  /** Client input in `queue`, not yet started (bytes and ops), for the session's bound. */
  queuedBytes?: number;
  queuedOps?: number;
}

/** Bytes of client input an engine op carries (decoded audio, or text at 2 bytes per UTF-16 unit). */
function inputBytes(op: { op: string }): number {
  const o = op as { audio?: Uint8Array; text?: string };
  return o.audio !== undefined ? o.audio.byteLength : o.text !== undefined ? o.text.length * 2 : 0;
}

function positiveInteger(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!(Number.isInteger(value) && value >= 1)) throw new VoicewireError('INVALID_ARGUMENT', `${name} must be a positive integer, got ${shown(value)}`);
  return value;
}

/** The generic part of a runner: event queue, state, transport, per-stream drivers. */
export abstract class Runner<S, Ev, Eff extends { type: string }, D extends DriverBase> implements ServerSession<S> {
  state: S;
  closed = false;
  protected readonly drivers = new Map<number, D>();
  private readonly events = new Fifo<Ev>();
  private running = false;
  protected readonly requestId: () => string;
  private readonly maxQueuedBytes: number;
  private readonly maxQueuedMessages: number;
  /** Client input queued before the engine, over every driver. */
  private queuedBytes = 0;
  private queuedOps = 0;
  private paused = false;

  constructor(
    private readonly machine: SessionMachine<S, Ev, Eff>,
    protected readonly options: ServerSessionOptions,
  ) {
    if (options === null || typeof options !== 'object') throw new VoicewireError('INVALID_ARGUMENT', 'server session options must be an object');
    const transport = options.transport as ServerTransport | undefined;
    if (transport === null || typeof transport !== 'object' || typeof transport.send !== 'function' || typeof transport.close !== 'function') {
      throw new VoicewireError('INVALID_ARGUMENT', 'options.transport must have send(text) and close(code, reason)');
    }
    this.maxQueuedBytes = positiveInteger(options.maxQueuedBytes, DEFAULT_MAX_QUEUED_BYTES, 'maxQueuedBytes');
    this.maxQueuedMessages = positiveInteger(options.maxQueuedMessages, DEFAULT_MAX_QUEUED_MESSAGES, 'maxQueuedMessages');
    this.state = machine.initial();
    this.requestId = options.requestId ?? defaultRequestId;
  }

  /** Client input queued before the engine (bytes, ops): for tests and metrics. */
  get queued(): { bytes: number; messages: number } {
    return { bytes: this.queuedBytes, messages: this.queuedOps };
  }

  receive(data: RawMessage): void {
    if (typeof data !== 'string' && !(data instanceof Uint8Array) && (data === null || typeof data !== 'object')) {
      throw new VoicewireError('INVALID_ARGUMENT', `receive() takes a text frame, its bytes or a parsed value, got ${data === null ? 'null' : typeof data}`);
    }
    this.dispatch({ type: 'receive', data } as Ev);
  }

  fail(error: VoicewireError, clientReqId?: string): void {
    if (clientReqId !== undefined && typeof clientReqId !== 'string') throw new VoicewireError('INVALID_ARGUMENT', `clientReqId must be a string, got ${typeof clientReqId}`);
    const e = error instanceof VoicewireError ? error : toVoicewireError(error);
    this.dispatch((clientReqId === undefined ? { type: 'server_failure', error: e } : { type: 'server_failure', error: e, clientReqId }) as Ev);
  }

  transportClosed(): void {
    this.dispatch({ type: 'transport_closed' } as Ev);
    this.closed = true;
    this.releaseWaiters();
  }

  async whenIdle(): Promise<void> {
    for (;;) {
      const busy = [...this.drivers.values()].map((d) => d.queue.pending).filter((p): p is Promise<void> => p !== null);
      if (busy.length === 0) return;
      await Promise.allSettled(busy);
    }
  }

  protected dispatch(event: Ev): void {
    this.events.push(event);
    if (this.running) return;
    this.running = true;
    try {
      while (this.events.length > 0) {
        const step = this.machine.transition(this.state, this.events.shift()!);
        this.state = step.state;
        for (const effect of step.effects) this.execute(effect);
      }
    } finally {
      this.running = false;
    }
  }

  protected send(text: string): void {
    if (this.closed) return;
    this.afterSend(this.options.transport, text, null);
  }

  /** Sends an `audio` line as its bytes ({@link ServerTransport.sendAudio}; the caller checked it is there). */
  protected sendAudio(line: Uint8Array, span: AudioLineSpan): void {
    if (this.closed) return;
    this.afterSend(this.options.transport, line, span);
  }

  /** One send of either form, and what its result says about backpressure or a broken socket. */
  private afterSend(transport: ServerTransport, frame: string | Uint8Array, span: AudioLineSpan | null): void {
    let r: unknown;
    try {
      r = span === null ? transport.send(frame as string) : transport.sendAudio!(frame as Uint8Array, span);
    } catch {
      // A transport that cannot send is a broken socket.
      this.brokenTransport();
      return;
    }
    if (r === false && transport.drained) this.track(transport.drained());
    else if (typeof r === 'object' && r !== null && isPromise(r as MaybePromise<void>)) this.track(r as Promise<void>);
  }

  /** Sends in flight (pending promises, or a `false` not yet drained). */
  private pendingSends = 0;
  private readonly drainWaiters: Array<() => void> = [];

  private track(p: Promise<void>): void {
    this.pendingSends++;
    p.then(
      () => this.settleSend(),
      () => {
        this.settleSend();
        if (!this.closed) this.dispatch({ type: 'transport_closed' } as Ev);
        this.closed = true;
        this.releaseWaiters();
      },
    );
  }

  private settleSend(): void {
    if (this.pendingSends > 0) this.pendingSends--;
    if (this.pendingSends === 0) this.releaseWaiters();
  }

  private releaseWaiters(): void {
    for (const w of this.drainWaiters.splice(0)) w();
  }

  private brokenTransport(): void {
    this.events.push({ type: 'transport_closed' } as Ev);
    this.closed = true;
    this.releaseWaiters();
  }

  /**
   * Backpressure gate: nothing while no send is pending; else a promise that resolves once every
   * pending send settled (or the session closed). Engine work waits on it.
   */
  protected gate(): MaybePromise<void> {
    if (this.pendingSends === 0 || this.closed) return undefined;
    return new Promise<void>((resolve) => this.drainWaiters.push(resolve));
  }

  protected execute(effect: Eff): void {
    const e = effect as unknown as { type: string; message?: unknown; code?: number; reason?: string; event?: ServerSessionNotice };
    switch (e.type) {
      case 'send':
        this.send(this.serialize(e.message));
        return;
      case 'close':
        if (!this.closed) {
          this.closed = true;
          try {
            this.options.transport.close(e.code!, truncateReason(e.reason!));
          } catch {
            // already closed
          }
          this.releaseWaiters();
        }
        return;
      case 'emit':
        this.options.onEvent?.(e.event!);
        return;
      default:
        this.executeOther(effect);
    }
  }

  protected closeDriver(stream: number): void {
    const d = this.drivers.get(stream);
    if (d === undefined) return;
    this.drivers.delete(stream);
    d.closed = true;
    d.queue.kill();
    this.dequeued(d, d.queuedBytes ?? 0, d.queuedOps ?? 0);
    const s = d.stream;
    d.stream = null;
    if (s !== null) {
      try {
        s.close();
      } catch {
        // closing is best effort
      }
    }
  }

  /** Reports an engine event (or a runner barrier) of a stream to the machine, unless the stream was closed. */
  protected report(d: D, key: RequestKey, stream: number, event: unknown): void {
    if (!d.closed) this.dispatch({ type: 'engine', key, stream, event } as Ev);
  }

  /**
   * Executes an engine op of the machine: `close` closes the stream's driver at once; `open`
   * creates the driver (`newDriver`, around its task queue); every op but `close` then runs in
   * the driver's queue (`runOp`). A failure in the queue ends the request (`engine_failure`).
   */
  protected engineEffect<Op extends { op: string }>(
    key: RequestKey,
    stream: number,
    op: Op,
    newDriver: (queue: TaskQueue) => D,
    runOp: (d: D, op: Exclude<Op, { op: 'close' }>) => MaybePromise<void>,
  ): void {
    if (op.op === 'close') {
      this.closeDriver(stream);
      return;
    }
    let d = this.drivers.get(stream);
    if (op.op === 'open') {
      d = newDriver(
        new TaskQueue((err) => {
          const error = toVoicewireError(err);
          this.dispatch({ type: 'engine_failure', key, stream, error: error.closeCode === undefined ? engineFault(err, this.route) : error } as Ev);
        }),
      );
      this.drivers.set(stream, d);
    }
    if (d === undefined || d.closed) return;
    const driver = d;
    const run = op as Exclude<Op, { op: 'close' }>;
    const bytes = inputBytes(op);
    driver.queuedBytes = (driver.queuedBytes ?? 0) + bytes;
    driver.queuedOps = (driver.queuedOps ?? 0) + 1;
    this.queuedBytes += bytes;
    this.queuedOps++;
    // Backpressure: every engine call waits until the transport took what was sent.
    driver.queue.run(() => {
      this.dequeued(driver, bytes, 1);
      return after(this.gate(), () => (driver.closed ? undefined : runOp(driver, run)));
    });
    if (!driver.closed) this.checkQueueBound(key);
  }

  /**
   * Issue 11 §3: input queued before the engine is bounded. Past the bound, reading pauses (the
   * transport's `pauseReading`); without it, or at twice the bound while paused, the request
   * whose input passed it fails with `PROTOCOL_QUEUE_FULL`.
   */
  private checkQueueBound(key: RequestKey): void {
    const over = this.queuedBytes > this.maxQueuedBytes || this.queuedOps > this.maxQueuedMessages;
    if (!over) return;
    const transport = this.options.transport;
    const hard = this.queuedBytes > 2 * this.maxQueuedBytes || this.queuedOps > 2 * this.maxQueuedMessages;
    if (transport.pauseReading !== undefined && !hard) {
      if (!this.paused && !this.closed) {
        this.paused = true;
        transport.pauseReading();
      }
      return;
    }
    const error = new VoicewireError(
      'PROTOCOL_QUEUE_FULL',
      `${this.route}: more input is queued before the engine than this server takes (${this.queuedBytes} bytes in ${this.queuedOps} messages; at most ${this.maxQueuedBytes} bytes, ${this.maxQueuedMessages} messages)`,
      { details: { queuedBytes: this.queuedBytes, queuedMessages: this.queuedOps, maxQueuedBytes: this.maxQueuedBytes, maxQueuedMessages: this.maxQueuedMessages } },
    );
    this.dispatch((key === null ? { type: 'server_failure', error } : { type: 'server_failure', error, clientReqId: key }) as Ev);
  }

  /** Input left the queue (its op started, or its driver closed): resume reading at half the bound. */
  private dequeued(d: D, bytes: number, ops: number): void {
    d.queuedBytes = (d.queuedBytes ?? 0) - bytes;
    d.queuedOps = (d.queuedOps ?? 0) - ops;
    this.queuedBytes -= bytes;
    this.queuedOps -= ops;
    if (this.paused && this.queuedBytes <= this.maxQueuedBytes / 2 && this.queuedOps <= this.maxQueuedMessages / 2) {
      this.paused = false;
      if (!this.closed) this.options.transport.resumeReading?.();
    }
  }

  /**
   * Opens driver `d`'s engine stream (`open`, given the event callback), then, unless the driver
   * closed meanwhile, lets `prepare` set the driver up for it and reports `opened`.
   */
  protected openStream<ES extends { readonly info: unknown; close(): void }>(
    d: D,
    key: RequestKey,
    stream: number,
    open: (emit: (event: unknown) => void) => MaybePromise<ES>,
    prepare: (s: ES) => void,
  ): MaybePromise<void> {
    let opened: MaybePromise<ES>;
    try {
      opened = open((event) => this.report(d, key, stream, event));
    } catch (err) {
      throw engineFault(err, this.route);
    }
    return after(opened, (s) => {
      if (d.closed) {
        s.close();
        return;
      }
      prepare(s);
      this.dispatch({ type: 'engine', key, stream, event: { type: 'opened', requestId: this.requestId(), info: s.info } } as Ev);
    });
  }

  /** `STT` or `TTS`, for error messages. */
  protected abstract readonly route: string;
  protected abstract serialize(message: unknown): string;
  protected abstract executeOther(effect: Eff): void;
}

/** Close reasons are limited to 123 bytes by RFC 6455 §5.5.1. */
function truncateReason(reason: string): string {
  if (reason.length <= 40) return reason;
  let r = reason.slice(0, 120);
  while (new TextEncoder().encode(r).length > 123) r = r.slice(0, -1);
  return r;
}
