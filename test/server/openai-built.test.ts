/**
 * Issue 21's "done when": the official `openai` package synthesizes and transcribes through
 * `voicewire serve` — the built CLI (`node dist/cli.js serve`) with its default engines
 * (espeak-ng and pocketsphinx), started by test/product/built-server.ts with its memory watchdog
 * and a data folder of its own, the SDK pointed at it with `baseURL`.
 *
 * Skipped only where dist/ or pocketsphinx is missing outside CI (`npm run build` makes dist/); in
 * CI it runs and fails instead, so a CI without them cannot pass by skipping.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { toFile } from 'openai';
import { built, startBuiltServer, type BuiltServer, stopBuiltServer } from '../product/built-server.js';
import { pocketsphinxAvailable } from '../../src/engines/pocketsphinx-ffi.js';

/** The watchdog's bound: the default engines serve one client in well under this. */
const WATCHDOG = 1.5 * 2 ** 30;
const ready = built && pocketsphinxAvailable() === undefined;

describe.skipIf(!ready && !process.env['CI'])('OpenAI SDK → built `voicewire serve` (espeak-ng, pocketsphinx)', () => {
  let s: BuiltServer | undefined;
  let dir: string;
  let c: OpenAI;
  beforeAll(async () => {
    // In CI a missing build or model is a failure, not a skip.
    expect(built, 'dist/cli.js is missing: npm run build').toBe(true);
    expect(pocketsphinxAvailable()).toBeUndefined();
    dir = mkdtempSync(join(tmpdir(), 'voicewire-openai-built-'));
    s = await startBuiltServer({ dataDir: join(dir, 'data'), maxRssBytes: WATCHDOG });
    // The SDK's own fetch (built-server.ts's fetchFresh has another FormData, which the SDK refuses
    // for uploads). A connection the server's keep-alive timer closes as it is reused is retried,
    // as the SDK does by default; a failure the server answers fails all the same.
    c = new OpenAI({ apiKey: s.key, baseURL: s.base.replace(/\/api$/, '/v1'), maxRetries: 2, timeout: 120_000 });
  }, 60_000);
  afterAll(async () => {
    await stopBuiltServer(s, dir);
  }, 30_000);

  it('models.list() names the speech and transcription models', async () => {
    const ids: string[] = [];
    for await (const m of c.models.list()) ids.push(m.id);
    expect(ids).toEqual(expect.arrayContaining(['tts-1', 'tts-1-hd', 'gpt-4o-mini-tts', 'whisper-1', 'gpt-4o-transcribe']));
  });

  it('audio.speech.create (wav) speaks with espeak-ng, and audio.transcriptions.create hears it with pocketsphinx', async () => {
    // A sentence whose words pocketsphinx hears in espeak's voice ("please … tomorrow" in probes
    // with alloy and onyx; "hello world, this is a test" came back as "a desktop list").
    const text = 'Please call me tomorrow morning.';
    const r = await c.audio.speech.create({ model: 'tts-1', voice: 'alloy', input: text, response_format: 'wav' });
    expect(r.headers.get('content-type')).toBe('audio/wav');
    const wav = Buffer.from(await r.arrayBuffer());
    expect(wav.subarray(0, 4).toString('latin1')).toBe('RIFF');
    const rate = wav.readUInt32LE(24);
    const seconds = (wav.length - 44) / 2 / rate;
    expect(seconds).toBeGreaterThan(1);
    const t = await c.audio.transcriptions.create({ file: await toFile(wav, 'speech.wav', { type: 'audio/wav' }), model: 'whisper-1', response_format: 'verbose_json', timestamp_granularities: ['word'], language: 'en' });
    expect(t.duration).toBeGreaterThan(1);
    // Synthetic speech and a general English model: some of the words, not all (protocol-notes.md);
    // a content word, not "a" or "the", which any noise may give.
    const heard = t.text.toLowerCase().split(/\s+/);
    expect(['please', 'call', 'tomorrow', 'morning'].filter((w) => heard.includes(w)).length, t.text).toBeGreaterThanOrEqual(1);
    expect(t.words!.length).toBeGreaterThanOrEqual(1);
  }, 120_000);

  it('audio.transcriptions.create reads a human recording (LibriVox): most of its words come back', async () => {
    const wav = readFileSync(new URL('../../fixtures/speech/librivox-0880.wav', import.meta.url));
    const t = await c.audio.transcriptions.create({ file: await toFile(wav, 'librivox.wav'), model: 'whisper-1' });
    const truth = ['he', 'was', 'not', 'an', 'ill', 'disposed', 'young', 'man'];
    const heard = t.text.toLowerCase().split(/\s+/);
    expect(truth.filter((w) => heard.includes(w)).length, t.text).toBeGreaterThanOrEqual(4);
  }, 120_000);
});
