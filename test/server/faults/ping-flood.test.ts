/**
 * Faults: a client that floods pings (issue 20 finding 8): 2,000 pings used to end in a bare
 * 1006 (the socket dropped, no close frame). Now past maxPingsPerSecond the session answers
 * `error` LIMIT_EXCEEDED and closes 1008 with a close frame; the server lives.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { startServer, type Harness } from '../harness.js';
import { failOnProcessFaults } from '../../helpers/process-faults.js';

failOnProcessFaults();

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function flood(route: string, pings: number): Promise<{ code: number; messages: Array<Record<string, unknown>> }> {
  const ws = new WebSocket(`${h!.wsBase}${route}`, { headers: { 'x-api-key': h!.apiKey } });
  const messages: Array<Record<string, unknown>> = [];
  ws.on('message', (d) => messages.push(JSON.parse(String(d)) as Record<string, unknown>));
  ws.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  ws.send(JSON.stringify({ type: 'setup', output_format: 'pcm' }));
  for (let i = 0; i < pings && ws.readyState === ws.OPEN; i++) ws.ping();
  const code = await new Promise<number>((resolve) => ws.once('close', (c) => resolve(c)));
  return { code, messages };
}

describe('ping flood (issue 20 finding 8)', { timeout: 30_000 }, () => {
  for (const route of ['/speech/tts', '/speech/asr']) {
    it(`${route}: 2,000 pings → error LIMIT_EXCEEDED, close 1008 with a close frame; the server lives`, async () => {
      h = await startServer();
      const { code, messages } = await flood(route, 2000);
      expect(code).toBe(1008);
      const error = messages.find((m) => m['type'] === 'error');
      expect(error).toMatchObject({ code: 1008 });
      expect(String(error!['message'])).toMatch(/pings/);
      expect((await fetch(`${h.base}/healthz`)).status).toBe(200);
    });
  }

  it('pings within the limit are answered and the session goes on', async () => {
    h = await startServer({ limits: { maxPingsPerSecond: 50 } });
    const ws = new WebSocket(`${h.wsBase}/speech/tts`, { headers: { 'x-api-key': h.apiKey } });
    ws.on('error', () => {});
    await new Promise<void>((r) => ws.once('open', () => r()));
    let pongs = 0;
    ws.on('pong', () => pongs++);
    for (let i = 0; i < 20; i++) ws.ping();
    await new Promise((r) => setTimeout(r, 500));
    expect(pongs).toBe(20);
    expect(ws.readyState).toBe(ws.OPEN);
    ws.close();
  });
});
