/**
 * Silero VAD through sherpa-onnx (`--vad-model`, issue 24) with the test suite's tiny models: an
 * offline STT stream segmented by the WebRTC VAD vs by Silero on its worker thread (wall real-time
 * factor, the event loop's worst timer lag), and what the same Silero run would hold the event loop
 * for if it ran there (sherpa-onnx's `Vad` is synchronous). Rounds interleave the three.
 *
 *   npx tsx bench/sherpa-vad.ts            # 10 rounds
 *   npx tsx bench/sherpa-vad.ts --short    # 3 rounds
 *
 * The audio is two utterances of fixtures/speech/en_24k.wav with a 2 s gap (8.6 s). The VAD is
 * make-models.py's energy detector (66 KB): its cost per window is ONNX Runtime's overhead plus a
 * few hundred multiplications, about what the released 2 MB Silero costs give or take a factor.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeWav } from '../src/audio/wav.js';
import { resolveSherpaSttModel } from '../src/engines/sherpa-model.js';
import { SherpaPool } from '../src/engines/sherpa-pool.js';
import { createSherpaSttEngine } from '../src/engines/sherpa-stt.js';
import { resolveSherpaVad, SherpaVadWorker } from '../src/engines/sherpa-vad.js';
import type { SttEngine } from '../src/sessions/engine.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const rounds = process.argv.includes('--short') ? 3 : 10;
const dir = mkdtempSync(join(tmpdir(), 'vw-sherpa-vad-bench-'));
const make = (kind: string): string => {
  const out = join(dir, kind);
  execFileSync('/usr/bin/python3', [join(root, 'test/fixtures/models/make-models.py'), kind, out]);
  return out;
};

const speech = decodeWav(readFileSync(join(root, 'fixtures/speech/en_24k.wav')), { output: 'int16' }).samples;
const pcm = new Int16Array(24000 + speech.length + 48000 + speech.length + 24000);
pcm.set(speech, 24000);
pcm.set(speech, 24000 + speech.length + 48000);
const seconds = pcm.length / 24000;

/** One stream through `engine`, 80 ms frames as fast as it takes them: wall seconds and worst timer lag, ms. */
async function run(engine: SttEngine): Promise<{ wall: number; lag: number; words: number }> {
  let lag = 0;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    lag = Math.max(lag, now - last - 5);
    last = now;
  }, 5);
  let words = 0;
  const t0 = performance.now();
  const s = await engine.open({ modelName: 'default', inputFormat: 'pcm', jsonConfig: {} }, (e) => {
    if (e.type === 'text') words++;
  });
  for (let i = 0; i + 1920 <= pcm.length; i += 1920) {
    await s.push(pcm.slice(i, i + 1920));
    // As frames arrive from a socket: the loop turns between them.
    await new Promise((r) => setImmediate(r));
  }
  await s.end?.();
  s.close();
  const wall = (performance.now() - t0) / 1000;
  clearInterval(timer);
  return { wall, lag, words };
}

async function main(): Promise<void> {
  const pool = new SherpaPool(resolveSherpaSttModel(make('nemo-ctc')), { workers: 1 });
  await pool.ready;
  const vadFile = join(make('silero-vad'), 'silero_vad.onnx');
  const vad = resolveSherpaVad(vadFile);
  const worker = new SherpaVadWorker(vad);
  const webrtc = createSherpaSttEngine(pool);
  const silero = createSherpaSttEngine(pool, { vad: worker });
  // The same Vad on this thread, to time what the event loop would pay.
  const sherpa = createRequire(import.meta.url)('sherpa-onnx-node') as { Vad: new (c: unknown, s: number) => { acceptWaveform(a: Float32Array): void; flush(): void; isEmpty(): boolean; pop(): void; reset(): void } };
  const inline = new sherpa.Vad(vad.config, 30);
  const floats = Float32Array.from(pcm, (x) => x / 32768);
  const r: Record<string, number[]> = { webrtcRtf: [], webrtcLag: [], sileroRtf: [], sileroLag: [], inlineMs: [] };
  for (let i = 0; i < rounds + 1; i++) {
    const a = await run(webrtc);
    const b = await run(silero);
    inline.reset();
    const t0 = performance.now();
    // 16 kHz as the engine gives it (every third sample of 24 kHz ≈ the same cost).
    for (let o = 0; o < floats.length; o += 1920) inline.acceptWaveform(floats.subarray(o, o + 1280));
    inline.flush();
    while (!inline.isEmpty()) inline.pop();
    const c = performance.now() - t0;
    if (i === 0) continue; // warm-up
    r.webrtcRtf!.push(seconds / a.wall);
    r.webrtcLag!.push(a.lag);
    r.sileroRtf!.push(seconds / b.wall);
    r.sileroLag!.push(b.lag);
    r.inlineMs!.push(c);
  }
  const med = (a: number[]): number => [...a].sort((x, y) => x - y)[a.length >> 1]!;
  const range = (a: number[], d: number): string => `median ${med(a).toFixed(d)} (min ${Math.min(...a).toFixed(d)}, max ${Math.max(...a).toFixed(d)})`;
  console.log(`offline STT segmentation, tiny models, ${seconds.toFixed(1)} s of audio, ${rounds} interleaved rounds`);
  console.log(`WebRTC VAD: real-time factor ${range(r.webrtcRtf!, 0)}×, worst timer lag ${range(r.webrtcLag!, 1)} ms`);
  console.log(`Silero VAD on its worker: real-time factor ${range(r.sileroRtf!, 0)}×, worst timer lag ${range(r.sileroLag!, 1)} ms`);
  console.log(`the same Silero run on the event loop would hold it: ${range(r.inlineMs!, 1)} ms per ${seconds.toFixed(1)} s of audio`);
  await Promise.all([pool.close(), worker.close()]);
  rmSync(dir, { recursive: true, force: true });
}

await main();
