/**
 * /v1/realtime under the server's limits, as /speech/asr: connections per key, message size, the
 * session's length, drain; each refusal or cut an OpenAI `error` event before the close. And the
 * audio timeline the VAD events are reported on (realtime-timeline.ts).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { RealtimeTimeline } from '../../src/server/routes/openai/realtime-timeline.js';
import { startServer, type Harness } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** Opens a Realtime socket; resolves with its events and close code once it closes (or after `ms`). */
function session(h: Harness, send: (ws: WebSocket) => void = () => {}, ms = 10_000): Promise<{ events: Array<Record<string, unknown>>; code: number | null; ws: WebSocket }> {
  const ws = new WebSocket(`${h.wsBase.replace(/\/api$/, '/v1')}/realtime?intent=transcription`, { headers: { authorization: `Bearer ${h.apiKey}` } });
  const events: Array<Record<string, unknown>> = [];
  ws.on('message', (d) => events.push(JSON.parse(String(d)) as Record<string, unknown>));
  ws.once('open', () => send(ws));
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve({ events, code: null, ws }), ms);
    ws.once('close', (code) => (clearTimeout(t), resolve({ events, code, ws })));
  });
}

describe('/v1/realtime limits', () => {
  it('connections per key: past the limit, an error event and close', async () => {
    h = await startServer({ limits: { connectionsPerKey: 2 } });
    const held = [session(h, undefined, 1500), session(h, undefined, 1500)];
    await new Promise((r) => setTimeout(r, 300));
    const third = await session(h);
    expect(third.code).toBe(1008);
    expect(third.events[0]).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', code: 'rate_limit_exceeded' } });
    for (const s of await Promise.all(held)) s.ws.close();
  });

  it('a message over maxFrameBytes: an error event, then close', async () => {
    h = await startServer({ limits: { maxFrameBytes: 2000 } });
    const s = await session(h, (ws) => ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: Buffer.alloc(3000).toString('base64') })));
    expect(s.code).toBe(1008);
    expect(s.events.at(-1)).toMatchObject({ type: 'error', error: { message: expect.stringContaining('over the limit') } });
  });

  it("the session's length: an error event, then close", async () => {
    h = await startServer({ limits: { sessionSeconds: 0.4 } });
    const s = await session(h);
    expect(s.code).toBe(1008);
    expect(s.events[0]).toMatchObject({ type: 'session.created' });
    expect(s.events.at(-1)).toMatchObject({ type: 'error', error: { message: expect.stringContaining('session longer than') } });
  });

  it('draining: a new session is refused with an error event and 1013', async () => {
    h = await startServer();
    h.server.drain(true);
    const s = await session(h);
    expect(s.code).toBe(1013);
    expect(s.events[0]).toMatchObject({ type: 'error', error: { type: 'server_error' } });
  });
});

describe('RealtimeTimeline', () => {
  it('maps engine time to the client audio, the silence added behind each flush to the flush', () => {
    // 8 kHz G.711 client: 1 s appended = 24000 engine samples (12.5 frames: padded to 13).
    const t = new RealtimeTimeline(8000);
    t.appended(8000);
    expect(t.clientTimeOf(0.5)).toEqual({ ms: 500, added: false });
    t.flushed(2);
    // Engine: 1.0 s real, padded to 1.04, then 2 frames (0.16 s) of silence: real audio resumes at 1.2 s.
    expect(t.clientTimeOf(1.04)).toEqual({ ms: 1000, added: true });
    expect(t.clientTimeOf(1.19)).toEqual({ ms: 1000, added: true });
    t.appended(4000);
    const after = t.clientTimeOf(1.4);
    expect(after.added).toBe(false);
    expect(after.ms).toBeCloseTo(1200, 6);
    expect(t.clientMs).toBe(1500);
  });
});
