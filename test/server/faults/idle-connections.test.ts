/**
 * Faults: connections that never send a request, and too many connections (issue 20 finding 5).
 * A socket that never sent a byte used to stay open forever (3,000 idle sockets held 15,000
 * descriptors); now each is closed within headersTimeout (+ two checks), a keep-alive connection
 * idle after its response within keepAliveTimeout, and connections past the per-address and
 * total caps are closed at once.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { connect as tcp, type Socket } from 'node:net';
import { startServer, type Harness } from '../harness.js';
import { failOnProcessFaults } from '../../helpers/process-faults.js';

failOnProcessFaults();

let h: Harness | undefined;
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await h?.close();
  h = undefined;
});

const portOf = (x: Harness): number => Number(new URL(x.base).port);

/** A connected raw socket; `closedAt` resolves with ms since connect when the server closes it. */
async function open(port: number): Promise<{ s: Socket; closedAt: Promise<number>; closed: () => boolean; data: () => string }> {
  const s = tcp(port, '127.0.0.1');
  sockets.push(s);
  s.on('error', () => {});
  let data = '';
  s.on('data', (d: Buffer) => (data += d.toString()));
  await new Promise<void>((r) => s.once('connect', () => r()));
  const t0 = Date.now();
  let done = false;
  const closedAt = new Promise<number>((r) =>
    s.once('close', () => {
      done = true;
      r(Date.now() - t0);
    }),
  );
  return { s, closedAt, closed: () => done, data: () => data };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('idle connections (issue 20 finding 5)', { timeout: 30_000 }, () => {
  it('a socket that never sends a byte is closed within headersTimeout (1 s) + slack', async () => {
    h = await startServer({ limits: { headersTimeoutMs: 1000, requestTimeoutMs: 1500 } });
    const c = await open(portOf(h));
    const ms = await Promise.race([c.closedAt, sleep(6000).then(() => -1)]);
    expect(ms, 'still open after 6 s').toBeGreaterThan(0);
    expect(ms).toBeGreaterThanOrEqual(900);
    expect(ms).toBeLessThan(4000);
    expect((await fetch(`${h.base}/healthz`)).status).toBe(200);
  });

  it('with the defaults, a silent socket is closed within 10 s + 2 s of checks + slack', { timeout: 40_000 }, async () => {
    h = await startServer();
    const c = await open(portOf(h));
    const ms = await Promise.race([c.closedAt, sleep(20_000).then(() => -1)]);
    expect(ms, 'still open after 20 s').toBeGreaterThan(0);
    expect(ms).toBeGreaterThanOrEqual(9_500);
    expect(ms).toBeLessThan(16_000);
  });

  it('a keep-alive connection idle after its response is closed within keepAliveTimeout (1 s) + slack', async () => {
    h = await startServer({ limits: { keepAliveTimeoutMs: 1000 } });
    const c = await open(portOf(h));
    c.s.write('GET /api/healthz HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n');
    const ms = await Promise.race([c.closedAt, sleep(6000).then(() => -1)]);
    expect(c.data()).toMatch(/^HTTP\/1\.1 200/);
    expect(ms, 'still open after 6 s').toBeGreaterThan(0);
    expect(ms).toBeLessThan(4000);
  });

  it('a slowloris peer still gets its 408 (the silent-socket timer does not pre-empt it)', async () => {
    h = await startServer({ limits: { headersTimeoutMs: 1000, requestTimeoutMs: 1500 } });
    const c = await open(portOf(h));
    c.s.write('GET /api/healthz HTTP/1.1\r\nHost: x\r\n');
    const t = setInterval(() => c.s.writable && c.s.write('X'), 100);
    await c.closedAt;
    clearInterval(t);
    expect(c.data()).toMatch(/^HTTP\/1\.1 408/);
  });

  it('a long request is not cut by the silent-socket timer once its headers came', async () => {
    h = await startServer({ limits: { headersTimeoutMs: 1000, requestTimeoutMs: 5000 } });
    const c = await open(portOf(h));
    const body = JSON.stringify({ text: 'hello', output_format: 'pcm', only_audio: true });
    c.s.write(`POST /api/post/speech/tts HTTP/1.1\r\nHost: x\r\nx-api-key: ${h.apiKey}\r\ncontent-length: ${body.length}\r\n\r\n`);
    // The body arrives after the headers timeout (+ checks) has passed.
    await sleep(2500);
    expect(c.closed()).toBe(false);
    c.s.write(body);
    const until = Date.now() + 5000;
    while (!/\r\n\r\n/.test(c.data()) && Date.now() < until) await sleep(20);
    expect(c.data()).toMatch(/^HTTP\/1\.1 200/);
  });
});

describe('connection caps (issue 20 finding 5)', { timeout: 30_000 }, () => {
  it('past connectionsPerAddress, new sockets from that address are closed at once; the ones held stay', async () => {
    h = await startServer({ limits: { connectionsPerAddress: 20 } });
    const port = portOf(h);
    const held = [];
    for (let i = 0; i < 20; i++) held.push(await open(port));
    await sleep(200);
    const extra = await Promise.all(Array.from({ length: 10 }, () => open(port)));
    const times = await Promise.all(extra.map((c) => Promise.race([c.closedAt, sleep(3000).then(() => -1)])));
    for (const t of times) {
      expect(t, 'an extra socket still open after 3 s').toBeGreaterThanOrEqual(0);
      expect(t).toBeLessThan(1000);
    }
    expect(held.filter((c) => c.closed())).toEqual([]);
    // Once they go, the address may connect again.
    for (const c of held) c.s.destroy();
    await sleep(200);
    expect((await fetch(`${h.base}/healthz`)).status).toBe(200);
  });

  it('past maxConnections, new sockets are closed at once', async () => {
    h = await startServer({ limits: { maxConnections: 10 } });
    const port = portOf(h);
    const held = [];
    for (let i = 0; i < 10; i++) held.push(await open(port));
    await sleep(200);
    const extra = await Promise.all(Array.from({ length: 5 }, () => open(port)));
    const times = await Promise.all(extra.map((c) => Promise.race([c.closedAt, sleep(3000).then(() => -1)])));
    for (const t of times) {
      expect(t, 'an extra socket still open after 3 s').toBeGreaterThanOrEqual(0);
      expect(t).toBeLessThan(1000);
    }
    expect(held.filter((c) => c.closed())).toEqual([]);
    for (const c of held) c.s.destroy();
    await sleep(200);
    expect((await fetch(`${h.base}/healthz`)).status).toBe(200);
  });

  it('500 silent sockets with the default limits: 256 held, the rest closed at once, all gone within headersTimeout + slack', async () => {
    h = await startServer({ limits: { headersTimeoutMs: 2000, requestTimeoutMs: 3000 } });
    const port = portOf(h);
    const all = [];
    for (let i = 0; i < 500; i += 50) all.push(...(await Promise.all(Array.from({ length: 50 }, () => open(port)))));
    await sleep(500);
    expect(all.filter((c) => c.closed()).length).toBe(500 - 256);
    const ms = await Promise.race([Promise.all(all.map((c) => c.closedAt)).then(() => 1), sleep(8000).then(() => -1)]);
    expect(ms, 'some silent socket still open after 8 s').toBe(1);
    expect((await fetch(`${h.base}/healthz`)).status).toBe(200);
  });
});
