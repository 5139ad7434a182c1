/**
 * Faults: a client that never reads (its TCP window fills while the server streams TTS audio;
 * issue 16 "Faults"). The server holds at most `maxBufferedBytes` unsent for it (then cuts it),
 * a stuck client that sends nothing more is dropped by the ping / idle limits, and another
 * client's time to first audio stays normal meanwhile.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { connect as tcp, type Socket } from 'node:net';
import { connect, startServer, type Harness, type WsConversation } from '../harness.js';
import { until } from './faulty-engine.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const socketOf = (c: WsConversation): Socket => (c.ws as unknown as { _socket: Socket })._socket;

/** Opens a TTS session and stops reading its TCP socket once `ready` arrived. */
async function stuckClient(h: Harness): Promise<WsConversation> {
  const c = connect(`${h.wsBase}/speech/tts`, { 'x-api-key': h.apiKey });
  c.send({ type: 'setup', output_format: 'pcm' });
  await c.waitFor((m) => m['type'] === 'ready');
  socketOf(c).pause();
  return c;
}

/** Time from setup to the first audio message of a fresh session, ms. */
async function timeToFirstAudio(h: Harness): Promise<number> {
  const c = connect(`${h.wsBase}/speech/tts`, { 'x-api-key': h.apiKey });
  await c.opened;
  const t0 = performance.now();
  c.send({ type: 'setup', output_format: 'pcm' });
  c.send({ type: 'text', text: 'hello there' });
  await c.waitFor((m) => m['type'] === 'audio');
  const ms = performance.now() - t0;
  c.send({ type: 'end_of_stream' });
  await c.closed;
  return ms;
}

describe('a client that never reads', { timeout: 15_000 }, () => {
  it('flooded with audio: cut once 1 MiB is unsent (maxBufferedBytes), server memory bounded, another client normal', async () => {
    h = await startServer({ limits: { maxBufferedBytes: 1 << 20, idleSeconds: 10, pingSeconds: 10 } });
    const baseline = await timeToFirstAudio(h);
    const ext0 = process.memoryUsage().external + process.memoryUsage().arrayBuffers;
    const c = await stuckClient(h);
    const t0 = Date.now();
    // 3 × 600 characters ≈ 1,800 frames of 80 ms ≈ 18 MB of JSON: far over the cap.
    for (let i = 0; i < 3; i++) c.send({ type: 'text', text: 'abcdefghij'.repeat(60) });
    let peak = 0;
    const sample = setInterval(() => (peak = Math.max(peak, process.memoryUsage().external + process.memoryUsage().arrayBuffers - ext0)), 5);
    const during = await timeToFirstAudio(h);
    // The paused client cannot see the server's cut: the server's session count shows it.
    await until(() => h!.server.context.sessions.live === 0, 5000, 'the stuck session cut');
    clearInterval(sample);
    expect(Date.now() - t0).toBeLessThan(5000);
    socketOf(c).destroy();
    // Unsent bytes (cap + the kernel's socket buffers + one frame) plus the other client's traffic.
    if (process.env["FAULTS_VERBOSE"]) console.log({ peakUnsentMB: peak / 2 ** 20, baseline, during });
    expect(peak).toBeLessThan(24 << 20);
    expect(during).toBeLessThan(Math.max(300, 10 * baseline));
    expect(h.logs.some((l) => l.includes('peer does not read: terminated'))).toBe(true);
  });

  it('stuck with little unsent: dropped by the missed ping within 2 intervals (0.3 s) + 1 s', async () => {
    h = await startServer({ limits: { idleSeconds: 0.6, pingSeconds: 0.3, sessionSeconds: 5 } });
    const c = await stuckClient(h);
    c.send({ type: 'text', text: 'short' });
    const t0 = Date.now();
    await until(() => h!.server.context.sessions.live === 0, 5000, 'the stuck session cut');
    expect(Date.now() - t0).toBeLessThan(1600);
    socketOf(c).destroy();
    // The server cut it (it was never told by the client).
    expect(h.logs.some((l) => /did not answer a ping|idle for more than/.test(l))).toBe(true);
  });

  /** A raw POST of 3,000 characters (≈ 23 MB of PCM) whose client never reads; resolves when the server cut it. */
  async function stalledPost(): Promise<{ cutMs: number; peak: number }> {
    h = await startServer({ limits: { idleSeconds: 0.5, pingSeconds: 10 } });
    const port = Number(new URL(h.base).port);
    const body = JSON.stringify({ text: 'abcdefghi '.repeat(300), output_format: 'pcm', only_audio: true });
    const s = tcp(port, '127.0.0.1');
    s.on('error', () => {});
    await new Promise<void>((r) => s.once('connect', () => r()));
    const ext0 = process.memoryUsage().external + process.memoryUsage().arrayBuffers;
    let peak = 0;
    const sample = setInterval(() => (peak = Math.max(peak, process.memoryUsage().external + process.memoryUsage().arrayBuffers - ext0)), 5);
    s.write(`POST /api/post/speech/tts HTTP/1.1\r\nHost: x\r\nx-api-key: ${h.apiKey}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    s.pause();
    try {
      await until(() => h!.server.context.sessions.live === 1, 2000, 'the POST session open');
      const t0 = Date.now();
      await until(() => h!.server.context.sessions.live === 0, 5000, 'the stalled POST cut');
      return { cutMs: Date.now() - t0, peak };
    } finally {
      clearInterval(sample);
      s.destroy();
    }
  }

  it('a POST /post/speech/tts client that never reads its body: cut after idleSeconds (0.5 s) without progress', async () => {
    const { cutMs } = await stalledPost();
    expect(cutMs).toBeLessThan(3000);
    expect(h!.logs.some((l) => l.includes('raw audio response aborted') && l.includes('read nothing for 0.5 s'))).toBe(true);
  });

  it('a POST /post/speech/tts client that never reads its body: server memory for it bounded (12 MB for 23 MB of audio)', async () => {
    // A bounded server holds its body queue (16 lines), socket buffers and one engine call's output:
    // the runner hands long text to the engine in pieces of at most 256 characters cut at spaces
    // (src/sessions/tts-server-session.ts), waiting for the reader between them. Before that cut, one call
    // synthesized the whole message (≈ 45 MB here).
    const { peak } = await stalledPost();
    expect(peak).toBeLessThan(12 << 20);
  });
});
