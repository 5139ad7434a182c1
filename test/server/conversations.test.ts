/**
 * Replays every recorded conversation (fixtures/server/*.jsonl) against a running server: the
 * server must answer exactly as recorded (bytes of audio included; request ids aside).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type Harness } from './harness.js';
import { conversationNames, play, readConversation } from './conversations.js';

let h: Harness;
beforeAll(async () => {
  h = await startServer();
});
afterAll(async () => {
  await h.close();
});

describe('recorded conversations', () => {
  const names = conversationNames();
  it('there is one per route', () => {
    const routes = new Set(names.map((n) => readConversation(n).meta.route));
    expect([...routes].sort()).toEqual(['/post/speech/asr', '/post/speech/tts', '/speech/asr', '/speech/s2s', '/speech/tts']);
  });
  it.each(names)('%s', async (name) => {
    const recorded = readConversation(name);
    expect(await play(h, recorded)).toEqual(recorded);
  });
});
