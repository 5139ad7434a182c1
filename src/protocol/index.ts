/**
 * The protocol half of voicewire: every WebSocket message of the STT and TTS routes, their
 * validation, the REST bodies and resources, and the session machines servers and SDKs share
 * (service-api.md §2–§8, protocol-notes.md).
 */
export * from './base64.js';
export { PROTOCOL_LANGUAGES, describeIssue, expectedList } from './validate.js';
export type { ValidationIssue, ValidationErrorBody, ValidationLoc, ProtocolLanguage } from './validate.js';
export * from './messages.js';
export * from './config.js';
export * from './parse.js';
export * from './rest.js';
export * from './resources.js';
export * from './engine.js';
export * from './multiplex.js';
export * from './stt-session.js';
export * from './tts-session.js';
export * from './server.js';
export * from './client.js';
export * from './drain.js';
export * from './turn-taking.js';
export * from './streams.js';
export * from './auth.js';
export * from './http.js';
