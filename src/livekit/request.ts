/**
 * One attempt of a plugin call as a request on the shared socket, for TTS and STT alike: open it,
 * let the caller send its setup and input, wait for the service's `ready` within LiveKit's
 * `timeoutMs`, then for the request's `end_of_stream`; fail with LiveKit's API errors; release the
 * request on every way it ends (end, failure, timeout, abort): one `finally`.
 */
import type { APIConnectOptions } from '@livekit/agents';
import { timeoutError, toApiError } from './api-errors.js';
import { within } from './connection.js';
import type { MuxEvent, MuxHandle, MuxSession, SharedSocket } from './shared-socket.js';

/** What a call does with its request. */
export interface RequestCall<S extends MuxSession, E extends MuxEvent> {
  /** `TTS setup`, `STT setup`: named in the timeout's message. */
  what: string;
  connOptions: APIConnectOptions;
  /** Aborting ends the wait; the request is then abandoned. */
  signal: AbortSignal;
  /**
   * Sends the setup and starts the input; returns what stops the input. `over()` is true once the
   * request ended or failed (nothing more may be sent).
   */
  start(handle: MuxHandle<S>, over: () => boolean): () => void;
  /** A server message of the request (after the runner's own bookkeeping). */
  onMessage(event: Extract<E, { type: 'message' }>): void;
}

function deferred(): { promise: Promise<void>; resolve(): void; reject(e: unknown): void } {
  let resolve!: () => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<void>((a, b) => ((resolve = a), (reject = b)));
  promise.catch(() => {});
  return { promise, resolve, reject };
}

/**
 * Runs `call` as one request on `socket`. Resolves at its `end_of_stream` (or when the signal
 * aborts); rejects with a LiveKit API error, not retryable once audio or words came (they would be
 * repeated).
 */
export async function runRequest<S extends MuxSession, E extends MuxEvent>(socket: SharedSocket<S, E>, call: RequestCall<S, E>): Promise<void> {
  if (call.signal.aborted) return;
  let received = false;
  let ended = false;
  const ready = deferred();
  const done = deferred();
  const handle = socket.open({
    onMessage: (event) => {
      const type = event.message.type;
      if (type === 'ready') ready.resolve();
      else if (type === 'audio' || type === 'text') received = true;
      else if (type === 'end_of_stream') ended = true;
      call.onMessage(event);
      if (ended) done.resolve();
    },
    onFailure: (error) => {
      ended = true;
      const e = toApiError(error, received);
      ready.reject(e);
      done.reject(e);
    },
  });
  const abort = (): void => done.resolve();
  call.signal.addEventListener('abort', abort, { once: true });
  let stop: () => void = () => {};
  try {
    stop = call.start(handle, () => ended);
    // A socket that never opens or a service that never answers the setup; a socket never heard
    // from is dropped, so that the retry connects again.
    await within(Promise.race([ready.promise, done.promise]), call.connOptions.timeoutMs, () => {
      if (!handle.heardFrom()) socket.drop('connection timeout');
      const e = timeoutError(call.what, call.connOptions.timeoutMs);
      done.reject(e);
      return e;
    });
    await done.promise;
  } finally {
    stop();
    call.signal.removeEventListener('abort', abort);
    socket.release(handle.id, !ended);
  }
}
