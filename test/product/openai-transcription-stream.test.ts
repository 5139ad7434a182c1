/**
 * Issue 32's row "`openai` `audio.transcriptions.create({ stream: true })`": the official package,
 * unchanged, iterates a streamed transcription from the built server (`node dist/cli.js serve`,
 * pocketsphinx) with `for await`: `transcript.text.delta` events, then one
 * `transcript.text.done` whose text is the deltas joined and the same as the JSON answer.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { toFile } from 'openai';
import type { TranscriptionStreamEvent } from 'openai/resources/audio/transcriptions';
import { startBuiltServer, type BuiltServer, stopBuiltServer } from './built-server.js';
import { describeBuilt } from './describe-built.js';

/** The watchdog's bound: the default engines serve one client in well under this. */
const WATCHDOG = 1.5 * 2 ** 30;

describeBuilt('openai package → built server: audio.transcriptions.create({ stream: true })', () => {
  let s: BuiltServer | undefined;
  let dir: string;
  let c: OpenAI;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'voicewire-stt-stream-'));
    s = await startBuiltServer({ dataDir: join(dir, 'data'), maxRssBytes: WATCHDOG });
    // The SDK's own fetch (the upload's FormData must be its own).
    c = new OpenAI({ apiKey: s.key, baseURL: s.base.replace(/\/api$/, '/v1'), maxRetries: 2, timeout: 120_000 });
  }, 150_000);
  afterAll(async () => {
    await stopBuiltServer(s, dir);
  }, 30_000);

  it('a LibriVox recording: deltas per word, then done; the deltas joined are the done text, the JSON answer\'s text', async () => {
    const wav = readFileSync(new URL('../../fixtures/speech/librivox-0880.wav', import.meta.url));
    const stream = await c.audio.transcriptions.create({ file: await toFile(wav, 'librivox.wav', { type: 'audio/wav' }), model: 'gpt-4o-transcribe', stream: true });
    const events: TranscriptionStreamEvent[] = [];
    for await (const e of stream) events.push(e);
    const deltas = events.flatMap((e) => (e.type === 'transcript.text.delta' ? [e.delta] : []));
    const done = events.at(-1)!;
    expect(events.slice(0, -1).every((e) => e.type === 'transcript.text.delta')).toBe(true);
    if (done.type !== 'transcript.text.done') throw new Error(`the last event is ${done.type}, not transcript.text.done`);
    // pocketsphinx hears several words in these 3 s (openai-built.test.ts checks which).
    expect(deltas.length).toBeGreaterThan(2);
    expect(deltas.join('')).toBe(done.text);
    // 3 s of audio: 3 or 4 started seconds (the engine's trailing silence), each a credit.
    expect(done.usage).toMatchObject({ type: 'tokens', output_tokens: deltas.length });
    expect(done.usage!.input_tokens).toBeGreaterThanOrEqual(3);
    expect(done.usage!.input_tokens).toBeLessThanOrEqual(5);
    const plain = await c.audio.transcriptions.create({ file: await toFile(wav, 'librivox.wav', { type: 'audio/wav' }), model: 'gpt-4o-transcribe' });
    expect(plain.text).toBe(done.text);
    expect(s!.alive()).toBe(true);
  }, 120_000);
});
