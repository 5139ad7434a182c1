/**
 * Server-sent events on a node:http response (WHATWG HTML §9.2.5, the `text/event-stream`
 * format): each event an `event:` line naming it and one `data:` line of JSON (JSON.stringify
 * escapes line breaks, so the data is always one line), then a blank line. The `/v1` routes'
 * streams use it as OpenAI's API does; the `openai` package's parser reads `data` as JSON and
 * raises an event whose data holds `error` (core/streaming.js `fromSSEResponse`).
 */
import type { ServerResponse } from 'node:http';

/** Writes the head of an event stream: 200, `text/event-stream`, no caching, no proxy buffering. */
export function startEventStream(res: ServerResponse, headers: Record<string, string> = {}): void {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no', ...headers });
}

/**
 * Writes one event. Resolves true once the socket took it (at once, or after a `drain` when its
 * buffer was full: a slow reader holds at most one event's bytes more), false when the response
 * closed first or was already closed: the event then reached no one.
 */
export function writeEvent(res: ServerResponse, event: string, data: unknown): Promise<boolean> {
  if (res.destroyed || res.writableEnded) return Promise.resolve(false);
  if (res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ok: boolean) => (): void => {
      res.off('drain', onDrain);
      res.off('close', onClose);
      resolve(ok && !res.destroyed);
    };
    const onDrain = done(true);
    const onClose = done(false);
    res.once('drain', onDrain);
    res.once('close', onClose);
  });
}
