/**
 * Attaches a server session runner (createSttServerSession / createTtsServerSession) to a `ws`
 * socket: frames in, a transport out with backpressure (each send resolves once `ws` wrote it),
 * and flow control both ways (`pauseReading`/`resumeReading` map to the socket's pause/resume).
 *
 * ```ts
 * wss.on('connection', (ws) => {
 *   const session = attachWebSocketSession(ws, (transport) => createTtsServerSession({ engine, transport }));
 * });
 * ```
 */
import type { ServerSession, ServerTransport } from '../sessions/server.js';
import type { AudioLineSpan } from '../sessions/server-session.js';
import { VoicewireError } from '../util/errors.js';
import { functionArg, objectArg, optionsArg } from '../util/args.js';

/** A frame as `ws` 8 delivers it (its `RawData`; the `binaryType` decides which form). */
export type WsFrameData = Buffer | ArrayBuffer | Buffer[];

/**
 * The part of a `ws` 8 server-side `WebSocket` the session uses. Declared here, structurally, so
 * that the published types need no `@types/ws` (issue 23); a `ws` WebSocket satisfies it as is.
 */
export interface WsSocket {
  readonly readyState: number;
  readonly CONNECTING: number;
  readonly OPEN: number;
  send(data: string, cb?: (err?: Error) => void): void;
  close(code?: number, reason?: string): void;
  terminate(): void;
  pause(): void;
  resume(): void;
  on(event: 'message', listener: (data: WsFrameData, isBinary: boolean) => void): unknown;
  on(event: 'close', listener: () => void): unknown;
  on(event: 'error', listener: (err: Error) => void): unknown;
}

/** ws's options for bytes that are a text frame (an `audio` line, its UTF-8). */
const TEXT_FRAME = { binary: false } as const;

/** ws 8's `send` of bytes (a socket with a net.Socket `_socket` is ws 8's). */
interface Ws8Bytes {
  send(data: Uint8Array, options: { binary: boolean }): void;
}

/** The transport a `ws` socket gives a runner. */
export interface WebSocketTransport extends ServerTransport {
  /** On a ws 8 socket: an `audio` line's bytes go out as its text frame (another socket gets strings). */
  sendAudio?(line: Uint8Array, span: AudioLineSpan): unknown;
  /** Stops reading frames from the peer (TCP backpressure reaches the client). */
  pauseReading(): void;
  resumeReading(): void;
}

/** The part of ws 8's `_socket` (a net.Socket) the batched transport uses. */
interface NetSocket {
  cork(): void;
  uncork(): void;
  readonly writableNeedDrain: boolean;
  once(event: 'drain' | 'close', listener: () => void): unknown;
  removeListener(event: 'drain' | 'close', listener: () => void): unknown;
}

/**
 * Makes the transport of a `ws` socket.
 *
 * On ws 8 (its `_socket` is the net.Socket) the frames sent in one turn of the event loop (a
 * word's audio lines and its timestamp: the engine emits them at once) leave in one write: the
 * socket is corked at the first and uncorked on the next tick (issue 22: a `writev` per message was
 * 18 % of a loaded server's CPU). Backpressure is the socket's own: `send` answers `false` once
 * its buffer is past the high-water mark, and {@link WebSocketTransport.drained} waits for its
 * `drain` (or close). Another ws-like socket gets a promise per frame, pending until written.
 */
export function webSocketTransport(ws: WsSocket): WebSocketTransport {
  objectArg(ws, 'webSocketTransport socket');
  for (const m of ['send', 'close', 'pause', 'resume'] as const) functionArg(ws[m], `webSocketTransport socket.${m}`);
  const common = {
    close: (code: number, reason: string) => {
      if (ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING) ws.close(code, reason);
    },
    pauseReading: () => ws.pause(),
    resumeReading: () => ws.resume(),
  };
  const socket = (ws as unknown as { _socket?: Partial<NetSocket> })._socket;
  if (socket === undefined || socket === null || typeof socket.cork !== 'function' || typeof socket.uncork !== 'function' || typeof socket.writableNeedDrain !== 'boolean') {
    // Not ws 8: its `send` may take strings only, so `audio` lines stay strings (no sendAudio).
    return {
      ...common,
      send: (text) =>
        ws.readyState !== ws.OPEN
          ? undefined
          : new Promise<void>((resolve, reject) => ws.send(text, (err) => (err ? reject(err) : resolve()))),
    };
  }
  const net = socket as NetSocket;
  let corked = false;
  let waiting: Promise<void> | undefined;
  const uncork = (): void => {
    corked = false;
    net.uncork();
  };
  /** Corks the socket for the rest of this turn (its first send): the turn's frames leave in one write. */
  const corkTurn = (): void => {
    if (corked) return;
    corked = true;
    net.cork();
    process.nextTick(uncork);
  };
  return {
    ...common,
    send: (text) => {
      if (ws.readyState !== ws.OPEN) return undefined;
      corkTurn();
      ws.send(text);
      return net.writableNeedDrain ? false : undefined;
    },
    // The line's own buffer goes to the socket (ws frames a view without copying it, issue 34).
    sendAudio: (line) => {
      if (ws.readyState !== ws.OPEN) return undefined;
      corkTurn();
      (ws as unknown as Ws8Bytes).send(line, TEXT_FRAME);
      return net.writableNeedDrain ? false : undefined;
    },
    // One wait per drain, shared by every send that found the buffer full.
    drained: () => {
      if (!net.writableNeedDrain || ws.readyState !== ws.OPEN) return Promise.resolve();
      waiting ??= new Promise<void>((resolve) => {
        const done = (): void => {
          net.removeListener('drain', done);
          net.removeListener('close', done);
          waiting = undefined;
          resolve();
        };
        net.once('drain', done);
        net.once('close', done);
      });
      return waiting;
    },
  };
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** Options of {@link attachWebSocketSession}. */
export interface AttachWebSocketOptions {
  /** Called with each frame before the session sees it (idle timers, size limits); returning `false` drops the frame. */
  onFrame?: (data: WsFrameData, isBinary: boolean) => boolean | void;
  /**
   * A frame over ws's `maxPayload` (ws drops it unread and would close 1009 without a word):
   * the error the session answers with first. Default `LIMIT_EXCEEDED` naming no size.
   */
  oversizeFrameError?: () => VoicewireError;
}

/** What {@link attachWebSocketSession} keeps on a socket for its shared listeners (`this` is the socket). */
interface Attached {
  session: ServerSession<unknown>;
  onFrame: AttachWebSocketOptions['onFrame'];
}

const ATTACHED = Symbol('voicewire.attachedSession');
const attachedOf = (ws: WsSocket): Attached => (ws as unknown as Record<symbol, Attached>)[ATTACHED]!;

/**
 * A throw in an event listener would be an uncaught exception (the process ends with every
 * session, issue 20): a frame that breaks the session ends that session, 1011.
 */
function internalFailure(ws: WsSocket, session: ServerSession<unknown>, err: unknown): void {
  try {
    if (!session.closed) session.fail(new VoicewireError('PROTOCOL_INTERNAL', 'internal server error', { cause: err }));
  } catch {
    ws.terminate();
  }
}

/** The socket's `message` listener, one function for every socket (issue 22: not two closures per session). */
function onMessage(this: WsSocket, data: WsFrameData, isBinary: boolean): void {
  const { session, onFrame } = attachedOf(this);
  try {
    if (onFrame?.(data, isBinary) === false) return;
    const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
    const view = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    if (isBinary) return session.receive(view);
    // A text frame that is not UTF-8 (ws with skipUTF8Validation) goes on as bytes: the parser
    // answers it with its §7.3 error instead of the replacement characters toString would make.
    let text: string;
    try {
      text = UTF8.decode(view);
    } catch {
      return session.receive(view);
    }
    session.receive(text);
  } catch (err) {
    internalFailure(this, session, err);
  }
}

function onClose(this: WsSocket): void {
  const { session } = attachedOf(this);
  try {
    if (!session.closed) session.transportClosed();
  } catch (err) {
    internalFailure(this, session, err);
  }
}

/** 'close' follows every 'error' in ws; the session learns of it there. */
function onError(): void {}

/**
 * Creates a session over `ws` with `create(transport)` and wires the socket to it: text frames go
 * to `session.receive` as strings (bytes when not valid UTF-8), binary frames as bytes, and the socket's close to
 * `session.transportClosed()`. One session per socket (a second attach throws `INVALID_ARGUMENT`).
 */
export function attachWebSocketSession<S>(
  ws: WsSocket,
  create: (transport: WebSocketTransport) => ServerSession<S>,
  options?: AttachWebSocketOptions,
): ServerSession<S> {
  const { onFrame, oversizeFrameError } = optionsArg(options, 'attachWebSocketSession options');
  functionArg(create, 'attachWebSocketSession create');
  if (onFrame !== undefined) functionArg(onFrame, 'attachWebSocketSession onFrame');
  if (oversizeFrameError !== undefined) functionArg(oversizeFrameError, 'attachWebSocketSession oversizeFrameError');
  // The listeners are shared and find the session on the socket: one session per socket.
  if ((ws as unknown as Record<symbol, unknown>)[ATTACHED] !== undefined) throw new VoicewireError('INVALID_ARGUMENT', 'attachWebSocketSession: this socket already has a session');
  const session = create(webSocketTransport(ws));
  // ws reports an oversize frame on its receiver, then closes 1009 with no message (clients that
  // cannot see close codes learn nothing). Heard first, the session sends its §7.3 `error` and
  // closes; ws's own close then finds the socket closing. `_receiver` is ws 8's internal name:
  // without it (another ws) the bare 1009 stays.
  const receiver = (ws as unknown as { _receiver?: { prependListener(e: 'error', f: (err: Error & { code?: string }) => void): void } })._receiver;
  receiver?.prependListener('error', (err) => {
    if (err.code !== 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH' || session.closed) return;
    session.fail(oversizeFrameError?.() ?? new VoicewireError('LIMIT_EXCEEDED', 'message over the size limit'));
  });
  (ws as unknown as Record<symbol, Attached>)[ATTACHED] = { session, onFrame };
  ws.on('message', onMessage);
  ws.on('close', onClose);
  ws.on('error', onError);
  return session;
}
