/**
 * POST /v1/audio/transcriptions with `stream: true` (issue 32 §2): OpenAI's server-sent events,
 * `transcript.text.delta` per word as it is decoded, then `transcript.text.done` with the text and
 * `usage`; an `error` event for a failure after the stream started, the usual JSON error before;
 * the session slot back and nothing charged past what was delivered when the client leaves
 * mid-stream. In-process with the tone STT engine (test/server/harness.ts), driven by the official
 * `openai` package and by raw `fetch` where the wire form itself is checked.
 */
import { afterEach, describe, expect, it } from 'vitest';
import OpenAI, { toFile } from 'openai';
import type { TranscriptionStreamEvent } from 'openai/resources/audio/transcriptions';
import { startServer, type Harness } from './harness.js';
import { encodeWav } from '../../src/audio/wav.js';
import { TONE_ALPHABET, TONE_BASE_HZ, TONE_STEP_HZ, createToneSttEngine } from '../../src/engines/tone.js';
import { registerSttEngine } from '../../src/engines/registry.js';

const RATE = 24000;
/** One character of the tone alphabet: 80 ms of its sine (src/engines/tone.ts). */
const SLOT = RATE * 0.08;

/** Tone-engine speech at 24 kHz: each entry a word, or a pause in seconds; 0.16 s of silence around each word. */
function toneSpeech(parts: Array<string | number>): Buffer {
  const GAP = 0.16;
  const seconds = GAP + parts.reduce<number>((s, p) => s + (typeof p === 'number' ? p : p.length * 0.08 + GAP), 0);
  const pcm = new Int16Array(Math.round(seconds * RATE));
  let at = Math.round(GAP * RATE);
  for (const p of parts) {
    if (typeof p === 'number') {
      at += Math.round(p * RATE);
      continue;
    }
    for (const c of p) {
      const f = TONE_BASE_HZ + TONE_ALPHABET.indexOf(c) * TONE_STEP_HZ;
      for (let n = 0; n < SLOT; n++) pcm[at++] = Math.round(8000 * Math.sin((2 * Math.PI * f * n) / RATE));
    }
    at += Math.round(GAP * RATE);
  }
  return Buffer.from(encodeWav(pcm, { sampleRate: RATE, channels: 1 }));
}

let slowRegistered = false;
/** Frames the slow engine was given, over every request. */
let slowFrames = 0;
/** The tone STT engine, 2 ms per 80 ms frame: the transcription yields to the event loop as it runs, so a client can leave mid-stream. */
function registerSlowTone(): string {
  if (!slowRegistered) {
    const tone = createToneSttEngine();
    registerSttEngine('slow-tone-sse', {
      create: () => ({
        open: async (config, emit) => {
          const s = await tone.open(config, emit);
          return { ...s, push: async (frame) => (slowFrames++, await new Promise((r) => setTimeout(r, 2)), s.push(frame)), ...(s.end ? { end: () => s.end!() } : {}), close: () => s.close() };
        },
      }),
    });
    slowRegistered = true;
  }
  return 'slow-tone-sse';
}

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const v1 = (hh: Harness): string => hh.base.replace(/\/api$/, '/v1');
const client = (hh: Harness): OpenAI => new OpenAI({ apiKey: hh.apiKey, baseURL: v1(hh), maxRetries: 0, timeout: 60_000 });

async function withCredits(hh: Harness, credits: number): Promise<() => Promise<number>> {
  const orgId = (await hh.store.getOrganizationByName('default'))!.id;
  await hh.store.setCredits(orgId, credits, credits);
  return async () => (await hh.store.getOrganization(orgId))!.remainingCredits;
}

/** Polls until `f` holds, or fails naming `what` with the last value seen. */
async function eventually<T>(what: string, read: () => T | Promise<T>, ok: (v: T) => boolean, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  let v = await read();
  while (!ok(v)) {
    if (Date.now() > end) throw new Error(`${what}: still ${JSON.stringify(v)} after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
    v = await read();
  }
  return v;
}

/** Waits for no live session, then for the balance to stop moving (a settlement runs after the release). */
async function settled(hh: Harness, balance: () => Promise<number>): Promise<number> {
  await eventually('live sessions', () => hh.server.context.sessions.live, (n) => n === 0);
  let last = await balance();
  for (;;) {
    await new Promise((r) => setTimeout(r, 150));
    const now = await balance();
    if (now === last) return now;
    last = now;
  }
}

/** A multipart form for `fetch`. */
function form(wav: Buffer, fields: Record<string, string>): FormData {
  const fd = new FormData();
  fd.append('file', new Blob([new Uint8Array(wav)], { type: 'audio/wav' }), 'a.wav');
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  return fd;
}

describe('POST /v1/audio/transcriptions, stream: true', () => {
  it('the openai package iterates transcript.text.delta per word, then transcript.text.done with the text and usage', async () => {
    h = await startServer();
    const balance = await withCredits(h, 10_000);
    const wav = toneSpeech(['hello', 'brave', 'new', 'world']);
    const stream = await client(h).audio.transcriptions.create({ file: await toFile(wav, 'a.wav', { type: 'audio/wav' }), model: 'gpt-4o-transcribe', stream: true });
    const events: TranscriptionStreamEvent[] = [];
    for await (const e of stream) events.push(e);
    expect(events.map((e) => e.type)).toEqual(['transcript.text.delta', 'transcript.text.delta', 'transcript.text.delta', 'transcript.text.delta', 'transcript.text.done']);
    const deltas = events.flatMap((e) => (e.type === 'transcript.text.delta' ? [e.delta] : []));
    expect(deltas).toEqual(['hello', ' brave', ' new', ' world']);
    const done = events.at(-1)!;
    if (done.type !== 'transcript.text.done') throw new Error('no done event');
    expect(done.text).toBe(deltas.join(''));
    expect(done.text).toBe('hello brave new world');
    const paid = 10_000 - (await settled(h, balance));
    // usage in the type the package gives (tokens): audio tokens are the credits paid, one a
    // started second of audio; output tokens the words.
    expect(done.usage).toEqual({ type: 'tokens', input_tokens: paid, output_tokens: 4, total_tokens: paid + 4, input_token_details: { audio_tokens: paid, text_tokens: 0 } });
    expect(paid).toBeGreaterThan(0);
  });

  it('is text/event-stream, each event one `data:` line of JSON (as the speech stream, docs/api.md §10); the same text as the JSON answer', async () => {
    h = await startServer();
    const wav = toneSpeech(['one', 'two']);
    const r = await fetch(`${v1(h)}/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${h.apiKey}` }, body: form(wav, { model: 'whisper-1', stream: 'true', response_format: 'text' }) });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(r.headers.get('x-request-id')).toBeTruthy();
    const raw = await r.text();
    const blocks = raw.split('\n\n').filter((b) => b !== '');
    expect(blocks).toHaveLength(3);
    for (const b of blocks) expect(b).toMatch(/^data: [^\n]+$/);
    const events = blocks.map((b) => JSON.parse(b.slice(6)) as Record<string, unknown>);
    expect(events).toEqual([
      { type: 'transcript.text.delta', delta: 'one' },
      { type: 'transcript.text.delta', delta: ' two' },
      { type: 'transcript.text.done', text: 'one two', usage: expect.objectContaining({ type: 'tokens', output_tokens: 2 }) },
    ]);
    const plain = await fetch(`${v1(h)}/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${h.apiKey}` }, body: form(wav, { model: 'whisper-1' }) });
    expect(await plain.json()).toEqual({ text: 'one two' });
  });

  it('sends each word as it is decoded: the first delta arrives while the transcription still runs', async () => {
    h = await startServer({ stt: registerSlowTone() });
    // One word, then 20 s of silence (250 frames at 2 ms each: half a second of work at least).
    const wav = toneSpeech(['early', 20, 'late']);
    const stream = await client(h).audio.transcriptions.create({ file: await toFile(wav, 'a.wav'), model: 'gpt-4o-transcribe', stream: true });
    const seen: Array<{ type: string; live: number }> = [];
    for await (const e of stream) seen.push({ type: e.type, live: h.server.context.sessions.live });
    expect(seen.map((s) => s.type)).toEqual(['transcript.text.delta', 'transcript.text.delta', 'transcript.text.done']);
    // Still live at the first delta: it was sent before the audio's end was heard.
    expect(seen[0]!.live).toBe(1);
  }, 30_000);

  it('a client gone mid-stream: the slot back, and it pays only for the audio up to the last word delivered', async () => {
    h = await startServer({ stt: registerSlowTone() });
    const balance = await withCredits(h, 10_000);
    const wav = toneSpeech(['hello', 30, 'world']);
    const ac = new AbortController();
    const r = await fetch(`${v1(h)}/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${h.apiKey}` }, body: form(wav, { model: 'gpt-4o-transcribe', stream: 'true' }), signal: ac.signal });
    expect(r.status).toBe(200);
    const reader = r.body!.getReader();
    let got = '';
    while (!got.includes('\n\n')) got += new TextDecoder().decode((await reader.read()).value);
    expect(got).toContain('"delta":"hello"');
    // The transcription holds credits as it hears the silence after the word: some held now.
    await eventually('holds past the first word', balance, (b) => b < 10_000 - 2);
    ac.abort();
    const framesAtAbort = slowFrames;
    const after = await settled(h, balance);
    // The engine stopped within a few frames of the client leaving, not at the end of the file's
    // 30 s (375 frames): nobody reads the rest.
    expect(slowFrames - framesAtAbort).toBeLessThan(50);
    // "hello" ends at 0.56 s: its first second is what was delivered; the rest goes back.
    expect(10_000 - after).toBe(1);
    expect(h.server.context.sessions.live).toBe(0);
  }, 30_000);

  it('a failure after the stream started is an `error` event (the package throws it as an APIError); what was delivered is paid', async () => {
    h = await startServer();
    // Credits for 3 s: the word in the first second is sent, the hold for the 4th second fails.
    const balance = await withCredits(h, 3);
    const wav = toneSpeech(['first', 8, 'second']);
    const stream = await client(h).audio.transcriptions.create({ file: await toFile(wav, 'a.wav'), model: 'gpt-4o-transcribe', stream: true });
    const deltas: string[] = [];
    const err = await (async () => {
      for await (const e of stream) if (e.type === 'transcript.text.delta') deltas.push(e.delta);
    })().then(() => undefined, (e: unknown) => e);
    expect(deltas).toEqual(['first']);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as InstanceType<typeof OpenAI.APIError>).error).toMatchObject({ type: 'insufficient_quota', code: 'insufficient_quota' });
    expect(3 - (await settled(h, balance))).toBe(1);
  });

  it('an error event on the wire: data {type: "error", error:{message,type,param,code}}, then the stream ends', async () => {
    h = await startServer();
    await withCredits(h, 3);
    const r = await fetch(`${v1(h)}/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${h.apiKey}` }, body: form(toneSpeech(['first', 8, 'second']), { model: 'whisper-1', stream: 'true' }) });
    const blocks = (await r.text()).split('\n\n').filter((b) => b !== '');
    expect(JSON.parse(blocks.at(-1)!.slice(6))).toEqual({ type: 'error', error: { message: expect.any(String), type: 'insufficient_quota', param: null, code: 'insufficient_quota' } });
  });

  it('a failure before the first event is the usual JSON error with its status (no credits: 429)', async () => {
    h = await startServer();
    await withCredits(h, 0);
    const r = await fetch(`${v1(h)}/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${h.apiKey}` }, body: form(toneSpeech(['first']), { model: 'whisper-1', stream: 'true' }) });
    expect(r.status, await r.clone().text()).toBe(429);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    expect((await r.json()) as unknown).toMatchObject({ error: { code: 'insufficient_quota' } });
  });

  it('refuses with stream the formats OpenAI does not stream (verbose_json, srt, vtt): 400 on response_format; a stream that is not a boolean is a 400 on stream', async () => {
    h = await startServer();
    const wav = toneSpeech(['one']);
    for (const format of ['verbose_json', 'srt', 'vtt']) {
      const r = await fetch(`${v1(h)}/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${h.apiKey}` }, body: form(wav, { model: 'gpt-4o-transcribe', stream: 'true', response_format: format }) });
      expect(r.status).toBe(400);
      expect(((await r.json()) as { error: { param: string; type: string } }).error).toMatchObject({ param: 'response_format', type: 'invalid_request_error' });
    }
    const r = await fetch(`${v1(h)}/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${h.apiKey}` }, body: form(wav, { model: 'gpt-4o-transcribe', stream: 'yes' }) });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: { param: string } }).error.param).toBe('stream');
    expect(h.server.context.sessions.live).toBe(0);
  });
});
