/**
 * Forwarding to the core API (§4.13) with undici (kept library, not a hand-written proxy): method,
 * path, query, headers and body stream both ways. The caller was authenticated (and its residency
 * checked) before this runs, so a denied request's body is never read. Hop-by-hop headers are
 * dropped (RFC 9110 §7.6.1); the API key goes on to the core. A core that does not answer the
 * headers within `timeoutMs` is a 504 `FORWARD_TIMEOUT`; one that stalls a body that long has its
 * response cut (undici's own defaults are 300 s, long enough to hold a client and a socket).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { request } from 'undici';
import { VoicewireError } from '../../util/errors.js';
import type { RequestScope } from '../context.js';

const HOP = new Set(['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host']);

export function createForwarder(coreUrl: string, timeoutMs: number): (scope: RequestScope, req: IncomingMessage, res: ServerResponse) => Promise<void> {
  return async (scope, req, res) => {
    const target = `${coreUrl}${req.url ?? '/'}`;
    const headers: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && !HOP.has(k)) headers[k] = v;
    headers['x-request-id'] = scope.requestId;
    const method = (req.method ?? 'GET') as 'GET';
    let upstream;
    try {
      upstream = await request(target, { method, headers, body: method === 'GET' || method === ('HEAD' as string) ? null : req, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
    } catch (err) {
      if ((err as { code?: string }).code === 'UND_ERR_HEADERS_TIMEOUT') {
        throw new VoicewireError('FORWARD_TIMEOUT', `core API did not answer within ${timeoutMs / 1000} s`, { cause: err });
      }
      throw new VoicewireError('FORWARD_FAILED', `core API unreachable: ${(err as Error).message}`, { cause: err });
    }
    const out: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(upstream.headers)) if (v !== undefined && !HOP.has(k)) out[k] = v;
    res.writeHead(upstream.statusCode, out);
    await pipeline(upstream.body, res);
  };
}
