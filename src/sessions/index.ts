/**
 * The session machines servers and SDKs share: STT and TTS sessions, multiplexing, the server
 * and client runners, engines, turn-taking, streams and the HTTP routes (docs/api.md §3–§4).
 */
export * from './engine.js';
export * from './multiplex.js';
export * from './stt-session.js';
export * from './tts-session.js';
export * from './server.js';
export * from './client.js';
export * from './turn-taking.js';
export * from './streams.js';
export * from './http.js';
export { RequestMap } from './request-map.js';
export { PersistentQueue } from './persistent-queue.js';
