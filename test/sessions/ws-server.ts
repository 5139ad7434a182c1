/**
 * A tiny WebSocket server and client for the integration test: the session runners behind real
 * `ws` sockets on 127.0.0.1 (port 0). The glue is the whole "reference server": route by path,
 * forward frames to the session, and give the session a transport that writes to the socket.
 */
import { WebSocket, WebSocketServer } from 'ws';
import type { AddressInfo } from 'node:net';
import {
  createSttClientSession,
  createSttServerSession,
  createTtsClientSession,
  createTtsServerSession,
  type ServerSession,
  type SttClientEvent,
  type SttClientSession,
  type SttEngine,
  type TtsClientEvent,
  type TtsClientSession,
  type TtsEngine,
} from '../../src/index.js';

export interface TestServer {
  url: string;
  close(): Promise<void>;
}

export async function startTestServer(engines: { stt: () => SttEngine; tts: () => TtsEngine }): Promise<TestServer> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
  wss.on('connection', (ws, req) => {
    const transport = { send: (text: string) => ws.send(text), close: (code: number, reason: string) => ws.close(code, reason) };
    let session: ServerSession<unknown>;
    if (req.url?.startsWith('/speech/asr')) session = createSttServerSession({ engine: engines.stt(), transport });
    else if (req.url?.startsWith('/speech/tts')) session = createTtsServerSession({ engine: engines.tts(), transport });
    else return ws.close(1008, 'unknown route');
    ws.on('message', (data, isBinary) => session.receive(isBinary ? (data as Buffer) : (data as Buffer).toString('utf8')));
    ws.on('close', () => session.transportClosed());
  });
  const { port } = wss.address() as AddressInfo;
  return {
    url: `ws://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const c of wss.clients) c.terminate();
        wss.close(() => resolve());
      }),
  };
}

export interface TestClient<S, E> {
  ws: WebSocket;
  session: S;
  events: E[];
  /** Resolves with the close code and reason the client saw. */
  closed: Promise<{ code: number; reason: string }>;
}

async function open(url: string): Promise<{ ws: WebSocket; closed: Promise<{ code: number; reason: string }> }> {
  const ws = new WebSocket(url);
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return { ws, closed };
}

export async function connectStt(url: string): Promise<TestClient<SttClientSession, SttClientEvent>> {
  const { ws, closed } = await open(`${url}/speech/asr`);
  const events: SttClientEvent[] = [];
  const session = createSttClientSession({ transport: { send: (t) => ws.send(t), close: (c, r) => ws.close(c, r) }, onEvent: (e) => events.push(e) });
  ws.on('message', (data) => session.receive((data as Buffer).toString('utf8')));
  ws.on('close', (code, reason) => session.transportClosed(code, reason.toString()));
  return { ws, session, events, closed };
}

export async function connectTts(url: string): Promise<TestClient<TtsClientSession, TtsClientEvent>> {
  const { ws, closed } = await open(`${url}/speech/tts`);
  const events: TtsClientEvent[] = [];
  const session = createTtsClientSession({ transport: { send: (t) => ws.send(t), close: (c, r) => ws.close(c, r) }, onEvent: (e) => events.push(e) });
  ws.on('message', (data) => session.receive((data as Buffer).toString('utf8')));
  ws.on('close', (code, reason) => session.transportClosed(code, reason.toString()));
  return { ws, session, events, closed };
}
