/**
 * /speech/s2s (protocol-notes.md, last section) over a real socket (`ws`): what was heard comes
 * back as `text` with timings and re-spoken as `audio`; translation is refused; the key is checked
 * before anything else.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import fc from 'fast-check';
import { startServer, connect, audioBytes, type Harness } from './harness.js';
import { pocketsphinxAvailable } from '../../src/engines/pocketsphinx-ffi.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** Tone speech of `text` from the TTS POST route, in `format`. */
async function toneSpeech(hh: Harness, text: string, format: string): Promise<Buffer> {
  const r = await fetch(`${hh.base}/post/speech/tts`, { method: 'POST', headers: { 'x-api-key': hh.apiKey }, body: JSON.stringify({ text, output_format: format, only_audio: true }) });
  expect(r.status).toBe(200);
  return Buffer.from(await r.arrayBuffer());
}

/** The words the STT POST route hears in a WAV. */
async function heard(hh: Harness, wav: Buffer): Promise<string[]> {
  const r = await fetch(`${hh.base}/post/speech/asr`, { method: 'POST', headers: { 'x-api-key': hh.apiKey, 'content-type': 'audio/wav' }, body: new Uint8Array(wav) });
  const lines = (await r.text()).trim().split('\n').map((l) => JSON.parse(l) as { type: string; text?: string });
  return lines.filter((l) => l.type === 'text').map((l) => l.text!);
}

const chunks = (b: Buffer, size: number): Array<Record<string, unknown>> =>
  Array.from({ length: Math.ceil(b.length / size) }, (_, i) => ({ type: 'audio', audio: b.subarray(i * size, (i + 1) * size).toString('base64') }));

describe('/speech/s2s', () => {
  it('pipelined like the Python client: ready first, the words heard as text with timings, re-spoken audio that reads back, end_of_stream, close', async () => {
    h = await startServer();
    const input = await toneSpeech(h, 'good day sir', 'pcm_24000');
    const c = connect(`${h.wsBase}/speech/s2s`, { 'x-api-key': h.apiKey });
    c.send({ type: 'setup', model_name: 'default', output_format: 'wav', voice_id: 'tone-en', client_req_id: 'r1' });
    for (const m of chunks(input, 4096)) c.send(m);
    c.send({ type: 'end_of_stream' });
    const { code } = await c.closed;
    expect(code).toBe(1000);
    const types = c.messages.map((m) => m['type']);
    expect(types[0]).toBe('ready');
    expect(types.at(-1)).toBe('end_of_stream');
    expect(c.messages[0]).toMatchObject({ sample_rate: 48000, frame_size: 3840, client_req_id: 'r1' });
    // The connection's id (the server's log lines carry it), not a second request's `<id>.2`.
    expect(String(c.messages[0]!['request_id'])).toMatch(/^[0-9a-f-]{36}$/);
    const texts = c.messages.filter((m) => m['type'] === 'text');
    expect(texts.map((t) => t['text'])).toEqual(['good', 'day', 'sir']);
    for (const t of texts) {
      expect(t['stop_s'] as number).toBeGreaterThan(t['start_s'] as number);
      expect(t).toMatchObject({ stream_id: 0, client_req_id: 'r1' });
    }
    const out = audioBytes(c.messages);
    expect(out.subarray(0, 4).toString('latin1')).toBe('RIFF');
    expect(await heard(h, out)).toEqual(['good', 'day', 'sir']);
  });

  it('a pause in the speech is spoken back at once: the last word of a phrase does not wait for end_of_stream', async () => {
    h = await startServer();
    const phrase = await toneSpeech(h, 'hello there', 'pcm_24000');
    const c = connect(`${h.wsBase}/speech/s2s`, { 'x-api-key': h.apiKey });
    c.send({ type: 'setup', output_format: 'pcm' });
    // 1.5 s of silence after the phrase: the STT's voice activity sees the pause.
    for (const m of chunks(Buffer.concat([phrase, Buffer.alloc(24000 * 2 * 1.5)]), 4096)) c.send(m);
    // "hello" (5 tones), a 2-frame gap, "there" (5 tones): 12 frames of 3840 samples at 48 kHz.
    const wanted = 12 * 3840 * 2;
    await c.waitFor(() => audioBytes(c.messages).length >= wanted);
    expect(c.messages.some((m) => m['type'] === 'end_of_stream')).toBe(false);
    c.send({ type: 'end_of_stream' });
    expect((await c.closed).code).toBe(1000);
    expect(audioBytes(c.messages).length).toBe(wanted);
  });

  it('output in another format and rate: ready names it (ulaw_8000 → 8000)', async () => {
    h = await startServer();
    const input = await toneSpeech(h, 'yes', 'ulaw_8000');
    const c = connect(`${h.wsBase}/speech/s2s`, { 'x-api-key': h.apiKey });
    c.send({ type: 'setup', input_format: 'ulaw_8000', output_format: 'ulaw_8000' });
    for (const m of chunks(input, 640)) c.send(m);
    c.send({ type: 'end_of_stream' });
    expect((await c.closed).code).toBe(1000);
    expect(c.messages[0]).toMatchObject({ type: 'ready', sample_rate: 8000 });
    expect(c.messages.filter((m) => m['type'] === 'text').map((m) => m['text'])).toEqual(['yes']);
    expect(audioBytes(c.messages).length).toBeGreaterThan(0);
  });

  it('target_language other than the source is refused with 1008 (no translation engine); the same language is fine', async () => {
    h = await startServer();
    const bad = connect(`${h.wsBase}/speech/s2s`, { 'x-api-key': h.apiKey });
    bad.send({ type: 'setup', json_config: { target_language: 'fr' } });
    expect((await bad.closed).code).toBe(1008);
    expect(bad.messages).toHaveLength(1);
    expect(bad.messages[0]).toMatchObject({ type: 'error', code: 1008 });
    expect(String(bad.messages[0]!['message'])).toMatch(/translation/);
    const same = connect(`${h.wsBase}/speech/s2s`, { 'x-api-key': h.apiKey });
    same.send({ type: 'setup', json_config: JSON.stringify({ language: 'en', target_language: 'en' }) });
    same.send({ type: 'end_of_stream' });
    expect((await same.closed).code).toBe(1000);
    expect(same.messages.map((m) => m['type'])).toEqual(['ready', 'end_of_stream']);
  });

  it('json_config: every key is honoured by a half or refused with 1008 (never dropped); a JSON string is parsed depth-limited', async () => {
    const hh = (h = await startServer());
    const refused = async (json_config: unknown, why: RegExp): Promise<void> => {
      const c = connect(`${hh.wsBase}/speech/s2s`, { 'x-api-key': hh.apiKey });
      c.send({ type: 'setup', json_config });
      expect((await c.closed).code, JSON.stringify(json_config).slice(0, 80)).toBe(1008);
      expect(c.messages).toHaveLength(1);
      expect(c.messages[0]).toMatchObject({ type: 'error', code: 1008 });
      expect(String(c.messages[0]!['message'])).toMatch(why);
    };
    // An unknown key (it used to be dropped silently), in both forms.
    await refused({ beam: 4 }, /json_config\.beam: Extra inputs are not permitted/);
    await refused(JSON.stringify({ language: 'en', voice: 'x' }), /json_config\.voice: Extra inputs/);
    // Known keys with bad values, refused by s2s itself.
    await refused({ temp: 9 }, /json_config\.temp/);
    await refused({ target_language: 'xx' }, /json_config\.target_language/);
    await refused({ rewrite_rules: 'Klingon' }, /json_config\.rewrite_rules/);
    // Deeper than the JSON depth limit (64): refused before it is parsed.
    await refused('{"a":'.repeat(70) + '1' + '}'.repeat(70), /nested deeper than 64/);
    await refused('{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000), /nested deeper than 64/);
    // The TTS keys go to the TTS half, the STT keys to the STT half: the setup runs.
    const ok = connect(`${h.wsBase}/speech/s2s`, { 'x-api-key': h.apiKey });
    ok.send({ type: 'setup', json_config: JSON.stringify({ language: 'en', target_language: 'en', padding_bonus: 1, temp: 0.5, cfg_coef: 2, rewrite_rules: 'TimeEn,Date' }) });
    ok.send({ type: 'end_of_stream' });
    expect((await ok.closed).code).toBe(1000);
    expect(ok.messages.map((m) => m['type'])).toEqual(['ready', 'end_of_stream']);
  });

  it('the key is checked first: a bad key is refused as "invalid API key" even with a translation setup', async () => {
    h = await startServer();
    const c = connect(`${h.wsBase}/speech/s2s`, { 'x-api-key': 'vw_wrong' });
    c.send({ type: 'setup', json_config: { target_language: 'fr' } });
    expect((await c.closed).code).toBe(1008);
    expect(c.messages).toHaveLength(1);
    expect(String(c.messages[0]!['message'])).toMatch(/API key/);
  });

  it('errors of either half reach the client as error then close: a bad input_format, an unknown voice, a message before setup', async () => {
    h = await startServer();
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ type: 'setup', input_format: 'mp3' }, /input_format/],
      [{ type: 'setup', voice_id: 'nobody' }, /voice/],
      [{ type: 'audio', audio: '' }, /setup/],
      [{ type: 'setup', close_ws_on_eos: 'yes' }, /close_ws_on_eos/],
    ];
    for (const [first, why] of cases) {
      const c = connect(`${h.wsBase}/speech/s2s`, { 'x-api-key': h.apiKey });
      c.send(first);
      expect((await c.closed).code).toBe(1008);
      const err = c.messages.find((m) => m['type'] === 'error')!;
      expect(err).toMatchObject({ code: 1008 });
      expect(String(err['message'])).toMatch(why);
    }
  });

  it('credits are spent on both halves; with none left the session ends with error 1008', async () => {
    h = await startServer();
    const org = (await h.store.getOrganizationByName('default'))!;
    const input = await toneSpeech(h, 'ok', 'pcm_24000');
    await h.store.setCredits(org.id, 0, 0);
    const c = connect(`${h.wsBase}/speech/s2s`, { 'x-api-key': h.apiKey });
    c.send({ type: 'setup' });
    for (const m of chunks(input, 4096)) c.send(m);
    c.send({ type: 'end_of_stream' });
    expect((await c.closed).code).toBe(1008);
    expect(String(c.messages.find((m) => m['type'] === 'error')!['message'])).toMatch(/credits/);
  });

  it('garbage frames (not JSON, not UTF-8, not an object, a second setup) end that socket with error 1008 and nothing else', async () => {
    h = await startServer();
    const frames: Array<string | Buffer> = ['not json', Buffer.from([0xff, 0xfe, 0x00]), '[1,2]', '{"type":5}'];
    for (const f of frames) {
      const c = connect(`${h.wsBase}/speech/s2s`, { 'x-api-key': h.apiKey });
      await c.opened;
      c.ws.send(f);
      expect((await c.closed).code).toBe(1008);
      expect(c.messages).toHaveLength(1);
      expect(c.messages[0]).toMatchObject({ type: 'error', code: 1008 });
    }
    const twice = connect(`${h.wsBase}/speech/s2s`, { 'x-api-key': h.apiKey });
    twice.send({ type: 'setup' });
    twice.send({ type: 'setup' });
    expect((await twice.closed).code).toBe(1008);
    expect(String(twice.messages.at(-1)!['message'])).toMatch(/one request per socket/);
  });
});

describe('/speech/s2s under garbage', () => {
  it('random message sequences end with end_of_stream or one error 1008, never 1011, and the server keeps serving', async () => {
    h = await startServer();
    const hh = h;
    const setup = fc.record(
      {
        type: fc.constant('setup'),
        input_format: fc.constantFrom('pcm', 'wav', 'opus', 'ulaw_8000', 'mp3', 7),
        output_format: fc.constantFrom('pcm', 'wav', 'opus', 'alaw_8000', 'flac', null),
        voice_id: fc.constantFrom('tone-en', 'nobody', 3),
        json_config: fc.oneof(fc.constant('{"language":"en"}'), fc.constant('{bad'), fc.record({ target_language: fc.constantFrom('en', 'fr'), padding_bonus: fc.double() }, { requiredKeys: [] })),
        close_ws_on_eos: fc.constantFrom(true, 'x'),
      },
      { requiredKeys: ['type'] },
    );
    const message = fc.oneof(
      setup,
      fc.uint8Array({ maxLength: 600 }).map((b) => ({ type: 'audio', audio: Buffer.from(b).toString('base64') })),
      fc.record({ type: fc.constant('audio'), audio: fc.string() }),
      fc.constant({ type: 'end_of_stream' }),
      fc.record({ type: fc.string() }),
      fc.anything(),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(message, { maxLength: 8 }), async (messages) => {
        const c = connect(`${hh.wsBase}/speech/s2s`, { 'x-api-key': hh.apiKey });
        for (const m of messages) c.send(JSON.stringify(m) ?? 'null');
        c.send({ type: 'end_of_stream' });
        // Every sequence ends (end_of_stream is sent last): the client never has to give up.
        let gaveUp = false;
        const timer = setTimeout(() => {
          gaveUp = true;
          c.ws.close(1000);
        }, 10_000);
        const { code } = await c.closed;
        clearTimeout(timer);
        expect(gaveUp, JSON.stringify(c.messages.map((m) => m['type']))).toBe(false);
        const errors = c.messages.filter((m) => m['type'] === 'error');
        expect(errors.length).toBeLessThanOrEqual(1);
        for (const e of errors) expect(e['code'], String(e['message'])).toBe(1008);
        expect([1000, 1008, 1005]).toContain(code);
      }),
      { numRuns: 40 },
    );
    const ok = connect(`${hh.wsBase}/speech/s2s`, { 'x-api-key': hh.apiKey });
    ok.send({ type: 'setup' });
    ok.send({ type: 'end_of_stream' });
    expect((await ok.closed).code).toBe(1000);
  }, 180_000);
});

describe('/speech/s2s with real engines', () => {
  it.skipIf(pocketsphinxAvailable() !== undefined)('pocketsphinx hears a LibriVox recording (streamed as the WAV file, like the Python client), espeak says it again at 16 kHz', async () => {
    h = await startServer({ stt: 'pocketsphinx', tts: 'espeak' });
    const wav = readFileSync(new URL('../../fixtures/speech/librivox-0880.wav', import.meta.url));
    const c = connect(`${h.wsBase}/speech/s2s`, { 'x-api-key': h.apiKey });
    c.send({ type: 'setup', model_name: 'default', input_format: 'wav', output_format: 'pcm_16000', voice_id: 'espeak-en-ava' });
    for (const m of chunks(wav, 4096)) c.send(m);
    c.send({ type: 'end_of_stream' });
    expect((await c.closed).code).toBe(1000);
    expect(c.messages[0]).toMatchObject({ type: 'ready', sample_rate: 16000, frame_size: 1280 });
    const words = c.messages.filter((m) => m['type'] === 'text').map((m) => String(m['text']).toLowerCase());
    const truth = ['he', 'was', 'not', 'an', 'ill', 'disposed', 'young', 'man'];
    expect(truth.filter((w) => words.includes(w)).length).toBeGreaterThanOrEqual(4);
    // Re-spoken: at least 0.1 s of 16 kHz audio per word heard.
    expect(audioBytes(c.messages).length / 2 / 16000).toBeGreaterThan(0.1 * words.length);
  });
});

describe.skipIf(!existsSync('/usr/lib/x86_64-linux-gnu/libespeak-ng.so.1') && !existsSync('/usr/lib/aarch64-linux-gnu/libespeak-ng.so.1'))('/speech/s2s: one default voice (issue 35)', () => {
  /** The audio s2s speaks back for the tone phrase, at temp 0, with `voice` (undefined: no voice_id). */
  async function respoken(hh: Harness, input: Buffer, voice: string | undefined): Promise<Buffer> {
    const c = connect(`${hh.wsBase}/speech/s2s`, { 'x-api-key': hh.apiKey });
    c.send({ type: 'setup', output_format: 'pcm', json_config: { temp: 0 }, ...(voice === undefined ? {} : { voice_id: voice }) });
    for (const m of chunks(input, 4096)) c.send(m);
    c.send({ type: 'end_of_stream' });
    expect((await c.closed).code).toBe(1000);
    return audioBytes(c.messages);
  }

  it('no voice_id speaks with the voice "default" names (Emma), as POST and the TTS WebSocket do (seen failing first: the engine fallback)', async () => {
    h = await startServer({ tts: 'espeak-system' });
    const tone = await startServer();
    try {
      const input = await toneSpeech(tone, 'good day sir', 'pcm_24000');
      const none = await respoken(h, input, undefined);
      expect(none.length).toBeGreaterThan(0);
      expect(none.equals(await respoken(h, input, 'default'))).toBe(true);
      expect(none.equals(await respoken(h, input, 'm86j6D7UZpGzHsNu'))).toBe(false);
    } finally {
      await tone.close();
    }
  }, 60_000);
});
