/**
 * Server session runners: the imperative shell around the pure server machines. A runner holds
 * the machine state, feeds it events (received frames, engine events, barriers), and executes the
 * effects: it sends frames, closes the socket, and drives the engine streams.
 *
 * A WebSocket server is then a few lines of glue (see the README's protocol section):
 *
 * ```ts
 * wss.on('connection', (ws, req) => {
 *   const session = createTtsServerSession({
 *     engine,
 *     transport: {
 *       // A promise per frame: the runner asks the engine for more once the socket took it (backpressure).
 *       send: (text) => new Promise<void>((resolve, reject) => ws.send(text, (err) => (err ? reject(err) : resolve()))),
 *       close: (code, reason) => ws.close(code, reason),
 *     },
 *   });
 *   try {
 *     readCredentials({ headers: req.headers, url: req.url, route: 'tts' }); // §5; check the key/token here
 *   } catch (err) {
 *     return session.fail(err as VoicewireError); // error 1008, close 1008
 *   }
 *   ws.on('message', (data, isBinary) => session.receive(isBinary ? data : data.toString()));
 *   ws.on('close', () => session.transportClosed());
 * });
 * ```
 *
 * Backpressure: `send` may return a promise (or `false` plus `drained()`); while sends are pending,
 * engine calls wait (see {@link ServerTransport}). TTS timing: each `audio` message carries the
 * encoded chunk's own `start_s`/`stop_s` ({@link TtsOutputEncoder}), and each word timestamp is held
 * until the audio reaching its `stop_s` was sent.
 *
 * Ordering: events are processed one at a time, run to completion (an engine that emits events
 * synchronously inside a call has them queued behind the current step). Engine calls of one
 * request stream never overlap: each waits for the previous one to settle. Flush and end are
 * barriers in that queue, so `flushed` and `end_of_stream` follow every event the frames before
 * them produced.
 */
import { objectArg, shown } from '../util/args.js';
import { VoicewireError, toVoicewireError } from '../util/errors.js';
import { Fifo } from './fifo.js';
import { createServerSessionMachine, DEFAULT_MAX_REQUESTS_PER_SOCKET } from './multiplex.js';
import type { AudioFormatName } from '../audio/format.js';
import { bytesOf, int16View } from '../util/bytes.js';
import { createSttInputDecoder } from '../pipelines/stt-audio-decoder.js';
import { createTtsOutputEncoder } from '../pipelines/tts-audio-encoder.js';
import { createFramer, type Framer } from '../audio/framer.js';
import { createTagParser, type TagEvent, type TagParser, type TagParserOptions } from '../text/tags.js';
import type { MaybePromise, SttEngine, SttEngineStream, TtsEngine, TtsEngineStream } from './engine.js';
import type { TtsWordMessage } from '../protocol/messages.js';
import type { RequestKey, ServerSessionNotice, SessionMachine } from './multiplex.js';
import { serializeSttServerMessage, serializeTtsAudioMessage, serializeTtsServerMessage, type RawMessage } from '../protocol/parse.js';
import { sttServerMachine, sttServerRequestMachine, type SttEngineOp, type SttServerEffect, type SttServerEvent, type SttServerState } from './stt-session.js';
import { ttsServerMachine, ttsServerRequestMachine, type TtsEngineOp, type TtsServerEffect, type TtsServerEvent, type TtsServerState } from './tts-session.js';

/**
 * Where a server session writes: one text frame per message, and the close.
 *
 * Backpressure: `send` may report that the socket is full. Return a promise that settles once the
 * frame is written (e.g. wrap `ws.send(text, cb)`), or `false` when the buffer is full together
 * with {@link ServerTransport.drained}. While sends are pending the runner asks its engine streams
 * for nothing more (each engine call and each tag event waits), so a TTS engine faster than real
 * time cannot fill the socket buffer without bound: at most the messages of one engine call are in
 * flight beyond the transport's own buffer. A rejected promise means the socket broke. Returning
 * nothing (or `true`) means "keep going".
 */
export interface ServerTransport {
  /**
   * Sends one text frame. Meaningful results: a promise (pending until written), `false` (full: wait
   * for {@link drained}); anything else (`undefined`, `true`, or what `array.push` returns in a test)
   * means "keep going". Typed `unknown` so that `(t) => ws.send(t)` and `(t) => out.push(t)` fit.
   */
  send(text: string): unknown;
  close(code: number, reason: string): void;
  /** After `send` returned `false`: resolves once the transport takes frames again. Without it, `false` is ignored. */
  drained?(): Promise<void>;
  /**
   * Stop delivering client frames (e.g. ws's `socket.pause()`): the runner calls it when the input
   * queued before the engine passes its bound ({@link ServerSessionOptions.maxQueuedBytes},
   * {@link ServerSessionOptions.maxQueuedMessages}), so the peer is held back by TCP flow control.
   * Frames already on their way may still arrive. Without it, a request that passes the bound
   * fails with `PROTOCOL_QUEUE_FULL`.
   */
  pauseReading?(): void;
  /** Deliver client frames again (ws's `socket.resume()`): called once the queue is down to half its bound. */
  resumeReading?(): void;
}

/** A running server session over one socket. */
export interface ServerSession<S> {
  /** A frame from the client (text, its bytes, or a parsed value). */
  receive(data: RawMessage): void;
  /** The socket closed (by the peer or the network): engine streams are closed, nothing more is sent. */
  transportClosed(): void;
  /**
   * Ends a request or the whole session with an error the server decided on (authentication
   * revoked mid-stream, quota, shutdown): sends `error` with the error's close code (1011 when it
   * has none) and closes the socket with it. With the `clientReqId` of a live request on a
   * multiplexed socket (§4.4), only that request ends (its `error` carries the id) and the others
   * go on; an id with no live request there is ignored. Without an id on a socket that is not
   * multiplexed, the error goes to its single request (carrying that request's id, if any).
   */
  fail(error: VoicewireError, clientReqId?: string): void;
  /** The machine state (immutable snapshots). */
  readonly state: S;
  /** True once the session closed the socket or saw it close. */
  readonly closed: boolean;
  /** Resolves once no engine work is pending (every request stream idle). */
  whenIdle(): Promise<void>;
}

/** Options shared by both server runners. */
export interface ServerSessionOptions {
  transport: ServerTransport;
  /** Makes the `request_id` of each `ready`. Default `crypto.randomUUID()` (a counter where there is no `crypto`). */
  requestId?: () => string;
  /** Lifecycle notices (request started/ended, session closed), for logs and metrics. */
  onEvent?: (notice: ServerSessionNotice) => void;
  /**
   * Most requests live at once on the socket (§4.4 multiplexing); a setup beyond it is answered
   * with `error` `PROTOCOL_TOO_MANY_REQUESTS` for its id. Default 256
   * ({@link DEFAULT_MAX_REQUESTS_PER_SOCKET}).
   */
  maxRequests?: number;
  /**
   * Most bytes of client input (decoded base64 audio, UTF-16 text) queued before the engine, over
   * all requests of the socket. Past it the runner pauses reading ({@link ServerTransport.pauseReading})
   * until the queue is down to half; a transport that cannot pause, or input beyond twice the
   * bound while paused, fails the request that passed it with `PROTOCOL_QUEUE_FULL` (1011).
   * Default 4 MiB ({@link DEFAULT_MAX_QUEUED_BYTES}).
   */
  maxQueuedBytes?: number;
  /** Most client messages (audio, text, flush, end) queued before the engine; as {@link maxQueuedBytes}. Default 4096 ({@link DEFAULT_MAX_QUEUED_MESSAGES}). */
  maxQueuedMessages?: number;
}

/** Default of {@link ServerSessionOptions.maxQueuedBytes}: 4 MiB. */
export const DEFAULT_MAX_QUEUED_BYTES = 4 << 20;
/** Default of {@link ServerSessionOptions.maxQueuedMessages}. */
export const DEFAULT_MAX_QUEUED_MESSAGES = 4096;

/**
 * Turns bytes of an STT `input_format` into 24 kHz s16 mono PCM (the engine's input). Chunks in,
 * PCM out, any lengths. The default is the audio pipeline's decoder for every §4.4 format.
 */
export interface SttInputDecoder {
  push(bytes: Uint8Array): Uint8Array | Int16Array;
  /**
   * Samples still queued after `push` (a decoder that bounds its output per call, e.g. Ogg Opus at
   * 1 s per push against decompression bombs, issue 11 §4). Optional, with {@link pull}.
   */
  readonly pending?: number;
  /** The next bounded piece of the queued samples. Optional. */
  pull?(): Uint8Array | Int16Array;
  /** Hand out samples held back without ending the stream (a flush). Optional. */
  drain?(): Uint8Array | Int16Array;
  /** End of input: the rest. Optional. */
  end?(): Uint8Array | Int16Array;
}

/**
 * One encoded TTS chunk and the span of decoded output audio its bytes add, in seconds from the
 * start of the request (issue 7). Chunks are contiguous: each `start_s` is the previous `stop_s`.
 */
export interface TtsOutputChunk {
  /** Bytes of the output format; empty means nothing to send yet. */
  readonly bytes: Uint8Array;
  /** Where the audio these bytes add begins on the output timeline (the previous chunk's `stop_s`). */
  readonly start_s: number;
  /** Up to where the bytes sent so far carry decoded audio (resampler and Opus delays included). */
  readonly stop_s: number;
}

/**
 * Turns model frames (s16 mono at the model rate, 48 kHz) into chunks of a TTS `output_format`
 * with their timing. The runner stamps each `audio` message with the chunk's `start_s`/`stop_s`
 * and holds each word timestamp until a sent chunk's `stop_s` reaches the word's `stop_s`. A chunk
 * may be empty (nothing to send yet). The default is the audio pipeline's encoder
 * ({@link createTtsOutputEncoder}).
 */
export interface TtsOutputEncoder {
  push(pcm: Int16Array): TtsOutputChunk;
  /** End of the request: the trailing chunk (resampler tail, the last Opus packet and EOS page). Optional. */
  end?(): TtsOutputChunk;
}

/** Options of {@link createSttServerSession}. */
export interface SttServerSessionOptions extends ServerSessionOptions {
  engine: SttEngine;
  /**
   * Decoder factory for the setup's `input_format` (called when a request opens). Throw a
   * VoicewireError (e.g. `PROTOCOL_INVALID_AUDIO_FORMAT`) for formats the server does not take;
   * the client then gets `error` 1008. Default: {@link defaultSttInputDecoder}.
   */
  createInputDecoder?: (format: AudioFormatName) => SttInputDecoder;
}

/** Options of {@link createTtsServerSession}. */
export interface TtsServerSessionOptions extends ServerSessionOptions {
  engine: TtsEngine;
  /** Encoder factory for the setup's `output_format`. Default: {@link defaultTtsOutputEncoder}. */
  createOutputEncoder?: (format: AudioFormatName, sampleRate: number) => TtsOutputEncoder;
  /** Options of the tag parser each request gets (default: tags.ts defaults, which repair bad breaks). */
  tags?: TagParserOptions;
}

/**
 * The default STT input decoder: the audio pipeline's {@link createSttInputDecoder} for every
 * input format of §4.4 (pcm, pcm_N, wav, opus, ulaw_8000, alaw_8000) → 24 kHz s16 mono.
 */
export function defaultSttInputDecoder(format: AudioFormatName): SttInputDecoder {
  return createSttInputDecoder(format);
}

/**
 * The default TTS output encoder: the audio pipeline's {@link createTtsOutputEncoder} for every
 * output format of §4.2 (one chunk per model frame; Ogg header pages first, EOS page on `end`).
 */
export function defaultTtsOutputEncoder(format: AudioFormatName, sampleRate: number): TtsOutputEncoder {
  return createTtsOutputEncoder(format, sampleRate);
}

function isPromise<T>(value: MaybePromise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | undefined)?.then === 'function';
}

/** Runs `f(items[i])` in order, synchronously while the calls are synchronous. */
function sequence<T>(items: readonly T[], f: (item: T, index: number) => MaybePromise<void>, from = 0): MaybePromise<void> {
  for (let i = from; i < items.length; i++) {
    const r = f(items[i]!, i);
    if (isPromise(r)) return r.then(() => sequence(items, f, i + 1));
  }
  return undefined;
}

function then<T>(value: MaybePromise<T>, f: (v: T) => MaybePromise<void>): MaybePromise<void> {
  return isPromise(value) ? value.then(f) : f(value);
}

/** A strictly sequential task queue: a task starts once the previous one settled. O(1) per task. */
class TaskQueue {
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

let counter = 0;
function defaultRequestId(): string {
  const c = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  return c?.randomUUID ? c.randomUUID() : `req-${Date.now().toString(36)}-${(++counter).toString(36)}`;
}

/** Marks a failure of the client's data (bad audio, bad tags) rather than of the engine. */
function clientFault(err: unknown, code: 'PROTOCOL_INVALID_AUDIO' | 'PROTOCOL_INVALID_MESSAGE', what: string): VoicewireError {
  if (err instanceof VoicewireError && err.closeCode !== undefined) return err;
  return new VoicewireError(code, `${what}: ${err instanceof Error ? err.message : shown(err)}`, { cause: err });
}

function engineFault(err: unknown, route: string): VoicewireError {
  if (err instanceof VoicewireError && err.closeCode !== undefined) return err;
  return new VoicewireError('PROTOCOL_INTERNAL', `${route} engine failed: ${err instanceof Error ? err.message : shown(err)}`, { cause: err });
}

/** What every per-stream driver holds: its task queue and its engine stream (null until opened). */
interface DriverBase {
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
abstract class Runner<S, Ev, Eff extends { type: string }, D extends DriverBase> implements ServerSession<S> {
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
    const transport = this.options.transport;
    let r: unknown;
    try {
      r = transport.send(text);
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
      return then(this.gate(), () => (driver.closed ? undefined : runOp(driver, run)));
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
    return then(opened, (s) => {
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

// ---------------------------------------------------------------------------------------------
// STT
// ---------------------------------------------------------------------------------------------

interface SttDriver {
  queue: TaskQueue;
  closed: boolean;
  stream: SttEngineStream | null;
  decoder: SttInputDecoder | null;
  framer: Framer | null;
  silence: Int16Array | null;
}

class SttServerRunner extends Runner<SttServerState, SttServerEvent, SttServerEffect, SttDriver> {
  protected readonly route = 'STT';

  constructor(private readonly stt: SttServerSessionOptions) {
    super(stt?.maxRequests === undefined ? sttServerMachine : createServerSessionMachine(sttServerRequestMachine, { maxRequests: stt.maxRequests }), stt);
  }

  protected serialize(message: unknown): string {
    return serializeSttServerMessage(message as never);
  }

  protected executeOther(effect: SttServerEffect): void {
    if (effect.type !== 'engine') return;
    const { key, stream } = effect;
    this.engineEffect(
      key,
      stream,
      effect.op,
      (queue) => ({ queue, closed: false, stream: null, decoder: null, framer: null, silence: null }),
      (d, op) => this.runOp(d, key, stream, op),
    );
  }

  private pushPcm(d: SttDriver, pcm: Uint8Array | Int16Array, extra: readonly Int16Array[] = []): MaybePromise<void> {
    const bytes = pcm instanceof Int16Array ? bytesOf(pcm) : pcm;
    const frames: Int16Array[] = [];
    for (const f of d.framer!.push(bytes)) frames.push(int16View(f));
    for (const f of extra) frames.push(f);
    const s = d.stream!;
    return sequence(frames, (frame) => (d.closed ? undefined : s.push(frame)));
  }

  private runOp(d: SttDriver, key: string | null, stream: number, op: Exclude<SttEngineOp, { op: 'close' }>): MaybePromise<void> {
    switch (op.op) {
      case 'open': {
        try {
          d.decoder = (this.stt.createInputDecoder ?? defaultSttInputDecoder)(op.config.inputFormat);
        } catch (err) {
          throw clientFault(err, 'PROTOCOL_INVALID_AUDIO', `STT: input_format '${op.config.inputFormat}'`);
        }
        return this.openStream(d, key, stream, (emit) => this.stt.engine.open(op.config, emit), (s) => {
          d.stream = s;
          const frameSize = s.info.frameSize ?? 1920;
          d.framer = createFramer({ frameSamples: frameSize, bytesPerSample: 2, partial: 'pad', sampleRate: s.info.sampleRate ?? 24000 });
          d.silence = new Int16Array(frameSize);
        });
      }
      case 'audio': {
        let pcm: Uint8Array | Int16Array;
        try {
          pcm = d.decoder!.push(op.audio);
        } catch (err) {
          throw clientFault(err, 'PROTOCOL_INVALID_AUDIO', 'STT: audio could not be decoded');
        }
        return then(this.pushPcm(d, pcm), () => this.pullPending(d));
      }
      case 'flush': {
        // The server pushes silence behind a flush (protocol-notes.md "STT"): the partial frame is
        // padded, then delay_in_frames silent frames carry the text of the audio before the flush out.
        let drained: Uint8Array | Int16Array = new Uint8Array(0);
        try {
          if (d.decoder!.drain) drained = d.decoder!.drain();
        } catch (err) {
          throw clientFault(err, 'PROTOCOL_INVALID_AUDIO', 'STT: audio could not be decoded');
        }
        const tail = this.tailFrames(d);
        return then(this.pushPcm(d, drained, tail), () => this.report(d, key, stream, { type: 'flush_done', flush_id: op.flush_id }));
      }
      case 'end': {
        let rest: Uint8Array | Int16Array = new Uint8Array(0);
        try {
          if (d.decoder!.end) rest = d.decoder!.end();
        } catch (err) {
          throw clientFault(err, 'PROTOCOL_INVALID_AUDIO', 'STT: audio could not be decoded');
        }
        const s = d.stream!;
        return then(
          then(this.pushPcm(d, rest), () => this.pushPcm(d, new Uint8Array(0), this.tailFrames(d))),
          () =>
            then(d.closed || !s.end ? undefined : s.end(), () => this.report(d, key, stream, { type: 'ended' })),
        );
      }
    }
  }

  /**
   * Decodes what one message left queued, a bounded piece at a time, each behind the engine and
   * the transport: a small message that decodes to hours (an Ogg Opus bomb) costs the event loop
   * one piece at a time and stops at the decoder's `maxDecodedSeconds`.
   */
  private pullPending(d: SttDriver): MaybePromise<void> {
    const dec = d.decoder!;
    while (dec.pull !== undefined && (dec.pending ?? 0) > 0 && !d.closed) {
      let pcm: Uint8Array | Int16Array;
      try {
        pcm = dec.pull();
      } catch (err) {
        throw clientFault(err, 'PROTOCOL_INVALID_AUDIO', 'STT: audio could not be decoded');
      }
      const waiting = then(this.pushPcm(d, pcm), () => this.gate());
      if (waiting !== undefined) return then(waiting, () => this.pullPending(d));
    }
    return undefined;
  }

  /** The padded partial frame (if any) and `delayInFrames` silent frames. */
  private tailFrames(d: SttDriver): Int16Array[] {
    const out: Int16Array[] = [];
    for (const f of d.framer!.flush()) out.push(int16View(f));
    const delay = d.stream!.info.delayInFrames;
    for (let i = 0; i < delay; i++) out.push(d.silence!);
    return out;
  }
}

/**
 * Runs an STT server session over one socket: validates every client message, drives one engine
 * stream per request, answers with `ready`, `text`, `end_text`, `step`, `flushed`,
 * `end_of_stream` and `error`, and closes with the API's codes (§3.2, §7.3).
 */
export function createSttServerSession(options: SttServerSessionOptions): ServerSession<SttServerState> {
  objectArg(options, 'createSttServerSession: options');
  objectArg(options.engine, 'createSttServerSession: options.engine');
  return new SttServerRunner(options);
}

// ---------------------------------------------------------------------------------------------
// TTS
// ---------------------------------------------------------------------------------------------

interface TtsDriver {
  queue: TaskQueue;
  closed: boolean;
  stream: TtsEngineStream | null;
  encoder: TtsOutputEncoder | null;
  tags: TagParser;
  clientReqId: string | undefined;
  /** `stream_id` of the last model frame (the trailing chunk of `end()` carries it too). */
  streamId: number | null;
  /** `stop_s` of the audio sent so far. */
  sentStop: number;
  /** Word timestamps waiting for the audio that completes them, in the engine's order. */
  held: TtsWordMessage[];
}

/** Slack when comparing a word's `stop_s` with the audio's (float sums of 0.08; far below one sample at 48 kHz). */
const TIME_EPSILON = 1e-6;

class TtsServerRunner extends Runner<TtsServerState, TtsServerEvent, TtsServerEffect, TtsDriver> {
  protected readonly route = 'TTS';

  constructor(private readonly tts: TtsServerSessionOptions) {
    super(tts?.maxRequests === undefined ? ttsServerMachine : createServerSessionMachine(ttsServerRequestMachine, { maxRequests: tts.maxRequests }), tts);
  }

  protected serialize(message: unknown): string {
    return serializeTtsServerMessage(message as never);
  }

  protected executeOther(effect: TtsServerEffect): void {
    switch (effect.type) {
      case 'audio': {
        const d = this.drivers.get(effect.stream);
        if (d === undefined || d.closed || d.encoder === null) return;
        let chunk: TtsOutputChunk;
        try {
          chunk = d.encoder.push(effect.pcm);
        } catch (err) {
          this.failStream(effect.key, effect.stream, engineFault(err, 'TTS output encoder'));
          return;
        }
        d.streamId = effect.stream_id;
        this.sendChunk(d, chunk);
        return;
      }
      case 'word': {
        const d = this.drivers.get(effect.stream);
        if (d === undefined || d.closed) return;
        // Issue 7: a word goes out once the audio reaching its stop_s has been sent, never before.
        if (d.held.length === 0 && effect.message.stop_s <= d.sentStop + TIME_EPSILON) this.send(this.serialize(effect.message));
        else d.held.push(effect.message);
        return;
      }
      case 'audio_end': {
        const d = this.drivers.get(effect.stream);
        if (d === undefined || d.closed) return;
        if (d.encoder !== null && d.encoder.end) {
          let chunk: TtsOutputChunk;
          try {
            chunk = d.encoder.end();
          } catch (err) {
            this.failStream(effect.key, effect.stream, engineFault(err, 'TTS output encoder'));
            return;
          }
          this.sendChunk(d, chunk);
        }
        // The end of the audio: every word still held goes out, before end_of_stream.
        for (const w of d.held.splice(0)) this.send(this.serialize(w));
        return;
      }
      case 'engine': {
        const { key, stream } = effect;
        this.engineEffect(
          key,
          stream,
          effect.op,
          (queue) => ({
            queue,
            closed: false,
            stream: null,
            encoder: null,
            tags: createTagParser(this.tts.tags ?? {}),
            clientReqId: key ?? undefined,
            streamId: 0,
            sentStop: 0,
            held: [],
          }),
          (d, op) => this.runOp(d, key, stream, op),
        );
        return;
      }
      default:
        return;
    }
  }

  /** Sends a non-empty chunk as an `audio` message stamped with its own span, then the words it completes. */
  private sendChunk(d: TtsDriver, chunk: TtsOutputChunk): void {
    if (chunk.bytes.byteLength === 0) return;
    const fields: { start_s: number; stop_s: number; stream_id: number | null; client_req_id?: string } = { start_s: chunk.start_s, stop_s: chunk.stop_s, stream_id: d.streamId };
    if (d.clientReqId !== undefined) fields.client_req_id = d.clientReqId;
    this.send(serializeTtsAudioMessage(chunk.bytes, fields));
    if (chunk.stop_s > d.sentStop) d.sentStop = chunk.stop_s;
    let n = 0;
    while (n < d.held.length && d.held[n]!.stop_s <= d.sentStop + TIME_EPSILON) n++;
    if (n > 0) for (const w of d.held.splice(0, n)) this.send(this.serialize(w));
  }

  private failStream(key: string | null, stream: number, error: VoicewireError): void {
    this.dispatch({ type: 'engine_failure', key, stream, error });
  }

  private runTags(d: TtsDriver, events: readonly TagEvent[]): MaybePromise<void> {
    // A long text goes to the engine in pieces cut at spaces, each a call of its own behind the
    // gate: an engine emits a call's audio at once, so without the cut one long message would be
    // synthesized whole however slowly the client reads (memory linear in the text, not bounded).
    if (events.some((e) => e.type === 'text' && e.text.length > ENGINE_TEXT_PIECE)) {
      events = events.flatMap((e) => (e.type === 'text' && e.text.length > ENGINE_TEXT_PIECE ? splitAtSpaces(e.text, ENGINE_TEXT_PIECE).map((text) => ({ type: 'text' as const, text })) : [e]));
    }
    const s = d.stream!;
    const run = (e: TagEvent): MaybePromise<void> => {
      if (d.closed) return undefined;
      if (e.type === 'text') return e.text === '' ? undefined : s.text(e.text);
      if (e.type === 'flush') return s.flush();
      return s.pause(e.seconds);
    };
    // Each tag event is an engine call: each waits for the transport too.
    return sequence(events, (e, i) => (i === 0 ? run(e) : then(this.gate(), () => run(e))));
  }

  private runOp(d: TtsDriver, key: string | null, stream: number, op: Exclude<TtsEngineOp, { op: 'close' }>): MaybePromise<void> {
    switch (op.op) {
      case 'open': {
        return this.openStream(d, key, stream, (emit) => this.tts.engine.open(op.config, emit), (s) => {
          d.stream = s;
          try {
            d.encoder = (this.tts.createOutputEncoder ?? defaultTtsOutputEncoder)(op.config.outputFormat, s.info.sampleRate ?? 48000);
          } catch (err) {
            throw clientFault(err, 'PROTOCOL_INVALID_AUDIO', `TTS: output_format '${op.config.outputFormat}'`);
          }
        });
      }
      case 'text': {
        let events: TagEvent[];
        try {
          events = d.tags.push(op.text);
        } catch (err) {
          // An 'error' tag policy: the parser consumed the whole piece; report the tag as the client's fault.
          throw clientFault(err, 'PROTOCOL_INVALID_MESSAGE', 'TTS: invalid tag in text');
        }
        return this.runTags(d, events);
      }
      case 'end': {
        let events: TagEvent[];
        try {
          events = d.tags.flush();
        } catch (err) {
          throw clientFault(err, 'PROTOCOL_INVALID_MESSAGE', 'TTS: invalid tag in text');
        }
        const s = d.stream!;
        return then(this.runTags(d, events), () =>
          then(d.closed ? undefined : s.end(), () => this.report(d, key, stream, { type: 'ended' })),
        );
      }
    }
  }
}

/**
 * Runs a TTS server session over one socket: validates every client message, joins text pieces,
 * parses `<flush>` and `<break>` tags, drives one engine stream per request, encodes its frames to
 * the requested `output_format`, and answers with `ready`, `audio`, `text` (word timestamps),
 * `need_more_text`, `end_of_stream` and `error`.
 */
export function createTtsServerSession(options: TtsServerSessionOptions): ServerSession<TtsServerState> {
  objectArg(options, 'createTtsServerSession: options');
  objectArg(options.engine, 'createTtsServerSession: options.engine');
  return new TtsServerRunner(options);
}

/** Longest text handed to a TTS engine in one call, characters (a longer message is cut at spaces). */
const ENGINE_TEXT_PIECE = 256;

/** `text` in pieces of at most `max` characters, each ending after a space where one is near (a word longer than `max` is cut). */
function splitAtSpaces(text: string, max: number): string[] {
  const pieces: string[] = [];
  let at = 0;
  while (text.length - at > max) {
    const space = text.lastIndexOf(' ', at + max - 1);
    const end = space > at ? space + 1 : at + max;
    pieces.push(text.slice(at, end));
    at = end;
  }
  if (at < text.length) pieces.push(text.slice(at));
  return pieces;
}
