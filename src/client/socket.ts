/**
 * The SDK's WebSocket seam. Browsers have `WebSocket` (no custom headers: authenticate with a
 * temporary token); Node 20 has none, so `voicewire/node` passes a factory over the `ws` package,
 * which can send the `x-api-key` header (docs/api.md §5.1).
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
export type WebSocketFactory = (url: string, headers: Record<string, string>) => WebSocketLike;

/** The platform's WebSocket, when it has one (browsers, Node ≥ 22). Headers cannot be sent. */
export function platformWebSocketFactory(): WebSocketFactory | undefined {
  const WS = (globalThis as { WebSocket?: new (url: string) => WebSocketLike }).WebSocket;
  return WS === undefined ? undefined : (url) => new WS(url);
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
 * (`retries` more times, `retryDelayMs` doubling): nothing was sent yet, so that is safe.
 */
export function openClientSocket(
  factory: WebSocketFactory,
  url: string,
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
  const shown = url.replace(/token=[^&]*/, 'token=…');

  const connect = (attempt: number): void => {
    let lastError = '';
    const socket = factory(url, headers);
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
        setTimeout(() => connect(attempt + 1), delay);
        return;
      }
      closed = true;
      if (!isOpen) {
        const error = new VoicewireError('CLIENT_CONNECT_FAILED', `cannot open ${shown}: ${lastError || `closed with ${e.code ?? 1006}`}`);
        // Told before the close, so the caller reports this and not "the socket closed".
        handlers.onConnectFailed?.(error);
        failOpen(error);
      }
      handlers.onClose(e.code ?? 1006, e.reason ?? '');
    });
  };
  connect(0);

  return {
    send(text) {
      if (closed) return;
      if (isOpen && ws!.readyState === OPEN) ws!.send(text);
      else pending.push(text);
    },
    close(code, reason) {
      closeRequested ??= { code, reason };
      try {
        if (ws!.readyState <= OPEN) ws!.close(code, reason);
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
