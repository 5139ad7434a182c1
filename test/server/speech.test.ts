/**
 * The speech routes over real sockets: POST and WebSocket TTS and STT with the tone engines, the
 * tone round trip (STT hears what TTS said), auth failures in every transport's form (§5.6, §7).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audioBytes, connect, startServer, type Harness } from './harness.js';
import { wavInfo } from '../../src/audio/wav.js';

let h: Harness;
beforeAll(async () => {
  h = await startServer();
});
afterAll(async () => {
  await h.close();
});

const json = { 'content-type': 'application/json' };

async function tts(body: unknown, headers: Record<string, string> = {}, query = ''): Promise<Response> {
  return fetch(`${h.base}/post/speech/tts${query}`, { method: 'POST', headers: { ...json, 'x-api-key': h.apiKey, ...headers }, body: JSON.stringify(body) });
}

describe('POST /post/speech/tts', () => {
  it('only_audio: raw PCM of one 80 ms tone frame per character, words two frames apart', async () => {
    const r = await tts({ text: 'hi you', output_format: 'pcm', only_audio: true });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toContain('audio/pcm');
    const bytes = Buffer.from(await r.arrayBuffer());
    // "hi" (2 frames) + gap (2 frames) + "you" (3 frames) = 7 frames of 3840 samples
    expect(bytes.length).toBe(7 * 3840 * 2);
  });

  it('only_audio false: NDJSON audio and word timestamps, end_of_stream last', async () => {
    const r = await tts({ text: 'hello world', output_format: 'wav' });
    expect(r.headers.get('content-type')).toBe('application/x-ndjson');
    const lines = (await r.text()).trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.at(-1)).toEqual({ type: 'end_of_stream' });
    const words = lines.filter((l) => l['type'] === 'text');
    expect(words.map((w) => [w['text'], w['start_s'], w['stop_s']])).toEqual([
      ['hello', 0, 0.4],
      ['world', 0.56, 0.96],
    ]);
    expect(wavInfo(new Uint8Array(audioBytes(lines))).sampleRate).toBe(48000);
  });

  it('the alias POST /speech/tts answers the same', async () => {
    const a = await tts({ text: 'same', output_format: 'pcm', only_audio: true });
    const b = await fetch(`${h.base}/speech/tts`, { method: 'POST', headers: { ...json, 'x-api-key': h.apiKey }, body: JSON.stringify({ text: 'same', output_format: 'pcm', only_audio: true }) });
    expect(Buffer.from(await b.arrayBuffer()).equals(Buffer.from(await a.arrayBuffer()))).toBe(true);
  });

  it('422 with the §2.7 body for a bad body', async () => {
    const r = await tts({ text: 'x', output_format: 'mp3', json_config: { temp: 9 } });
    expect(r.status).toBe(422);
    const body = (await r.json()) as { detail: Array<{ loc: unknown[]; type: string }> };
    expect(body.detail.map((d) => d.loc)).toEqual([
      ['body', 'output_format'],
      ['body', 'json_config', 'temp'],
    ]);
  });

  it('auth failures: 500 plain text "error from server 1008: …" (missing, bad, revoked)', async () => {
    const missing = await fetch(`${h.base}/post/speech/tts`, { method: 'POST', headers: json, body: '{"text":"a"}' });
    expect(missing.status).toBe(500);
    expect(missing.headers.get('content-type')).toContain('text/plain');
    expect(await missing.text()).toMatch(/^error from server 1008: /);
    const bad = await tts({ text: 'a' }, { 'x-api-key': 'vw_nope' });
    expect(await bad.text()).toBe('error from server 1008: invalid API key');
  });

  it('an unknown voice_id is refused before any audio, as a proxy-level error (§7.1)', async () => {
    const r = await tts({ text: 'a', voice_id: 'no-such-voice', only_audio: true });
    expect(r.status).toBe(500);
    expect(await r.text()).toBe('invalid voice ID "no-such-voice"');
    const ok = await tts({ text: 'a', voice_id: 'tone-fr', only_audio: true, output_format: 'pcm' });
    expect(ok.status).toBe(200);
    await ok.arrayBuffer();
  });
});

describe('temporary tokens', () => {
  it('GET /api-keys/token gives a token accepted as ?token= on TTS only; the store keeps its hash', async () => {
    const r = await fetch(`${h.base}/api-keys/token`, { headers: { 'x-api-key': h.apiKey } });
    const t = (await r.json()) as { token: string; expires_at: string };
    expect(Date.parse(t.expires_at) - Date.now()).toBeGreaterThan(500_000);
    const viaToken = await fetch(`${h.base}/post/speech/tts?token=${t.token}`, { method: 'POST', headers: json, body: JSON.stringify({ text: 'ok', output_format: 'pcm', only_audio: true }) });
    expect(viaToken.status).toBe(200);
    await viaToken.arrayBuffer();
    const stt = await fetch(`${h.base}/post/speech/asr?token=${t.token}`, { method: 'POST', headers: { 'content-type': 'audio/pcm' }, body: new Uint8Array(3840) as unknown as BodyInit });
    expect(await stt.text()).toMatch(/^error from server 1008: missing API key/);
    const credits = await fetch(`${h.base}/usages/credits?token=${t.token}`);
    expect(credits.status).toBe(500);
    // The store holds no clear token.
    const found = await h.store.findToken(t.token, new Date());
    expect(found).toBeUndefined();
    const ws = connect(`${h.wsBase}/speech/tts?token=${encodeURIComponent(t.token)}`);
    ws.send({ type: 'setup', output_format: 'pcm' });
    ws.send({ type: 'text', text: 'hey' });
    ws.send({ type: 'end_of_stream' });
    await ws.waitFor((m) => m['type'] === 'end_of_stream');
    expect((await ws.closed).code).toBe(1000);
  });
});

describe('TTS WebSocket', () => {
  it('ready, audio, word timestamps, end_of_stream, then close (pipelined like the Python client)', async () => {
    const c = connect(`${h.wsBase}/speech/tts`, { 'x-api-key': h.apiKey });
    c.send({ type: 'setup', model_name: 'default', voice_id: 'tone-en', output_format: 'pcm', json_config: '{"padding_bonus": 1}' });
    c.send({ type: 'text', text: 'a' });
    c.send({ type: 'text', text: 'bc' });
    c.send({ type: 'end_of_stream' });
    const { code } = await c.closed;
    expect(code).toBe(1000);
    expect(c.messages[0]!['type']).toBe('ready');
    expect(c.messages.at(-1)).toEqual({ type: 'end_of_stream' });
    // padding_bonus 1 → 3 gap frames: a (1) + gap 3 + bc (2) = 6 frames
    expect(audioBytes(c.messages).length).toBe(6 * 3840 * 2);
    expect(c.messages.filter((m) => m['type'] === 'text').map((m) => m['text'])).toEqual(['a', 'bc']);
  });

  it('multiplexing: two requests on one socket keep their client_req_id', async () => {
    const c = connect(`${h.wsBase}/speech/tts`, { 'x-api-key': h.apiKey });
    for (const id of ['one', 'two']) c.send({ type: 'setup', output_format: 'pcm', close_ws_on_eos: false, client_req_id: id });
    c.send({ type: 'text', text: 'first', client_req_id: 'one' });
    c.send({ type: 'text', text: 'second words', client_req_id: 'two' });
    c.send({ type: 'end_of_stream', client_req_id: 'two' });
    c.send({ type: 'end_of_stream', client_req_id: 'one' });
    await c.waitFor((m) => m['type'] === 'end_of_stream' && m['client_req_id'] === 'one');
    await c.waitFor((m) => m['type'] === 'end_of_stream' && m['client_req_id'] === 'two');
    const words = (id: string): unknown[] => c.messages.filter((m) => m['type'] === 'text' && m['client_req_id'] === id).map((m) => m['text']);
    expect(words('one')).toEqual(['first']);
    expect(words('two')).toEqual(['second', 'words']);
    c.ws.close();
    await c.closed;
  });

  it('bad key: error 1008 then close 1008', async () => {
    const c = connect(`${h.wsBase}/speech/tts`, { 'x-api-key': 'vw_bad' });
    c.send({ type: 'setup' });
    const { code } = await c.closed;
    expect(code).toBe(1008);
    expect(c.messages).toEqual([{ type: 'error', message: 'invalid API key', code: 1008 }]);
  });

  it('a message before setup: error 1008', async () => {
    const c = connect(`${h.wsBase}/speech/tts`, { 'x-api-key': h.apiKey });
    c.send({ type: 'text', text: 'early' });
    expect((await c.closed).code).toBe(1008);
    expect(c.messages[0]!['type']).toBe('error');
  });
});

describe('STT', () => {
  async function speak(text: string, format: string): Promise<Buffer> {
    const r = await tts({ text, output_format: format, only_audio: true });
    return Buffer.from(await r.arrayBuffer());
  }

  it('POST /post/speech/asr hears the tone TTS back (wav, Content-Type)', async () => {
    const wav = await speak('hello world 42', 'wav');
    const r = await fetch(`${h.base}/post/speech/asr`, { method: 'POST', headers: { 'x-api-key': h.apiKey, 'content-type': 'audio/wav' }, body: new Uint8Array(wav) });
    expect(r.headers.get('content-type')).toBe('application/x-ndjson');
    const lines = (await r.text()).trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.filter((l) => l['type'] === 'text').map((l) => l['text'])).toEqual(['hello', 'world', '42']);
    expect(lines.filter((l) => l['type'] === 'step').length).toBeGreaterThan(10);
    expect(lines.at(-1)).toEqual({ type: 'end_of_stream' });
  });

  it('unsupported Content-Type: the plain-text proxy-level error (§7.1)', async () => {
    const r = await fetch(`${h.base}/speech/asr`, { method: 'POST', headers: { 'x-api-key': h.apiKey, 'content-type': 'audio/mpeg' }, body: new Uint8Array(10) });
    expect(r.status).toBe(500);
    expect(await r.text()).toBe('unsupported content type audio/mpeg');
  });

  it('undecodable audio before the first line: HTTP 500 plain text naming the problem, proxy-level form (§7.1)', async () => {
    const r = await fetch(`${h.base}/post/speech/asr`, { method: 'POST', headers: { 'x-api-key': h.apiKey, 'content-type': 'audio/wav' }, body: Buffer.from('RIFF....WAVEjunkjunkjunk') });
    expect(r.status).toBe(500);
    expect(await r.text()).toMatch(/^STT: audio could not be decoded/);
  });

  it('WebSocket: ready, text, step every 80 ms, flush → flushed, end_of_stream, close', async () => {
    const pcm48 = await speak('ok go', 'pcm_24000');
    const c = connect(`${h.wsBase}/speech/asr`, { 'x-api-key': h.apiKey });
    c.send({ type: 'setup', input_format: 'pcm' });
    for (let o = 0; o < pcm48.length; o += 3840) c.send({ type: 'audio', audio: pcm48.subarray(o, o + 3840).toString('base64') });
    c.send({ type: 'flush', flush_id: 7 });
    c.send({ type: 'end_of_stream' });
    const { code } = await c.closed;
    expect(code).toBe(1000);
    expect(c.messages[0]).toMatchObject({ type: 'ready', sample_rate: 24000, frame_size: 1920 });
    const types = c.messages.map((m) => m['type']);
    expect(c.messages.filter((m) => m['type'] === 'text').map((m) => m['text'])).toEqual(['ok', 'go']);
    expect(types.indexOf('flushed')).toBeGreaterThan(types.lastIndexOf('text'));
    expect(c.messages.find((m) => m['type'] === 'flushed')).toMatchObject({ flush_id: 7 });
    const steps = c.messages.filter((m) => m['type'] === 'step');
    expect(steps[1]).toMatchObject({ step_idx: 1, step_duration_s: 0.08 });
    expect(types.at(-1)).toBe('end_of_stream');
  });

  it('WebSocket: close_ws_on_eos false keeps the socket for another request', async () => {
    const c = connect(`${h.wsBase}/speech/asr`, { 'x-api-key': h.apiKey });
    c.send({ type: 'setup', input_format: 'pcm', close_ws_on_eos: false });
    c.send({ type: 'audio', audio: Buffer.alloc(3840).toString('base64') });
    c.send({ type: 'end_of_stream' });
    await c.waitFor((m) => m['type'] === 'end_of_stream');
    c.send({ type: 'setup', input_format: 'pcm' });
    c.send({ type: 'end_of_stream' });
    expect((await c.closed).code).toBe(1000);
    expect(c.messages.filter((m) => m['type'] === 'ready')).toHaveLength(2);
  });

  it('WebSocket multiplexing: two interleaved requests, each answered under its client_req_id', async () => {
    const ok = await speak('ok', 'pcm_24000');
    const go = await speak('go', 'pcm_24000');
    const c = connect(`${h.wsBase}/speech/asr`, { 'x-api-key': h.apiKey });
    for (const id of ['x', 'y']) c.send({ type: 'setup', input_format: 'pcm', close_ws_on_eos: false, client_req_id: id });
    for (let o = 0; o < Math.max(ok.length, go.length); o += 3840) {
      if (o < ok.length) c.send({ type: 'audio', audio: ok.subarray(o, o + 3840).toString('base64'), client_req_id: 'x' });
      if (o < go.length) c.send({ type: 'audio', audio: go.subarray(o, o + 3840).toString('base64'), client_req_id: 'y' });
    }
    c.send({ type: 'flush', flush_id: '9', client_req_id: 'y' });
    for (const id of ['x', 'y']) c.send({ type: 'end_of_stream', client_req_id: id });
    for (const id of ['x', 'y']) await c.waitFor((m) => m['type'] === 'end_of_stream' && m['client_req_id'] === id);
    const said = (id: string): unknown[] => c.messages.filter((m) => m['type'] === 'text' && m['client_req_id'] === id).map((m) => m['text']);
    expect(said('x')).toEqual(['ok']);
    expect(said('y')).toEqual(['go']);
    expect(c.messages.find((m) => m['type'] === 'flushed')).toMatchObject({ flush_id: '9', client_req_id: 'y' });
    c.ws.close();
    await c.closed;
  });

  it('STT WebSocket takes a temporary token (a voicewire extension for browsers); a wrong one is error 1008', async () => {
    const t = (await (await fetch(`${h.base}/api-keys/token`, { headers: { 'x-api-key': h.apiKey } })).json()) as { token: string };
    const ok = connect(`${h.wsBase}/speech/asr?token=${t.token}`);
    ok.send({ type: 'setup', input_format: 'pcm' });
    expect(await ok.waitFor((m) => m['type'] === 'ready')).toMatchObject({ type: 'ready' });
    ok.ws.close();
    await ok.closed;
    const bad = connect(`${h.wsBase}/speech/asr?token=vwt_not-a-token`);
    expect((await bad.closed).code).toBe(1008);
    expect(bad.messages[0]).toMatchObject({ type: 'error', code: 1008 });
  });

  it('/speech/s2s is served (test/server/s2s.test.ts): setup and end_of_stream answer ready, end_of_stream, close 1000', async () => {
    const c = connect(`${h.wsBase}/speech/s2s`, { 'x-api-key': h.apiKey });
    c.send({ type: 'setup' });
    c.send({ type: 'end_of_stream' });
    expect((await c.closed).code).toBe(1000);
    expect(c.messages.map((m) => m['type'])).toEqual(['ready', 'end_of_stream']);
  });
});

describe('logs', () => {
  it('every session line carries request_id; no key or token ever appears', async () => {
    const t = (await (await fetch(`${h.base}/api-keys/token`, { headers: { 'x-api-key': h.apiKey } })).json()) as { token: string };
    const r = await fetch(`${h.base}/post/speech/tts?token=${t.token}`, { method: 'POST', headers: json, body: '{"text":"x","only_audio":true}' });
    await r.arrayBuffer();
    const all = h.logs.join('');
    expect(h.logs.length).toBeGreaterThan(5);
    for (const secret of [h.apiKey, h.adminKey, t.token]) expect(all).not.toContain(secret);
    for (const line of h.logs) {
      const o = JSON.parse(line) as Record<string, unknown>;
      if (o['route'] !== undefined) expect(typeof o['request_id']).toBe('string');
    }
  });
});
