/**
 * /v1 spends from and is bounded by the same books as /api (issue 21): a speech request is charged
 * per character as POST /api/post/speech/tts is, a transcription per started second of audio as
 * POST /api/post/speech/asr is, both from the balance GET /api/usages/credits shows; and the
 * per-key live-session limit (`limits.connectionsPerKey`) counts /v1 and /api sessions together,
 * /v1 answering it with OpenAI's 429 `rate_limit_exceeded`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import OpenAI, { toFile } from 'openai';
import { connect, startServer, type Harness } from './harness.js';
import { parseCreditBalance } from '../../src/protocol/resources.js';
import { encodeWav } from '../../src/audio/wav.js';
import { createKey } from '../../src/server/keys.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const v1 = (hh: Harness): string => hh.base.replace(/\/api$/, '/v1');
const client = (hh: Harness): OpenAI => new OpenAI({ apiKey: hh.apiKey, baseURL: v1(hh), maxRetries: 0, timeout: 60_000 });

/** The organization's remaining credits as a client reads them (GET /api/usages/credits). */
async function remaining(hh: Harness): Promise<number> {
  const r = await fetch(`${hh.base}/usages/credits`, { headers: { 'x-api-key': hh.apiKey } });
  return parseCreditBalance(await r.json()).remaining_credits;
}

async function withCredits(hh: Harness, n: number): Promise<void> {
  const org = (await hh.store.getOrganizationByName('default'))!;
  await hh.store.setCredits(org.id, n, n);
}

/** What a request cost, read from the balance before and after. */
async function cost(hh: Harness, run: () => Promise<void>): Promise<number> {
  const before = await remaining(hh);
  await run();
  return before - (await remaining(hh));
}

/** A 24 kHz mono WAV of `seconds` of the tone engine's first character (300 Hz), heard as one word. */
function toneWav(seconds: number): Uint8Array<ArrayBuffer> {
  const pcm = new Int16Array(Math.round(24000 * seconds));
  for (let i = 0; i < pcm.length; i++) pcm[i] = Math.round(8000 * Math.sin((2 * Math.PI * 300 * i) / 24000));
  return new Uint8Array(encodeWav(pcm, { sampleRate: 24000 }));
}

describe('/v1 credits are /api credits', () => {
  it.each(['wav', 'mp3'] as const)('speech (%s) costs what POST /api/post/speech/tts costs for the same text: one credit a character', async (format) => {
    h = await startServer();
    const hh = h;
    await withCredits(hh, 1000);
    const text = 'hello brave new world';
    const api = await cost(hh, async () => {
      const r = await fetch(`${hh.base}/post/speech/tts`, { method: 'POST', headers: { 'x-api-key': hh.apiKey }, body: JSON.stringify({ text, output_format: 'wav', only_audio: true }) });
      expect(r.status).toBe(200);
      await r.arrayBuffer();
    });
    // The balance is read as soon as the SDK has the body: it must be final by then.
    const openai = await cost(hh, async () => {
      const r = await client(hh).audio.speech.create({ model: 'tts-1', voice: 'alloy', input: text, response_format: format });
      expect((await r.arrayBuffer()).byteLength).toBeGreaterThan(44);
    });
    expect(api).toBe(text.length);
    // It was 277: the hold (the text and 256 characters ahead) was never settled.
    expect(openai).toBe(api);
    const summary = (await (await fetch(`${hh.base}/usages/summary`, { headers: { 'x-api-key': hh.apiKey } })).json()) as { tts: { units: number; requests: number } };
    expect(summary.tts).toMatchObject({ units: 2 * text.length, requests: 2 });
  });

  it('a client that goes away mid-speech pays for the audio it took, not for the whole text', async () => {
    h = await startServer();
    const hh = h;
    await withCredits(hh, 100_000);
    const input = 'word '.repeat(4000);
    const spent = await cost(hh, async () => {
      const ac = new AbortController();
      const r = await fetch(`${v1(hh)}/audio/speech`, {
        method: 'POST',
        headers: { authorization: `Bearer ${hh.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'tts-1', voice: 'alloy', input, response_format: 'pcm' }),
        signal: ac.signal,
      });
      expect(r.status).toBe(200);
      await r.body!.getReader().read();
      ac.abort();
      const until = Date.now() + 10_000;
      while (hh.server.context.sessions.live > 0 && Date.now() < until) await new Promise((res) => setTimeout(res, 20));
      expect(hh.server.context.sessions.live).toBe(0);
    });
    expect(spent).toBeGreaterThan(0);
    expect(spent).toBeLessThan(input.length / 2);
  });

  it('a transcription costs what POST /api/post/speech/asr costs for the same file: one credit a started second', async () => {
    h = await startServer();
    const hh = h;
    await withCredits(hh, 1000);
    const wav = toneWav(2.5);
    const api = await cost(hh, async () => {
      const r = await fetch(`${hh.base}/post/speech/asr`, { method: 'POST', headers: { 'x-api-key': hh.apiKey, 'content-type': 'audio/wav' }, body: wav });
      expect((await r.text()).trim().split('\n').at(-1)).toBe('{"type":"end_of_stream"}');
    });
    const openai = await cost(hh, async () => {
      const t = await client(hh).audio.transcriptions.create({ file: await toFile(wav, 'a.wav'), model: 'whisper-1' });
      expect(t.text).not.toBe('');
    });
    // 2.5 s and the model delay's silent frame: three started seconds.
    expect(api).toBe(3);
    expect(openai).toBe(api);
  });

  it('a key of an organization with too few credits: /v1 is 429 insufficient_quota, /api the §7 1008, and nothing is spent', async () => {
    h = await startServer();
    const hh = h;
    await withCredits(hh, 4);
    const f = await client(hh).audio.speech.create({ model: 'tts-1', voice: 'alloy', input: 'hello', response_format: 'wav' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(f).toBeInstanceOf(OpenAI.RateLimitError);
    expect((f as InstanceType<typeof OpenAI.APIError>).error).toMatchObject({ type: 'insufficient_quota', code: 'insufficient_quota' });
    const r = await fetch(`${hh.base}/post/speech/tts`, { method: 'POST', headers: { 'x-api-key': hh.apiKey }, body: JSON.stringify({ text: 'hello' }) });
    expect(await r.text()).toMatch(/^error from server 1008: not enough credits/);
    expect(await remaining(hh)).toBe(4);
  });
});

describe('/v1 and /api share the per-key live-session limit', () => {
  /** The status and OpenAI error body of a raw /v1 call. */
  const openAIFailure = async (r: Response): Promise<{ status: number; error: Record<string, unknown> }> => ({ status: r.status, error: ((await r.json()) as { error: Record<string, unknown> }).error });

  it('with the key\'s sessions taken by /api sockets, /v1 speech and transcriptions are 429 rate_limit_exceeded; another key is served', async () => {
    h = await startServer({ limits: { connectionsPerKey: 2, idleSeconds: 30, sessionSeconds: 60 } });
    const hh = h;
    const a = connect(`${hh.wsBase}/speech/asr`, { 'x-api-key': hh.apiKey });
    const b = connect(`${hh.wsBase}/speech/tts`, { 'x-api-key': hh.apiKey });
    a.send({ type: 'setup', input_format: 'pcm' });
    b.send({ type: 'setup', output_format: 'pcm' });
    await Promise.all([a, b].map((c) => c.waitFor((m) => m['type'] === 'ready')));

    const speech = await client(hh).audio.speech.create({ model: 'tts-1', voice: 'alloy', input: 'hello', response_format: 'wav' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(speech).toBeInstanceOf(OpenAI.RateLimitError);
    const e = speech as InstanceType<typeof OpenAI.APIError>;
    expect(e.status).toBe(429);
    expect(e.error).toMatchObject({ type: 'requests', code: 'rate_limit_exceeded', param: null });
    expect((e.error as { message: string }).message).toMatch(/already has 2 live sessions \(limit 2\)/);

    const fd = new FormData();
    fd.append('model', 'whisper-1');
    fd.append('file', new Blob([toneWav(0.5)]), 'a.wav');
    const stt = await openAIFailure(await fetch(`${v1(hh)}/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${hh.apiKey}` }, body: fd }));
    expect(stt).toMatchObject({ status: 429, error: { type: 'requests', code: 'rate_limit_exceeded' } });

    // /api refuses the same key in its own form (§7: REST 500 with the 1008 text).
    const api = await fetch(`${hh.base}/post/speech/tts`, { method: 'POST', headers: { 'x-api-key': hh.apiKey }, body: JSON.stringify({ text: 'hello' }) });
    expect(await api.text()).toMatch(/^error from server 1008: this API key already has 2 live sessions/);

    // Nothing was spent on the refusals; the limit is the key's, not the server's.
    const org = (await hh.store.getOrganizationByName('default'))!;
    const other = new OpenAI({ apiKey: (await createKey(hh.store, org.id)).key, baseURL: v1(hh), maxRetries: 0 });
    expect((await (await other.audio.speech.create({ model: 'tts-1', voice: 'alloy', input: 'hi', response_format: 'wav' })).arrayBuffer()).byteLength).toBeGreaterThan(44);

    // Once a socket ends, the key is served on /v1 again.
    a.ws.close();
    await a.closed;
    const until = Date.now() + 10_000;
    while (hh.server.context.sessions.live > 1 && Date.now() < until) await new Promise((res) => setTimeout(res, 20));
    const again = await client(hh).audio.speech.create({ model: 'tts-1', voice: 'alloy', input: 'hi', response_format: 'wav' });
    expect((await again.arrayBuffer()).byteLength).toBeGreaterThan(44);
    b.ws.close();
    await b.closed;
  });

  it('a live /v1 speech stream takes one of the key\'s sessions: an /api socket past the limit is refused with 1008', async () => {
    h = await startServer({ limits: { connectionsPerKey: 1, idleSeconds: 30, sessionSeconds: 60 } });
    const hh = h;
    const ac = new AbortController();
    const r = await fetch(`${v1(hh)}/audio/speech`, {
      method: 'POST',
      headers: { authorization: `Bearer ${hh.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tts-1', voice: 'alloy', input: 'word '.repeat(4000), response_format: 'pcm' }),
      signal: ac.signal,
    });
    expect(r.status).toBe(200);
    const reader = r.body!.getReader();
    await reader.read();
    const c = connect(`${hh.wsBase}/speech/tts`, { 'x-api-key': hh.apiKey });
    expect((await c.closed).code).toBe(1008);
    expect(String(c.messages[0]!['message'])).toMatch(/already has 1 live sessions/);
    ac.abort();
    await reader.cancel().catch(() => {});
  });
});
