/**
 * voicewire's failures as LiveKit's API errors, so the framework's retry loop and its error events
 * treat them as they treat every plugin's: a connection that failed is an `APIConnectionError`
 * (retried), a timeout an `APITimeoutError`, an `error` message of the service (docs/api.md §7.3)
 * an `APIStatusError` with the HTTP status its code stands for (4xx are not retried, 5xx are).
 * A request that already received audio is never retried: its audio would be spoken twice (the
 * same rule as the SDK's retry.ts).
 */
import type { APIError } from '@livekit/agents';
import { VoicewireError, type ErrorCode } from '../util/errors.js';
import { agents } from './agents.js';

/** HTTP statuses of the service's error codes (what the same failure answers over REST). */
const STATUS: Partial<Record<ErrorCode, number>> = {
  PROTOCOL_UNAUTHORIZED: 401,
  CREDITS_EXHAUSTED: 402,
  RESIDENCY_DENIED: 403,
  VOICE_NOT_FOUND: 404,
  TTS_UNKNOWN_VOICE: 404,
  TTS_UNKNOWN_PRONUNCIATION: 404,
  LIMIT_EXCEEDED: 429,
  PROTOCOL_TOO_MANY_REQUESTS: 429,
  PROTOCOL_DRAINING: 503,
  ENGINE_BUSY: 503,
  ENGINE_UNAVAILABLE: 503,
  STORE_UNAVAILABLE: 503,
};

/** The status of a service error: its own, else 400 for a 1008 (the request's fault), else 500. */
function statusOf(error: VoicewireError): number {
  const known = STATUS[error.code];
  if (known !== undefined) return known;
  if (error.closeCode === 1008) return 400;
  return 500;
}

/** The timeout error of a request the service did not answer in `timeoutMs`. */
export function timeoutError(what: string, timeoutMs: number): APIError {
  return new agents.APITimeoutError({ message: `voicewire: ${what}: no answer from the service within ${timeoutMs} ms` });
}

/**
 * `error` as a LiveKit API error. `received`: the request already got audio or text, so a retry
 * would repeat it (not retryable, whatever the cause).
 */
export function toApiError(error: unknown, received: boolean): APIError {
  if (agents.isAPIError(error)) return error;
  const retryable = received ? { retryable: false } : {};
  if (!(error instanceof VoicewireError)) {
    return new agents.APIConnectionError({ message: `voicewire: ${(error as Error)?.message ?? String(error)}`, options: retryable });
  }
  const body = { code: error.code, message: error.message, ...(error.closeCode === undefined ? {} : { closeCode: error.closeCode }) };
  switch (error.code) {
    case 'CLIENT_CONNECT_FAILED':
    case 'PROTOCOL_CONNECTION_CLOSED':
      return withCause(new agents.APIConnectionError({ message: `voicewire: ${error.message} [${error.code}]`, options: retryable }), error);
    default: {
      const status = statusOf(error);
      const options = { statusCode: status, body, ...(received || status < 500 ? { retryable: false } : {}) };
      return withCause(new agents.APIStatusError({ message: `voicewire: ${error.message} [${error.code}]`, options }), error);
    }
  }
}

function withCause<E extends Error>(e: E, cause: unknown): E {
  Object.defineProperty(e, 'cause', { value: cause, configurable: true, writable: true });
  return e;
}
