/**
 * A failed REST answer (§7.1: HTTP 500, plain text, `error from server <code>: <reason>` or a raw
 * proxy-level string) as the VoicewireError it stands for: the same code the server used
 * (`PROTOCOL_UNAUTHORIZED` for a bad key, `CREDITS_EXHAUSTED`, `VOICE_NOT_FOUND`…) and the
 * numeric code kept as `closeCode` and `details.code`, rather than a bare `HTTP_ERROR` that lost
 * both. Other statuses (422, 404, 503…) stay `HTTP_ERROR` with their details. WebSocket `error`
 * messages are named the same way ({@link socketFailure}).
 */
import { VoicewireError, type ErrorCode } from '../util/errors.js';
import type { HttpErrorDetails } from '../protocol/rest.js';

/** Reasons the server gives, by what they mean (server/auth.ts, credits.ts, sessions/http.ts…). */
const REASONS: readonly (readonly [RegExp, ErrorCode])[] = [
  [/\b(api key|token)\b/i, 'PROTOCOL_UNAUTHORIZED'],
  [/\bcredits?\b/i, 'CREDITS_EXHAUSTED'],
  [/^invalid voice id\b|\bunknown voice_id\b/i, 'VOICE_NOT_FOUND'],
  [/\bunknown pronunciation_id\b/i, 'TTS_UNKNOWN_PRONUNCIATION'],
  [/^unsupported content type\b/i, 'PROTOCOL_UNSUPPORTED_CONTENT_TYPE'],
  [/\bcould not be decoded\b/i, 'PROTOCOL_INVALID_AUDIO'],
  [/\bjson_config\b/i, 'PROTOCOL_INVALID_CONFIG'],
  [/\bover the limit\b|\blimit of\b/i, 'LIMIT_EXCEEDED'],
];

/** `error` itself unless it is an `HTTP_ERROR` of status 500, which becomes the error it names. */
export function restFailure(error: unknown): unknown {
  if (!(error instanceof VoicewireError) || error.code !== 'HTTP_ERROR') return error;
  const details = error.details as HttpErrorDetails | undefined;
  if (details === undefined || details.status !== 500) return error;
  const code = details.code;
  const named = REASONS.find(([re]) => re.test(details.message))?.[1];
  const kind: ErrorCode = named ?? (code === 1011 ? 'PROTOCOL_INTERNAL' : 'PROTOCOL_SERVER_ERROR');
  const options: { cause: unknown; details: HttpErrorDetails; closeCode?: number } = { cause: error, details };
  if (code !== undefined) options.closeCode = code;
  return new VoicewireError(kind, code === undefined ? details.message : `${details.message} (error from server ${code})`, options);
}

/**
 * A WebSocket `error` message (§7.3, `PROTOCOL_SERVER_ERROR` with its close code) as the error its
 * reason names, like {@link restFailure}: `invalid API key` with code 1008 is
 * `PROTOCOL_UNAUTHORIZED`. An unrecognised reason stays `PROTOCOL_SERVER_ERROR`.
 */
export function socketFailure(error: VoicewireError): VoicewireError {
  if (error.code !== 'PROTOCOL_SERVER_ERROR') return error;
  const named = REASONS.find(([re]) => re.test(error.message))?.[1];
  if (named === undefined) return error;
  const options: { cause: unknown; details?: unknown; closeCode?: number } = { cause: error };
  if (error.details !== undefined) options.details = error.details;
  if (error.closeCode !== undefined) options.closeCode = error.closeCode;
  return new VoicewireError(named, error.message, options);
}
