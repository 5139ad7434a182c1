/**
 * When a request's client is gone before its body ended (issue 31 §1): the client closed the
 * connection, or node:http cut it (its 408 past `requestTimeoutMs`). A body reader that waits for
 * a parser's end (busboy's `close`) never sees that end then; it listens here too, so that every
 * way a body can end settles its read.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * Calls `gone` (at most once) when `req` is aborted or fails, or `res` closes, before the
 * returned function is called (the read ended: it removes the listeners).
 */
export function onRequestGone(req: IncomingMessage, res: ServerResponse, gone: () => void): () => void {
  let done = false;
  const fire = (): void => {
    if (done) return;
    stop();
    gone();
  };
  const stop = (): void => {
    done = true;
    req.off('aborted', fire);
    req.off('error', fire);
    res.off('close', fire);
  };
  req.once('aborted', fire);
  req.once('error', fire);
  res.once('close', fire);
  return stop;
}
