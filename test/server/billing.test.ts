/**
 * Billing is exact (issue 20 §6): a request holds its credits before any work and, at its end,
 * pays for what reached the client (TTS: the characters whose audio was sent; STT: the started
 * seconds of audio processed); the rest goes back. Over real sockets, with the tone engine and a
 * paced one (tone, one word per `PACE_MS`, as a model slower than the network would be).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { connect, startServer, audioBytes, type Harness } from './harness.js';
import { TTS_ENGINES } from '../../src/engines/registry.js';
import { createToneTtsEngine } from '../../src/engines/tone.js';
import type { TtsEngine, TtsEngineEvent, TtsEngineStream } from '../../src/sessions/engine.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  delete TTS_ENGINES['paced-test'];
  onText = undefined;
});

const PACE_MS = 300;

/** Called when a paced stream is first given text (the request reached the engine). */
let onText: (() => void) | undefined;

/** The tone engine, but each word (its timestamp and frames) leaves `paceMs` after the previous one. */
function pacedToneEngine(inner: TtsEngine, paceMs: number): TtsEngine {
  return {
    async open(config, emit) {
      const held: TtsEngineEvent[] = [];
      let closed = false;
      const s = await inner.open(config, (e) => held.push(e));
      const release = async (): Promise<void> => {
        while (held.length > 0 && !closed) {
          if (held[0]!.type === 'word') await new Promise((r) => setTimeout(r, paceMs));
          if (closed) return;
          emit(held.shift()!);
          while (held.length > 0 && held[0]!.type !== 'word') emit(held.shift()!);
        }
      };
      const paced = <A extends unknown[]>(f: (...a: A) => unknown) => async (...a: A): Promise<void> => {
        await f(...a);
        await release();
      };
      const stream: TtsEngineStream = {
        info: s.info,
        text: paced((t: string) => {
          onText?.();
          return s.text(t);
        }),
        pause: paced((x: number) => s.pause(x)),
        flush: paced(() => s.flush()),
        end: paced(() => s.end()),
        close: () => {
          closed = true;
          s.close();
        },
      };
      return stream;
    },
  };
}

function registerPaced(paceMs = PACE_MS): void {
  TTS_ENGINES['paced-test'] = { create: (context) => pacedToneEngine(createToneTtsEngine(context), paceMs), catalogVoices: () => [] };
}

async function setCredits(hh: Harness, n: number): Promise<string> {
  const org = (await hh.store.getOrganizationByName('default'))!;
  await hh.store.setCredits(org.id, n, n);
  return org.id;
}

const balance = async (hh: Harness, orgId: string): Promise<number> => (await hh.store.getOrganization(orgId))!.remainingCredits;

/** Polls until `f` holds (settlement ends a request asynchronously once its client is gone). */
async function eventually(f: () => Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Every request is over (its session released, which a POST does once settled). */
const settled = (hh: Harness): Promise<void> => eventually(async () => hh.server.context.sessions.live === 0);

const since = '1970-01-01T00:00:00Z';
const post = (hh: Harness, body: unknown, signal?: AbortSignal): Promise<Response> =>
  fetch(`${hh.base}/post/speech/tts`, { method: 'POST', headers: { 'x-api-key': hh.apiKey, 'content-type': 'application/json' }, body: JSON.stringify(body), ...(signal ? { signal } : {}) });

describe('TTS billing', () => {
  it('WebSocket: credits run out mid-request: the paid text is heard first, then error 1008; the balance pays exactly what was heard', async () => {
    h = await startServer();
    const orgId = await setCredits(h, 20);
    const c = connect(`${h.wsBase}/speech/tts`, { 'x-api-key': h.apiKey });
    c.send({ type: 'setup', output_format: 'pcm' });
    c.send({ type: 'text', text: 'hello world' }); // 11 credits: paid
    c.send({ type: 'text', text: 'and then some more words' }); // 25 more: refused
    c.send({ type: 'end_of_stream' });
    expect((await c.closed).code).toBe(1008);
    const last = c.messages.at(-1)!;
    expect(last).toMatchObject({ type: 'error', code: 1008 });
    expect(String(last['message'])).toContain('not enough credits');
    // Both paid words, with their audio (tone: one 80 ms frame per character, 2 silent frames between words), before the error.
    expect(c.messages.filter((m) => m['type'] === 'text').map((m) => m['text'])).toEqual(['hello', 'world']);
    expect(audioBytes(c.messages).length).toBe((5 + 2 + 5) * 3840 * 2);
    await settled(h);
    expect(await balance(h, orgId)).toBe(20 - 'hello world'.length);
    expect((await h.store.usageSummary(orgId, since)).tts).toEqual({ units: 11, credits: 11, requests: 1 });
  });

  it('a 12-word WebSocket request takes its credits in a few store writes, not one per word, and pays exactly its text (issue 22)', async () => {
    h = await startServer();
    const orgId = await setCredits(h, 1000);
    let holds = 0;
    const reserve = h.store.reserveCredits.bind(h.store);
    h.store.reserveCredits = (...a: Parameters<typeof reserve>) => {
      holds++;
      return reserve(...a);
    };
    const words = 'the quick brown fox jumps over a lazy dog while seven stars'.split(' ');
    const c = connect(`${h.wsBase}/speech/tts`, { 'x-api-key': h.apiKey });
    c.send({ type: 'setup', output_format: 'pcm' });
    for (const w of words) c.send({ type: 'text', text: `${w} ` });
    c.send({ type: 'end_of_stream' });
    expect((await c.closed).code).toBe(1000);
    await settled(h);
    // Each `word ` message, and the one space that joins consecutive messages (TtsEngineStream.text).
    const chars = words.reduce((n, w) => n + w.length + 1, 0) + words.length - 1;
    expect(await balance(h, orgId)).toBe(1000 - chars);
    expect((await h.store.usageSummary(orgId, since)).tts).toEqual({ units: chars, credits: chars, requests: 1 });
    expect(holds).toBeLessThanOrEqual(3);
  });

  it('holding ahead never refuses what the balance covers exactly: 71 credits pay for 71 characters sent word by word', async () => {
    h = await startServer();
    const words = 'the quick brown fox jumps over a lazy dog while seven stars'.split(' ');
    const chars = words.reduce((n, w) => n + w.length + 1, 0) + words.length - 1;
    const orgId = await setCredits(h, chars);
    const c = connect(`${h.wsBase}/speech/tts`, { 'x-api-key': h.apiKey });
    c.send({ type: 'setup', output_format: 'pcm' });
    for (const w of words) c.send({ type: 'text', text: `${w} ` });
    c.send({ type: 'end_of_stream' });
    expect((await c.closed).code).toBe(1000);
    expect(c.messages.filter((m) => m['type'] === 'text')).toHaveLength(12);
    await settled(h);
    expect(await balance(h, orgId)).toBe(0);
  });

  it('multiplexed: each request settles on its own; the one out of credits hears its paid words, the other completes', async () => {
    h = await startServer();
    const orgId = await setCredits(h, 20);
    const c = connect(`${h.wsBase}/speech/tts`, { 'x-api-key': h.apiKey });
    for (const id of ['one', 'two']) c.send({ type: 'setup', output_format: 'pcm', close_ws_on_eos: false, client_req_id: id });
    c.send({ type: 'text', text: 'first', client_req_id: 'one' }); // 5
    await c.waitFor((m) => m['type'] === 'ready' && m['client_req_id'] === 'two');
    c.send({ type: 'text', text: 'hello world', client_req_id: 'two' }); // 11
    c.send({ type: 'text', text: 'and more words', client_req_id: 'two' }); // refused
    const error = await c.waitFor((m) => m['type'] === 'error');
    expect(error).toMatchObject({ client_req_id: 'two', code: 1008 });
    c.send({ type: 'end_of_stream', client_req_id: 'one' });
    await c.waitFor((m) => m['type'] === 'end_of_stream' && m['client_req_id'] === 'one');
    const words = (id: string): unknown[] => c.messages.filter((m) => m['type'] === 'text' && m['client_req_id'] === id).map((m) => m['text']);
    expect(words('one')).toEqual(['first']);
    expect(words('two')).toEqual(['hello', 'world']);
    c.ws.close();
    await c.closed;
    await settled(h);
    expect(await balance(h, orgId)).toBe(20 - 5 - 11);
    expect((await h.store.usageSummary(orgId, since)).tts).toEqual({ units: 16, credits: 16, requests: 2 });
  });

  it('the same with espeak: the paid words, flushed, come before the error; 11 credits paid of 20', async () => {
    h = await startServer({ tts: 'espeak' });
    const orgId = await setCredits(h, 20);
    const c = connect(`${h.wsBase}/speech/tts`, { 'x-api-key': h.apiKey });
    c.send({ type: 'setup', output_format: 'pcm' });
    c.send({ type: 'text', text: 'Hello world' });
    c.send({ type: 'text', text: 'and then some more words' });
    c.send({ type: 'end_of_stream' });
    expect((await c.closed).code).toBe(1008);
    expect(c.messages.at(-1)).toMatchObject({ type: 'error', code: 1008 });
    expect(c.messages.filter((m) => m['type'] === 'text').map((m) => m['text'])).toEqual(['Hello', 'world']);
    const lastAudio = c.messages.filter((m) => m['type'] === 'audio').at(-1)!;
    const lastWord = c.messages.filter((m) => m['type'] === 'text').at(-1)!;
    expect(Number(lastAudio['stop_s'])).toBeGreaterThanOrEqual(Number(lastWord['stop_s']));
    await settled(h);
    expect(await balance(h, orgId)).toBe(9);
  }, 20_000);

  it('a 32-character POST the client cancels 5 ms after its text reached the engine pays only for audio sent (none yet)', async () => {
    registerPaced();
    h = await startServer({ tts: 'paced-test' });
    const orgId = await setCredits(h, 100);
    const text = 'the quick brown fox jumps over a'; // 32 characters
    expect(text.length).toBe(32);
    const abort = new AbortController();
    let t: ReturnType<typeof setTimeout> | undefined;
    onText = () => (t ??= setTimeout(() => abort.abort(), 5));
    const outcome = await post(h, { text, output_format: 'pcm' }, abort.signal).then(
      async (r) => ({ status: r.status, body: await r.text() }),
      (err: Error) => ({ status: 0, body: err.name }),
    );
    clearTimeout(t);
    expect(outcome.status).toBe(0); // aborted before the first word (PACE_MS) could leave
    // The first word leaves PACE_MS after the start: by then the client was long gone.
    await eventually(async () => (await balance(h!, orgId)) === 100);
    await new Promise((r) => setTimeout(r, 3 * PACE_MS)); // nothing is taken later either
    expect(await balance(h, orgId)).toBe(100);
    expect((await h.store.usageSummary(orgId, since)).tts.credits).toBe(0);
  });

  it('a POST cancelled after its first words pays for the words sent, not for the rest', async () => {
    registerPaced(60);
    h = await startServer({ tts: 'paced-test' });
    const orgId = await setCredits(h, 100);
    const text = 'aa bb cc dd ee ff gg hh ii jj kk'; // 32 characters, 11 words
    const abort = new AbortController();
    const r = await post(h, { text, output_format: 'pcm' }, abort.signal);
    expect(r.status).toBe(200);
    const reader = r.body!.getReader();
    let got = '';
    while (!got.includes('"text":"bb"')) {
      const { value, done } = await reader.read();
      if (done) break;
      got += new TextDecoder().decode(value);
    }
    abort.abort();
    await settled(h);
    const charged = 100 - (await balance(h, orgId));
    expect(charged).toBeGreaterThanOrEqual('aa bb'.length); // what the client heard is paid
    expect(charged).toBeLessThan(text.length); // what it never got is not
    expect((await h.store.usageSummary(orgId, since)).tts).toEqual({ units: charged, credits: charged, requests: 1 });
  });

  it('a 20 005-character POST is refused before any audio, spending nothing (one text limit, 20 000)', async () => {
    h = await startServer();
    const orgId = await setCredits(h, 100_000);
    const r = await post(h, { text: 'ab '.repeat(6668).slice(0, 20_005), output_format: 'pcm', only_audio: true });
    expect(r.status).toBe(500);
    expect(await r.text()).toMatch(/^error from server 1008: text is over the limit of 20000 characters/);
    expect(await balance(h, orgId)).toBe(100_000);
    // 20 000 exactly is served (tone: one frame per letter, none for spaces).
    const ok = await post(h, { text: 'ab' + ' '.repeat(19_998), output_format: 'pcm', only_audio: true });
    expect(ok.status).toBe(200);
    expect((await ok.arrayBuffer()).byteLength).toBe(2 * 3840 * 2);
    expect(await balance(h, orgId)).toBe(80_000);
  }, 30_000);

  it('a POST without enough credits for all its text is refused before any audio, spending nothing', async () => {
    h = await startServer();
    const orgId = await setCredits(h, 300);
    const r = await post(h, { text: 'word '.repeat(100).trim(), output_format: 'pcm', only_audio: true });
    expect(r.status).toBe(500);
    expect(await r.text()).toMatch(/^error from server 1008: not enough credits/);
    expect(await balance(h, orgId)).toBe(300);
  });

  it('concurrent POSTs, some cancelled mid-way: never below zero, each paid once, cancelled ones pay less', async () => {
    registerPaced(80);
    h = await startServer({ tts: 'paced-test' });
    const orgId = await setCredits(h, 100);
    const text = 'aa bb cc dd'; // 11 credits held each: 9 holds fit in 100
    const results = await Promise.all(
      Array.from({ length: 12 }, async (_, i) => {
        const abort = new AbortController();
        const r = await post(h!, { text, output_format: 'pcm' }, abort.signal);
        if (r.status !== 200) return { kind: 'refused' as const, body: await r.text() };
        if (i % 2 === 0) return { kind: 'complete' as const, body: await r.text() };
        const reader = r.body!.getReader();
        let got = '';
        while (!got.includes('"text":"aa"')) {
          const { value, done } = await reader.read();
          if (done) break;
          got += new TextDecoder().decode(value);
        }
        abort.abort();
        return { kind: 'cancelled' as const, body: got };
      }),
    );
    const complete = results.filter((r) => r.kind === 'complete');
    const cancelled = results.filter((r) => r.kind === 'cancelled');
    for (const r of results.filter((x) => x.kind === 'refused')) expect(r.body).toMatch(/^error from server 1008: not enough credits/);
    // 9 holds fit (a cancelled request's refund may let one more in).
    const served = complete.length + cancelled.length;
    expect(served).toBeGreaterThanOrEqual(9);
    expect(cancelled.length).toBeGreaterThan(0);
    for (const r of complete) expect(r.body.trim().split('\n').at(-1)).toBe('{"type":"end_of_stream"}');
    await settled(h);
    const left = await balance(h, orgId);
    const usage = (await h.store.usageSummary(orgId, since)).tts;
    expect(left).toBeGreaterThanOrEqual(0);
    expect(usage.credits).toBe(100 - left); // every credit taken is on one usage line: none twice, none lost
    const cancelledPaid = usage.credits - complete.length * 11;
    expect(cancelledPaid).toBeGreaterThanOrEqual(cancelled.length * 2); // "aa" at least
    expect(cancelledPaid).toBeLessThan(cancelled.length * 11);
  }, 20_000);
});

describe('STT billing', () => {
  it('a POST cancelled halfway pays for the seconds processed, not for the whole upload', async () => {
    h = await startServer();
    const orgId = await setCredits(h, 100);
    const second = new Uint8Array(24000 * 2); // 1 s of 24 kHz s16 silence
    const abort = new AbortController();
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (sent === 2) {
          // Half of a 4 s upload: wait for the server to process it, then go away.
          await new Promise((r) => setTimeout(r, 300));
          abort.abort();
          controller.close();
          return;
        }
        sent++;
        controller.enqueue(second);
      },
    });
    await fetch(`${h.base}/post/speech/asr`, {
      method: 'POST',
      headers: { 'x-api-key': h.apiKey, 'content-type': 'audio/pcm' },
      body,
      duplex: 'half',
      signal: abort.signal,
    } as RequestInit).then(
      (r) => r.text(),
      () => '',
    ).catch(() => '');
    await settled(h);
    const charged = 100 - (await balance(h, orgId));
    expect(charged).toBeGreaterThanOrEqual(1);
    expect(charged).toBeLessThanOrEqual(3); // 2 s (+ the model delay's frame), never the 4 s of the whole upload
    expect((await h.store.usageSummary(orgId, since)).stt.credits).toBe(charged);
  });
});

describe('WebSocket text limit', () => {
  it('the running total passing 20 000 ends the request before that text is synthesized; the paid text is heard', async () => {
    h = await startServer();
    const orgId = await setCredits(h, 100_000);
    const c = connect(`${h.wsBase}/speech/tts`, { 'x-api-key': h.apiKey });
    c.send({ type: 'setup', output_format: 'pcm' });
    c.send({ type: 'text', text: 'hi' + ' '.repeat(19_988) }); // 19 990 characters, one word
    c.send({ type: 'text', text: 'b'.repeat(20) });
    c.send({ type: 'end_of_stream' });
    expect((await c.closed).code).toBe(1008);
    expect(String(c.messages.at(-1)!['message'])).toMatch(/text is over the limit of 20000 characters/);
    expect(c.messages.filter((m) => m['type'] === 'text').map((m) => m['text'])).toEqual(['hi']);
    expect(audioBytes(c.messages).length).toBe(2 * 3840 * 2);
    await settled(h);
    expect(await balance(h, orgId)).toBe(100_000 - 19_990);
  }, 30_000);
});
