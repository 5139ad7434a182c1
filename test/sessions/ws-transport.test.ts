/**
 * The `ws` transport of the server sessions (src/node/ws-session.ts, issue 22): the frames sent in
 * one turn leave the process in one socket write (a write per message was 18 % of a loaded
 * server), and backpressure is the socket's: `false` past its high-water mark, `drained` once the
 * peer has read.
 */
import { afterEach, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { webSocketTransport } from '../../src/node/ws-session.js';

let wss: WebSocketServer | undefined;
let client: WebSocket | undefined;
afterEach(async () => {
  client?.terminate();
  await new Promise((r) => (wss ? wss.close(r) : r(undefined)));
  wss = undefined;
});

/** A server-side ws socket with its client connected. */
async function pair(): Promise<{ server: WebSocket; client: WebSocket; received: string[] }> {
  wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise((r) => wss!.once('listening', r));
  const { port } = wss.address() as { port: number };
  const server = new Promise<WebSocket>((r) => wss!.once('connection', r));
  client = new WebSocket(`ws://127.0.0.1:${port}`);
  const received: string[] = [];
  client.on('message', (d) => received.push(String(d)));
  await new Promise((r) => client!.once('open', r));
  return { server: await server, client, received };
}

it('the frames of one turn leave in one socket write, in order', async () => {
  const { server, received } = await pair();
  const net = (server as unknown as { _socket: { _writev: (...a: unknown[]) => unknown; _write: (...a: unknown[]) => unknown } })._socket;
  let writes = 0;
  for (const m of ['_writev', '_write'] as const) {
    const f = net[m].bind(net);
    net[m] = (...a: unknown[]) => {
      writes++;
      return f(...a);
    };
  }
  const t = webSocketTransport(server);
  for (let i = 0; i < 8; i++) t.send(`{"n":${i},"pad":"${'x'.repeat(1000)}"}`);
  await new Promise((r) => setTimeout(r, 200));
  expect(received.map((m) => (JSON.parse(m) as { n: number }).n)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  expect(writes).toBe(1);
});

it('past the socket high-water mark send answers false, and drained resolves once the peer reads', async () => {
  const { server, client: c, received } = await pair();
  c.pause();
  const t = webSocketTransport(server);
  const big = `"${'y'.repeat(100_000)}"`;
  // 20 MB: more than the kernel's socket buffers hold while the peer does not read.
  let full = false;
  for (let i = 0; i < 200; i++) full = t.send(big) === false || full;
  expect(full).toBe(true);
  let drained = false;
  // Every send that found the buffer full waits on the same drain (no listener per send).
  const waits = Array.from({ length: 50 }, () => t.drained!());
  expect(new Set(waits).size).toBe(1);
  const d = waits[0]!.then(() => (drained = true));
  await new Promise((r) => setTimeout(r, 200));
  expect(drained).toBe(false);
  c.resume();
  await d;
  expect(received.length).toBeGreaterThan(0);
});
