/**
 * Issue 23: the system espeak-ng synthesizes off the event loop, so the probes answer at once
 * while a long TTS request is being synthesized.
 */
import { describe, expect, it } from 'vitest';
import { has, needs } from '../helpers/tools.js';
import { startServer } from './harness.js';

describe.skipIf(!has('espeak-ng'))(needs('espeak-ng', 'the system espeak-ng during a long synthesis'), () => {
  it('/healthz answers within 50 ms (median) while a long TTS request is synthesized', { timeout: 120_000 }, async () => {
    const h = await startServer({ tts: 'espeak-system' });
    try {
      // No sentence end: the engine speaks it in pieces of up to 300 characters, each one library call.
      // Long enough that a quiet machine still takes many probes (500 characters took 5: too few to judge).
      const text = 'the quick brown fox jumps over the lazy dog and runs far away '.repeat(48);
      let done = false;
      const tts = fetch(`${h.base}/post/speech/tts`, { method: 'POST', headers: { 'x-api-key': h.apiKey, 'content-type': 'application/json' }, body: JSON.stringify({ text, output_format: 'pcm', only_audio: true }) })
        .then(async (r) => ({ status: r.status, bytes: (await r.arrayBuffer()).byteLength }))
        .finally(() => (done = true));
      const latencies: number[] = [];
      while (!done) {
        const t0 = performance.now();
        const r = await fetch(`${h.base}/healthz`);
        await r.arrayBuffer();
        expect(r.status).toBe(200);
        if (!done) latencies.push(performance.now() - t0);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const result = await tts;
      expect(result.status).toBe(200);
      // Three minutes of speech at 48 kHz s16.
      expect(result.bytes / 96000).toBeGreaterThan(90);
      expect(latencies.length).toBeGreaterThan(5);
      latencies.sort((a, b) => a - b);
      expect(latencies[Math.floor(latencies.length / 2)]!).toBeLessThan(50);
    } finally {
      await h.close();
    }
  });
});
