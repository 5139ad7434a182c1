/**
 * The sherpa-onnx engines end to end through the server's routes (issue 24), with the tiny models
 * test/fixtures/models/make-models.py makes: a Piper-layout voice speaks over POST and the TTS
 * WebSocket, a NeMo CTC and a Zipformer CTC model transcribe over the STT WebSocket and POST, a
 * multilingual Whisper transcribes in the language each request asks for, all on worker threads.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { registerSttEngine, registerTtsEngine, sherpaSttEntry, sherpaTtsEntry, type SttEngineEntry, type TtsEngineEntry } from '../../src/engines/registry.js';
import { createClient } from '../../src/node/client.js';
import { decodeWav } from '../../src/audio/wav.js';
import { startServer, type Harness } from '../server/harness.js';
import { ModelFolders } from '../helpers/sherpa-models.js';
import { setup, sttSession } from '../server/stt-options-scenarios.js';

const folders = new ModelFolders();
let h: Harness;
let ttsEntry: TtsEngineEntry;
let sttEntry: SttEngineEntry;

beforeAll(async () => {
  ttsEntry = await sherpaTtsEntry(folders.make('piper', { speakers: 2 }));
  sttEntry = await sherpaSttEntry(folders.make('nemo-ctc'));
  registerTtsEngine('sherpa-test', ttsEntry);
  registerSttEngine('sherpa-test', sttEntry);
  h = await startServer({ tts: 'sherpa-test', stt: 'sherpa-test', limits: { sherpaWorkers: 2 } });
}, 180_000);
afterAll(async () => {
  await h?.close();
  await ttsEntry?.close?.();
  await sttEntry?.close?.();
  folders.cleanup();
});

const seconds = (wav: Uint8Array): number => decodeWav(wav).durationS;

describe('sherpa-onnx TTS through the server', () => {
  it('the model\'s speakers are library voices, and each speaks over POST and WebSocket with per-sentence word timestamps', async () => {
    const c = createClient({ baseUrl: h.base, apiKey: h.apiKey, retry: { attempts: 1 } });
    const voices = (await c.voices.list()).filter((v) => v.uid.startsWith('sherpa-'));
    expect(voices.map((v) => v.uid).sort()).toEqual([expect.stringMatching(/^sherpa-piper-\d+-0$/), expect.stringMatching(/^sherpa-piper-\d+-1$/)]);
    const text = 'Hello there. This voice is a tiny random model!';
    const overHttp = await c.tts({ text, voiceId: voices[0]!.uid, outputFormat: 'wav', http: true });
    const overWs = await c.tts({ text, voiceId: voices[0]!.uid, outputFormat: 'wav' });
    for (const r of [overHttp, overWs]) {
      expect(r.words.map((w) => w.text)).toEqual(text.split(' '));
      expect(seconds(r.audio)).toBeGreaterThan(0.5);
      // Words in order, inside the audio.
      for (let i = 1; i < r.words.length; i++) expect(r.words[i]!.start_s).toBeGreaterThanOrEqual(r.words[i - 1]!.start_s);
      expect(r.words.at(-1)!.stop_s).toBeLessThanOrEqual(seconds(r.audio) + 1e-3);
    }
    expect(seconds(overWs.audio)).toBeCloseTo(seconds(overHttp.audio), 1);
    // Another speaker is another voice: other samples, same length.
    const other = await c.tts({ text, voiceId: voices[1]!.uid, outputFormat: 'wav', http: true });
    expect(Buffer.from(other.audio).equals(Buffer.from(overHttp.audio))).toBe(false);
  }, 180_000);

  it('honours speed (padding_bonus −4 is twice as fast) and skips text with nothing to say instead of aborting', async () => {
    const c = createClient({ baseUrl: h.base, apiKey: h.apiKey, retry: { attempts: 1 } });
    const text = 'One two three four five six seven eight.';
    const normal = seconds((await c.tts({ text, outputFormat: 'wav', http: true })).audio);
    const fast = seconds((await c.tts({ text, outputFormat: 'wav', http: true, jsonConfig: { padding_bonus: -4 } })).audio);
    expect(fast / normal).toBeGreaterThan(0.4);
    expect(fast / normal).toBeLessThan(0.62);
    // Punctuation alone and emoji: no tokens for sherpa-onnx; the request still succeeds.
    const empty = await c.tts({ text: '... !!! 😀 —', outputFormat: 'wav', http: true });
    expect(empty.words).toEqual([]);
    const mixed = await c.tts({ text: '... Hi.', outputFormat: 'wav', http: true });
    expect(mixed.words.map((w) => w.text)).toEqual(['Hi.']);
  }, 180_000);
});

describe('sherpa-onnx STT through the server', () => {
  it('transcribes speech over WebSocket and POST, the same words both ways, with times inside the audio', async () => {
    const c = createClient({ baseUrl: h.base, apiKey: h.apiKey, retry: { attempts: 1 } });
    const wav = readFileSync(join(import.meta.dirname, '..', '..', 'fixtures', 'speech', 'en_24k.wav'));
    const overWs = await c.stt(wav, { inputFormat: 'wav', language: 'en' });
    const overHttp = await c.stt(wav, { inputFormat: 'wav', language: 'en', http: true });
    // A random model hears noise-words, but real ones, from its vocabulary, and deterministically.
    expect(overWs.words.length).toBeGreaterThan(0);
    expect(overWs.text).toMatch(/^[a-z'<>\s]+$/);
    expect(overHttp.text).toBe(overWs.text);
    const duration = seconds(wav);
    for (const w of overWs.words) expect(w.start_s).toBeLessThanOrEqual(duration);
    await expect(c.stt(wav, { inputFormat: 'wav', language: 'fr' })).rejects.toMatchObject({ closeCode: 1008 });
  }, 180_000);

  it('silence gives no words', async () => {
    const c = createClient({ baseUrl: h.base, apiKey: h.apiKey, retry: { attempts: 1 } });
    const { encodeWav } = await import('../../src/audio/wav.js');
    const silence = encodeWav(new Int16Array(24000 * 2), { sampleRate: 24000, channels: 1 });
    expect((await c.stt(silence, { inputFormat: 'wav', language: 'en' })).words).toEqual([]);
  }, 30_000);
});

describe('sherpa-onnx STT: the service client\'s json_config (issue 35; seen failing first: delay 24 and temp 0.5 refused at setup)', () => {
  it('delay_in_frames 24, temp 0.5 and padding_bonus 1 are accepted: ready says 24, the end pushes 24 frames, the same words come out', async () => {
    const wav = readFileSync(join(import.meta.dirname, '..', '..', 'fixtures', 'speech', 'en_24k.wav'));
    const t = { base: h.base, wsBase: h.wsBase, key: h.apiKey };
    const run = (cfg?: Record<string, unknown>) => {
      const msgs: unknown[] = [{ ...setup(cfg), input_format: 'wav' }];
      for (let i = 0; i < wav.length; i += 4096) msgs.push({ type: 'audio', audio: wav.subarray(i, i + 4096).toString('base64') });
      msgs.push({ type: 'end_of_stream' });
      return sttSession(t, msgs, 120_000);
    };
    const own = await run();
    const asked = await run({ delay_in_frames: 24, temp: 0.5, padding_bonus: 1 });
    expect(own[0]).toMatchObject({ type: 'ready', delay_in_frames: 7 });
    expect(asked[0]).toMatchObject({ type: 'ready', delay_in_frames: 24 });
    const steps = (m: typeof own) => m.filter((x) => x['type'] === 'step').length;
    expect(steps(asked) - steps(own)).toBe(24 - 7);
    const words = (m: typeof own) => m.filter((x) => x['type'] === 'text').map((x) => x['text']);
    expect(words(own).length).toBeGreaterThan(0);
    expect(words(asked)).toEqual(words(own));
    expect(asked.at(-1)).toMatchObject({ type: 'end_of_stream' });
  }, 180_000);
});

describe('sherpa-onnx STT with a Zipformer CTC folder (no metadata) through the server', () => {
  let zh: Harness;
  let zipEntry: SttEngineEntry;
  beforeAll(async () => {
    // The model declares English and German (its `language` metadata): what json_config.language accepts.
    zipEntry = await sherpaSttEntry(folders.make('zipformer2-ctc', { language: 'en,de' }));
    registerSttEngine('sherpa-zip-test', zipEntry);
    zh = await startServer({ stt: 'sherpa-zip-test', limits: { sherpaWorkers: 1 } });
  }, 180_000);
  afterAll(async () => {
    await zh?.close();
    await zipEntry?.close?.();
  });

  it('transcribes over WebSocket and POST, the same words both ways, with the model\'s token times', async () => {
    const c = createClient({ baseUrl: zh.base, apiKey: zh.apiKey, retry: { attempts: 1 } });
    const wav = readFileSync(join(import.meta.dirname, '..', '..', 'fixtures', 'speech', 'en_24k.wav'));
    const overWs = await c.stt(wav, { inputFormat: 'wav', language: 'en' });
    const overHttp = await c.stt(wav, { inputFormat: 'wav', language: 'en', http: true });
    expect(overWs.words.length).toBeGreaterThan(0);
    expect(overWs.text).toMatch(/^[a-z'<>\s]+$/);
    expect(overHttp.text).toBe(overWs.text);
    // Token times (40 ms a frame after 4x subsampling) place words apart, inside the audio.
    const starts = overWs.words.map((w) => w.start_s);
    expect(new Set(starts).size).toBeGreaterThan(1);
    for (const t of starts) expect(t).toBeLessThanOrEqual(seconds(wav));
  }, 180_000);

  it('language accepts the model\'s declared languages only, and the refusal names them', async () => {
    const c = createClient({ baseUrl: zh.base, apiKey: zh.apiKey, retry: { attempts: 1 } });
    const wav = readFileSync(join(import.meta.dirname, '..', '..', 'fixtures', 'speech', 'en_24k.wav'));
    expect((await c.stt(wav, { inputFormat: 'wav', language: 'de', http: true })).words.length).toBeGreaterThan(0);
    await expect(c.stt(wav, { inputFormat: 'wav', language: 'fr' })).rejects.toMatchObject({ closeCode: 1008, message: expect.stringMatching(/"fr" is not served by the model .*; its languages: en, de/) });
    await expect(c.stt(wav, { inputFormat: 'wav', language: 'es', http: true })).rejects.toThrow(/"es" is not served by the model .*; its languages: en, de/);
  }, 180_000);
});

describe('sherpa-onnx STT with a multilingual Whisper folder: the request\'s language reaches the model', () => {
  let wh: Harness;
  let whisperEntry: SttEngineEntry;
  beforeAll(async () => {
    // The tiny Whisper "hears" one greeting, in the language it is told (make-models.py whisper).
    whisperEntry = await sherpaSttEntry(folders.make('whisper'));
    registerSttEngine('sherpa-whisper-test', whisperEntry);
    // One worker: every request goes through the same recognizer, whose language is switched per request.
    wh = await startServer({ stt: 'sherpa-whisper-test', limits: { sherpaWorkers: 1 } });
  }, 180_000);
  afterAll(async () => {
    await wh?.close();
    await whisperEntry?.close?.();
  });

  it('each request is decoded in its own language on one recognizer, over WebSocket and POST', async () => {
    const c = createClient({ baseUrl: wh.base, apiKey: wh.apiKey, retry: { attempts: 1 } });
    const wav = readFileSync(join(import.meta.dirname, '..', '..', 'fixtures', 'speech', 'en_24k.wav'));
    const greeting: Record<string, string> = { en: 'hello', fr: 'bonjour', de: 'hallo', es: 'hola', pt: 'olá' };
    for (const [i, language] of ['fr', 'en', 'de', 'fr', 'pt', 'es'].entries()) {
      const r = await c.stt(wav, { inputFormat: 'wav', language, http: i % 2 === 1 });
      expect(r.words.length).toBeGreaterThan(0);
      expect(new Set(r.words.map((w) => w.text))).toEqual(new Set([greeting[language]]));
    }
  }, 180_000);
});
