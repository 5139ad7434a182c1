/**
 * A socket the server stops reading (backpressure: its engine is behind) is not a dead peer: its
 * pongs wait unread. Under load the server cut such live sockets with a bare 1006 — 300
 * multiplexed STT requests beside other work (issue 25, test/product/attacks.test.ts).
 */
import { afterEach, describe, expect, it } from 'vitest';
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
