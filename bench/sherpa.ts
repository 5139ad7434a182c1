/**
 * sherpa-onnx engines with the test suite's tiny models (issue 24): TTS time to first audio and
 * real-time factor, STT real-time factor, through the engines and their worker pool, as the
 * server runs them. Rounds interleave TTS and STT so a busy machine weighs on both alike.
 *
 *   npx tsx bench/sherpa.ts            # 10 rounds
 *   npx tsx bench/sherpa.ts --short    # 3 rounds
 *
 * Needs Debian's python3-onnx (the models are made at start, as the tests make them). The tiny
 * models are random and small: these figures are the engines' overhead (pool, resampling,
 * framing, VAD), not what a real voice costs (see docs/engines.md).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeWav } from '../src/audio/wav.js';
import { resolveSherpaSttModel, resolveSherpaTtsModel } from '../src/engines/sherpa-model.js';
import { SherpaPool } from '../src/engines/sherpa-pool.js';
import { createSherpaTtsEngine } from '../src/engines/sherpa-tts.js';
import { createSherpaSttEngine } from '../src/engines/sherpa-stt.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const rounds = process.argv.includes('--short') ? 3 : 10;
const dir = mkdtempSync(join(tmpdir(), 'vw-sherpa-bench-'));
const make = (kind: string): string => {
  const out = join(dir, kind);
  execFileSync('/usr/bin/python3', [join(root, 'test/fixtures/models/make-models.py'), kind, out]);
  return out;
};

const SENTENCE = 'The quick brown fox jumps over the lazy dog near the river.';
const PARAGRAPH = Array.from({ length: 5 }, () => SENTENCE).join(' ');

async function main(): Promise<void> {
  const ttsPool = new SherpaPool(resolveSherpaTtsModel(make('piper')), { workers: 1 });
  const sttPool = new SherpaPool(resolveSherpaSttModel(make('nemo-ctc')), { workers: 1 });
  await Promise.all([ttsPool.ready, sttPool.ready]);
  const tts = createSherpaTtsEngine(ttsPool, { resolveVoice: async () => undefined, resolvePronunciation: async () => undefined }, { numSpeakers: 1 });
  const stt = createSherpaSttEngine(sttPool);
  const wav = decodeWav(readFileSync(join(root, 'fixtures/speech/en_24k.wav')), { output: 'int16' });
  const pcm = wav.samples;
  const audioSeconds = pcm.length / 24000;
  const firstAudio: number[] = [];
  const ttsRtf: number[] = [];
  const sttRtf: number[] = [];
  for (let r = 0; r < rounds + 1; r++) {
    // TTS: time to the first 80 ms frame of one sentence.
    let t0 = performance.now();
    let first = -1;
    let s = await tts.open({ modelName: 'default', outputFormat: 'pcm', jsonConfig: {} }, (e) => {
      if (e.type === 'audio' && first < 0) first = performance.now() - t0;
    });
    await s.text(SENTENCE);
    await s.end();
    s.close();
    // TTS: a paragraph, seconds of audio per second of wall time.
    let frames = 0;
    t0 = performance.now();
    s = await tts.open({ modelName: 'default', outputFormat: 'pcm', jsonConfig: {} }, (e) => {
      if (e.type === 'audio') frames++;
    });
    await s.text(PARAGRAPH);
    await s.end();
    s.close();
    const ttsWall = (performance.now() - t0) / 1000;
    // STT: the fixture, 80 ms frames as the server pushes them.
    t0 = performance.now();
    const st = await stt.open({ modelName: 'default', inputFormat: 'pcm', jsonConfig: {} }, () => undefined);
    for (let i = 0; i + 1920 <= pcm.length; i += 1920) await st.push(pcm.subarray(i, i + 1920));
    await st.end?.();
    st.close();
    const sttWall = (performance.now() - t0) / 1000;
    if (r === 0) continue; // warm-up
    firstAudio.push(first);
    ttsRtf.push((frames * 0.08) / ttsWall);
    sttRtf.push(audioSeconds / sttWall);
  }
  const med = (a: number[]): number => [...a].sort((x, y) => x - y)[a.length >> 1]!;
  const range = (a: number[], d: number): string => `median ${med(a).toFixed(d)} (min ${Math.min(...a).toFixed(d)}, max ${Math.max(...a).toFixed(d)})`;
  console.log(`sherpa-onnx engines, tiny models, ${rounds} interleaved rounds`);
  console.log(`TTS time to first audio, one 12-word sentence: ${range(firstAudio, 1)} ms`);
  console.log(`TTS real-time factor (audio s / wall s), 5 sentences: ${range(ttsRtf, 0)}×`);
  console.log(`STT real-time factor, ${audioSeconds.toFixed(1)} s fixture in 80 ms frames: ${range(sttRtf, 0)}×`);
  await Promise.all([ttsPool.close(), sttPool.close()]);
  rmSync(dir, { recursive: true, force: true });
}

await main();
