/**
 * Small HTTP helpers of the routes: answers in the service's forms (§7), and bounded body reads.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { VoicewireError, toVoicewireError } from '../util/errors.js';
import { restErrorResponse, parseJsonBody } from '../protocol/rest.js';
import { MAX_JSON_DEPTH } from '../protocol/json-depth.js';

/** Sends a JSON answer. */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * Sends an error in the service's forms: 422 §2.7 JSON, 404 JSON `{"detail":"Not Found"}`, 403 /
 * 502 / 503 / 504 plain text, else 500 plain text (§7.1: `error from server <code>: …` when the error
 * has a close code, the raw message otherwise).
 */
export function sendError(res: ServerResponse, error: unknown): void {
  const e = toVoicewireError(error);
  if (res.headersSent) {
    res.destroy(e);
    return;
  }
  if (e.code === 'NOT_FOUND') return sendJson(res, 404, { detail: e.message });
  if (e.code === 'RESIDENCY_DENIED' || e.code === 'FORWARD_FAILED' || e.code === 'FORWARD_TIMEOUT' || e.code === 'STORE_UNAVAILABLE') {
    const status = e.code === 'RESIDENCY_DENIED' ? 403 : e.code === 'FORWARD_FAILED' ? 502 : e.code === 'FORWARD_TIMEOUT' ? 504 : 503;
    res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
    res.end(e.message);
    return;
  }
  if (e.code === 'VOICE_NOT_FOUND') {
    // §7.1: an invalid voice ID is a proxy-level error, the raw string without the prefix.
    res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
    res.end(e.message);
    return;
  }
  const r = restErrorResponse(e);
  res.writeHead(r.status, { 'content-type': r.contentType, 'content-length': Buffer.byteLength(r.body) });
  res.end(r.body);
}

/** Reads a whole body, refusing more than `maxBytes` (LIMIT_EXCEEDED) before buffering it. */
export async function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (declared > maxBytes) throw new VoicewireError('LIMIT_EXCEEDED', `request body of ${declared} bytes is over the limit of ${maxBytes}`);
  const parts: Buffer[] = [];
  let n = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    n += chunk.length;
    if (n > maxBytes) throw new VoicewireError('LIMIT_EXCEEDED', `request body is over the limit of ${maxBytes} bytes`);
    parts.push(chunk);
  }
  return Buffer.concat(parts);
}

/**
 * Reads a JSON body (FastAPI's `json_invalid` 422 on bad JSON, and on JSON nested deeper than
 * `maxDepth`, checked before parsing; an empty body is `{}`).
 */
export async function readJson(req: IncomingMessage, maxBytes: number, maxDepth = MAX_JSON_DEPTH): Promise<unknown> {
  const buf = await readBody(req, maxBytes);
  if (buf.length === 0) return {};
  return parseJsonBody(buf.toString('utf8'), { maxDepth });
}

/** Yields a request body's chunks, failing with LIMIT_EXCEEDED past `maxBytes`. */
export async function* limitedBody(req: IncomingMessage, maxBytes: number): AsyncGenerator<Uint8Array> {
  let n = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    n += chunk.length;
    if (n > maxBytes) throw new VoicewireError('LIMIT_EXCEEDED', `audio body is over the limit of ${maxBytes} bytes`);
    yield chunk;
  }
}

/**
 * Writes a chunk, waiting for 'drain' when the socket buffer is full (backpressure); with
 * `stallMs`, a drain that does not come within it destroys the response and rejects (`LIMIT_EXCEEDED`).
 */
export function write(res: ServerResponse, chunk: string | Uint8Array, stallMs?: number): Promise<void> | undefined {
  if (res.write(chunk)) return undefined;
  return new Promise<void>((resolve, reject) => {
    // A client that stops reading (TCP window full) would hold the request, its session slot and
    // the engine forever: no drain within `stallMs` cuts the response (README server limits, idle).
    const timer =
      stallMs === undefined
        ? undefined
        : setTimeout(() => {
            res.off('drain', done);
            res.off('close', done);
            res.destroy();
            reject(new VoicewireError('LIMIT_EXCEEDED', `the client read nothing for ${stallMs / 1000} s`));
          }, stallMs);
    const done = (): void => {
      clearTimeout(timer);
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
