/**
 * The sherpa-onnx worker pool (issue 24): jobs run on worker threads, at most one per worker, in
 * order; the queue is bounded (ENGINE_BUSY past it); a job whose request has gone never runs; the
 * event loop stays free while the workers work.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { resolveSherpaTtsModel, resolveSherpaSttModel } from '../../src/engines/sherpa-model.js';
import { SherpaPool, defaultSherpaWorkers } from '../../src/engines/sherpa-pool.js';
import { ModelFolders } from '../helpers/sherpa-models.js';

const folders = new ModelFolders();
afterAll(() => folders.cleanup());

const SENTENCE = 'This sentence is about as long as the ones people send, twelve words.';

describe('SherpaPool', () => {
  it('defaults to the cores, from 1 to 3', () => {
    expect([1, 2, 3, 4, 64].map((c) => defaultSherpaWorkers(c))).toEqual([1, 2, 3, 3, 3]);
  });

  it('runs two jobs at once on two workers, queues the rest up to its bound, refuses one more with ENGINE_BUSY', async () => {
    const pool = new SherpaPool(resolveSherpaTtsModel(folders.make('piper', { loops: 1000 })), { workers: 2, maxQueued: 2 });
    try {
      await pool.ready;
      let maxRunning = 0;
      const watch = setInterval(() => (maxRunning = Math.max(maxRunning, pool.load.running)), 5);
      const jobs = Array.from({ length: 4 }, () => pool.run({ op: 'tts', text: SENTENCE, sid: 0, speed: 1 }));
      expect(pool.load).toEqual({ queued: 2, running: 2, workers: 2 });
      await expect(pool.run({ op: 'tts', text: SENTENCE, sid: 0, speed: 1 })).rejects.toMatchObject({ code: 'ENGINE_BUSY', message: expect.stringContaining('limits.sherpaQueue') });
      const results = await Promise.all(jobs);
      clearInterval(watch);
      expect(maxRunning).toBe(2);
      // The same text and speaker give the same samples on every worker.
      for (const r of results) expect(Buffer.from(r.samples.buffer).equals(Buffer.from(results[0]!.samples.buffer))).toBe(true);
      expect(results[0]!.sampleRate).toBe(22050);
      expect(pool.load).toEqual({ queued: 0, running: 0, workers: 2 });
    } finally {
      await pool.close();
    }
  }, 180_000);

  it('drops a queued job whose request has gone, and keeps the event loop free while the workers work', async () => {
    const pool = new SherpaPool(resolveSherpaTtsModel(folders.make('piper', { loops: 2000 })), { workers: 1, maxQueued: 8 });
    try {
      await pool.ready;
      let gone = false;
      const first = pool.run({ op: 'tts', text: `${SENTENCE} ${SENTENCE}`, sid: 0, speed: 1 });
      const dropped = pool.run({ op: 'tts', text: SENTENCE, sid: 0, speed: 1 }, () => gone);
      gone = true;
      // Timer lag on this thread while a worker synthesizes.
      const lags: number[] = [];
      let last = performance.now();
      const timer = setInterval(() => {
        const now = performance.now();
        lags.push(now - last - 10);
        last = now;
      }, 10);
      const t0 = performance.now();
      await first;
      const busyMs = performance.now() - t0;
      clearInterval(timer);
      await expect(dropped).rejects.toMatchObject({ code: 'INVALID_STATE' });
      expect(busyMs).toBeGreaterThan(100);
      lags.sort((a, b) => a - b);
      expect(lags[Math.floor(lags.length / 2)]!).toBeLessThan(50);
    } finally {
      await pool.close();
    }
  }, 180_000);

  it('decodes STT segments on workers; a closed pool refuses jobs', async () => {
    const pool = new SherpaPool(resolveSherpaSttModel(folders.make('nemo-ctc')), { workers: 1 });
    const samples = new Float32Array(16000).map((_, i) => 0.3 * Math.sin(i / 5) * Math.sin(i / 700));
    const r = await pool.run({ op: 'stt', samples, sampleRate: 16000 });
    expect(r.tokens.length).toBe(r.timestamps.length);
    expect(r.text.length).toBeGreaterThan(0);
    await pool.close();
    await expect(pool.run({ op: 'stt', samples: new Float32Array(160), sampleRate: 16000 })).rejects.toMatchObject({ code: 'INVALID_STATE' });
  }, 180_000);
});
