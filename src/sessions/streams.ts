/**
 * Web `TransformStream`s over the session runners, for transports that are streams (WebSocketStream,
 * a pipe in tests, a worker channel).
 *
 * - Server side: client frames in → server frames (JSON text) out, as a readable/writable pair
 *   with backpressure. When the session closes the socket, `onClose(code, reason)` is called and
 *   the readable side ends. Ending the writable side means the client went away: pending engine
 *   work settles, then the session is closed.
 * - Client side: a pair sharing one session: `outgoing` takes client messages and yields the
 *   frames to send; `incoming` takes server frames and yields validated events. A client message
 *   refused in the current state errors `outgoing` with `INVALID_STATE`.
 */
import { objectArg } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';
import { createSttClientSession, createTtsClientSession, type TtsClientSessionOptions } from './client.js';
import type { SttClientMessage, TtsClientMessage } from '../protocol/messages.js';
import type { RawMessage } from '../protocol/parse.js';
import { createSttServerSession, createTtsServerSession, type ServerSession, type SttServerSessionOptions, type TtsServerSessionOptions, type ServerTransport } from './server.js';
import type { SttClientEvent } from './stt-session.js';
import type { TtsClientEvent } from './tts-session.js';

/** Extra options of the server streams. */
export interface ServerStreamOptions {
  /** Called when the session closes the socket (after its last frame). */
  onClose?: (code: number, reason: string) => void;
  /** Frames queued on the readable side before the session stops asking its engine for more. Default 16. */
  highWaterMark?: number;
}

/**
 * A server session as a web stream pair (`pipeThrough`-able like a TransformStream): client frames
 * written, server frames read. Backpressure: once the readable holds `highWaterMark` unread frames
 * (`desiredSize ≤ 0`) the transport reports `false`, and the runner's next engine call waits for
 * the reader's next pull.
 */
export interface ServerStreamPair {
  readonly readable: ReadableStream<string>;
  readonly writable: WritableStream<RawMessage>;
}

function serverStream<S>(make: (transport: ServerTransport) => ServerSession<S>, options: ServerStreamOptions): ServerStreamPair {
  const hwm = options.highWaterMark;
  if (hwm !== undefined && !(typeof hwm === 'number' && hwm >= 0)) throw new VoicewireError('INVALID_ARGUMENT', 'highWaterMark must be a non-negative number');
  let open = true;
  let controller!: ReadableStreamDefaultController<string>;
  const waiters: Array<() => void> = [];
  const wake = (): void => {
    for (const w of waiters.splice(0)) w();
  };
  // Issue 11 §3: while the runner's queue before the engine is full, writes wait (backpressure to the writer).
  let paused = false;
  const resumers: Array<() => void> = [];
  const resume = (): void => {
    paused = false;
    for (const r of resumers.splice(0)) r();
  };
  const readable = new ReadableStream<string>(
    {
      start(c) {
        controller = c;
      },
      pull() {
        wake();
      },
      cancel() {
        open = false;
        wake();
        session.transportClosed();
      },
    },
    new CountQueuingStrategy({ highWaterMark: options.highWaterMark ?? 16 }),
  );
  const session = make({
    send: (text) => {
      if (!open) return undefined;
      controller.enqueue(text);
      return (controller.desiredSize ?? 1) > 0;
    },
    drained: () => new Promise<void>((resolve) => (open && (controller.desiredSize ?? 1) <= 0 ? waiters.push(resolve) : resolve())),
    pauseReading: () => void (paused = true),
    resumeReading: resume,
    close: (code, reason) => {
      if (!open) return;
      open = false;
      resume();
      options.onClose?.(code, reason);
      controller.close();
      wake();
    },
  });
  const writable = new WritableStream<RawMessage>({
    write(chunk) {
      session.receive(chunk);
      return paused ? new Promise<void>((r) => resumers.push(r)) : undefined;
    },
    async close() {
      await session.whenIdle();
      session.transportClosed();
      if (open) {
        open = false;
        controller.close();
      }
    },
    abort() {
      session.transportClosed();
      if (open) {
        open = false;
        controller.close();
      }
    },
  });
  return { readable, writable };
}

/** STT server as a web stream pair: client frames in, server frames out (see {@link ServerStreamPair}). */
export function createSttServerStream(options: Omit<SttServerSessionOptions, 'transport'> & ServerStreamOptions): ServerStreamPair {
  objectArg(options, 'createSttServerStream: options');
  return serverStream((transport) => createSttServerSession({ ...options, transport }), options);
}

/** TTS server as a web stream pair: client frames in, server frames out, with backpressure (see {@link ServerStreamPair}). */
export function createTtsServerStream(options: Omit<TtsServerSessionOptions, 'transport'> & ServerStreamOptions): ServerStreamPair {
  objectArg(options, 'createTtsServerStream: options');
  return serverStream((transport) => createTtsServerSession({ ...options, transport }), options);
}

/** The two directions of a client session as web streams. */
export interface ClientStreams<CM, E> {
  /** Client messages in, frames to send out. */
  outgoing: TransformStream<CM, string>;
  /** Server frames in, validated events out. Ends with a `closed` event when its writable side closes. */
  incoming: TransformStream<RawMessage, E>;
}

function clientStreams<CM, E, Sess extends { send(m: CM): void; receive(d: RawMessage): void; transportClosed(code: number, reason?: string): void }>(
  make: (send: (text: string) => void, onEvent: (e: E) => void) => Sess,
): ClientStreams<CM, E> {
  let out: TransformStreamDefaultController<string> | null = null;
  let inc: TransformStreamDefaultController<E> | null = null;
  const pendingOut: string[] = [];
  const pendingIn: E[] = [];
  const session = make(
    (text) => (out ? out.enqueue(text) : pendingOut.push(text)),
    (event) => (inc ? inc.enqueue(event) : pendingIn.push(event)),
  );
  let ended = false;
  return {
    outgoing: new TransformStream<CM, string>({
      start(c) {
        out = c;
        for (const t of pendingOut.splice(0)) c.enqueue(t);
      },
      transform(message) {
        session.send(message);
      },
    }),
    incoming: new TransformStream<RawMessage, E>({
      start(c) {
        inc = c;
        for (const e of pendingIn.splice(0)) c.enqueue(e);
      },
      transform(data) {
        session.receive(data);
      },
      flush() {
        if (!ended) {
          ended = true;
          session.transportClosed(1005, '');
        }
      },
    }),
  };
}

/** STT client as a pair of web streams. */
export function createSttClientStreams(): ClientStreams<SttClientMessage, SttClientEvent> {
  return clientStreams<SttClientMessage, SttClientEvent, ReturnType<typeof createSttClientSession>>((send, onEvent) =>
    createSttClientSession({ transport: { send, close: () => undefined }, onEvent }),
  );
}

/** TTS client as a pair of web streams. */
export function createTtsClientStreams(options: Omit<TtsClientSessionOptions, 'transport' | 'onEvent'> = {}): ClientStreams<TtsClientMessage, TtsClientEvent> {
  return clientStreams<TtsClientMessage, TtsClientEvent, ReturnType<typeof createTtsClientSession>>((send, onEvent) =>
    createTtsClientSession({ ...options, transport: { send, close: () => undefined }, onEvent }),
  );
}
