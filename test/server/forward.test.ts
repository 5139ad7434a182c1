/**
 * The forwarding route (§4.13) forwards what the API names and nothing a client can smuggle
 * (issue 20 §8): only GET, POST, PUT, PATCH and DELETE (others 405), the normalised path (no
 * percent-encoded `..` or `/` that the core would decode into a step out of /api), no hop-by-hop
 * headers nor the ones `Connection:` names (both ways), and `X-Forwarded-For` with the peer's
 * address appended to whatever the client claimed.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startServer, type Harness } from './harness.js';

let h: Harness | undefined;
let core: Server | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  if (core) await new Promise((r) => core!.close(r));
  core = undefined;
});

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
}

async function withCore(): Promise<Seen[]> {
  const seen: Seen[] = [];
  core = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers });
      res.writeHead(200, { 'content-type': 'text/plain', connection: 'x-core-secret', 'x-core-secret': 'internal', 'keep-alive': 'timeout=5', 'proxy-authenticate': 'Basic', 'x-core': 'yes' });
      res.end('core');
    });
  });
  await new Promise<void>((r) => core!.listen(0, '127.0.0.1', r));
  h = await startServer({ coreUrl: `http://127.0.0.1:${(core.address() as AddressInfo).port}` });
  return seen;
}

/** A raw request (fetch refuses TRACE and rewrites some paths). */
function raw(method: string, path: string, headers: Record<string, string>): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  const u = new URL(h!.base);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, method, path, headers }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the forwarding route', () => {
  it('forwards GET, POST, PUT, PATCH, DELETE; any other method is 405 and never reaches the core', async () => {
    const seen = await withCore();
    const key = { 'x-api-key': h!.apiKey };
    for (const m of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']) expect((await raw(m, '/api/things/1', key)).status, m).toBe(200);
    for (const m of ['TRACE', 'OPTIONS', 'PROPFIND', 'MKCOL', 'HEAD']) {
      const r = await raw(m, '/api/things/1', key);
      expect(r.status, m).toBe(405);
      expect(r.headers['allow']).toBe('GET, POST, PUT, PATCH, DELETE');
    }
    expect(seen.map((s) => s.method)).toEqual(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);
  });

  it('forwards the normalised path; an encoded `..`, `.` or `/` segment (a step out of /api once the core decodes it) is refused', async () => {
    const seen = await withCore();
    const key = { 'x-api-key': h!.apiKey };
    expect((await raw('GET', '/api/things/./a/../b?q=%2e%2e', key)).status).toBe(200);
    expect((await raw('GET', '/api/things/%2E%2e/b', key)).status).toBe(200); // WHATWG: %2e%2e is `..`
    for (const path of ['/api/..%2f..%2fadmin', '/api/x/%2e%2e%2fadmin', '/api/a%5c..%5cadmin', '/api/x/%2F', '/api/x/..%5c']) {
      const r = await raw('GET', path, key);
      expect(r.status, path).toBe(404);
      expect(JSON.parse(r.body), path).toEqual({ detail: 'Not Found' });
    }
    expect(seen.map((s) => s.url)).toEqual(['/api/things/b?q=%2e%2e', '/api/b']);
  });

  it('drops hop-by-hop headers and the ones Connection names, both ways; appends the peer to X-Forwarded-For', async () => {
    const seen = await withCore();
    const r = await raw('GET', '/api/things', {
      'x-api-key': h!.apiKey,
      connection: 'keep-alive, x-secret-hop',
      'x-secret-hop': 'for the next hop only',
      'keep-alive': 'timeout=5',
      'proxy-authorization': 'Basic eA==',
      'proxy-connection': 'keep-alive',
      te: 'trailers',
      upgrade: 'h2c',
      'x-forwarded-for': '10.9.9.9',
      'x-kept': 'yes',
    });
    expect(r.status).toBe(200);
    const got = seen[0]!.headers;
    for (const k of ['x-secret-hop', 'keep-alive', 'proxy-authorization', 'proxy-connection', 'te', 'upgrade']) expect(got[k], k).toBeUndefined();
    expect(got['connection']).not.toMatch(/x-secret-hop/);
    expect(got['x-kept']).toBe('yes');
    expect(got['x-api-key']).toBe(h!.apiKey);
    // The client's claim is kept for the core to see, the address that connected is appended last.
    expect(got['x-forwarded-for']).toBe('10.9.9.9, 127.0.0.1');
    expect(r.headers['x-core']).toBe('yes');
    for (const k of ['x-core-secret', 'proxy-authenticate']) expect(r.headers[k], k).toBeUndefined();
    const plain = await raw('GET', '/api/things', { 'x-api-key': h!.apiKey });
    expect(plain.status).toBe(200);
    expect(seen[1]!.headers['x-forwarded-for']).toBe('127.0.0.1');
  });
});
