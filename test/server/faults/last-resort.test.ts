/**
 * Faults: an error that breaks the error path itself (issue 20 finding 3's second half). The
 * request's own catch and sendError used to be the last line: a throw there was an unhandled
 * rejection (`void onRequest()`) that ended the process. Now a last resort answers 500 (HTTP) or
 * `error` 1011 (WebSocket), logs, and nothing reaches the process's handlers.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { startServer, type Harness } from '../harness.js';
import { MemoryStore } from '../../../src/server/store/memory-store.js';
import { WebSocketServer } from 'ws';
import { attachWebSocketSession } from '../../../src/node/ws-session.js';
import type { ServerSession } from '../../../src/sessions/server.js';
import type { VoicewireError } from '../../../src/util/errors.js';
import { failOnProcessFaults } from '../../helpers/process-faults.js';

failOnProcessFaults();

/** A rejection value every inspection of which throws: `instanceof`, `.message`, `String()`. */
const hostile = (): unknown =>
  new Proxy(
    {},
    {
      get: () => {
        throw new Error('hostile get');
      },
      getPrototypeOf: () => {
        throw new Error('hostile prototype');
      },
    },
  );

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function hostileStoreServer(): Promise<{ h: Harness; arm: () => void }> {
  const store = new MemoryStore();
  let armed = false;
  const find = store.findApiKeyByHash.bind(store);
  store.findApiKeyByHash = (hash) => (armed ? Promise.reject(hostile()) : find(hash));
  const started = await startServer({ store });
  return { h: started, arm: () => (armed = true) };
}

describe('last resort (issue 20)', { timeout: 20_000 }, () => {
  it('HTTP: an error that breaks sendError is answered 500, logged, and the server lives', async () => {
    const s = await hostileStoreServer();
    h = s.h;
    s.arm();
    const r = await fetch(`${h.base}/voices`, { headers: { 'x-api-key': h.apiKey }, signal: AbortSignal.timeout(5000) });
    expect(r.status).toBe(500);
    expect(await r.text()).toBe('error from server 1011: internal server error');
    expect(h.logs.some((l) => l.includes('request failed past its handler'))).toBe(true);
    expect((await fetch(`${h.base}/healthz`)).status).toBe(200);
  });

  it('WebSocket: an error that breaks the route is answered error 1011 and close 1011', async () => {
    const s = await hostileStoreServer();
    h = s.h;
    s.arm();
    const ws = new WebSocket(`${h.wsBase}/speech/tts`, { headers: { 'x-api-key': h.apiKey } });
    const messages: Array<Record<string, unknown>> = [];
    ws.on('message', (d) => messages.push(JSON.parse(String(d)) as Record<string, unknown>));
    ws.on('error', () => {});
    const code = await new Promise<number>((resolve) => ws.once('close', (c) => resolve(c)));
    expect(code).toBe(1011);
    expect(messages).toEqual([{ type: 'error', message: 'internal server error', code: 1011 }]);
    expect((await fetch(`${h.base}/healthz`)).status).toBe(200);
  });

  it('attachWebSocketSession: a session whose receive throws is failed with PROTOCOL_INTERNAL, not an uncaught exception', async () => {
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise<void>((r) => wss.once('listening', () => r()));
    const failed: VoicewireError[] = [];
    wss.on('connection', (ws) => {
      attachWebSocketSession(ws, (transport) => {
        const session = {
          closed: false,
          receive: () => {
            throw new RangeError('Maximum call stack size exceeded');
          },
          fail: (e: VoicewireError) => {
            failed.push(e);
            session.closed = true;
            transport.close(1011, 'internal server error');
          },
          transportClosed: () => undefined,
        };
        return session as unknown as ServerSession<unknown>;
      });
    });
    const port = (wss.address() as { port: number }).port;
    const ws = new WebSocket(`ws://127.0.0.1:${port}`);
    ws.on('error', () => {});
    ws.once('open', () => ws.send('{"type":"setup"}'));
    const code = await new Promise<number>((resolve) => ws.once('close', (c) => resolve(c)));
    expect(code).toBe(1011);
    expect(failed.map((e) => e.code)).toEqual(['PROTOCOL_INTERNAL']);
    await new Promise<void>((r) => wss.close(() => r()));
  });
});
