/**
 * Faults: slow HTTP clients (issue 16 "Faults"): slowloris headers and a body trickled byte by
 * byte are cut by the server within the headers / request timeouts (short ones here), not held.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { connect as tcp, type Socket } from 'node:net';
import { startServer, type Harness } from '../harness.js';

let h: Harness | undefined;
const sockets: Socket[] = [];
const timers: NodeJS.Timeout[] = [];
afterEach(async () => {
  for (const t of timers.splice(0)) clearInterval(t);
  for (const s of sockets.splice(0)) s.destroy();
  await h?.close();
  h = undefined;
});

/** Opens a raw TCP connection, writes `head`, then one byte of `trickle` every `everyMs`; resolves when the server closes it. */
async function trickle(port: number, head: string, trickleText: string, everyMs: number): Promise<{ ms: number; answer: string; sent: number }> {
  const s = tcp(port, '127.0.0.1');
  sockets.push(s);
  await new Promise<void>((r) => s.once('connect', () => r()));
  let answer = '';
  s.on('data', (d: Buffer) => (answer += d.toString()));
  s.on('error', () => {});
  const t0 = Date.now();
  s.write(head);
  let i = 0;
  const t = setInterval(() => {
    if (i < trickleText.length && !s.destroyed && s.writable) s.write(trickleText[i++]!);
  }, everyMs);
  timers.push(t);
  await new Promise<void>((r) => s.once('close', () => r()));
  clearInterval(t);
  return { ms: Date.now() - t0, answer, sent: i };
}

describe('slow HTTP clients', { timeout: 15_000 }, () => {
  it('slowloris headers (a byte every 100 ms): the socket is closed within headersTimeout (1 s) + 1.5 s', async () => {
    h = await startServer({ limits: { headersTimeoutMs: 1000, requestTimeoutMs: 1500 } });
    const port = Number(new URL(h.base).port);
    const r = await trickle(port, 'GET /api/healthz HTTP/1.1\r\nHost: x\r\n', 'X-Slow: ' + 'a'.repeat(500), 100);
    expect(r.ms).toBeLessThan(2500);
    expect(r.sent).toBeLessThan(500);
    expect(r.answer).toMatch(/^HTTP\/1\.1 408/);
    expect((await fetch(`${h.base}/healthz`)).status).toBe(200);
  });

  it('a body trickled a byte every 100 ms: the request is cut within requestTimeout (1.5 s) + 1.5 s', async () => {
    h = await startServer({ limits: { headersTimeoutMs: 1000, requestTimeoutMs: 1500 } });
    const port = Number(new URL(h.base).port);
    const body = JSON.stringify({ text: 'a'.repeat(300), output_format: 'pcm' });
    const r = await trickle(port, `POST /api/post/speech/tts HTTP/1.1\r\nHost: x\r\nx-api-key: ${h.apiKey}\r\ncontent-length: ${body.length}\r\n\r\n`, body, 100);
    expect(r.ms).toBeLessThan(3000);
    expect(r.sent).toBeLessThan(body.length);
    expect(r.answer).toMatch(/^HTTP\/1\.1 408/);
    // The session it opened is released (the close reaches the route a moment after the 408).
    const until = Date.now() + 2000;
    while (h.server.context.sessions.live !== 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    expect(h.server.context.sessions.live).toBe(0);
  });
});
