/**
 * Issue 32's row "Vercel AI SDK 6 (`ai` + `@ai-sdk/openai`, `baseURL`) `generateSpeech`,
 * `transcribe`": the official packages, unchanged, pointed at the built server's `/v1`
 * (`node dist/cli.js serve`, espeak-ng and pocketsphinx), as docs/agents.md shows them.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOpenAI } from '@ai-sdk/openai';
import { experimental_generateSpeech as generateSpeech, experimental_transcribe as transcribe } from 'ai';
import { startBuiltServer, type BuiltServer, stopBuiltServer } from './built-server.js';
import { describeBuilt } from './describe-built.js';

/** The watchdog's bound: the default engines serve one client in well under this. */
const WATCHDOG = 1.5 * 2 ** 30;

/** Seconds of 16-bit PCM in a WAV file, read from its `fmt ` and `data` chunks (not a fixed 44-byte header). */
function wavSeconds(wav: Uint8Array): number {
  const view = new DataView(wav.buffer, wav.byteOffset, wav.byteLength);
  const tag = (at: number) => String.fromCharCode(...wav.subarray(at, at + 4));
  expect(tag(0)).toBe('RIFF');
  expect(tag(8)).toBe('WAVE');
  let byteRate = 0;
  for (let at = 12; at + 8 <= wav.length; at += 8 + view.getUint32(at + 4, true) + (view.getUint32(at + 4, true) & 1)) {
    if (tag(at) === 'fmt ') byteRate = view.getUint32(at + 16, true);
    // A streamed WAV may carry an unknown (0xffffffff) data size: the rest of the file is the data.
    if (tag(at) === 'data') return Math.min(view.getUint32(at + 4, true), wav.length - at - 8) / byteRate;
  }
  throw new Error('no data chunk');
}

/** How many of `truth` the transcript holds (pocketsphinx is imperfect: a tolerant overlap). */
function overlap(text: string, truth: string[]): number {
  const heard = text.toLowerCase().replace(/[^a-z' ]/g, ' ').split(/\s+/);
  return truth.filter((w) => heard.includes(w)).length;
}

describeBuilt('Vercel AI SDK 6 → built server: generateSpeech, transcribe', () => {
  let s: BuiltServer | undefined;
  let dir: string;
  let voicewire: ReturnType<typeof createOpenAI>;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'voicewire-ai-sdk-'));
    s = await startBuiltServer({ dataDir: join(dir, 'data'), maxRssBytes: WATCHDOG });
    voicewire = createOpenAI({ apiKey: s.key, baseURL: s.base.replace(/\/api$/, '/v1') });
  }, 150_000);
  afterAll(async () => {
    await stopBuiltServer(s, dir);
  }, 30_000);

  it('generateSpeech (tts-1, alloy, wav) speaks with espeak-ng; transcribe (whisper-1) hears it with pocketsphinx', async () => {
    // The sentence of openai-built.test.ts: pocketsphinx hears some of its words in espeak's voice.
    const { audio, warnings } = await generateSpeech({ model: voicewire.speech('tts-1'), text: 'Please call me tomorrow morning.', voice: 'alloy', outputFormat: 'wav' });
    expect(warnings).toEqual([]);
    expect(audio.mediaType).toBe('audio/wav');
    // Five words at espeak's pace: about 2 s; well over 1 s, well under 6 s.
    const seconds = wavSeconds(audio.uint8Array);
    expect(seconds).toBeGreaterThan(1);
    expect(seconds).toBeLessThan(6);
    const { text } = await transcribe({ model: voicewire.transcription('whisper-1'), audio: audio.uint8Array });
    // Synthetic speech and a general English model: a content word, not "a" or "the", which any noise may give.
    expect(overlap(text, ['please', 'call', 'tomorrow', 'morning']), text).toBeGreaterThanOrEqual(1);
    expect(s!.alive()).toBe(true);
  }, 120_000);

  it('transcribe (whisper-1) reads a human recording (LibriVox): most of its words come back', async () => {
    const wav = readFileSync(new URL('../../fixtures/speech/librivox-0880.wav', import.meta.url));
    const { text } = await transcribe({ model: voicewire.transcription('whisper-1'), audio: wav });
    expect(overlap(text, ['he', 'was', 'not', 'an', 'ill', 'disposed', 'young', 'man']), text).toBeGreaterThanOrEqual(4);
    expect(s!.alive()).toBe(true);
  }, 120_000);
});
