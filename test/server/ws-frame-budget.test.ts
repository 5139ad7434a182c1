/**
 * The frame turn budget on real `ws` sockets (attachWebSocketSession's `frameBudget`, issue 34):
 * a socket that closes with frames queued loses them (none reaches its session after the close),
 * and the budget's hold on a socket's reading does not undo the session's own pause.
 */
import { afterEach, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { attachWebSocketSession, webSocketFrameBudget, type WebSocketTransport, type WsFrameBudget } from '../../src/node/ws-session.js';
import type { ServerSession } from '../../src/sessions/server-session.js';

let wss: WebSocketServer | undefined;
let client: WebSocket | undefined;
afterEach(async () => {
  client?.terminate();
  // A paused server socket would not read the peer's end: the server ends it.
  for (const ws of wss?.clients ?? []) ws.terminate();
  await new Promise((r) => (wss ? wss.close(r) : r(undefined)));
  wss = undefined;
});

function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

/** A session that takes `ms` per frame and counts them; `onFirst` runs at its first frame. */
function slowSession(ms: number, onFirst: (t: WebSocketTransport) => void) {
  const s = { received: 0, closed: false, receivedAfterClose: 0 };
  const create = (transport: WebSocketTransport): ServerSession<null> => ({
    receive: () => {
      if (s.closed) s.receivedAfterClose++;
      if (s.received++ === 0) onFirst(transport);
      busy(ms);
    },
    transportClosed: () => {
      s.closed = true;
    },
    fail: () => {},
    state: null,
    get closed() {
      return s.closed;
    },
    whenIdle: () => Promise.resolve(),
  });
  return { s, create };
}

async function pair(budget: WsFrameBudget, create: (t: WebSocketTransport) => ServerSession<null>): Promise<{ server: WebSocket; client: WebSocket }> {
  wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise((r) => wss!.once('listening', r));
  const { port } = wss.address() as { port: number };
  const server = new Promise<WebSocket>((r) =>
    wss!.once('connection', (ws) => {
      attachWebSocketSession(ws, create, { frameBudget: budget });
      r(ws);
    }),
  );
  client = new WebSocket(`ws://127.0.0.1:${port}`);
  await new Promise((r) => client!.once('open', r));
  return { server: await server, client };
}

it('a socket that closes with frames queued: they are dropped, none reaches the closed session', async () => {
  const budget = webSocketFrameBudget({ budgetMs: 1, maxQueuedPerOwner: 1000 });
  let first!: () => void;
  const firstSeen = new Promise<void>((r) => (first = r));
  const { s, create } = slowSession(3, () => first());
  const { server, client: c } = await pair(budget, create);
  for (let i = 0; i < 100; i++) c.send(`{"type":"text","n":${i}}`);
  await firstSeen;
  c.terminate();
  await new Promise((r) => server.once('close', r));
  await new Promise((r) => setTimeout(r, 300));
  expect(s.closed).toBe(true);
  expect(s.received).toBeLessThan(100);
  expect(s.receivedAfterClose).toBe(0);
  expect(budget.queued).toBe(0);
});

it('the budget’s hold on reading ends without resuming a socket its session paused', async () => {
  const budget = webSocketFrameBudget({ budgetMs: 1, maxQueuedPerOwner: 2 });
  const { s, create } = slowSession(2, (t) => t.pauseReading());
  const { server, client: c } = await pair(budget, create);
  for (let i = 0; i < 20; i++) c.send(`{"type":"text","n":${i}}`);
  // Every frame read before the pause is handled; the budget held and released the socket.
  for (let i = 0; i < 100 && (s.received === 0 || budget.queued > 0); i++) await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, 100));
  expect(s.received).toBeGreaterThan(2);
  expect(budget.queued).toBe(0);
  expect(server.isPaused).toBe(true);
});
