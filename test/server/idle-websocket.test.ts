/**
 * The idle WebSocket limit closes at idleSeconds after the last frame either way (README "Limits
 * and budgets": 60 s), not at the first ping tick after it: the check ran on the 25 s ping tick, so
 * an idle socket was closed at 75 s (issue 31 §6). Here with a small idle limit (2 s) and a ping
 * interval just under it (1.9 s), where the tick closed a socket silent after its `ready` at 3.8 s.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { connect, startServer, type Harness, type WsConversation } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const IDLE = 2;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A socket that notes the time of its last frame either way (the closing `error` aside). */
function watched(c: WsConversation): { c: WsConversation; last: () => number; send: (m: Record<string, unknown>) => void } {
  let last = performance.now();
  c.ws.on('message', (data) => {
    if (!String(data).startsWith('{"type":"error"')) last = performance.now();
  });
  return {
    c,
    last: () => last,
    send: (m) => {
      c.send(m);
      last = performance.now();
    },
  };
}

describe('idle WebSocket', () => {
  it(`is closed ${IDLE} s after its last frame (error 1008 naming the limit), a busy one beside it stays open`, async () => {
    h = await startServer({ limits: { idleSeconds: IDLE, pingSeconds: 1.9 } });
    const idle = watched(connect(`${h.wsBase}/speech/asr`, { 'x-api-key': h.apiKey }));
    const busy = watched(connect(`${h.wsBase}/speech/asr`, { 'x-api-key': h.apiKey }));
    idle.send({ type: 'setup', input_format: 'pcm' });
    busy.send({ type: 'setup', input_format: 'pcm' });
    let busyOpen = true;
    void busy.c.closed.then(() => (busyOpen = false));
    // The busy one sends a frame every 0.5 s (each moves its deadline); the other nothing after its setup.
    const beat = setInterval(() => busyOpen && busy.send({ type: 'audio', audio: Buffer.alloc(3840).toString('base64') }), 500);
    try {
      const closed = await idle.c.closed;
      const after = (performance.now() - idle.last()) / 1000;
      expect(closed.code).toBe(1008);
      expect(String(idle.c.messages.at(-1)!['message'])).toMatch(new RegExp(`idle for more than ${IDLE} s`));
      // At the limit, give or take a timer's lateness on a busy machine: the ping tick closed at 3.8 s.
      expect(after).toBeGreaterThan(IDLE - 0.5); // the last frame reached this client a little after the server sent it
      expect(after).toBeLessThan(IDLE + 0.9);
      // The busy one's frames moved its deadline: still open a second later.
      await sleep(1000);
      expect(busyOpen).toBe(true);
    } finally {
      clearInterval(beat);
    }
  }, 30_000);
});
