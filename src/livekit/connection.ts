/**
 * Where the plugin's sockets go: the options both plugins take (`baseUrl` as `createClient` takes
 * it, the API key) resolved into the SDK's client context, with the `ws` package as the WebSocket so
 * that the `x-api-key` header goes with the upgrade (docs/api.md §5.1), as voicewire/node does.
 */
import WebSocket from 'ws';
import { VoicewireError } from '../util/errors.js';
import { objectArg } from '../util/args.js';
import { normalizeBaseUrl } from '../client/base-url.js';
import { ClientContext } from '../client/context.js';
import type { WebSocketFactory, WebSocketLike } from '../client/socket.js';

/** How a plugin reaches the service. */
export interface ConnectionOptions {
  /** The service's base URL, ending with `/api` (as `createClient` takes it), e.g. `http://127.0.0.1:8080/api`. */
  baseUrl: string;
  /** An API key (`x-api-key`). Default: the `VOICEWIRE_API_KEY` environment variable. */
  apiKey?: string;
  /** Default: a factory over the `ws` package (sends the key as a header). */
  webSocket?: WebSocketFactory;
}

const wsFactory: WebSocketFactory = (url, headers) => new WebSocket(url, { headers }) as unknown as WebSocketLike;

/**
 * The SDK context of a plugin. The SDK's own connection retries are off (one attempt): LiveKit's
 * `APIConnectOptions` (maxRetry, retryIntervalMs) decide, through the base classes' retry loops.
 */
export function connectionContext(options: ConnectionOptions, what: string): ClientContext {
  objectArg(options, `${what} options`);
  const apiKey = options.apiKey ?? process.env['VOICEWIRE_API_KEY'];
  if (typeof apiKey !== 'string' || apiKey === '') throw new VoicewireError('INVALID_ARGUMENT', `${what}: apiKey is required (or set VOICEWIRE_API_KEY)`);
  return new ClientContext({
    base: normalizeBaseUrl(options.baseUrl),
    apiKey,
    fetch: globalThis.fetch.bind(globalThis),
    webSocket: options.webSocket ?? wsFactory,
    retry: { attempts: 1 },
    source: 'voicewire-livekit',
  });
}

/**
 * Resolves with `promise`, or rejects with `onTimeout()` after `ms` (LiveKit's
 * `APIConnectOptions.timeoutMs`); the timer never outlives the race.
 */
export async function within<T>(promise: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(onTimeout()), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
