/**
 * Object-mode Node Transforms over the protocol session runners (src/sessions/), for Node
 * pipelines: a server side (client frames in → server frames out) and a client side (a pair:
 * client messages → frames to send; server frames → validated events).
 */
import { Transform, type TransformCallback } from 'node:stream';
import {
  createSttClientSession,
  createSttServerSession,
  createTtsClientSession,
  createTtsServerSession,
  type ServerSession,
  type ServerTransport,
  type SttClientEvent,
  type SttServerSessionOptions,
  type TtsClientEvent,
  type TtsClientSessionOptions,
  type TtsServerSessionOptions,
} from '../sessions/index.js';
import type { RawMessage, SttClientMessage, TtsClientMessage } from '../protocol/index.js';
import { functionArg, objectArg, optionsArg } from '../util/args.js';
import { nodeStreamOptions } from './stream-options.js';

/** Extra options of the server transforms. */
export interface ServerTransformOptions {
  /** Called when the session closes the socket; the readable side then ends. */
  onClose?: (code: number, reason: string) => void;
  /** Frames buffered on the readable side before the session stops asking its engine for more. Default 16. */
  highWaterMark?: number;
}

/**
 * A server session as an object-mode Transform: frames (string, Buffer, or parsed objects) in, JSON
 * text frames out. Backpressure: when `push()` returns false (the reader is `highWaterMark` frames
 * behind) the session's transport reports `false`, and the runner calls its engine again only once
 * the reader asked for more (`_read`): a slow reader bounds the frames buffered.
 */
export class ServerSessionTransform<S> extends Transform {
  readonly session: ServerSession<S>;
  private open = true;
  private readonly readWaiters: Array<() => void> = [];
  /** Set while the runner paused reading (its queue before the engine is full): writes wait. */
  private paused = false;
  private readonly resumeWaiters: Array<() => void> = [];

  constructor(make: (transport: ServerTransport) => ServerSession<S>, options?: ServerTransformOptions) {
    functionArg(make, 'ServerSessionTransform make');
    // Only these two fields are ours: the rest of a session's options is the session's to check.
    const { highWaterMark = 16, onClose } = optionsArg(options, 'ServerSessionTransform options');
    nodeStreamOptions({ highWaterMark }, 'ServerSessionTransform options');
    if (onClose !== undefined) functionArg(onClose, 'ServerSessionTransform onClose');
    super({ writableObjectMode: true, readableObjectMode: true, readableHighWaterMark: highWaterMark });
    this.session = make({
      send: (text) => (this.open ? this.push(text) : undefined),
      drained: () => new Promise<void>((resolve) => (this.open ? this.readWaiters.push(resolve) : resolve())),
      // Issue 11 §3: the runner's queue before the engine is full: hold the writer (its callback) until it drained.
      pauseReading: () => void (this.paused = true),
      resumeReading: () => this.resumeWriters(),
      close: (code, reason) => {
        if (!this.open) return;
        this.open = false;
        this.resumeWriters();
        onClose?.(code, reason);
        this.push(null);
        this.wake();
      },
    });
  }

  private wake(): void {
    for (const w of this.readWaiters.splice(0)) w();
  }

  private resumeWriters(): void {
    this.paused = false;
    for (const w of this.resumeWaiters.splice(0)) w();
  }

  override _read(size: number): void {
    // The reader wants more: a runner waiting for the transport may go on.
    this.wake();
    super._read(size);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.open = false;
    this.wake();
    this.resumeWriters();
    super._destroy(error, callback);
  }

  override _transform(chunk: RawMessage, _encoding: BufferEncoding, callback: TransformCallback): void {
    try {
      this.session.receive(chunk);
      if (this.paused) this.resumeWaiters.push(() => callback());
      else callback();
    } catch (err) {
      callback(err as Error);
    }
  }

  override _flush(callback: TransformCallback): void {
    this.session.whenIdle().then(
      () => {
        this.session.transportClosed();
        callback();
      },
      (err: unknown) => callback(err as Error),
    );
  }
}

/** STT server session as an object-mode Transform. */
export function createSttServerTransform(options: Omit<SttServerSessionOptions, 'transport'> & ServerTransformOptions): ServerSessionTransform<unknown> {
  objectArg(options, 'createSttServerTransform options');
  return new ServerSessionTransform((transport) => createSttServerSession({ ...options, transport }), options);
}

/** TTS server session as an object-mode Transform. */
export function createTtsServerTransform(options: Omit<TtsServerSessionOptions, 'transport'> & ServerTransformOptions): ServerSessionTransform<unknown> {
  objectArg(options, 'createTtsServerTransform options');
  return new ServerSessionTransform((transport) => createTtsServerSession({ ...options, transport }), options);
}

/** The two directions of a client session as object-mode Transforms. */
export interface ClientTransforms {
  /** Client messages in, JSON text frames to send out. A refused message errors this stream (`INVALID_STATE`). */
  outgoing: Transform;
  /** Server frames in, validated events out; ending it reports the socket closed. */
  incoming: Transform;
}

function clientTransforms<CM>(make: (send: (text: string) => void, onEvent: (e: unknown) => void) => { send(m: CM): void; receive(d: RawMessage): void; transportClosed(code: number, reason?: string): void }): ClientTransforms {
  /** An object-mode Transform handing each chunk to `take` (a throw fails that write), and its end to `onEnd`. */
  const feeding = <T>(take: (chunk: T) => void, onEnd?: () => void): Transform =>
    new Transform({
      writableObjectMode: true,
      readableObjectMode: true,
      transform(chunk: T, _enc, callback) {
        try {
          take(chunk);
          callback();
        } catch (err) {
          callback(err as Error);
        }
      },
      flush(callback) {
        onEnd?.();
        callback();
      },
    });
  const outgoing = feeding<CM>((message) => session.send(message));
  // The end of the server's frames is the socket's close.
  const incoming = feeding<RawMessage>((data) => session.receive(data), () => session.transportClosed(1005, ''));
  const session = make(
    (text) => outgoing.push(text),
    (event) => incoming.push(event),
  );
  return { outgoing, incoming };
}

/** STT client session as a pair of object-mode Transforms (events are {@link SttClientEvent}). */
export function createSttClientTransforms(): ClientTransforms {
  return clientTransforms<SttClientMessage>((send, onEvent) => createSttClientSession({ transport: { send, close: () => undefined }, onEvent: onEvent as (e: SttClientEvent) => void }));
}

/** TTS client session as a pair of object-mode Transforms (events are {@link TtsClientEvent}). */
export function createTtsClientTransforms(options: Omit<TtsClientSessionOptions, 'transport' | 'onEvent'> = {}): ClientTransforms {
  return clientTransforms<TtsClientMessage>((send, onEvent) =>
    createTtsClientSession({ ...options, transport: { send, close: () => undefined }, onEvent: onEvent as (e: TtsClientEvent) => void }),
  );
}
