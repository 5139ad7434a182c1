/**
 * The built server's defaults under the attacks of issue 20, replayed as a stranger would send
 * them: `node dist/cli.js serve` with its default engines and the watchdog of built-server.ts (a
 * server that balloons is killed, and the test fails, before it takes the machine). After every
 * attack the process must still answer /healthz: no input ends it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { has, needs } from '../helpers/tools.js';
import { built, root, startBuiltServer, sttMessages, wavHead, type BuiltServer } from './built-server.js';
import { fetchFresh } from './built-server.js';

const WATCHDOG = 2 * 2 ** 30;
const ready = built && has('pocketsphinx_continuous');

describe.skipIf(!ready)(needs('pocketsphinx_continuous', 'the built server under attack'), () => {
  let s: BuiltServer;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'voicewire-attacks-'));
    s = await startBuiltServer({ dataDir: join(dir, 'data'), maxRssBytes: WATCHDOG });
  });
  afterAll(async () => {
    await s?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function alive(): Promise<void> {
    expect(s.killedForMemory()).toBeUndefined();
    expect(s.alive(), s.output().slice(-4000)).toBe(true);
    const r = await fetchFresh(`${s.base}/healthz`);
    expect(r.status).toBe(200);
  }
  const key = () => ({ 'x-api-key': s.key, 'content-type': 'application/json' });

  const deep = (n: number, open: string, close: string, inner = '1') => open.repeat(n) + inner + close.repeat(n);

  it.each([
    ['POST', '/post/speech/tts'],
    ['POST', '/speech/tts'],
    ['POST', '/voice-generator/generate'],
    ['POST', '/voices/from-embedding'],
    ['POST', '/pronunciations'],
  ])('deep JSON on %s %s (8,000 and 100,000 levels): 422, a bounded body, and the server lives', async (method, path) => {
    for (const body of [deep(8000, '[', ']'), deep(8000, '{"a":', '}'), deep(100_000, '[', ']')]) {
      const r = await fetchFresh(`${s.base}${path}`, { method, headers: key(), body });
      const text = await r.text();
      expect(r.status, text.slice(0, 300)).toBe(422);
      expect(text.length).toBeLessThan(4096);
      await alive();
    }
  });

  it('deep JSON with only a temporary token (the 16 KB request that ended the process): refused, the server lives', async () => {
    const t = (await (await fetchFresh(`${s.base}/api-keys/token`, { headers: key() })).json()) as { token: string };
    const r = await fetchFresh(`${s.base}/voice-generator/generate?token=${encodeURIComponent(t.token)}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: deep(8000, '{"a":', '}') });
    expect(r.status).toBeGreaterThanOrEqual(400);
    await alive();
  });

  it('deep JSON as a WebSocket setup message: an error message, a close, and the server lives', async () => {
    for (const route of ['/speech/tts', '/speech/asr']) {
      const raw = await new Promise<Array<Record<string, unknown>>>((resolve, reject) => {
        const ws = new WebSocket(`${s.wsBase}${route}`, { headers: { 'x-api-key': s.key } });
        const msgs: Array<Record<string, unknown>> = [];
        ws.on('open', () => ws.send(deep(8000, '{"a":', '}')));
        ws.on('message', (d) => msgs.push(JSON.parse(d.toString()) as Record<string, unknown>));
        ws.on('close', () => resolve(msgs));
        ws.on('error', reject);
      });
      expect(raw.at(-1)?.type, JSON.stringify(raw)).toBe('error');
      await alive();
    }
  });

  it('300 multiplexed STT requests on one socket: each is answered (ready, or an error past the budget), memory stays under the watchdog', async () => {
    const clip = new Uint8Array(wavHead(readFileSync(join(root, 'fixtures/speech/librivox-0880.wav')), 0.5));
    const answered = await new Promise<Map<string, string>>((resolve, reject) => {
      const ws = new WebSocket(`${s.wsBase}/speech/asr`, { headers: { 'x-api-key': s.key } });
      const first = new Map<string, string>();
      let last: unknown;
      ws.on('open', () => {
        for (let i = 0; i < 300; i++) {
          const id = `r${i}`;
          for (const m of sttMessages(clip) as Array<{ type: string }>) ws.send(JSON.stringify({ ...m, client_req_id: id, ...(m.type === 'setup' ? { close_ws_on_eos: false } : {}) }));
        }
      });
      ws.on('message', (d) => {
        const m = JSON.parse(d.toString()) as { type: string; client_req_id?: string };
        if (m.type === 'error') last = m;
        if (m.client_req_id !== undefined && (m.type === 'ready' || m.type === 'error') && !first.has(m.client_req_id)) first.set(m.client_req_id, m.type);
        if (first.size === 300) {
          ws.close();
          resolve(first);
        }
      });
      ws.on('close', (code, reason) => {
        if (first.size < 300) console.log(`300 multiplexed: socket closed ${code} ${reason.toString()} after ${first.size} answers; types: ${[...new Set(first.values())].join(',')}; ${JSON.stringify(last)}`);
        resolve(first);
      });
      ws.on('error', reject);
      // Requests past the budget are refused at once, but the socket's messages are taken in order
      // and the admitted ones decode first: on a loaded machine the 300th answer came after 238 s
      // with nothing wrong (issue 25), so the bound is for a hang, not for speed.
      setTimeout(() => (ws.terminate(), resolve(first)), 540_000);
    });
    expect(answered.size).toBe(300);
    await alive();
  }, 600_000);

  it('connections that never send a byte are closed', async () => {
    const sockets: Socket[] = [];
    const closedAt: number[] = [];
    const t0 = Date.now();
    const port = Number(new URL(s.base).port);
    for (let i = 0; i < 50; i++) {
      const c = connect(port, '127.0.0.1');
      c.on('error', () => undefined);
      c.resume(); // read, or the server's FIN is never seen
      c.on('close', () => closedAt.push(Date.now() - t0));
      sockets.push(c);
    }
    const deadline = Date.now() + 45_000;
    while (closedAt.length < sockets.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
    for (const c of sockets) c.destroy();
    expect(closedAt.length, `${closedAt.length} of 50 idle sockets closed by the server within 45 s`).toBe(50);
    await alive();
  }, 60_000);

  it('a temporary token cannot write: generate, keep and delete candidates are refused and nothing is created', async () => {
    const t = (await (await fetchFresh(`${s.base}/api-keys/token`, { headers: key() })).json()) as { token: string };
    const q = `?token=${encodeURIComponent(t.token)}`;
    const before = ((await (await fetchFresh(`${s.base}/voices/`, { headers: key() })).json()) as unknown[]).length;
    const gen = await fetchFresh(`${s.base}/voice-generator/generate${q}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt: 'a voice', n_samples: 1, language: 'en' }) });
    expect(gen.status).toBeGreaterThanOrEqual(400);
    const g = await fetchFresh(`${s.base}/voice-generator/generate`, { method: 'POST', headers: key(), body: JSON.stringify({ prompt: 'a voice', n_samples: 1, language: 'en' }) });
    const id = ((await g.json()) as { embeddings: Array<{ embedding_id: string }> }).embeddings[0]!.embedding_id;
    const keep = await fetchFresh(`${s.base}/voices/from-embedding${q}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ voice_embedding_id: id, name: 'stolen', description: 'x' }) });
    expect(keep.status).toBeGreaterThanOrEqual(400);
    const del = await fetchFresh(`${s.base}/voice-generator/embeddings/${id}${q}`, { method: 'DELETE' });
    expect(del.status).toBeGreaterThanOrEqual(400);
    const after = ((await (await fetchFresh(`${s.base}/voices/`, { headers: key() })).json()) as unknown[]).length;
    expect(after).toBe(before);
    await alive();
  });

  it('2,000 pings: the server closes with a close frame (not 1006), and lives', async () => {
    const code = await new Promise<number>((resolve, reject) => {
      const ws = new WebSocket(`${s.wsBase}/speech/tts`, { headers: { 'x-api-key': s.key } });
      ws.on('open', () => {
        for (let i = 0; i < 2000; i++) ws.ping();
      });
      ws.on('close', (c) => resolve(c));
      ws.on('error', () => undefined);
      setTimeout(() => reject(new Error('no close within 30 s')), 30_000);
    });
    expect(code).not.toBe(1006);
    await alive();
  }, 60_000);
});
