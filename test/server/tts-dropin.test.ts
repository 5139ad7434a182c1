/**
 * Issue 35 items 3, 4 and 7 against the in-process server: `ready.frame_size` at the output rate,
 * one default voice (no voice = `"default"` = Emma) on POST and the WebSocket, 80 ms G.711 chunks
 * from the first, `pronunciation_id` honoured on POST, and the token refusal in step with
 * docs/server.md's table. Each was seen failing on the code before issue 35 (the titles say how).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, startServer, type Harness } from './harness.js';
import { has } from '../helpers/tools.js';

const json = { 'content-type': 'application/json' };

async function ttsWs(h: Harness, setup: Record<string, unknown>, texts: string[]): Promise<Array<Record<string, unknown>>> {
  const c = connect(`${h.wsBase}/speech/tts`, { 'x-api-key': h.apiKey });
  c.send({ type: 'setup', ...setup });
  for (const text of texts) c.send({ type: 'text', text });
  c.send({ type: 'end_of_stream' });
  await c.closed;
  return c.messages;
}

const audioOf = (m: Array<Record<string, unknown>>): Buffer => Buffer.concat(m.filter((x) => x['type'] === 'audio').map((x) => Buffer.from(String(x['audio']), 'base64')));

describe('tone engines', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startServer();
  });
  afterAll(async () => {
    await h.close();
  });

  it('ready.frame_size is 80 ms at ready.sample_rate (seen failing first: 3840 at every rate)', async () => {
    const cases: Array<[string, number, number]> = [['pcm', 48000, 3840], ['wav', 48000, 3840], ['ulaw_8000', 8000, 640], ['alaw_8000', 8000, 640], ['pcm_8000', 8000, 640], ['pcm_16000', 16000, 1280], ['pcm_22050', 22050, 1764], ['pcm_24000', 24000, 1920], ['pcm_44100', 44100, 3528], ['opus', 48000, 3840]];
    for (const [format, rate, size] of cases) {
      const m = await ttsWs(h, { output_format: format }, ['a']);
      expect(m[0], format).toMatchObject({ type: 'ready', sample_rate: rate, frame_size: size });
    }
  });

  it('G.711 and resampled PCM come in whole 80 ms chunks from the first (seen failing first: the first ulaw_8000 chunk held 589 samples, 74 ms)', async () => {
    for (const [format, bytes] of [['ulaw_8000', 640], ['alaw_8000', 640], ['pcm_16000', 2560], ['pcm_22050', 3528]] as const) {
      const m = await ttsWs(h, { output_format: format }, ['hello world']);
      const audio = m.filter((x) => x['type'] === 'audio');
      const sizes = audio.map((x) => Buffer.from(String(x['audio']), 'base64').length).filter((n) => n > 0);
      expect(sizes.length, format).toBeGreaterThan(5);
      // Every chunk but the last is exactly 80 ms; the last holds the rest (the resampler's tail).
      expect(sizes.slice(0, -1).every((n) => n === bytes), `${format}: ${sizes.join(',')}`).toBe(true);
      expect(sizes.at(-1)!).toBeLessThanOrEqual(bytes);
      // Each chunk's timing is the 80 ms grid, and the stream is as long as before (10 words' frames → output).
      const first = audio.find((x) => Buffer.from(String(x['audio']), 'base64').length > 0)!;
      expect(first['start_s']).toBe(0);
      expect(first['stop_s']).toBeCloseTo(0.08, 9);
    }
    // POST raw audio: the same bytes, the same length as the 48 kHz audio resampled (1/6 of it at 8 kHz).
    const pcm = await fetch(`${h.base}/post/speech/tts`, { method: 'POST', headers: { ...json, 'x-api-key': h.apiKey }, body: JSON.stringify({ text: 'hello world', output_format: 'pcm', only_audio: true }) });
    const ulaw = await fetch(`${h.base}/post/speech/tts`, { method: 'POST', headers: { ...json, 'x-api-key': h.apiKey }, body: JSON.stringify({ text: 'hello world', output_format: 'ulaw_8000', only_audio: true }) });
    expect((await ulaw.arrayBuffer()).byteLength).toBe((await pcm.arrayBuffer()).byteLength / 2 / 6);
  });

  it('a <flush> still brings out the audio so far at once in ulaw_8000: the chunk before it is shorter, none is held for the 80 ms grid', async () => {
    const c = connect(`${h.wsBase}/speech/tts`, { 'x-api-key': h.apiKey });
    c.send({ type: 'setup', output_format: 'ulaw_8000' });
    c.send({ type: 'text', text: 'hello <flush>' });
    // Nothing more is sent until the flushed audio came: "hello" is 5 tones of 80 ms, all out but
    // the resampler's 6 ms look-ahead (before the drain, the last 74 ms waited for the next frame).
    const out = (): number => c.messages.filter((m) => m['type'] === 'audio').reduce((n, m) => n + Buffer.from(String(m['audio']), 'base64').length, 0);
    const end = Date.now() + 10_000;
    while (out() < 0.39 * 8000 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    expect(out()).toBeGreaterThanOrEqual(0.39 * 8000);
    c.send({ type: 'text', text: 'world' });
    c.send({ type: 'end_of_stream' });
    await c.closed;
    expect(c.messages.filter((m) => m['type'] === 'text').map((m) => m['text'])).toEqual(['hello', 'world']);
  });

  it('POST honours pronunciation_id as the WebSocket does; an unknown one is refused (seen failing first: it was dropped)', async () => {
    const auth = { ...json, 'x-api-key': h.apiKey };
    const d = (await (await fetch(`${h.base}/pronunciations/`, { method: 'POST', headers: auth, body: JSON.stringify({ name: 'brands', language: 'en', rules: [{ word: 'vw', replacement: 'voicewire' }] }) })).json()) as { uid: string };
    const post = (body: Record<string, unknown>) => fetch(`${h.base}/post/speech/tts`, { method: 'POST', headers: auth, body: JSON.stringify({ text: 'vw', output_format: 'pcm', only_audio: true, ...body }) });
    const plain = await (await post({})).arrayBuffer();
    const respelled = await (await post({ pronunciation_id: d.uid })).arrayBuffer();
    // The tone engine says one 80 ms tone per letter: "voicewire" is 9 of them, "vw" 2.
    expect(respelled.byteLength - plain.byteLength).toBe(7 * 3840 * 2);
    const ws = await ttsWs(h, { output_format: 'pcm', pronunciation_id: d.uid }, ['vw']);
    expect(audioOf(ws).equals(Buffer.from(respelled))).toBe(true);
    const unknown = await post({ pronunciation_id: 'nope' });
    expect(unknown.status).toBe(500);
    expect(await unknown.text()).toContain('unknown pronunciation_id "nope"');
  });

  it('a token where it is not accepted: the refusal names where it is, as docs/server.md does (seen failing first: "TTS routes only")', async () => {
    const token = ((await (await fetch(`${h.base}/api-keys/token`, { headers: { 'x-api-key': h.apiKey } })).json()) as { token: string }).token;
    const r = await fetch(`${h.base}/usages/credits?token=${encodeURIComponent(token)}`);
    expect(r.status).toBe(500);
    const text = await r.text();
    expect(text).toMatch(/^error from server 1008: /);
    expect(text).toContain('the STT WebSocket and GET /voices/');
    expect(text).not.toContain('TTS routes only');
    // And where it is: the voice list and the STT WebSocket.
    expect((await fetch(`${h.base}/voices/?token=${encodeURIComponent(token)}`)).status).toBe(200);
  });
});

describe.skipIf(!has('espeak-ng'))('espeak-ng (system library): one default voice', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startServer({ tts: 'espeak-system' });
  });
  afterAll(async () => {
    await h.close();
  });

  const post = async (body: Record<string, unknown>): Promise<Buffer> => {
    const r = await fetch(`${h.base}/post/speech/tts`, { method: 'POST', headers: { ...json, 'x-api-key': h.apiKey }, body: JSON.stringify({ text: 'Good morning, this is the default voice.', output_format: 'pcm', only_audio: true, json_config: { temp: 0 }, ...body }) });
    expect(r.status).toBe(200);
    return Buffer.from(await r.arrayBuffer());
  };

  it('no voice is "voice": "default" is Emma, on POST (seen failing first: another voice)', async () => {
    const none = await post({});
    const named = await post({ voice: 'default' });
    const emma = await post({ voice_id: 'YTpq7expH9539ERJ' });
    const jack = await post({ voice_id: 'm86j6D7UZpGzHsNu' });
    expect(none.equals(named)).toBe(true);
    expect(none.equals(emma)).toBe(true);
    expect(none.equals(jack)).toBe(false);
  });

  it('no voice_id is "default" on the WebSocket too, and the same bytes as POST', async () => {
    const setup = { output_format: 'pcm', json_config: { temp: 0 } };
    const none = audioOf(await ttsWs(h, setup, ['Good morning, this is the default voice.']));
    const named = audioOf(await ttsWs(h, { ...setup, voice_id: 'default' }, ['Good morning, this is the default voice.']));
    expect(none.length).toBeGreaterThan(0);
    expect(none.equals(named)).toBe(true);
    expect(none.equals(await post({}))).toBe(true);
  });
});
