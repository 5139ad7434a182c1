/**
 * The sherpa-onnx STT engines under speech that never pauses (issue 31 §4, as pocketsphinx's
 * long-utterance.test.ts): the offline engine cuts a segment at `maxSegmentSeconds` (so a segment's
 * audio and its decode stay bounded), and a client that sends audio faster than the model decodes
 * it is slowed: at most two closed segments wait for the pool beside the one decoding, instead of
 * every segment of the stream piling up in memory (each 20 s segment is 1.28 MB of float audio).
 * The pool here records its jobs and takes 100 ms for each (no model is run). The streaming
 * engine's segments end at sherpa-onnx's endpoint rule 3 (20 s of speech), after which the worker
 * resets the stream: checked with the tiny streaming model of make-models.py (energy-driven: loud
 * audio makes words).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { resolveSherpaSttModel } from '../../src/engines/sherpa-model.js';
import { SherpaOnlinePool, type OnlineResult } from '../../src/engines/sherpa-online.js';
import { SherpaPool, type SttJob } from '../../src/engines/sherpa-pool.js';
import { createSherpaSttEngine } from '../../src/engines/sherpa-stt.js';
import { createSherpaOnlineSttEngine } from '../../src/engines/sherpa-stt-online.js';
import { ModelFolders } from '../helpers/sherpa-models.js';
import { seededBytes } from '../helpers/seeded.js';

const folders = new ModelFolders();
afterAll(() => folders.cleanup());

const FRAME = 1920; // 80 ms at 24 kHz

/** A pool whose jobs take `ms` each, one at a time, recorded. */
function slowPool(ms: number): { pool: SherpaPool; jobs: SttJob[]; done: () => number } {
  const jobs: SttJob[] = [];
  let done = 0;
  const pool = Object.create(SherpaPool.prototype) as SherpaPool;
  Object.defineProperty(pool, 'model', { value: { name: 'recording', languages: ['en'] } });
  pool.run = (async (job: SttJob) => {
    jobs.push(job);
    await new Promise((r) => setTimeout(r, ms));
    done++;
    return { text: 'word', tokens: [], timestamps: [] };
  }) as unknown as SherpaPool['run'];
  return { pool, jobs, done: () => done };
}

/** `seconds` of loud seeded noise at 24 kHz: the WebRTC VAD hears speech throughout, never a pause. */
function noise(seconds: number): Int16Array {
  const bytes = seededBytes(seconds * 24000 * 2, 3);
  const pcm = new Int16Array(bytes.buffer);
  for (let i = 0; i < pcm.length; i++) pcm[i] = pcm[i]! >> 2;
  return pcm;
}

describe('sherpa-onnx offline STT: speech that never pauses', () => {
  it('segments are cut at maxSegmentSeconds, and a fast sender waits once two segments wait for the pool', async () => {
    const { pool, jobs, done } = slowPool(100);
    const SEGMENT = 1;
    const engine = createSherpaSttEngine(pool, { maxSegmentSeconds: SEGMENT });
    const texts: number[] = [];
    const s = await engine.open({ modelName: 'default', inputFormat: 'pcm', jsonConfig: {} }, (e) => {
      if (e.type === 'text') texts.push(e.start_s);
    });
    const audio = noise(20);
    let maxBehind = 0;
    for (let i = 0; (i + 1) * FRAME <= audio.length; i++) {
      await s.push(audio.subarray(i * FRAME, (i + 1) * FRAME));
      // Segments closed so far (one per SEGMENT seconds of audio) less those decoded.
      const closed = Math.floor(((i + 1) * FRAME) / 24000 / SEGMENT);
      maxBehind = Math.max(maxBehind, closed - done());
    }
    await s.end?.();
    s.close();
    // Speech throughout: cut every second, never longer.
    expect(jobs.length).toBeGreaterThanOrEqual(19);
    for (const j of jobs) expect(j.samples.length).toBeLessThanOrEqual(SEGMENT * 16000 + 1280);
    // Before: push never waited, and all 20 segments waited at once (1.28 MB each at 20 s).
    expect(maxBehind).toBeLessThanOrEqual(4);
    expect(texts.length).toBe(jobs.length);
  });
});

describe('sherpa-onnx streaming STT: speech that never pauses', () => {
  it('a segment ends after 20 s of speech (endpoint rule 3) and the next starts, its words sent once', async () => {
    const pool = new SherpaOnlinePool(resolveSherpaSttModel(folders.make('nemo-ctc-online')), { workers: 1, streamsPerWorker: 1 });
    try {
      await pool.ready;
      const results: OnlineResult[] = [];
      const open = pool.open.bind(pool);
      pool.open = (onResult, onError) => open((r) => (results.push(r), onResult(r)), onError);
      const texts: number[] = [];
      const s = await createSherpaOnlineSttEngine(pool).open({ modelName: 'default', inputFormat: 'pcm', jsonConfig: {} }, (e) => {
        if (e.type === 'text') texts.push(e.start_s);
      });
      const audio = noise(50);
      for (let i = 0; (i + 1) * FRAME <= audio.length; i++) await s.push(audio.subarray(i * FRAME, (i + 1) * FRAME));
      await s.end?.();
      s.close();
      const starts = [...new Set(results.map((r) => r.startTime))];
      // Two endpoints in 50 s of speech, each segment at most 20 s (+ a chunk).
      expect(results.filter((r) => r.endpoint).length).toBeGreaterThanOrEqual(2);
      for (let i = 1; i < starts.length; i++) expect(starts[i]! - starts[i - 1]!).toBeLessThanOrEqual(20.5);
      expect(texts.length).toBeGreaterThan(0);
      for (let i = 1; i < texts.length; i++) expect(texts[i]!).toBeGreaterThanOrEqual(texts[i - 1]!);
    } finally {
      await pool.close();
    }
  }, 180_000);
});
