/**
 * The OpenAI-compatible routes, driven by the official `openai` SDK pointed at the server with
 * `baseURL` (issue 21): what a tool built on the SDK would do, unchanged.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import OpenAI, { toFile } from 'openai';
import fc from 'fast-check';
import { startServer, type Harness } from './harness.js';
import { pocketsphinxAvailable } from '../../src/engines/pocketsphinx-ffi.js';
import { parseSpeechRequest, speedToPaddingBonus } from '../../src/server/routes/openai/speech.js';
import { openAIErrorResponse } from '../../src/server/routes/openai/errors.js';
import { parseTranscriptionFields } from '../../src/server/routes/openai/transcriptions.js';
import { VoicewireError } from '../../src/util/errors.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const v1 = (hh: Harness): string => hh.base.replace(/\/api$/, '/v1');
const client = (hh: Harness, apiKey = hh.apiKey): OpenAI => new OpenAI({ apiKey, baseURL: v1(hh), maxRetries: 0, timeout: 60_000 });

/** The status, `error` body and headers of a failed SDK call. */
async function failure(p: Promise<unknown>): Promise<{ status: number; error: { message: string; type: string; param: string | null; code: string | null } }> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OpenAI.APIError);
  const e = err as InstanceType<typeof OpenAI.APIError>;
  return { status: e.status as number, error: e.error as never };
}

const speak = async (c: OpenAI, input: string, extra: Record<string, unknown> = {}): Promise<{ bytes: Buffer; type: string | null }> => {
  const r = await c.audio.speech.create({ model: 'tts-1', voice: 'alloy', input, response_format: 'wav', ...extra } as never);
  return { bytes: Buffer.from(await r.arrayBuffer()), type: r.headers.get('content-type') };
};

describe('OpenAI SDK → /v1 (tone engines)', () => {
  it('lists and retrieves models; an unknown model is a 404 in OpenAI\'s error form', async () => {
    h = await startServer();
    const c = client(h);
    const ids = [];
    for await (const m of c.models.list()) ids.push(m.id);
    expect(ids).toEqual(expect.arrayContaining(['tts-1', 'tts-1-hd', 'gpt-4o-mini-tts', 'whisper-1', 'gpt-4o-transcribe']));
    expect((await c.models.retrieve('whisper-1')).owned_by).toBe('voicewire');
    const f = await failure(c.models.retrieve('gpt-99'));
    expect(f.status).toBe(404);
    expect(f.error.type).toBe('invalid_request_error');
  });

  it('a wrong Bearer key is 401 invalid_api_key; no key at all is 401 too; x-api-key also works', async () => {
    h = await startServer();
    const f = await failure(client(h, 'sk-not-a-key').models.list());
    expect(f.status).toBe(401);
    expect(f.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_api_key', param: null });
    const none = await fetch(`${v1(h)}/models`);
    expect(none.status).toBe(401);
    expect(((await none.json()) as { error: { code: string } }).error.code).toBe('invalid_api_key');
    const viaHeader = await fetch(`${v1(h)}/models`, { headers: { 'x-api-key': h.apiKey } });
    expect(viaHeader.status).toBe(200);
  });

  it('an unknown /v1 route is a 404 in OpenAI\'s form, not the page or §7 JSON', async () => {
    h = await startServer({ pageDir: null });
    const r = await fetch(`${v1(h)}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${h.apiKey}` } });
    expect(r.status).toBe(404);
    expect(await r.json()).toEqual({ error: { message: 'Invalid URL (POST /v1/chat/completions)', type: 'invalid_request_error', param: null, code: 'not_found' } });
  });

  it('round trip: speech (wav) → transcriptions (verbose_json with word timestamps) reads back the words', async () => {
    h = await startServer();
    const c = client(h);
    const { bytes, type } = await speak(c, 'hello brave new world');
    expect(type).toBe('audio/wav');
    expect(bytes.subarray(0, 4).toString('latin1')).toBe('RIFF');
    const t = await c.audio.transcriptions.create({
      file: await toFile(bytes, 'speech.wav', { type: 'audio/wav' }),
      model: 'whisper-1',
      response_format: 'verbose_json',
      timestamp_granularities: ['word', 'segment'],
      language: 'en',
    });
    expect(t.text).toBe('hello brave new world');
    expect(t.language).toBe('english');
    expect(t.duration).toBeGreaterThan(1);
    expect(t.words!.map((w) => w.word)).toEqual(['hello', 'brave', 'new', 'world']);
    for (const w of t.words!) expect(w.end).toBeGreaterThan(w.start);
    for (let i = 1; i < t.words!.length; i++) expect(t.words![i]!.start).toBeGreaterThanOrEqual(t.words![i - 1]!.end);
    expect(t.segments!.map((s) => s.text).join(' ')).toBe('hello brave new world');
  });

  it('transcriptions: json, text, srt and vtt; timestamp_granularities without verbose_json is a 400', async () => {
    h = await startServer();
    const c = client(h);
    const { bytes } = await speak(c, 'one two');
    const file = async (): Promise<File> => toFile(bytes, 'a.wav');
    expect(await c.audio.transcriptions.create({ file: await file(), model: 'whisper-1' })).toEqual({ text: 'one two' });
    expect(await c.audio.transcriptions.create({ file: await file(), model: 'whisper-1', response_format: 'text' })).toBe('one two\n');
    const srt = await c.audio.transcriptions.create({ file: await file(), model: 'whisper-1', response_format: 'srt' });
    expect(srt).toMatch(/^1\n00:00:00,000 --> 00:00:\d\d,\d{3}\none two\n$/);
    const vtt = await c.audio.transcriptions.create({ file: await file(), model: 'whisper-1', response_format: 'vtt' });
    expect(vtt).toMatch(/^WEBVTT\n\n00:00:00\.000 --> 00:00:\d\d\.\d{3}\none two\n$/);
    const f = await failure(c.audio.transcriptions.create({ file: await file(), model: 'whisper-1', timestamp_granularities: ['word'] }));
    expect(f.status).toBe(400);
    expect(f.error.param).toBe('timestamp_granularities');
  });

  it('pcm is 24 kHz s16le: half the samples of the 48 kHz wav, same duration', async () => {
    h = await startServer();
    const c = client(h);
    const wav = await speak(c, 'abc def');
    const pcm = await speak(c, 'abc def', { response_format: 'pcm' });
    expect(pcm.type).toBe('audio/pcm');
    const wavRate = wav.bytes.readUInt32LE(24);
    const wavSeconds = (wav.bytes.length - 44) / 2 / wavRate;
    expect(pcm.bytes.length % 2).toBe(0);
    expect(Math.abs(pcm.bytes.length / 2 / 24000 - wavSeconds)).toBeLessThan(0.01);
  });

  it('opus (Ogg) natively; mp3, flac and aac through ffmpeg; mp3 and opus transcribe back', async () => {
    h = await startServer();
    const c = client(h);
    const opus = await speak(c, 'good morning', { response_format: 'opus' });
    expect(opus.bytes.subarray(0, 4).toString('latin1')).toBe('OggS');
    const flac = await speak(c, 'good morning', { response_format: 'flac' });
    expect(flac.type).toBe('audio/flac');
    expect(flac.bytes.subarray(0, 4).toString('latin1')).toBe('fLaC');
    const aac = await speak(c, 'good morning', { response_format: 'aac' });
    expect(aac.type).toBe('audio/aac');
    expect(aac.bytes[0]).toBe(0xff);
    // Default format: mp3, as OpenAI's (ffmpeg is installed here).
    const r = await c.audio.speech.create({ model: 'gpt-4o-mini-tts', voice: 'nova', input: 'good morning' });
    expect(r.headers.get('content-type')).toBe('audio/mpeg');
    const mp3 = Buffer.from(await r.arrayBuffer());
    expect(mp3.subarray(0, 3).toString('latin1') === 'ID3' || (mp3[0] === 0xff && (mp3[1]! & 0xe0) === 0xe0)).toBe(true);
    for (const [bytes, name] of [[opus.bytes, 'a.ogg'], [mp3, 'a.mp3']] as const) {
      const t = await c.audio.transcriptions.create({ file: await toFile(bytes, name), model: 'gpt-4o-transcribe' });
      expect(t.text).toBe('good morning');
    }
  });

  it('speed: 0.5 is slower and 2.0 faster than 1.0 (padding_bonus)', async () => {
    h = await startServer();
    const c = client(h);
    const text = 'a b c d e f';
    const len = async (speed: number): Promise<number> => (await speak(c, text, { speed, response_format: 'pcm' })).bytes.length;
    const [slow, normal, fast] = [await len(0.5), await len(1), await len(2)];
    expect(slow).toBeGreaterThan(normal);
    expect(fast).toBeLessThan(normal);
    expect(speedToPaddingBonus(1)).toBe(0);
    expect(speedToPaddingBonus(0.5)).toBe(4);
    expect(speedToPaddingBonus(0.25)).toBe(4);
    expect(speedToPaddingBonus(4)).toBe(-4);
    expect(speedToPaddingBonus(1.01)).toBe(0);
  });

  it('voices: OpenAI names, a voicewire uid and a voice name are accepted; anything else is a 400 on `voice`', async () => {
    h = await startServer();
    const c = client(h);
    for (const voice of ['shimmer', 'tone-en', 'Tone English']) expect((await speak(c, 'hi', { voice })).bytes.length).toBeGreaterThan(44);
    const f = await failure(speak(c, 'hi', { voice: 'nobody' }));
    expect(f.status).toBe(400);
    expect(f.error).toMatchObject({ type: 'invalid_request_error', param: 'voice' });
    expect(f.error.message).toContain('alloy');
  });

  it('bad fields are 400s naming the param', async () => {
    h = await startServer();
    const c = client(h);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ model: 'gpt-5' }, 'model'],
      [{ response_format: 'ogg' }, 'response_format'],
      [{ speed: 5 }, 'speed'],
      [{ speed: 0.1 }, 'speed'],
      [{ input: '' }, 'input'],
      [{ stream_format: 'video' }, 'stream_format'],
    ];
    for (const [extra, param] of cases) {
      const f = await failure(speak(c, 'hi', extra));
      expect([f.status, f.error.param]).toEqual([400, param]);
    }
    const bad = await failure(c.audio.transcriptions.create({ file: await toFile(Buffer.from('not audio at all, not even close'), 'x.mp3'), model: 'whisper-1' }));
    expect([bad.status, bad.error.type]).toEqual([400, 'invalid_request_error']);
    const lang = await failure(c.audio.transcriptions.create({ file: await toFile(Buffer.from('RIFF'), 'x.wav'), model: 'whisper-1', language: 'xx' }));
    expect([lang.status, lang.error.param]).toEqual([400, 'language']);
  });

  it('credits: the same balance as /api; exhausted is 429 insufficient_quota and nothing is spoken', async () => {
    h = await startServer();
    const org = (await h.store.getOrganizationByName('default'))!;
    await h.store.setCredits(org.id, 3, 3);
    const f = await failure(speak(client(h), 'hello'));
    expect(f.status).toBe(429);
    expect(f.error).toMatchObject({ type: 'insufficient_quota', code: 'insufficient_quota' });
    expect((await h.store.getOrganization(org.id))!.remainingCredits).toBe(3);
  });

  it('limits: input longer than maxTextChars is a 400; a file over maxAudioBytes is a 413', async () => {
    h = await startServer({ limits: { maxTextChars: 10, maxAudioBytes: 1000 } });
    const c = client(h);
    const f = await failure(speak(c, 'this is more than ten characters'));
    expect([f.status, f.error.param]).toEqual([400, 'input']);
    const big = await failure(c.audio.transcriptions.create({ file: await toFile(Buffer.alloc(5000), 'big.wav'), model: 'whisper-1' }));
    expect(big.status).toBe(413);
  });
});

/** ffmpeg children of this process (the server runs in it). */
const ffmpegChildren = (): number => {
  try {
    return execFileSync('pgrep', ['-P', String(process.pid), 'ffmpeg'], { encoding: 'utf8' }).trim().split('\n').filter(Boolean).length;
  } catch {
    return 0; // pgrep exits 1 when nothing matches
  }
};

describe('/v1 resources', () => {
  it.each(['mp3', 'wav'])('a client that goes away mid-%s frees its session slot (and its ffmpeg child) at once', async (format) => {
    h = await startServer();
    const ac = new AbortController();
    const r = await fetch(`${v1(h)}/audio/speech`, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tts-1', voice: 'alloy', input: 'word '.repeat(4000), response_format: format }),
      signal: ac.signal,
    });
    expect(r.status).toBe(200);
    const reader = r.body!.getReader();
    await reader.read();
    expect(h.server.context.sessions.live).toBe(1);
    expect(ffmpegChildren()).toBe(format === 'mp3' ? 1 : 0);
    ac.abort();
    // Well under the idle limit (60 s), which would otherwise be what frees a stalled response.
    const until = Date.now() + 10_000;
    while ((h.server.context.sessions.live > 0 || ffmpegChildren() > 0) && Date.now() < until) await new Promise((res) => setTimeout(res, 50));
    expect(h.server.context.sessions.live).toBe(0);
    expect(ffmpegChildren()).toBe(0);
  });
});

describe('/v1 under garbage', () => {
  it('random JSON bodies and random form fields get a 4xx in OpenAI\'s form (or audio), never a 5xx; the server keeps serving', async () => {
    h = await startServer();
    const hh = h;
    const auth = { authorization: `Bearer ${hh.apiKey}` };
    const fields = fc.record({ model: fc.string(), input: fc.string(), voice: fc.string(), response_format: fc.string(), speed: fc.anything() }, { requiredKeys: [] });
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.anything(), fields, fc.string()), async (body) => {
        const r = await fetch(`${v1(hh)}/audio/speech`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) ?? '' });
        const bytes = Buffer.from(await r.arrayBuffer());
        if (r.status === 200) return;
        expect(r.status).toBeGreaterThanOrEqual(400);
        expect(r.status).toBeLessThan(500);
        expect(JSON.parse(bytes.toString('utf8'))).toMatchObject({ error: { type: expect.any(String), message: expect.any(String) } });
      }),
      { numRuns: 60 },
    );
    await fc.assert(
      fc.asyncProperty(
        fc.record(
          { model: fc.oneof(fc.constant('whisper-1'), fc.string()), language: fc.oneof(fc.constant('en'), fc.string()), response_format: fc.string(), prompt: fc.string() },
          { requiredKeys: ['model'] },
        ),
        // Garbage, and garbage behind a WAV or Ogg magic (the native readers) or none (ffmpeg's).
        fc.tuple(fc.constantFrom('', 'RIFF', 'OggS', 'RIFF\0\0\0\0WAVEfmt '), fc.uint8Array({ maxLength: 64 })).map(([magic, rest]) => Buffer.concat([Buffer.from(magic, 'latin1'), rest])),
        async (form, file) => {
        const fd = new FormData();
        for (const [k, v] of Object.entries(form)) fd.append(k, v);
        fd.append('file', new Blob([file]), 'f.bin');
        const r = await fetch(`${v1(hh)}/audio/transcriptions`, { method: 'POST', headers: auth, body: fd });
        const text = await r.text();
        expect(r.status, text).toBeGreaterThanOrEqual(400);
        expect(r.status, text).toBeLessThan(500);
        expect(JSON.parse(text)).toMatchObject({ error: { type: 'invalid_request_error' } });
        },
      ),
      { numRuns: 60 },
    );
    expect((await client(hh).models.list()).data.length).toBeGreaterThan(0);
  }, 120_000);
});

describe('OpenAI SDK → /v1 with pocketsphinx', () => {
  const missing = pocketsphinxAvailable();
  it.skipIf(missing !== undefined)('transcribes a LibriVox recording (he was not an ill disposed young man) with word timestamps', async () => {
    h = await startServer({ stt: 'pocketsphinx' });
    const c = client(h);
    const wav = readFileSync(new URL('../../fixtures/speech/librivox-0880.wav', import.meta.url));
    const t = await c.audio.transcriptions.create({ file: await toFile(wav, 'librivox.wav'), model: 'whisper-1', response_format: 'verbose_json', timestamp_granularities: ['word'] });
    const truth = ['he', 'was', 'not', 'an', 'ill', 'disposed', 'young', 'man'];
    const heard = t.text.toLowerCase().split(/\s+/);
    expect(truth.filter((w) => heard.includes(w)).length).toBeGreaterThanOrEqual(4);
    expect(t.words!.length).toBeGreaterThanOrEqual(4);
    for (let i = 1; i < t.words!.length; i++) expect(t.words![i]!.start).toBeGreaterThanOrEqual(t.words![i - 1]!.start);
    expect(t.duration).toBeGreaterThan(2);
  });
});

describe('units', () => {
  it('without ffmpeg, mp3/flac/aac are refused with a 400 naming the available formats', () => {
    const err = (() => {
      try {
        parseSpeechRequest({ model: 'tts-1', input: 'x', voice: 'alloy', response_format: 'mp3' }, { ffmpeg: false, maxTextChars: 100 });
      } catch (e) {
        return e as VoicewireError;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(VoicewireError);
    expect(err!.message).toContain('available: opus, wav, pcm');
    expect(openAIErrorResponse(err).status).toBe(400);
    // Without ffmpeg the default is wav, not an error.
    expect(parseSpeechRequest({ model: 'tts-1', input: 'x', voice: 'alloy' }, { ffmpeg: false, maxTextChars: 100 }).format).toBe('wav');
  });

  it('transcriptions: stream true streams json or text; with verbose_json, srt or vtt it is a 400 on response_format; a stream not true/false is a 400 on stream', () => {
    const fields = (stream: string, format = 'json'): Map<string, string[]> => new Map([['model', ['whisper-1']], ['stream', [stream]], ['response_format', [format]]]);
    const refusal = (f: Map<string, string[]>): VoicewireError | undefined => {
      try {
        parseTranscriptionFields(f);
      } catch (e) {
        return e as VoicewireError;
      }
      return undefined;
    };
    for (const [f, param] of [[fields('true', 'verbose_json'), 'response_format'], [fields('true', 'srt'), 'response_format'], [fields('true', 'vtt'), 'response_format'], [fields('yes'), 'stream']] as const) {
      const err = refusal(f);
      expect(err).toBeInstanceOf(VoicewireError);
      expect(openAIErrorResponse(err).status).toBe(400);
      expect(openAIErrorResponse(err).body.error.param).toBe(param);
    }
    expect(parseTranscriptionFields(fields('true')).stream).toBe(true);
    expect(parseTranscriptionFields(fields('true', 'text')).stream).toBe(true);
    expect(parseTranscriptionFields(fields('false', 'verbose_json')).stream).toBe(false);
  });

  it('maps server failures onto OpenAI statuses', () => {
    const s = (code: ConstructorParameters<typeof VoicewireError>[0]): number => openAIErrorResponse(new VoicewireError(code, 'x')).status;
    expect([s('PROTOCOL_DRAINING'), s('STORE_UNAVAILABLE'), s('LIMIT_EXCEEDED'), s('PROTOCOL_INTERNAL'), s('RESIDENCY_DENIED')]).toEqual([503, 503, 429, 500, 403]);
  });
});
