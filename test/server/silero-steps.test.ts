/**
 * `voicewire serve --stt pocketsphinx --vad-model silero_vad.onnx` (the built server; issue 33 item
 * 2): the steps of an engine that is not sherpa-onnx come from the Silero VAD — loud noise, which
 * the WebRTC VAD takes for speech, leaves the turn free — and the SDK's turn-taking ends the turn
 * once, on the pause after a LibriVox reading, not inside it.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBuiltServer, type BuiltServer } from '../product/built-server.js';
import { describeBuilt } from '../product/describe-built.js';
import { createClient } from '../../src/node/client.js';
import { resampleInt16 } from '../../src/audio/resampler.js';
import { decodeWav } from '../../src/audio/wav.js';
import type { SttStreamEvent } from '../../src/client/stt.js';
import { requireSileroModel, sileroTestsRun } from '../helpers/silero-model.js';

const LIBRIVOX = '/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0870.wav';
const RATE = 24000;

/** Loud white noise (deterministic), 24 kHz. */
function noise(seconds: number): Int16Array {
  let s = 777;
  return new Int16Array(Math.round(seconds * RATE)).map(() => {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    return ((s / 0x7fffffff) * 2 - 1) * 9000;
  });
}

function bytes(pcm: Int16Array): Uint8Array {
  return new Uint8Array(pcm.buffer, pcm.byteOffset, pcm.byteLength);
}

describeBuilt('serve --vad-model with pocketsphinx: Silero drives the steps and the end of turn', () => {
  let s: BuiltServer;
  let dataDir: string;
  beforeAll(async () => {
    if (!sileroTestsRun) return;
    dataDir = mkdtempSync(join(tmpdir(), 'vw-silero-steps-'));
    s = await startBuiltServer({ dataDir, maxRssBytes: 1.5 * 2 ** 30, args: ['--stt', 'pocketsphinx', '--vad-model', requireSileroModel()] });
  }, 180_000);
  afterAll(async () => {
    if (s !== undefined) expect(await s.stop()).toBe(0);
    if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
  });

  async function transcribe(pcm: Int16Array): Promise<SttStreamEvent[]> {
    const c = createClient({ baseUrl: s.base, apiKey: s.key, retry: { attempts: 1 } });
    const stream = c.sttStream({ inputFormat: 'pcm', silenceFlush: false });
    stream.write(bytes(pcm));
    stream.end();
    const events: SttStreamEvent[] = [];
    for await (const e of stream) events.push(e);
    return events;
  }

  it.skipIf(!sileroTestsRun)('noise the WebRTC VAD calls speech leaves the turn free (Silero hears nobody)', async () => {
    const events = await transcribe(noise(3));
    const p2 = events.flatMap((e) => (e.type === 'step' ? [e.step.vad.find((v) => v.horizon_s === 2)!.inactivity_prob] : []));
    expect(p2.length).toBeGreaterThanOrEqual(30);
    // After the first 0.5 s: with the WebRTC VAD these stay under 0.3 (test/engines/silero-steps.test.ts).
    const later = p2.slice(6);
    expect(later.reduce((a, b) => a + b, 0) / later.length).toBeGreaterThan(0.7);
  }, 120_000);

  it.skipIf(!sileroTestsRun)('one end of turn, on the pause after a LibriVox reading', async () => {
    const wav = decodeWav(readFileSync(LIBRIVOX), { output: 'int16' });
    const speech = resampleInt16(wav.samples, wav.format.sampleRate, RATE);
    const pcm = new Int16Array(speech.length + 3 * RATE);
    pcm.set(speech);
    const events = await transcribe(pcm);
    // Before anyone speaks the turn is free from the start (vad.ts: silence counts from the
    // stream's start), as with the WebRTC VAD: count the ends once the reading has begun (its first
    // loud 80 ms frame, peak above 10 % of the maximum) and Silero has heard it (two 32 ms windows,
    // a frame's worth of margin).
    const max = speech.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
    let onset = 0;
    while (!speech.subarray(onset, onset + 1920).some((x) => Math.abs(x) > max * 0.1)) onset += 1920;
    const turns = events.flatMap((e) => (e.type === 'turn' && e.total_duration_s > onset / RATE + 0.3 ? [e] : []));
    const speechEnd = speech.length / RATE;
    expect(turns, JSON.stringify(turns)).toHaveLength(1);
    expect(turns[0]!.total_duration_s).toBeGreaterThan(speechEnd - 0.5);
    expect(turns[0]!.total_duration_s).toBeLessThan(speechEnd + 2.5);
    expect(events.some((e) => e.type === 'text')).toBe(true);
  }, 120_000);
});
