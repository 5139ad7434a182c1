/**
 * voicewire/client: the SDK of the voice service, for browsers and Node ≥ 22 (see `createClient` of
 * `voicewire/node` for Node 20, which has no WebSocket of its own).
 */
export { createClient } from './client.js';
export type { ClientOptions, VoiceClient } from './client.js';
export type { TtsOptions, TtsResult, TtsStream, TtsStreamEvent, Word } from './tts.js';
export type { SttOptions, SttResult, SttStream, SttStreamEvent, SttStreamOptions } from './stt.js';
export type { VoiceListOptions, VoiceFromSample, VoicesApi, PronunciationsApi } from './rest.js';
export type { WebSocketFactory, WebSocketLike } from './socket.js';
export type { RetryOptions } from './retry.js';
export { VoicewireError, isVoicewireError } from '../util/errors.js';
