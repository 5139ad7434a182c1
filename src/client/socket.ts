/**
 * The SDK's WebSocket seam. Browsers and Node ≥ 22 have a global (WHATWG) `WebSocket`, which
 * cannot send headers: with an API key the client then trades it for a temporary token over HTTP
 * first (§4.6, context.ts) and connects with `?token=`. Node 20 has none, so `voicewire/node` passes
 * a factory over the `ws` package, which sends the `x-api-key` header (docs/api.md §5.1).
 */
import { VoicewireError } from '../util/errors.js';

/** The parts of a WebSocket the SDK uses; the browser's WebSocket and `ws` both have them. */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'open' | 'message' | 'close' | 'error', listener: (event: { data?: unknown; code?: number; reason?: string; message?: string }) => void): void;
}

/** Opens a WebSocket to `url`, sending `headers` when the platform can. */
export type WebSocketFactory = ((url: string, headers: Record<string, string>) => WebSocketLike) & {
  /**
   * False when its sockets cannot carry headers (a WHATWG `WebSocket`): a client with an API key
   * then connects with a temporary token it gets over HTTP first (`GET /api-keys/token`, §4.6).
   * Default (absent): true, the headers are sent.
   */
  readonly sendsHeaders?: boolean;
};

/** The platform's WebSocket, when it has one (browsers, Node ≥ 22). It cannot send headers. */
export function platformWebSocketFactory(): WebSocketFactory | undefined {
  const WS = (globalThis as { WebSocket?: new (url: string) => WebSocketLike }).WebSocket;
  if (WS === undefined) return undefined;
  return Object.assign((url: string) => new WS(url), { sendsHeaders: false });
}

/** Why there is no WebSocket here, and what to use instead (Node 20 has no global one). */
export function noWebSocketMessage(): string {
  const node = (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node;
  const here = node === undefined ? 'this platform has no WebSocket' : `Node ${node} has no global WebSocket (Node 22 and later have one)`;
  return `${here}: use createClient from voicewire/node (the ws package), or pass createClient({ webSocket })`;
}

/** A socket that queues what is sent before it opens, and reports its frames and its close. */
export interface ClientSocket {
  send(text: string): void;
  close(code: number, reason: string): void;
  /** Resolves once open; rejects with `CLIENT_CONNECT_FAILED` if it closed or failed before. */
  readonly opened: Promise<void>;
  /** True once a frame came from the server. */
  readonly heardFrom: boolean;
}

const OPEN = 1;

function textOf(data: unknown): string {
  if (typeof data === 'string') return data;
  if (data instanceof ArrayBuffer) return new TextDecoder().decode(new Uint8Array(data));
  if (ArrayBuffer.isView(data)) return new TextDecoder().decode(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  return String(data);
}

/**
 * Opens `url` and wires it: frames go to `onMessage`, the close to `onClose` (once). Sends made
 * before the socket opens wait in order. A connection that fails before it opens is tried again
 * (`retries` more times, `retryDelayMs` doubling): nothing was sent yet, so that is safe. `url` may
 * be a function that finds it (a temporary token fetched first); its failure is the connection's.
 */
export function openClientSocket(
  factory: WebSocketFactory,
  url: string | (() => Promise<string>),
  headers: Record<string, string>,
  handlers: { onMessage(text: string): void; onClose(code: number, reason: string): void; onConnectFailed?(error: VoicewireError): void },
  retry: { retries: number; retryDelayMs: number } = { retries: 0, retryDelayMs: 0 },
): ClientSocket {
  const pending: string[] = [];
  let ws: WebSocketLike | undefined;
  let isOpen = false;
  let closed = false;
  let heard = false;
  let closeRequested: { code: number; reason: string } | undefined;
  let resolveOpen: () => void = () => {};
  let failOpen: (e: VoicewireError) => void = () => {};
  const opened = new Promise<void>((resolve, reject) => {
    resolveOpen = resolve;
    failOpen = reject;
  });
  // A rejection nobody awaits must not become an unhandled rejection.
  opened.catch(() => {});
  const shownOf = (u: string): string => u.replace(/token=[^&]*/, 'token=…');

  /** Ends a socket that never opened: the caller hears `error` first, then the close. */
  const failConnect = (error: VoicewireError, code: number, reason: string): void => {
    closed = true;
    // Told before the close, so the caller reports this and not "the socket closed".
    handlers.onConnectFailed?.(error);
    failOpen(error);
    handlers.onClose(code, reason);
  };

  const start = (attempt: number): void => {
    if (typeof url === 'string') return connect(attempt, url);
    url().then(
      (u) => {
        if (closed) return;
        if (closeRequested !== undefined) return failConnect(new VoicewireError('CLIENT_CONNECT_FAILED', `closed before ${shownOf(u)} was opened`), closeRequested.code, closeRequested.reason);
        connect(attempt, u);
      },
      (err: unknown) => {
        if (closed) return;
        const e = err instanceof VoicewireError ? err : new VoicewireError('CLIENT_CONNECT_FAILED', `cannot open a WebSocket: ${(err as Error)?.message ?? String(err)}`, { cause: err });
        failConnect(e, e.closeCode ?? 1006, e.message.slice(0, 120));
      },
    );
  };

  const connect = (attempt: number, target: string): void => {
    let lastError = '';
    const shown = shownOf(target);
    const socket = factory(target, headers);
    ws = socket;
    socket.addEventListener('open', () => {
      isOpen = true;
      if (closeRequested) return socket.close(closeRequested.code, closeRequested.reason);
      for (const text of pending.splice(0)) socket.send(text);
      resolveOpen();
    });
    socket.addEventListener('error', (e) => {
      lastError = e.message ?? lastError;
    });
    socket.addEventListener('message', (e) => {
      heard = true;
      handlers.onMessage(textOf(e.data));
    });
    socket.addEventListener('close', (e) => {
      if (closed) return;
      if (!isOpen && closeRequested === undefined && attempt < retry.retries) {
        const delay = retry.retryDelayMs * 2 ** attempt * (0.75 + Math.random() * 0.5);
        setTimeout(() => start(attempt + 1), delay);
        return;
      }
      if (!isOpen) return failConnect(new VoicewireError('CLIENT_CONNECT_FAILED', `cannot open ${shown}: ${lastError || `closed with ${e.code ?? 1006}`}`), e.code ?? 1006, e.reason ?? '');
      closed = true;
      handlers.onClose(e.code ?? 1006, e.reason ?? '');
    });
  };
  start(0);

  return {
    send(text) {
      if (closed) return;
      if (isOpen && ws!.readyState === OPEN) ws!.send(text);
      else pending.push(text);
    },
    close(code, reason) {
      closeRequested ??= { code, reason };
      try {
        // No socket yet (its address is still being found): it is not opened (start() sees the request).
        if (ws !== undefined && ws.readyState <= OPEN) ws.close(code, reason);
      } catch {
        // already closing
      }
    },
    opened,
    get heardFrom() {
      return heard;
    },
  };
}
