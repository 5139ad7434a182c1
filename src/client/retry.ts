/**
 * Retries only where it is safe: the request never reached an engine (the connection failed, or
 * the instance answered 503 while draining). Never after audio was sent or received.
 */
import { VoicewireError } from '../util/errors.js';

/** How the SDK retries. */
export interface RetryOptions {
  /** Attempts in all, including the first. Default 3. */
  attempts?: number;
  /** Delay before the second attempt, doubled each time (with ±25% jitter). Default 200 ms. */
  baseDelayMs?: number;
}

/** Is this failure one a retry can fix without risk of doing the work twice? */
export function isRetryable(error: unknown): boolean {
  if (!(error instanceof VoicewireError)) return false;
  if (error.code === 'CLIENT_CONNECT_FAILED') return true;
  const status = (error.details as { status?: number } | undefined)?.status;
  return error.code === 'HTTP_ERROR' && status === 503;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortError(signal));
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        reject(abortError(signal));
      },
      { once: true },
    );
  });
}

/** The error an aborted call rejects with. */
export function abortError(signal: AbortSignal): VoicewireError {
  return new VoicewireError('CLIENT_ABORTED', 'the request was aborted', { cause: signal.reason });
}

/** Runs `attempt` until it succeeds, fails for a reason a retry cannot fix, or runs out of tries. */
export async function withRetry<T>(attempt: () => Promise<T>, options: RetryOptions = {}, signal?: AbortSignal): Promise<T> {
  const attempts = Math.max(1, Math.floor(options.attempts ?? 3));
  const base = Math.max(0, options.baseDelayMs ?? 200);
  for (let i = 1; ; i++) {
    if (signal?.aborted) throw abortError(signal);
    try {
      return await attempt();
    } catch (err) {
      if (i >= attempts || !isRetryable(err)) throw err;
      await sleep(base * 2 ** (i - 1) * (0.75 + Math.random() * 0.5), signal);
    }
  }
}
