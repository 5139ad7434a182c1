/**
 * The wire: every WebSocket message of the STT and TTS routes, their validation, the REST
 * bodies and resources, auth and drain (docs/api.md §2–§8, protocol-notes.md).
 * The session machines that speak it live in `../sessions/`.
 */
export { PROTOCOL_LANGUAGES, describeIssue, expectedList } from './validate.js';
export type { ValidationIssue, ValidationErrorBody, ValidationLoc, ProtocolLanguage } from './validate.js';
export * from './messages.js';
export * from './config.js';
export * from './parse.js';
export * from './rest.js';
export * from './resources.js';
export * from './drain.js';
export * from './auth.js';
