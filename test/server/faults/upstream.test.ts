/**
 * Faults: the core API down or slow behind the forwarding route (§4.13, issue 16 "Faults"): a
 * closed port answers 502 `FORWARD_FAILED`, a core that never answers 504 `FORWARD_TIMEOUT` within
 * the upstream timeout; neither hangs the client nor the server.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createServer, type Server, type Socket } from 'node:net';
import { startServer, type Harness } from '../harness.js';

let h: Harness | undefined;
let silent: Server | undefined;
const held: Socket[] = [];
afterEach(async () => {
  await h?.close();
  h = undefined;
  for (const s of held.splice(0)) s.destroy();
  await new Promise<void>((r) => (silent ? silent.close(() => r()) : r()));
  silent = undefined;
});

/** A port that was bound and released: nothing listens there. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const { port } = s.address() as { port: number };
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('core API faults', { timeout: 15_000 }, () => {
  it('core down (closed port): 502 with a clear message within 2 s', async () => {
    h = await startServer({ coreUrl: `http://127.0.0.1:${await closedPort()}` });
    const t0 = Date.now();
    const r = await fetch(`${h.base}/usages/summary`, { headers: { 'x-api-key': h.apiKey }, signal: AbortSignal.timeout(10_000) });
    expect(r.status).toBe(502);
    // The address and errno are for the logs, with the request id, not for the client (issue 20 §8).
    expect(await r.text()).toBe('core API unreachable');
    const line = h.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l['code'] === 'FORWARD_FAILED')!;
    expect(line['reason']).toMatch(/ECONNREFUSED/);
    expect(typeof line['request_id']).toBe('string');
    expect(Date.now() - t0).toBeLessThan(2000);
  });

  it('core accepts but never answers: 504 within the upstream timeout (0.8 s here) + 1.5 s; a POST body too', async () => {
    silent = createServer((s) => {
      held.push(s);
      s.resume();
    });
    await new Promise<void>((r) => silent!.listen(0, '127.0.0.1', () => r()));
    const { port } = silent.address() as { port: number };
    h = await startServer({ coreUrl: `http://127.0.0.1:${port}`, limits: { upstreamTimeoutMs: 800 } });
    for (const init of [{}, { method: 'POST', body: JSON.stringify({ a: 1 }) }]) {
      const t0 = Date.now();
      const r = await fetch(`${h.base}/usages/summary`, { ...init, headers: { 'x-api-key': h.apiKey }, signal: AbortSignal.timeout(10_000) });
      expect(r.status).toBe(504);
      expect(await r.text()).toMatch(/core API did not answer within 0.8 s/);
      expect(Date.now() - t0).toBeLessThan(2300);
    }
    // The server still serves.
    expect((await fetch(`${h.base}/healthz`)).status).toBe(200);
  });

  it('core answers the headers, then stalls the body: the response is cut within the upstream timeout + 1.5 s', async () => {
    silent = createServer((s) => {
      held.push(s);
      s.once('data', () => s.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"partial":'));
    });
    await new Promise<void>((r) => silent!.listen(0, '127.0.0.1', () => r()));
    const { port } = silent.address() as { port: number };
    h = await startServer({ coreUrl: `http://127.0.0.1:${port}`, limits: { upstreamTimeoutMs: 800 } });
    const t0 = Date.now();
    const r = await fetch(`${h.base}/usages/summary`, { headers: { 'x-api-key': h.apiKey }, signal: AbortSignal.timeout(10_000) });
    expect(r.status).toBe(200);
    await expect(r.text()).rejects.toThrow();
    expect(Date.now() - t0).toBeLessThan(2300);
  });
});
