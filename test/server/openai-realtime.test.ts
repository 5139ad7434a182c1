/**
 * /v1/realtime transcription sessions in process (tone engines): the event translation over the
 * STT session, bad events answered with OpenAI `error` events on a socket that stays open, server
 * VAD and manual commits, G.711 input, clear, and the credential forms.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { encodeMulaw } from '../../src/audio/g711.js';
import { startServer, type Harness } from './harness.js';

let h: Harness;
let v1: string;
let wsV1: string;
/** "hello world" said by the tone TTS, 24 kHz s16le. */
let speech: Buffer;

beforeAll(async () => {
  h = await startServer();
  v1 = h.base.replace(/\/api$/, '/v1');
  wsV1 = h.wsBase.replace(/\/api$/, '/v1');
  const res = await fetch(`${v1}/audio/speech`, {
    method: 'POST',
    headers: { authorization: `Bearer ${h.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'tts-1', voice: 'alloy', input: 'hello world', response_format: 'pcm' }),
  });
  expect(res.status).toBe(200);
  speech = Buffer.from(await res.arrayBuffer());
});

afterAll(() => h.close());

type Ev = Record<string, unknown> & { type: string };

/** A Realtime socket that records every event. */
function realtime(query = '?intent=transcription', options: { headers?: Record<string, string>; protocols?: string[] } = {}) {
  const ws = new WebSocket(`${wsV1}/realtime${query}`, options.protocols ?? [], { headers: options.headers ?? { authorization: `Bearer ${h.apiKey}` } });
  const events: Ev[] = [];
  const waiters: Array<{ pred: (e: Ev) => boolean; resolve: (e: Ev) => void }> = [];
  ws.on('message', (d) => {
    const e = JSON.parse(String(d)) as Ev;
    events.push(e);
    for (const w of [...waiters]) if (w.pred(e)) (waiters.splice(waiters.indexOf(w), 1), w.resolve(e));
  });
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
  const opened = new Promise<void>((resolve, reject) => (ws.once('open', () => resolve()), ws.once('error', reject)));
  return {
    ws,
    events,
    closed,
    opened,
    send: (e: unknown) => ws.send(typeof e === 'string' ? e : JSON.stringify(e)),
    waitFor: (pred: (e: Ev) => boolean, ms = 20_000) =>
      new Promise<Ev>((resolve, reject) => {
        const found = events.find(pred);
        if (found) return resolve(found);
        const t = setTimeout(() => reject(new Error(`no such event in ${ms} ms; got ${events.map((e) => e.type).join(', ')}`)), ms);
        waiters.push({ pred, resolve: (e) => (clearTimeout(t), resolve(e)) });
      }),
  };
}

const append = (audio: Buffer, chunk = 4800): Array<{ type: string; audio: string }> => {
  const out = [];
  for (let i = 0; i < audio.length; i += chunk) out.push({ type: 'input_audio_buffer.append', audio: audio.subarray(i, i + chunk).toString('base64') });
  return out;
};

const manual = { type: 'session.update', session: { type: 'transcription', audio: { input: { turn_detection: null, transcription: { model: 'gpt-4o-transcribe', language: 'en' } } } } };

describe('/v1/realtime: session lifecycle', () => {
  it('starts with session.created (a transcription session with server VAD) and answers session.update with session.updated', async () => {
    const c = realtime('?intent=transcription&model=gpt-4o-mini-transcribe');
    const created = await c.waitFor((e) => e.type === 'session.created');
    expect(created['event_id']).toMatch(/^event_/);
    expect(created['session']).toMatchObject({ type: 'transcription', audio: { input: { format: { type: 'audio/pcm', rate: 24000 }, transcription: { model: 'gpt-4o-mini-transcribe' }, turn_detection: { type: 'server_vad', threshold: 0.5, prefix_padding_ms: 300, silence_duration_ms: 500 }, noise_reduction: null } } });
    c.send(manual);
    const updated = await c.waitFor((e) => e.type === 'session.updated');
    expect(updated['session']).toMatchObject({ audio: { input: { turn_detection: null, transcription: { model: 'gpt-4o-transcribe', language: 'en' } } } });
    c.ws.close();
  });

  it('gpt-realtime-whisper starts without turn detection (as OpenAI serves it)', async () => {
    const c = realtime('?intent=transcription&model=gpt-realtime-whisper');
    const created = await c.waitFor((e) => e.type === 'session.created');
    expect((created['session'] as { audio: { input: { turn_detection: unknown } } }).audio.input.turn_detection).toBeNull();
    c.ws.close();
  });
});

describe('/v1/realtime: bad events are error events and the socket stays open', () => {
  const cases: Array<[string, unknown, string, string | null]> = [
    ['not JSON', '{nope', 'invalid_json', null],
    ['an unknown type', { type: 'frobnicate', event_id: 'evt_1' }, 'invalid_value', 'type'],
    ['a conversation event', { type: 'response.create' }, 'invalid_value', 'type'],
    ['a realtime (conversation) session', { type: 'session.update', session: { type: 'realtime' } }, 'invalid_value', 'session.type'],
    ['noise reduction', { type: 'session.update', session: { type: 'transcription', audio: { input: { noise_reduction: { type: 'near_field' } } } } }, 'invalid_value', 'session.audio.input.noise_reduction'],
    ['PCM at 16 kHz', { type: 'session.update', session: { type: 'transcription', audio: { input: { format: { type: 'audio/pcm', rate: 16000 } } } } }, 'invalid_value', 'session.audio.input.format.rate'],
    ['an unknown format', { type: 'session.update', session: { type: 'transcription', audio: { input: { format: { type: 'audio/opus' } } } } }, 'invalid_value', 'session.audio.input.format.type'],
    ['semantic VAD', { type: 'session.update', session: { type: 'transcription', audio: { input: { turn_detection: { type: 'semantic_vad' } } } } }, 'invalid_value', 'session.audio.input.turn_detection.type'],
    ['a threshold above 1', { type: 'session.update', session: { type: 'transcription', audio: { input: { turn_detection: { type: 'server_vad', threshold: 2 } } } } }, 'invalid_value', 'session.audio.input.turn_detection.threshold'],
    ['an unknown model', { type: 'session.update', session: { type: 'transcription', audio: { input: { transcription: { model: 'gpt-5' } } } } }, 'invalid_value', 'session.audio.input.transcription.model'],
    ['an unknown session field', { type: 'session.update', session: { type: 'transcription', instructions: 'x' } }, 'unknown_parameter', 'session.instructions'],
    ['logprobs', { type: 'session.update', session: { type: 'transcription', include: ['item.input_audio_transcription.logprobs'] } }, 'invalid_value', 'session.include'],
    ['append without audio', { type: 'input_audio_buffer.append' }, 'missing_required_parameter', 'audio'],
    ['append of bad base64', { type: 'input_audio_buffer.append', audio: 'a$b=' }, 'invalid_value', 'audio'],
    ['commit of an empty buffer', { type: 'input_audio_buffer.commit', event_id: 'evt_c' }, 'input_audio_buffer_commit_empty', null],
    ['the beta transcription_session.update', { type: 'transcription_session.update', session: {} }, 'invalid_value', 'type'],
  ];
  it.each(cases)('%s', async (_name, event, code, param) => {
    const c = realtime();
    await c.waitFor((e) => e.type === 'session.created');
    c.send(event);
    const err = await c.waitFor((e) => e.type === 'error');
    const body = err['error'] as Record<string, unknown>;
    expect(body).toMatchObject({ type: 'invalid_request_error', code, param });
    expect(typeof body['message']).toBe('string');
    if (typeof event === 'object' && event !== null && 'event_id' in event) expect(body['event_id']).toBe((event as { event_id: string }).event_id);
    // Still open: a good event is answered.
    c.send(manual);
    await c.waitFor((e) => e.type === 'session.updated');
    expect(c.ws.readyState).toBe(WebSocket.OPEN);
    c.ws.close();
  });

  it('a binary frame is an error event, and the socket stays open', async () => {
    const c = realtime();
    await c.waitFor((e) => e.type === 'session.created');
    c.ws.send(Buffer.from([1, 2, 3]));
    await c.waitFor((e) => e.type === 'error');
    c.send(manual);
    await c.waitFor((e) => e.type === 'session.updated');
    c.ws.close();
  });
});

describe('/v1/realtime: transcription', () => {
  it('manual commits: committed, deltas, then completed with item_id, content_index and usage', async () => {
    const c = realtime();
    await c.waitFor((e) => e.type === 'session.created');
    c.send(manual);
    await c.waitFor((e) => e.type === 'session.updated');
    for (const e of append(speech)) c.send(e);
    c.send({ type: 'input_audio_buffer.commit' });
    const committed = await c.waitFor((e) => e.type === 'input_audio_buffer.committed');
    expect(committed['previous_item_id']).toBeNull();
    const done = await c.waitFor((e) => e.type === 'conversation.item.input_audio_transcription.completed');
    expect(done).toMatchObject({ item_id: committed['item_id'], content_index: 0, transcript: 'hello world', usage: { type: 'duration' } });
    expect((done['usage'] as { seconds: number }).seconds).toBeCloseTo(speech.length / 48000, 2);
    const deltas = c.events.filter((e) => e.type === 'conversation.item.input_audio_transcription.delta');
    expect(deltas.map((d) => d['delta']).join('')).toBe('hello world');
    for (const d of deltas) expect(d).toMatchObject({ item_id: committed['item_id'], content_index: 0 });
    // No VAD events without turn detection.
    expect(c.events.some((e) => e.type.startsWith('input_audio_buffer.speech'))).toBe(false);
    // A second item follows the first.
    for (const e of append(speech)) c.send(e);
    c.send({ type: 'input_audio_buffer.commit' });
    const second = await c.waitFor((e) => e.type === 'input_audio_buffer.committed' && e['item_id'] !== committed['item_id']);
    expect(second['previous_item_id']).toBe(committed['item_id']);
    const done2 = await c.waitFor((e) => e.type === 'conversation.item.input_audio_transcription.completed' && e['item_id'] === second['item_id']);
    expect(done2['transcript']).toBe('hello world');
    c.ws.close();
  });

  it("the session's first transcript text is timed: /metrics counts it under the realtime route", async () => {
    const count = async (): Promise<number> => {
      const metrics = await (await fetch(h.base.replace('/api', '/metrics'))).text();
      return Number(/^voicewire_time_to_first_text_seconds_count\{route="openai_realtime"\} (\d+)$/m.exec(metrics)?.[1] ?? 0);
    };
    const before = await count();
    const c = realtime();
    await c.waitFor((e) => e.type === 'session.created');
    c.send(manual);
    for (const e of append(speech)) c.send(e);
    c.send({ type: 'input_audio_buffer.commit' });
    await c.waitFor((e) => e.type === 'conversation.item.input_audio_transcription.completed');
    c.ws.close();
    // Once per session, at its first delta (the events before it carry no text).
    expect(await count()).toBe(before + 1);
  });

  it('server VAD: speech_started and speech_stopped on the audio timeline, then committed and completed', async () => {
    const c = realtime();
    await c.waitFor((e) => e.type === 'session.created');
    c.send({ type: 'session.update', session: { type: 'transcription', audio: { input: { turn_detection: { type: 'server_vad', threshold: 0.5, prefix_padding_ms: 200, silence_duration_ms: 300 } } } } });
    await c.waitFor((e) => e.type === 'session.updated');
    // The tone engine's steps count silence from the last tone (none at the start: "speech"), so
    // the words come first; the real VAD's timeline is checked on the built server.
    const tail = Buffer.alloc(24000 * 2 * 1.5);
    for (const e of append(Buffer.concat([speech, tail]))) c.send(e);
    const started = await c.waitFor((e) => e.type === 'input_audio_buffer.speech_started');
    const stopped = await c.waitFor((e) => e.type === 'input_audio_buffer.speech_stopped');
    const committed = await c.waitFor((e) => e.type === 'input_audio_buffer.committed');
    const done = await c.waitFor((e) => e.type === 'conversation.item.input_audio_transcription.completed');
    expect(stopped['item_id']).toBe(started['item_id']);
    expect(committed['item_id']).toBe(started['item_id']);
    expect(done).toMatchObject({ item_id: started['item_id'], transcript: 'hello world' });
    const speechMs = (speech.length / 48000) * 1000;
    // Speech starts at the start (the padding stops at the item's start), and stops after the
    // words and at least the silence asked for, before the audio's end.
    expect(started['audio_start_ms']).toBe(0);
    expect(stopped['audio_end_ms'] as number).toBeGreaterThanOrEqual(speechMs + 300 - 80);
    expect(stopped['audio_end_ms'] as number).toBeLessThan(speechMs + 1500);
    c.ws.close();
  });

  it('audio/pcmu (G.711 μ-law at 8 kHz) is transcribed', async () => {
    const c = realtime();
    await c.waitFor((e) => e.type === 'session.created');
    c.send({ ...manual, session: { ...manual.session, audio: { input: { ...manual.session.audio.input, format: { type: 'audio/pcmu' } } } } });
    await c.waitFor((e) => e.type === 'session.updated');
    // 24 kHz → 8 kHz by taking every third sample: the tones (under 3.5 kHz) survive.
    const pcm = new Int16Array(speech.buffer, speech.byteOffset, speech.length / 2);
    const down = new Int16Array(Math.floor(pcm.length / 3));
    for (let i = 0; i < down.length; i++) down[i] = pcm[i * 3]!;
    for (const e of append(Buffer.from(encodeMulaw(down)), 1600)) c.send(e);
    c.send({ type: 'input_audio_buffer.commit' });
    const done = await c.waitFor((e) => e.type === 'conversation.item.input_audio_transcription.completed');
    expect(done['transcript']).toBe('hello world');
    c.ws.close();
  });

  it('clear drops the buffer: cleared, and its words never come', async () => {
    const c = realtime();
    await c.waitFor((e) => e.type === 'session.created');
    c.send(manual);
    await c.waitFor((e) => e.type === 'session.updated');
    for (const e of append(speech)) c.send(e);
    c.send({ type: 'input_audio_buffer.clear' });
    await c.waitFor((e) => e.type === 'input_audio_buffer.cleared');
    const say = Buffer.from(speech.subarray(0, Math.floor(speech.length / 2)));
    c.send({ type: 'input_audio_buffer.commit' });
    await c.waitFor((e) => e.type === 'error' && (e['error'] as { code: string }).code === 'input_audio_buffer_commit_empty');
    for (const e of append(speech)) c.send(e);
    c.send({ type: 'input_audio_buffer.commit' });
    const done = await c.waitFor((e) => e.type === 'conversation.item.input_audio_transcription.completed');
    expect(done['transcript']).toBe('hello world');
    expect(c.events.filter((e) => e.type === 'conversation.item.input_audio_transcription.completed')).toHaveLength(1);
    expect(say.length).toBeGreaterThan(0);
    c.ws.close();
  });

  it('the format cannot change once audio was appended (error event, socket open)', async () => {
    const c = realtime();
    await c.waitFor((e) => e.type === 'session.created');
    c.send(manual);
    for (const e of append(speech.subarray(0, 9600))) c.send(e);
    c.send({ type: 'session.update', session: { type: 'transcription', audio: { input: { format: { type: 'audio/pcma' } } } } });
    const err = await c.waitFor((e) => e.type === 'error');
    expect(err['error']).toMatchObject({ param: 'session.audio.input.format' });
    c.send({ type: 'input_audio_buffer.commit' });
    await c.waitFor((e) => e.type === 'input_audio_buffer.committed');
    c.ws.close();
  });
});

describe('/v1/realtime: credentials and the URL', () => {
  it('no credential: an error event, then close 1008', async () => {
    const c = realtime('?intent=transcription', { headers: {} });
    expect(await c.closed).toBe(1008);
    expect(c.events[0]).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  });

  it('a wrong bearer key is refused', async () => {
    const c = realtime('?intent=transcription', { headers: { authorization: 'Bearer nope' } });
    expect(await c.closed).toBe(1008);
  });

  it('a browser: a temporary token as the openai-insecure-api-key subprotocol, answered with "realtime" (the token is not echoed)', async () => {
    const t = (await (await fetch(`${h.base}/api-keys/token`, { headers: { 'x-api-key': h.apiKey } })).json()) as { token: string };
    const c = realtime('?intent=transcription', { headers: {}, protocols: ['realtime', `openai-insecure-api-key.${t.token}`] });
    await c.opened;
    expect(c.ws.protocol).toBe('realtime');
    await c.waitFor((e) => e.type === 'session.created');
    // An API key is not taken in a subprotocol (a page must not hold one).
    const k = realtime('?intent=transcription', { headers: {}, protocols: ['realtime', `openai-insecure-api-key.${h.apiKey}`] });
    expect(await k.closed).toBe(1008);
    c.ws.close();
  });

  it('an unknown model or intent is refused with an error event', async () => {
    const m = realtime('?intent=transcription&model=gpt-realtime');
    expect(await m.closed).toBe(1008);
    expect(m.events[0]).toMatchObject({ type: 'error', error: { param: 'model' } });
    const i = realtime('?intent=conversation');
    expect(await i.closed).toBe(1008);
  });

  it('/v1/models lists the Realtime model names', async () => {
    const r = (await (await fetch(`${v1}/models`, { headers: { authorization: `Bearer ${h.apiKey}` } })).json()) as { data: Array<{ id: string }> };
    const ids = r.data.map((m) => m.id);
    for (const id of ['gpt-realtime-whisper', 'gpt-4o-transcribe', 'gpt-4o-mini-transcribe', 'whisper-1']) expect(ids).toContain(id);
  });
});
