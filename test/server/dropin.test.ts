/**
 * What the service's real clients send, against voicewire serve with the tone engines (issue 21):
 * the published library's voice ids, `voice` by name or "default", `ready.sample_rate` of the
 * output format, tags split across text messages, STT `json_config` keys honoured or refused,
 * HEAD probes, the content types Python guesses for `.wav`, empty text, voice-design candidates
 * heard before they are kept, and malformed STT audio in the proxy-level form (§7.1).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audioBytes, connect, startServer, type Harness } from './harness.js';
import { libraryVoices } from '../../src/engines/library-voices.js';
import { catalogVoices } from '../../src/engines/espeak-voices.js';

let h: Harness;
beforeAll(async () => {
  h = await startServer();
});
afterAll(async () => {
  await h.close();
});

const json = { 'content-type': 'application/json' };
const EMMA = 'YTpq7expH9539ERJ';

function tts(body: unknown): Promise<Response> {
  return fetch(`${h.base}/post/speech/tts`, { method: 'POST', headers: { ...json, 'x-api-key': h.apiKey }, body: JSON.stringify(body) });
}

async function ttsWs(setup: Record<string, unknown>, texts: string[]): Promise<Array<Record<string, unknown>>> {
  const c = connect(`${h.wsBase}/speech/tts`, { 'x-api-key': h.apiKey });
  c.send({ type: 'setup', output_format: 'pcm', ...setup });
  for (const text of texts) c.send({ type: 'text', text });
  c.send({ type: 'end_of_stream' });
  await c.closed;
  return c.messages;
}

const words = (messages: ReadonlyArray<Record<string, unknown>>): unknown[] => messages.filter((m) => m['type'] === 'text').map((m) => m['text']);

describe('the published voice library', () => {
  it("Emma's id, the id of every example of the service's docs, speaks over POST and the WebSocket", async () => {
    const r = await tts({ text: 'hello', voice_id: EMMA, output_format: 'pcm', only_audio: true });
    expect(r.status).toBe(200);
    expect((await r.arrayBuffer()).byteLength).toBeGreaterThan(0);
    const m = await ttsWs({ voice_id: EMMA }, ['hello']);
    expect(m[0]!['type']).toBe('ready');
    expect(words(m)).toEqual(['hello']);
  });

  it('GET /voices/?limit=0&include_catalog=1 lists the fourteen library voices with their language, country and gender', async () => {
    const r = await fetch(`${h.base}/voices/?limit=0&include_catalog=1`, { headers: { 'x-api-key': h.apiKey } });
    const list = (await r.json()) as Array<{ uid: string; name: string; language: string; tags: string[]; is_catalog: boolean }>;
    const emma = list.find((v) => v.uid === EMMA);
    expect(emma).toMatchObject({ name: 'Emma', language: 'en', is_catalog: true });
    expect(emma!.tags).toEqual(expect.arrayContaining(['en', 'us', 'Feminine']));
    const sergio = list.find((v) => v.uid === 'xu7iJ_fn2ElcWp2s');
    expect(sergio).toMatchObject({ name: 'Sergio', language: 'es' });
    expect(sergio!.tags).toEqual(expect.arrayContaining(['es', 'Masculine']));
    for (const id of ['LFZvm12tW_z0xfGo', 'jtEKaLYNn6iif5PR', 'KWJiFWu2O9nMPYcR', 'ubuXFxVQwVYnZQhy', 'm86j6D7UZpGzHsNu', 'b35yykvVppLXyw_l', 'axlOaUiFyOZhy4nv', '-uP9MuGtBqAvEyxI', '0y1VZjPabOBU3rWy', 'B36pbz5_UoWn4BDl', 'pYcGZz9VOo4n2ynh', 'M-FvVo9c-jGR4PgP']) {
      expect(list.map((v) => v.uid)).toContain(id);
    }
  });

  it('mapped onto the engine\'s voices: same language and gender; two on one engine voice still differ', async () => {
    const espeak = libraryVoices(catalogVoices());
    const params = (uid: string) => espeak.find((v) => v.uid === uid)!.params as { voice: string; variant: string; pitch: number };
    expect(params(EMMA)).toMatchObject({ voice: 'en-us', variant: 'f2' });
    expect(params('m86j6D7UZpGzHsNu')).toMatchObject({ voice: 'en-gb', variant: 'm1' }); // Jack
    expect(params('xu7iJ_fn2ElcWp2s')).toMatchObject({ voice: 'es', variant: 'm3' }); // Sergio: Castilian
    expect(params('jtEKaLYNn6iif5PR').pitch).toBeGreaterThan(params(EMMA).pitch); // Sydney
    expect(espeak).toHaveLength(14);
  });

  it('`voice` takes "default" or a voice name (the client documents both)', async () => {
    for (const voice of ['default', 'Emma', 'Tone French']) {
      const r = await tts({ text: 'hi', voice, output_format: 'pcm', only_audio: true });
      expect(r.status, voice).toBe(200);
      await r.arrayBuffer();
    }
    const bad = await tts({ text: 'hi', voice: 'Nobody', only_audio: true });
    expect(bad.status).toBe(500);
    expect(await bad.text()).toBe('invalid voice ID "Nobody"');
  });

  it('a live voice-design candidate of the caller is heard before it is kept (POST and WebSocket)', async () => {
    const g = await fetch(`${h.base}/voice-generator/generate`, { method: 'POST', headers: { ...json, 'x-api-key': h.apiKey }, body: JSON.stringify({ prompt: 'a calm voice', n_samples: 1, language: 'en' }) });
    const { embeddings } = (await g.json()) as { embeddings: Array<{ embedding_id: string }> };
    const id = embeddings[0]!.embedding_id;
    const r = await tts({ text: 'try me', voice_id: id, output_format: 'pcm', only_audio: true });
    expect(r.status).toBe(200);
    expect((await r.arrayBuffer()).byteLength).toBeGreaterThan(0);
    const m = await ttsWs({ voice_id: id }, ['try me']);
    expect(words(m)).toEqual(['try', 'me']);
  });
});

describe('TTS WebSocket ready.sample_rate', () => {
  for (const [format, rate] of [['pcm_16000', 16000], ['ulaw_8000', 8000], ['pcm_24000', 24000], ['pcm', 48000], ['opus', 48000]] as const) {
    it(`${format}: ready.sample_rate is ${rate}`, async () => {
      const m = await ttsWs({ output_format: format }, ['a']);
      expect(m[0]).toMatchObject({ type: 'ready', sample_rate: rate });
    });
  }
});

describe('a tag split across text messages', () => {
  it('"alpha <break ti" + "me=\\"1.0s\\" /> beta": the pause is kept (1 s = 12.5 frames of silence between the words)', async () => {
    const split = await ttsWs({}, ['alpha <break ti', 'me="1.0s" /> beta']);
    const whole = await ttsWs({}, ['alpha <break time="1.0s" /> beta']);
    expect(words(split)).toEqual(['alpha', 'beta']);
    expect(audioBytes(split).equals(audioBytes(whole))).toBe(true);
  });

  it('"<br" + "eak time=…" and "<flu" + "sh>" are tags, not words read aloud', async () => {
    const br = await ttsWs({}, ['one <br', 'eak time="0.5s" /> two']);
    expect(words(br)).toEqual(['one', 'two']);
    const fl = await ttsWs({}, ['one <flu', 'sh> two']);
    expect(words(fl)).toEqual(['one', 'two']);
    const three = await ttsWs({}, ['one <b', 'reak ti', 'me="0.5s" /> two']);
    expect(words(three)).toEqual(['one', 'two']);
  });

  it('"<break" + "time=…": the client split at the space inside the tag, the join keeps it', async () => {
    const m = await ttsWs({}, ['one <break', 'time="0.5s" /> two']);
    expect(words(m)).toEqual(['one', 'two']);
  });

  it('text that only looks like the start of a tag still gets its joining space', async () => {
    const m = await ttsWs({}, ['a <', 'b']);
    expect(words(m).join(' ')).not.toContain('<b');
    const n = await ttsWs({}, ['x<y', 'z']);
    expect(words(n)).toEqual(['x<y', 'z']);
  });
});

describe('STT json_config: every key honoured or refused', () => {
  function sttWs(jsonConfig: unknown): Promise<Array<Record<string, unknown>>> {
    const c = connect(`${h.wsBase}/speech/asr`, { 'x-api-key': h.apiKey });
    c.send({ type: 'setup', input_format: 'pcm', json_config: jsonConfig });
    c.send({ type: 'audio', audio: Buffer.alloc(3840).toString('base64') });
    c.send({ type: 'end_of_stream' });
    return c.closed.then(() => c.messages);
  }

  it('unknown keys are refused (1008 on the socket, 422 on POST); the documented keys pass (issue 35: test/server/stt-options.test.ts)', async () => {
    const m = await sttWs({ beam: 4 });
    expect(m[0]).toMatchObject({ type: 'error', code: 1008 });
    const ok = await sttWs({ temp: 0.5, padding_bonus: 1, delay_in_frames: 7, language: 'en' });
    expect(ok[0]).toMatchObject({ type: 'ready', delay_in_frames: 7 });
    const r = await fetch(`${h.base}/post/speech/asr?json_config=${encodeURIComponent('{"beam":4}')}`, { method: 'POST', headers: { 'x-api-key': h.apiKey, 'content-type': 'audio/pcm' }, body: new Uint8Array(3840) });
    expect(r.status).toBe(422);
    expect(((await r.json()) as { detail: Array<{ loc: unknown[] }> }).detail[0]!.loc).toEqual(['query', 'json_config', 'beam']);
  });

  it('a TTS json_config key §2.8 does not list is refused, never ignored (issue 21): 422 extra_forbidden on POST, error 1008 on the socket', async () => {
    const r = await tts({ text: 'a', json_config: { temp: 0.5, seed: 3 } });
    expect(r.status).toBe(422);
    expect(await r.json()).toEqual({ detail: [{ loc: ['body', 'json_config', 'seed'], msg: 'Extra inputs are not permitted', type: 'extra_forbidden', input: 3 }] });
    const m = await ttsWs({ json_config: JSON.stringify({ beam: 4 }) }, ['a']);
    expect(m.find((x) => x['type'] === 'error')).toMatchObject({ code: 1008 });
    expect(String(m.find((x) => x['type'] === 'error')!['message'])).toMatch(/json_config\.beam: Extra inputs are not permitted/);
  });

  it('TTS cfg_coef on the tone engine (no timbre to be similar to) is refused unless it is the default 2', async () => {
    const m = await ttsWs({ json_config: { cfg_coef: 3 } }, ['a']);
    expect(m.find((x) => x['type'] === 'error')).toMatchObject({ code: 1008 });
    const ok = await ttsWs({ json_config: { cfg_coef: 2 } }, ['a']);
    expect(words(ok)).toEqual(['a']);
  });
});

describe('rewrite_rules as the docs write it', () => {
  it('"TimeEn,Date" and "en,fr" are taken (they were 422); an unknown name is a 422 naming it', async () => {
    for (const rules of ['TimeEn,Date', 'en,fr', 'NumberPt']) {
      const r = await tts({ text: 'at 12:30', output_format: 'pcm', only_audio: true, json_config: { rewrite_rules: rules } });
      expect(r.status, rules).toBe(200);
      await r.arrayBuffer();
    }
    const bad = await tts({ text: 'x', json_config: { rewrite_rules: 'TimeEn,Klingon' } });
    expect(bad.status).toBe(422);
    const body = (await bad.json()) as { detail: Array<{ loc: unknown[]; msg: string }> };
    expect(body.detail[0]!.loc).toEqual(['body', 'json_config', 'rewrite_rules']);
    expect(body.detail[0]!.msg).toContain("'Klingon'");
  });
});

describe('small gaps', () => {
  it('HEAD /api/healthz and /api/readyz answer like GET, without a body', async () => {
    for (const p of ['healthz', 'readyz']) {
      const get = await fetch(`${h.base}/${p}`);
      const head = await fetch(`${h.base}/${p}`, { method: 'HEAD' });
      expect(head.status, p).toBe(get.status);
      expect(head.headers.get('content-type')).toBe(get.headers.get('content-type'));
      expect((await head.arrayBuffer()).byteLength).toBe(0);
      await get.arrayBuffer();
    }
  });

  it('content-type audio/x-wav (what Python guesses for .wav), audio/wave and audio/vnd.wave are WAV', async () => {
    const wav = Buffer.from(await (await tts({ text: 'ok go', output_format: 'wav', only_audio: true })).arrayBuffer());
    for (const type of ['audio/x-wav', 'audio/wave', 'audio/vnd.wave']) {
      const r = await fetch(`${h.base}/post/speech/asr`, { method: 'POST', headers: { 'x-api-key': h.apiKey, 'content-type': type }, body: new Uint8Array(wav) });
      expect(r.status, type).toBe(200);
      const lines = (await r.text()).trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(words(lines)).toEqual(['ok', 'go']);
    }
  });

  it('{"text": ""} is refused with the 422 body of §2.7', async () => {
    const r = await tts({ text: '' });
    expect(r.status).toBe(422);
    const body = (await r.json()) as { detail: Array<{ loc: unknown[]; type: string }> };
    expect(body.detail[0]).toMatchObject({ loc: ['body', 'text'], type: 'string_too_short' });
  });

  it('malformed STT audio on POST: the proxy-level form (raw string, no "error from server")', async () => {
    const r = await fetch(`${h.base}/post/speech/asr`, { method: 'POST', headers: { 'x-api-key': h.apiKey, 'content-type': 'audio/wav' }, body: Buffer.from('RIFF....WAVEjunkjunkjunk') });
    expect(r.status).toBe(500);
    const text = await r.text();
    expect(text).toMatch(/^STT: audio could not be decoded/);
  });
});
