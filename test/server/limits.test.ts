/**
 * Limits, each with its error form: WebSocket message size, text length, audio bytes, session
 * duration, idle time, connections per key; the configuration's own checks; and /metrics.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { catalogVoices, registerSttEngine, STT_ENGINES, sttEngineEntry } from '../../src/engines/registry.js';
import { createVoiceServer } from '../../src/server/server.js';
import { MemoryStore } from '../../src/server/store/memory-store.js';
import { isVoicewireError } from '../../src/util/errors.js';
import { createKey } from '../../src/server/keys.js';
import { connect, startServer, type Harness } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const small = { maxFrameBytes: 2000, maxTextChars: 10, maxAudioBytes: 8000, sessionSeconds: 0.4, idleSeconds: 0.2, pingSeconds: 0.1, connectionsPerKey: 2 };

describe('limits', () => {
  it('a WebSocket message over maxFrameBytes: error 1008 naming the limit, then close', async () => {
    h = await startServer({ limits: small });
    const c = connect(`${h.wsBase}/speech/asr`, { 'x-api-key': h.apiKey });
    c.send({ type: 'setup', input_format: 'pcm' });
    c.send({ type: 'audio', audio: Buffer.alloc(3000).toString('base64') });
    expect((await c.closed).code).toBe(1008);
    expect(String(c.messages.at(-1)!['message'])).toMatch(/over the limit of 2000/);
  });

  it('text over maxTextChars: POST 500 upstream form; WebSocket error 1008', async () => {
    h = await startServer({ limits: small });
    const r = await fetch(`${h.base}/post/speech/tts`, { method: 'POST', headers: { 'x-api-key': h.apiKey }, body: JSON.stringify({ text: 'x'.repeat(11) }) });
    expect(r.status).toBe(500);
    expect(await r.text()).toMatch(/^error from server 1008: text is over the limit of 10/);
    const c = connect(`${h.wsBase}/speech/tts`, { 'x-api-key': h.apiKey });
    c.send({ type: 'setup', output_format: 'pcm' });
    c.send({ type: 'text', text: 'abcdef' });
    c.send({ type: 'text', text: 'ghijkl' });
    c.send({ type: 'end_of_stream' });
    expect((await c.closed).code).toBe(1008);
    expect(String(c.messages.at(-1)!['message'])).toMatch(/text is over the limit/);
  });

  it('an STT body over maxAudioBytes: refused up front when declared, an in-stream error line when streamed', async () => {
    h = await startServer({ limits: small });
    const r = await fetch(`${h.base}/post/speech/asr`, { method: 'POST', headers: { 'x-api-key': h.apiKey, 'content-type': 'audio/pcm' }, body: new Uint8Array(20000) });
    expect(r.status).toBe(500);
    expect(await r.text()).toMatch(/^error from server 1008: request body of 20000 bytes is over the limit of 8000/);
    let n = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        await new Promise((res) => setTimeout(res, 20));
        if (n++ < 6) controller.enqueue(new Uint8Array(3840));
        else controller.close();
      },
    });
    const s = await fetch(`${h.base}/post/speech/asr`, { method: 'POST', headers: { 'x-api-key': h.apiKey, 'content-type': 'audio/pcm' }, body, duplex: 'half' } as RequestInit);
    expect(s.status).toBe(200);
    const lines = (await s.text()).trim().split('\n');
    expect(JSON.parse(lines[0]!)).toMatchObject({ type: 'step' });
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ type: 'error' });
    expect(lines.at(-1)).toMatch(/over the limit of 8000 bytes/);
  });

  it('a session longer than sessionSeconds ends with error 1008', async () => {
    h = await startServer({ limits: { ...small, idleSeconds: 10, maxTextChars: 1000 } });
    const c = connect(`${h.wsBase}/speech/tts`, { 'x-api-key': h.apiKey });
    c.send({ type: 'setup', output_format: 'pcm' });
    const t0 = Date.now();
    const keep = setInterval(() => c.send({ type: 'text', text: 'a' }), 50);
    const { code } = await c.closed;
    clearInterval(keep);
    expect(code).toBe(1008);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(350);
    expect(String(c.messages.at(-1)!['message'])).toMatch(/session longer than 0.4 s/);
  });

  it('an idle socket is closed with error 1008', async () => {
    h = await startServer({ limits: { ...small, sessionSeconds: 10 } });
    const c = connect(`${h.wsBase}/speech/asr`, { 'x-api-key': h.apiKey });
    c.send({ type: 'setup', input_format: 'pcm' });
    expect((await c.closed).code).toBe(1008);
    expect(String(c.messages.at(-1)!['message'])).toMatch(/idle for more than 0.2 s/);
  });

  it('connections per key: the third live socket of a key is refused; others are not', async () => {
    h = await startServer({ limits: { ...small, sessionSeconds: 10, idleSeconds: 10 } });
    const a = connect(`${h.wsBase}/speech/asr`, { 'x-api-key': h.apiKey });
    const b = connect(`${h.wsBase}/speech/asr`, { 'x-api-key': h.apiKey });
    for (const c of [a, b]) c.send({ type: 'setup', input_format: 'pcm' });
    await Promise.all([a, b].map((c) => c.waitFor((m) => m['type'] === 'ready')));
    const third = connect(`${h.wsBase}/speech/asr`, { 'x-api-key': h.apiKey });
    expect((await third.closed).code).toBe(1008);
    expect(String(third.messages[0]!['message'])).toMatch(/already has 2 live sessions/);
    const org = (await h.store.getOrganizationByName('default'))!;
    const other = connect(`${h.wsBase}/speech/asr`, { 'x-api-key': (await createKey(h.store, org.id)).key });
    other.send({ type: 'setup', input_format: 'pcm' });
    await other.waitFor((m) => m['type'] === 'ready');
    for (const c of [a, b, other]) c.ws.close();
    await Promise.all([a, b, other].map((c) => c.closed));
  });
});

describe('/metrics', () => {
  it('exposes live sessions, time to first audio and credits debited in Prometheus text', async () => {
    h = await startServer();
    const r = await fetch(`${h.base}/post/speech/tts`, { method: 'POST', headers: { 'x-api-key': h.apiKey }, body: JSON.stringify({ text: 'abc', only_audio: true, output_format: 'pcm' }) });
    await r.arrayBuffer();
    const text = await (await fetch(h.base.replace('/api', '/metrics'))).text();
    expect(text).toMatch(/voicewire_time_to_first_audio_seconds_count\{route="tts_post"\} 1/);
    expect(text).toMatch(/voicewire_credits_debited_total\{kind="tts"\} 3/);
    expect(text).toContain('voicewire_live_sessions');
  });
});

describe('configuration and server methods', () => {
  const refusal = async (p: Promise<unknown> | (() => unknown)): Promise<string> => {
    try {
      await (typeof p === 'function' ? p() : p);
      return 'resolved';
    } catch (e) {
      return isVoicewireError(e, 'INVALID_ARGUMENT') ? e.message : `not INVALID_ARGUMENT: ${String(e)}`;
    }
  };

  it('a misspelt limit, a store missing a method or an unreadable pageDir are refused before anything starts', async () => {
    const store = new MemoryStore();
    expect(await refusal(createVoiceServer({ store, tts: 'tone', stt: 'tone', limits: { maxFrameByte: 10 } as never }))).toMatch(/unknown limits field "maxFrameByte"/);
    // A spread instance has its fields and none of its methods (it failed with a TypeError while seeding the catalog).
    expect(await refusal(createVoiceServer({ store: { ...store } as never, tts: 'tone', stt: 'tone' }))).toMatch(/store\.migrate must be a function/);
    // node:fs's ENOENT Error came out of createVoiceServer as it was.
    expect(await refusal(createVoiceServer({ store, tts: 'tone', stt: 'tone', pageDir: '/nonexistent/voicewire-page' }))).toMatch(/pageDir "\/nonexistent\/voicewire-page" cannot be read/);
    expect(await refusal(createVoiceServer({ store, tts: 'tone', stt: 'tone', coreUrl: { toString: 1 } as never }))).toMatch(/coreUrl must be an http\(s\) URL, got an object/);
  });

  it('a time limit past setTimeout\'s longest delay, a fractional node:http timeout or an expiry past any date is refused', async () => {
    const store = new MemoryStore();
    const start = (options: object) => refusal(createVoiceServer({ store, tts: 'tone', stt: 'tone', ...options }));
    // Timers this long fire after 1 ms: a 115-day session limit cut every session at once.
    expect(await start({ limits: { sessionSeconds: 1e7 } })).toMatch(/limits\.sessionSeconds must be at most 2147483\.647/);
    expect(await start({ limits: { upstreamTimeoutMs: 2 ** 31 } })).toMatch(/limits\.upstreamTimeoutMs must be at most/);
    expect(await start({ storeHealth: { intervalMs: 1e10 } })).toMatch(/intervalMs must be at most/);
    // node:http's RangeError came out of createVoiceServer as it was.
    expect(await start({ limits: { headersTimeoutMs: 1000.5 } })).toMatch(/headersTimeoutMs must be a whole number of ms/);
    // new Date(now + 1e303 ms) is an Invalid Date: every token request failed with a RangeError.
    expect(await start({ tokenSeconds: 1e300 })).toMatch(/tokenSeconds must be at most/);
    expect(await start({ candidateSeconds: 1e300 })).toMatch(/candidateSeconds must be at most/);
  });

  it('an engine name is an own entry of the registry: `constructor` or `valueOf` is an unknown engine', async () => {
    const store = new MemoryStore();
    // TTS "constructor" found Object as the engine and failed with a TypeError reading its catalog;
    // STT "valueOf" started a server whose every STT request failed.
    for (const tts of ['constructor', 'toString', '__proto__']) {
      expect(await refusal(createVoiceServer({ store, tts, stt: 'tone' })), tts).toMatch(/unknown TTS engine/);
    }
    expect(await refusal(createVoiceServer({ store, tts: 'tone', stt: 'valueOf' }))).toMatch(/unknown STT engine/);
    expect(catalogVoices('constructor').map((v) => v.uid)).toEqual(catalogVoices('no-such-engine').map((v) => v.uid));
    // Registering "__proto__" made an entry, not the registry's prototype.
    const entry = { create: () => STT_ENGINES['tone']!.create({} as never) };
    registerSttEngine('__proto__', entry);
    try {
      expect(Object.getPrototypeOf(STT_ENGINES)).toBe(Object.prototype);
      expect(sttEngineEntry('__proto__')).toBe(entry);
    } finally {
      delete STT_ENGINES['__proto__'];
    }
  });

  it('listen, drain and shutdown refuse arguments of the wrong type', async () => {
    h = await startServer();
    expect(await refusal(h.server.listen('80' as never))).toMatch(/port must be an integer/);
    expect(await refusal(h.server.listen(70000))).toMatch(/port must be an integer/);
    expect(await refusal(() => h!.server.drain('yes' as never))).toMatch(/enable must be a boolean/);
    expect(await refusal(h.server.shutdown(Number.NaN))).toMatch(/graceSeconds must be a number from 0/);
    expect(await refusal(h.server.shutdown(1e7))).toMatch(/graceSeconds must be a number from 0/);
    expect((await fetch(`${h.base}/readyz`)).status).toBe(200);
  });
});
