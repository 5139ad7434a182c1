/**
 * What every part of a client shares: where the service is, how to authenticate, and the
 * platform's `fetch` and WebSocket.
 */
import { VoicewireError } from '../util/errors.js';
import { throwForResponse } from '../protocol/rest.js';
import { restFailure } from './server-error.js';
import { httpUrl, wsUrl } from './base-url.js';
import { noWebSocketMessage, openClientSocket, type ClientSocket, type WebSocketFactory } from './socket.js';
import { parseTemporaryToken } from '../protocol/resources.js';
import { abortError, withRetry, type RetryOptions } from './retry.js';

/** A request of the REST helper. */
export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  json?: unknown;
  body?: BodyInit;
  headers?: Record<string, string>;
  signal?: AbortSignal | undefined;
  /** The route accepts `?token=` (TTS only, docs/api.md §5.2). */
  tokenAllowed?: boolean;
}

export interface ClientContextOptions {
  base: string;
  apiKey?: string | undefined;
  token?: string | undefined;
  fetch: typeof fetch;
  webSocket: WebSocketFactory | undefined;
  retry: RetryOptions;
  /** Sent as `x-api-source`, as the service's own clients do. */
  source: string;
}

/** A temporary token is fetched again once less than this is left of its life, ms. */
const TOKEN_MARGIN_MS = 60_000;

export class ClientContext {
  /** The temporary token the WebSockets use when they cannot carry the API key (§4.6), while it lasts. */
  private socketToken: Promise<{ token: string; expiresAt: number }> | undefined;

  constructor(readonly options: ClientContextOptions) {}

  private authHeaders(): Record<string, string> {
    const h: Record<string, string> = { 'x-api-source': this.options.source };
    if (this.options.apiKey !== undefined) h['x-api-key'] = this.options.apiKey;
    return h;
  }

  private authQuery(): Record<string, string | undefined> {
    return this.options.apiKey === undefined && this.options.token !== undefined ? { token: this.options.token } : {};
  }

  /**
   * A REST call; non-2xx → `HTTP_ERROR` (§7.1), except a 500 whose body names the failure, which
   * keeps the server's code (server-error.ts); retried on connection failures and 503.
   */
  async request(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
    const url = httpUrl(this.options.base, path, { ...options.query, ...this.authQuery() });
    const headers: Record<string, string> = { ...this.authHeaders(), ...options.headers };
    let body = options.body;
    if (options.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(options.json);
    }
    return withRetry(
      async () => {
        let response: Response;
        try {
          const init: RequestInit = { method, headers };
          if (body !== undefined) init.body = body;
          if (options.signal) init.signal = options.signal;
          response = await this.options.fetch(url, init);
        } catch (err) {
          if (options.signal?.aborted) throw abortError(options.signal);
          throw new VoicewireError('CLIENT_CONNECT_FAILED', `cannot reach ${httpUrl(this.options.base, path)}: ${(err as Error)?.message ?? String(err)}`, { cause: err });
        }
        // §7.1: keep the code the server's answer carries (server-error.ts).
        return throwForResponse(response).catch((err: unknown) => {
          throw restFailure(err);
        });
      },
      this.options.retry,
      options.signal,
    );
  }

  /** GET/POST/… → parsed JSON. */
  async json<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const response = await this.request(method, path, options);
    const text = await response.text();
    try {
      return (text === '' ? null : JSON.parse(text)) as T;
    } catch (err) {
      throw new VoicewireError('HTTP_ERROR', `${method} ${path}: the answer is not JSON`, { cause: err, details: { status: response.status, body: text.slice(0, 200) } });
    }
  }

  /**
   * A temporary token for this client's API key (`GET /api-keys/token`, §4.6), shared by its
   * sockets and fetched again a minute before it expires (the server's live 600 s). A failed fetch
   * is not kept: the next socket asks again.
   */
  private async tokenForSockets(): Promise<string> {
    const held = this.socketToken;
    if (held !== undefined) {
      const t = await held.catch(() => undefined);
      if (t !== undefined && t.expiresAt - TOKEN_MARGIN_MS > Date.now()) return t.token;
    }
    // One fetch at a time: the first socket that finds the token stale (or failed) asks, the others wait for it.
    if (this.socketToken === held) this.socketToken = this.fetchSocketToken();
    return (await this.socketToken!).token;
  }

  private async fetchSocketToken(): Promise<{ token: string; expiresAt: number }> {
    const t = parseTemporaryToken(await this.json<unknown>('GET', 'api-keys/token'));
    // A clock that disagrees with the server's: the token is used at least once, then fetched again.
    return { token: t.token, expiresAt: Math.max(Date.parse(t.expires_at), Date.now() + TOKEN_MARGIN_MS + 1) };
  }

  /**
   * Opens a WebSocket route (`speech/tts`, `speech/asr`). A socket that cannot carry headers (the
   * platform's WHATWG WebSocket: browsers, Node ≥ 22) gets `?token=`: the client's token, or with
   * an API key a temporary token traded for it over HTTP first (§4.6), as the page does.
   */
  openSocket(path: string, onMessage: (text: string) => void, onClose: (code: number, reason: string) => void, onConnectFailed: (error: VoicewireError) => void): ClientSocket {
    const factory = this.options.webSocket;
    if (factory === undefined) throw new VoicewireError('INVALID_ARGUMENT', noWebSocketMessage());
    const retries = Math.max(0, Math.floor(this.options.retry.attempts ?? 3) - 1);
    const base = this.options.base;
    const url = this.options.apiKey !== undefined && factory.sendsHeaders === false ? () => this.tokenForSockets().then((token) => wsUrl(base, path, { token })) : wsUrl(base, path, this.authQuery());
    return openClientSocket(factory, url, this.authHeaders(), { onMessage, onClose, onConnectFailed }, { retries, retryDelayMs: this.options.retry.baseDelayMs ?? 200 });
  }
}
