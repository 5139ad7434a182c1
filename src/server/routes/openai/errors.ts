/**
 * OpenAI's error form for the `/v1` routes: `{"error":{"message","type","param","code"}}` with
 * the status OpenAI's API uses for the same failure, so an OpenAI SDK raises the error class its
 * callers already handle (`AuthenticationError` on 401, `BadRequestError` on 400, `RateLimitError`
 * on 429, …). Every failure is still a {@link VoicewireError}; only its wire form differs from §7.
 */
import type { ServerResponse } from 'node:http';
import { VoicewireError, toVoicewireError, type ErrorCode } from '../../../util/errors.js';
import { sendJson } from '../../http.js';

/** The body of an OpenAI-style error answer. */
export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** `details` of an error thrown by the `/v1` routes: the request field at fault, and a status other than the code's. */
export interface OpenAIErrorDetails {
  param?: string;
  status?: number;
}

/** An invalid request field (400 `invalid_request_error`, `param` names the field). */
export function invalidParam(param: string, message: string): VoicewireError {
  return new VoicewireError('INVALID_ARGUMENT', message, { details: { param } satisfies OpenAIErrorDetails });
}

/** Codes that mean "this request is wrong": 400 `invalid_request_error`. */
const BAD_REQUEST: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'INVALID_ARGUMENT', 'VALIDATION_FAILED', 'FORMAT_UNKNOWN', 'AUDIO_FORMAT_UNDETECTED', 'FFMPEG_FAILED', 'FFMPEG_NOT_FOUND',
  'WAV_NOT_RIFF', 'WAV_TRUNCATED', 'WAV_MISSING_FMT', 'WAV_MISSING_DATA', 'WAV_INVALID_FMT', 'WAV_UNSUPPORTED_FORMAT', 'WAV_SIZE_MISMATCH',
  'OGG_CRC_MISMATCH', 'OGG_INVALID_PAGE', 'OGG_TRUNCATED', 'OGG_CORRUPT', 'OGG_SEQUENCE_GAP', 'OGG_NO_OPUS_STREAM', 'OGG_PACKET_TOO_LARGE',
  'OPUS_INVALID_HEADER', 'OPUS_INVALID_PACKET', 'OPUS_UNSUPPORTED', 'AUDIO_LIMIT_EXCEEDED',
  'PROTOCOL_INVALID_AUDIO', 'PROTOCOL_INVALID_CONFIG', 'PROTOCOL_INVALID_AUDIO_FORMAT', 'PROTOCOL_UNSUPPORTED_CONTENT_TYPE',
  'STT_LANGUAGE_UNSUPPORTED', 'TTS_UNKNOWN_VOICE', 'TTS_UNKNOWN_PRONUNCIATION', 'TTS_TEXT_TOO_LONG', 'VOICE_NOT_FOUND',
  'TAG_BREAK_INVALID_TIME', 'TAG_BREAK_OUT_OF_RANGE', 'TAG_BREAK_MISSING_SPACE', 'TAG_BREAK_MALFORMED',
]);

/** Codes of a server that cannot serve now (503: the SDK retries them). ENGINE_BUSY is a full
 * process-wide budget (decoders, an engine's queue, ffmpeg children, upload bytes): the server's
 * state, not the request's fault (issue 31 §6). */
const UNAVAILABLE: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['PROTOCOL_DRAINING', 'STORE_UNAVAILABLE', 'ENGINE_UNAVAILABLE', 'ENGINE_BUSY', 'OPUS_CAPACITY']);

/**
 * The status and body OpenAI's API answers for an error:
 * 401 `invalid_api_key` (missing, unknown or revoked key), 403 (residency), 400
 * `invalid_request_error` (a bad field, file or format; `param` names it), 404 (no such route or
 * model), 413 (a body over the server's limit), 429 `insufficient_quota` (credits exhausted, as
 * OpenAI's own quota error) or `rate_limit_exceeded` (connections per key and other limits), 503
 * (draining, store or engine unavailable), else 500 `server_error`.
 */
export function openAIErrorResponse(error: unknown): { status: number; body: OpenAIErrorBody } {
  const e = toVoicewireError(error);
  const d = (typeof e.details === 'object' && e.details !== null ? e.details : {}) as OpenAIErrorDetails;
  const param = typeof d.param === 'string' ? d.param : null;
  const body = (status: number, type: string, code: string | null, message = e.message): { status: number; body: OpenAIErrorBody } => {
    const s = typeof d.status === 'number' ? d.status : status;
    return { status: s, body: { error: { message, type: s >= 500 ? 'server_error' : type, param, code } } };
  };
  if (e.code === 'PROTOCOL_UNAUTHORIZED') return body(401, 'invalid_request_error', 'invalid_api_key');
  if (e.code === 'RESIDENCY_DENIED') return body(403, 'invalid_request_error', 'residency_denied');
  if (e.code === 'NOT_FOUND') return body(404, 'invalid_request_error', 'not_found');
  if (e.code === 'CREDITS_EXHAUSTED') return body(429, 'insufficient_quota', 'insufficient_quota');
  if (e.code === 'LIMIT_EXCEEDED') return d.status === 413 ? body(413, 'invalid_request_error', 'request_too_large') : body(429, 'requests', 'rate_limit_exceeded');
  if (e.code === 'VALIDATION_FAILED') return body(400, 'invalid_request_error', null, 'We could not parse the JSON body of your request: ' + e.message);
  if (BAD_REQUEST.has(e.code)) return body(400, 'invalid_request_error', null);
  // A runner's `error` 1008 (policy: undecodable audio, a bad setup) is the request's fault.
  if (e.code === 'PROTOCOL_SERVER_ERROR' && e.closeCode === 1008) return body(400, 'invalid_request_error', null);
  if (UNAVAILABLE.has(e.code)) return body(503, 'server_error', 'service_unavailable');
  if (e.code === 'ENGINE_TIMEOUT') return body(500, 'server_error', 'engine_timeout');
  return body(500, 'server_error', null, e.code === 'PROTOCOL_INTERNAL' || e.code === 'PROTOCOL_SERVER_ERROR' ? e.message : 'The server had an error while processing your request.');
}

/** Sends an error in OpenAI's form; a response already started is cut (its body cannot carry one). */
export function sendOpenAIError(res: ServerResponse, error: unknown): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const { status, body } = openAIErrorResponse(error);
  sendJson(res, status, body);
}
