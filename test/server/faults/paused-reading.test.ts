/**
 * A socket the server stops reading (backpressure: its engine is behind) is not a dead peer: its
 * pongs wait unread. Under load the server cut such live sockets with a bare 1006 — 300
 * multiplexed STT requests beside other work (issue 25, test/product/attacks.test.ts).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { STT_ENGINES } from '../../../src/engines/registry.js';
import { createToneSttEngine } from '../../../src/engines/tone.js';
import { connect, startServer, type Harness } from '../harness.js';

// An STT engine whose first frame takes 3 s: the messages behind it queue past the runner's
// bound (4096), so the server pauses reading the socket for those 3 s.
STT_ENGINES['stt-slow-first-frame'] = {
  create: () => {
    const inner = createToneSttEngine();
    return {
      async open(config, emit) {
        const s = await inner.open(config, emit);
        let first = true;
        return {
          info: s.info,
          push: async (f) => {
            if (first) {
              first = false;
              await new Promise((r) => setTimeout(r, 3000));
            }
            return s.push(f);
          },
          close: () => s.close(),
        };
      },
    };
  },
};

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('a socket the server does not read', () => {
  it('is not dropped for missing pongs while reading is paused (pings every second, paused 3 s)', async () => {
    h = await startServer({ stt: 'stt-slow-first-frame', limits: { pingSeconds: 1, engineTimeoutSeconds: 10 } });
    const c = connect(`${h.wsBase}/speech/asr`, { 'x-api-key': h.apiKey });
    c.send({ type: 'setup', input_format: 'pcm' });
    const frame = Buffer.alloc(3840).toString('base64');
    c.send({ type: 'audio', audio: frame });
    const tiny = Buffer.alloc(2).toString('base64');
    for (let i = 0; i < 6000; i++) c.send({ type: 'audio', audio: tiny });
    c.send({ type: 'end_of_stream' });
    const { code } = await c.closed;
    expect(c.messages.at(-1), JSON.stringify(c.messages.filter((m) => m['type'] !== 'step').slice(-3))).toMatchObject({ type: 'end_of_stream' });
    expect(code).toBe(1000);
  }, 60_000);
});

describe('a peer whose pong is late', () => {
  it('is alive while its frames keep arriving (no auto-pong, pings every second, 4 s of audio)', async () => {
    h = await startServer({ stt: 'tone', limits: { pingSeconds: 1 } });
    // A client that never answers pings: only its frames say it lives, as when its pongs queue
    // behind megabytes of its own audio.
    const ws = new WebSocket(`${h.wsBase}/speech/asr`, { headers: { 'x-api-key': h.apiKey }, autoPong: false });
    const messages: Array<{ type: string }> = [];
    ws.on('message', (d) => messages.push(JSON.parse(String(d)) as { type: string }));
    const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
    await new Promise((r) => ws.once('open', r));
    ws.send(JSON.stringify({ type: 'setup', input_format: 'pcm' }));
    const frame = Buffer.alloc(3840).toString('base64');
    for (let i = 0; i < 50; i++) {
      ws.send(JSON.stringify({ type: 'audio', audio: frame }));
      await new Promise((r) => setTimeout(r, 80));
    }
    ws.send(JSON.stringify({ type: 'end_of_stream' }));
    expect(await closed).toBe(1000);
    expect(messages.at(-1)).toMatchObject({ type: 'end_of_stream' });
  }, 60_000);

  it('is cut when it neither pongs nor sends (the check still works)', async () => {
    h = await startServer({ stt: 'tone', limits: { pingSeconds: 1 } });
    const ws = new WebSocket(`${h.wsBase}/speech/asr`, { headers: { 'x-api-key': h.apiKey }, autoPong: false });
    const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
    await new Promise((r) => ws.once('open', r));
    ws.send(JSON.stringify({ type: 'setup', input_format: 'pcm' }));
    const t0 = Date.now();
    expect(await closed).toBe(1006);
    expect(Date.now() - t0).toBeLessThan(10_000);
  }, 60_000);
});
