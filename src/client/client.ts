/**
 * `createClient`: the SDK for the voice service (docs/api.md). Platform-neutral: it uses the
 * platform's `fetch` and `WebSocket` (which cannot send the `x-api-key` header: an API key is traded
 * for a temporary token first, docs/api.md §5); in Node, `createClient` of `voicewire/node` passes
 * the `ws` package, which sends the header.
 *
 * ```ts
 * const client = createClient({ baseUrl: 'http://127.0.0.1:8080/api', apiKey });
 * const { audio, words } = await client.tts({ text: 'Hello there.', outputFormat: 'wav' });
 * ```
 */
import { VoicewireError } from '../util/errors.js';
import { describeValue, objectArg, optionsArg } from '../util/args.js';
import type { CreditBalance, TemporaryToken } from '../protocol/resources.js';
import { normalizeBaseUrl } from './base-url.js';
import { ClientContext } from './context.js';
import { platformWebSocketFactory, type WebSocketFactory } from './socket.js';
import type { RetryOptions } from './retry.js';
import { TtsApi, type TtsOptions, type TtsResult, type TtsStream } from './tts.js';
import { SttApi, type SttOptions, type SttResult, type SttStream, type SttStreamOptions } from './stt.js';
import { PronunciationsApi, VoicesApi, credits, token } from './rest.js';

/** How to reach and authenticate with the service. */
export type ClientOptions = ({ baseUrl: string; apiKey: string; token?: undefined } | { baseUrl: string; token: string; apiKey?: undefined }) & {
  /** Default: the platform's `fetch`. */
  fetch?: typeof fetch;
  /**
   * Default: the platform's `WebSocket` (browsers, Node ≥ 22), which cannot send headers: with an
   * `apiKey` the client trades it for a temporary token over HTTP first (`GET /api-keys/token`) and
   * connects with `?token=`. Node 20 has none: use `createClient` of `voicewire/node`.
   */
  webSocket?: WebSocketFactory;
  /** Retries of connection failures and 503 (draining). Default 3 attempts from 200 ms. */
  retry?: RetryOptions;
};

/** A client of the voice service. */
export interface VoiceClient {
  /** Text → audio and word timestamps (WebSocket; `http: true` for POST /post/speech/tts). */
  tts(options: TtsOptions & { text: string }): Promise<TtsResult>;
  /** A streaming TTS request: `write()` text, read audio and words. */
  ttsStream(options?: TtsOptions): TtsStream;
  /** A recording → text and words (WebSocket; `http: true` for POST /post/speech/asr). */
  stt(audio: Uint8Array, options?: SttOptions): Promise<SttResult>;
  /** A streaming STT request: `write()` audio, read text, steps and turns. */
  sttStream(options?: SttStreamOptions): SttStream;
  readonly voices: VoicesApi;
  readonly pronunciations: PronunciationsApi;
  credits(): Promise<CreditBalance>;
  /** A temporary token for a browser (§4.6). */
  token(): Promise<TemporaryToken>;
  /** Closes the shared multiplexed socket, if any. */
  close(): void;
}

/** Creates a client. */
export function createClient(options: ClientOptions): VoiceClient {
  if (options === null || typeof options !== 'object') throw new VoicewireError('INVALID_ARGUMENT', 'createClient: options must be an object');
  const hasKey = typeof options.apiKey === 'string' && options.apiKey !== '';
  const hasToken = typeof options.token === 'string' && options.token !== '';
  if (hasKey === hasToken) throw new VoicewireError('INVALID_ARGUMENT', 'createClient: give exactly one of apiKey or token');
  const fetchFn = options.fetch ?? (globalThis as { fetch?: typeof fetch }).fetch;
  if (fetchFn === undefined) throw new VoicewireError('INVALID_ARGUMENT', 'createClient: this platform has no fetch; pass options.fetch');
  const ctx = new ClientContext({
    base: normalizeBaseUrl(options.baseUrl),
    apiKey: hasKey ? options.apiKey : undefined,
    token: hasToken ? options.token : undefined,
    fetch: fetchFn.bind(globalThis),
    webSocket: options.webSocket ?? platformWebSocketFactory(),
    retry: options.retry ?? {},
    source: 'voicewire-client',
  });
  const tts = new TtsApi(ctx);
  const stt = new SttApi(ctx);
  return {
    tts: (o) => tts.synthesize(requestOptions(objectArg(o, 'tts options'), 'tts')),
    ttsStream: (o) => tts.stream(requestOptions(o, 'ttsStream')),
    stt: (audio, o) => stt.transcribe(audio, requestOptions(o, 'stt')),
    sttStream: (o) => stt.stream(requestOptions(o, 'sttStream')),
    voices: new VoicesApi(ctx),
    pronunciations: new PronunciationsApi(ctx),
    credits: () => credits(ctx),
    token: () => token(ctx),
    close: () => tts.close(),
  };
}

/** A request's options (undefined is `{}`), with a `signal` that is an AbortSignal. */
function requestOptions<T extends { signal?: AbortSignal }>(options: T | undefined, what: string): T {
  const o = optionsArg(options, `${what} options`);
  if (o.signal !== undefined && !(o.signal instanceof AbortSignal)) throw new VoicewireError('INVALID_ARGUMENT', `${what}: signal must be an AbortSignal, got ${describeValue(o.signal)}`);
  return o;
}
