/**
 * A running server on 127.0.0.1:0 with a memory store, its bootstrap keys, and every log line it
 * wrote; plus small `fetch` and `ws` helpers. Each test closes what it starts.
 */
import { WebSocket } from 'ws';
import { createVoiceServer, type VoiceServer, type VoiceServerOptions } from '../../src/server/server.js';
import { MemoryStore } from '../../src/server/store/memory-store.js';
import { bootstrap } from '../../src/server/bootstrap.js';

export interface Harness {
  server: VoiceServer;
  store: MemoryStore;
  base: string;
  wsBase: string;
  apiKey: string;
  adminKey: string;
  logs: string[];
  close(): Promise<void>;
}

export async function startServer(options: Partial<VoiceServerOptions> = {}): Promise<Harness> {
  const store = (options.store as MemoryStore | undefined) ?? new MemoryStore();
  const boot = await bootstrap(store);
  const logs: string[] = [];
  const server = await createVoiceServer({ tts: 'tone', stt: 'tone', ...options, store, logDestination: { write: (line: string) => void logs.push(line) } });
  const { port } = await server.listen(0, '127.0.0.1');
  return {
    server,
    store,
    base: `http://127.0.0.1:${port}/api`,
    wsBase: `ws://127.0.0.1:${port}/api`,
    apiKey: boot!.apiKey,
    adminKey: boot!.adminKey,
    logs,
    close: () => server.close(),
  };
}

export interface WsConversation {
  ws: WebSocket;
  messages: Array<Record<string, unknown>>;
  closed: Promise<{ code: number; reason: string }>;
  opened: Promise<void>;
  /** Resolves once a message satisfies `pred` (or rejects when the socket closes first). */
  waitFor(pred: (m: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  send(m: unknown): void;
}

export function connect(url: string, headers: Record<string, string> = {}): WsConversation {
  const ws = new WebSocket(url, { headers });
  const messages: Array<Record<string, unknown>> = [];
  const waiters: Array<{ pred: (m: Record<string, unknown>) => boolean; resolve: (m: Record<string, unknown>) => void; reject: (e: Error) => void }> = [];
  ws.on('message', (data) => {
    const m = JSON.parse(String(data)) as Record<string, unknown>;
    messages.push(m);
    for (const w of [...waiters]) if (w.pred(m)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(m);
    }
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.once('close', (code, reason) => {
      for (const w of waiters.splice(0)) w.reject(new Error(`closed ${code} before the awaited message`));
      resolve({ code, reason: reason.toString() });
    }),
  );
  const opened = new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const queue: string[] = [];
  ws.once('open', () => {
    for (const q of queue.splice(0)) ws.send(q);
  });
  return {
    ws,
    messages,
    closed,
    opened,
    waitFor: (pred) => {
      const found = messages.find(pred);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => waiters.push({ pred, resolve, reject }));
    },
    send: (m) => {
      const text = typeof m === 'string' ? m : JSON.stringify(m);
      if (ws.readyState === ws.OPEN) ws.send(text);
      else queue.push(text);
    },
  };
}

/** Decodes the base64 `audio` of TTS messages into one byte array. */
export function audioBytes(messages: ReadonlyArray<Record<string, unknown>>): Buffer {
  return Buffer.concat(messages.filter((m) => m['type'] === 'audio').map((m) => Buffer.from(String(m['audio']), 'base64')));
}
