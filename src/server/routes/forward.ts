/**
 * Forwarding to the core API (§4.13) with undici (kept library, not a hand-written proxy): method,
 * path, query, headers and body stream both ways. The caller was authenticated (and its residency
 * checked) before this runs, so a denied request's body is never read. A core that does not answer
 * the headers within `timeoutMs` is a 504 `FORWARD_TIMEOUT`; one that stalls a body that long has
 * its response cut (undici's own defaults are 300 s, long enough to hold a client and a socket).
 *
 * What a client cannot smuggle through (issue 20 §8):
 * - methods: GET, POST, PUT, PATCH and DELETE only (§4.13); any other is 405 with `Allow`;
 * - the path: WHATWG's normalised `pathname` plus the query, never the raw target, and a segment
 *   that decodes to `.`, `..` or holds `/` or `\` is 404: the core would decode `..%2f` into a
 *   step out of /api;
 * - headers: hop-by-hop ones (RFC 9110 §7.6.1: Connection, Keep-Alive, Proxy-*, TE, Trailer,
 *   Transfer-Encoding, Upgrade) and those `Connection` names are dropped, both ways;
 * - `X-Forwarded-For`: the peer's address is appended; the client's own value is passed on as a
 *   claim, never trusted here for anything.
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { request } from 'undici';
import { VoicewireError } from '../../util/errors.js';
import type { RequestScope } from '../context.js';

/** The methods §4.13 forwards. */
export const FORWARDED_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
type ForwardedMethod = (typeof FORWARDED_METHODS)[number];

const HOP = new Set(['connection', 'keep-alive', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host']);

/** Headers to pass on: without hop-by-hop ones and those the `Connection` header names. */
function endToEnd(headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>): Record<string, string | string[]> {
  const named = new Set<string>();
  const connection = headers['connection'];
  for (const v of Array.isArray(connection) ? connection : [connection ?? '']) for (const n of v.split(',')) named.add(n.trim().toLowerCase());
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(headers)) {
    const name = k.toLowerCase();
    if (v === undefined || HOP.has(name) || name.startsWith('proxy-') || named.has(name)) continue;
    out[name] = v;
  }
  return out;
}

/** The path to forward, or undefined when a segment would decode into a step out of it. */
function safePath(url: URL): string | undefined {
  for (const segment of url.pathname.split('/')) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      return undefined;
    }
    if (decoded === '.' || decoded === '..' || decoded.includes('/') || decoded.includes('\\')) return undefined;
  }
  return `${url.pathname}${url.search}`;
}

export function createForwarder(coreUrl: string, timeoutMs: number): (scope: RequestScope, req: IncomingMessage, res: ServerResponse) => Promise<void> {
  return async (scope, req, res) => {
    const method = (req.method ?? 'GET') as ForwardedMethod;
    if (!FORWARDED_METHODS.includes(method)) {
      const body = JSON.stringify({ detail: 'Method Not Allowed' });
      res.writeHead(405, { allow: FORWARDED_METHODS.join(', '), 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    const path = safePath(scope.url);
    if (path === undefined) throw new VoicewireError('NOT_FOUND', 'Not Found');
    const headers = endToEnd(req.headers);
    const claimed = headers['x-forwarded-for'];
    const peer = req.socket.remoteAddress ?? 'unknown';
    headers['x-forwarded-for'] = claimed === undefined ? peer : `${([] as string[]).concat(claimed).join(', ')}, ${peer}`;
    headers['x-request-id'] = scope.requestId;
    let upstream;
    try {
      upstream = await request(`${coreUrl}${path}`, { method, headers, body: method === 'GET' ? null : req, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
    } catch (err) {
      if ((err as { code?: string }).code === 'UND_ERR_HEADERS_TIMEOUT') {
        throw new VoicewireError('FORWARD_TIMEOUT', `core API did not answer within ${timeoutMs / 1000} s`, { cause: err });
      }
      // The cause's text (an address, a port) is for the logs (server.ts logs it with the request id).
      throw new VoicewireError('FORWARD_FAILED', 'core API unreachable', { cause: err });
    }
    res.writeHead(upstream.statusCode, endToEnd(upstream.headers));
    await pipeline(upstream.body, res);
  };
}
