/**
 * `createClient` for Node: the SDK of `voicewire/client` with the `ws` package as its WebSocket,
 * so the `x-api-key` header goes with the upgrade (docs/api.md §5.1; Node 20 has no WebSocket).
 */
import WebSocket from 'ws';
import { objectArg } from '../util/args.js';
import { createClient as createPlatformClient, type ClientOptions, type VoiceClient } from '../client/index.js';
import type { WebSocketLike } from '../client/socket.js';

/** Creates a client that opens its sockets with `ws`. */
export function createClient(options: ClientOptions): VoiceClient {
  objectArg(options, 'createClient options');
  return createPlatformClient({
    ...options,
    webSocket: options.webSocket ?? ((url, headers) => new WebSocket(url, { headers }) as unknown as WebSocketLike),
  });
}
