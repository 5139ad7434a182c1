import { beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { closeEspeakThread, ESPEAK_WASM_QUEUE, espeakAvailable, loadDeterministicEspeak, loadEspeak, type EspeakAsyncWorker, type EspeakWorker } from '../../src/engines/espeak-module.js';
import { createEspeakTtsEngine } from '../../src/engines/espeak-tts.js';
import { VoicewireError } from '../../src/util/errors.js';
import { speak, testContext, voiceOf } from './espeak-helpers.js';

/** ~2,000 characters in one sentence (commas only): one synthesis call of about two minutes of speech. */
const LONG = Array.from({ length: 64 }, (_, i) => `the number ${i + 1} goes by quickly`).join(', ') + '.';
const ONE_CALL = { maxChunkChars: 4000 };

/** Lets the interval run once more, so a gap that ends now is measured. */
const tick = (): Promise<void> => new Promise((r) => setTimeout(r, 30));

/** Wraps a worker: counts the audio chunks its syntheses deliver. */
function counting(worker: EspeakWorker): { worker: EspeakWorker; chunks: () => number } {
  let n = 0;
  const w = Object.create(worker, {
    synthesize: { value: (t: string, cb: (s: Int16Array, e: never[]) => boolean) => worker.synthesize(t, (s, e) => (s.length > 0 && n++, cb(s, e as never[]))) },
  }) as EspeakWorker;
  return { worker: w, chunks: () => n };
}

describe('espeak-ng WebAssembly on a worker thread', () => {
  beforeAll(async () => {
    expect(await espeakAvailable()).toBeUndefined();
    expect(LONG.length).toBeGreaterThan(1900);
  }, 30000);

  it('the event loop keeps ticking during a long synthesis (a 10 ms interval never waits 250 ms)', async () => {
    let last = performance.now();
    let maxGap = 0;
    const timer = setInterval(() => {
      const now = performance.now();
      maxGap = Math.max(maxGap, now - last);
      last = now;
    }, 10);
    const gaps: number[] = [];
    try {
      // Through the engine, as a server speaks it (sentence pieces of at most 300 characters).
      const r = await speak([LONG], { voiceId: voiceOf('en') });
      expect(r.pcm.length / 48000).toBeGreaterThan(60);
      await tick();
      gaps.push(maxGap);
      // One call of 6,000 characters, about seven minutes of speech: on the main thread it held
      // the loop for over a second even on a quiet machine.
      maxGap = 0;
      last = performance.now();
      let samples = 0;
      await (await loadEspeak()).synthesize(`${LONG} ${LONG} ${LONG}`, (s) => ((samples += s.length), false));
      expect(samples / 22050).toBeGreaterThan(180);
      await tick();
      gaps.push(maxGap);
    } finally {
      clearInterval(timer);
    }
    console.log(`espeak-thread: max timer gap ${gaps.map((g) => g.toFixed(0)).join(' ms (engine), ')} ms (one call)`);
    // On the main thread a 300-character piece held the loop for ~1 s on a loaded machine. The
    // engine's own work between pieces (resampling, word timing) still runs on the loop: a loose bound.
    expect(gaps[0]).toBeLessThan(800);
    expect(gaps[1]).toBeLessThan(250);
  }, 120000);

  it('temp 0 stays byte-identical across two runs, with another synthesis between them', async () => {
    const text = 'Seven silver swans swam silently, and the shore was quiet.';
    const a = await speak([text], { voiceId: voiceOf('en'), jsonConfig: { temp: 0 } });
    await speak(['Something else entirely, to move the state on.'], { voiceId: voiceOf('fr'), jsonConfig: { temp: 0 } });
    await speak([text], { voiceId: voiceOf('de'), jsonConfig: { temp: 1 } });
    const b = await speak([text], { voiceId: voiceOf('en'), jsonConfig: { temp: 0 } });
    expect(a.pcm.length).toBeGreaterThan(48000);
    expect(Buffer.from(b.pcm.buffer, b.pcm.byteOffset, b.pcm.byteLength).equals(Buffer.from(a.pcm.buffer, a.pcm.byteOffset, a.pcm.byteLength))).toBe(true);
  }, 60000);

  it('closing a stream stops a long synthesis early', async () => {
    const full = counting(await loadEspeak());
    await speak([LONG], { voiceId: voiceOf('en') }, testContext(), { ...ONE_CALL, worker: full.worker });
    const all = full.chunks();
    expect(all).toBeGreaterThan(20);

    const cut = counting(await loadEspeak());
    let closeAt = -1;
    const stream = await createEspeakTtsEngine(testContext(), { ...ONE_CALL, worker: cut.worker }).open({ modelName: 'default', outputFormat: 'pcm', jsonConfig: {}, voiceId: voiceOf('en') }, () => undefined);
    const done = (async () => (await stream.text(LONG), await stream.end()))();
    // Close once the first chunks have come back: the synthesis must stop within a few more.
    while (cut.chunks() < 2) await new Promise((r) => setTimeout(r, 5));
    stream.close();
    closeAt = cut.chunks();
    await done;
    // Let any chunk already posted arrive.
    await new Promise((r) => setTimeout(r, 200));
    expect(closeAt).toBeGreaterThan(0);
    expect(cut.chunks()).toBeLessThan(all / 2);
  }, 120000);

  it(`${ESPEAK_WASM_QUEUE} syntheses wait at most, both instances together; one more is ENGINE_BUSY, and the queue drains`, async () => {
    const plain = (await loadEspeak()) as EspeakAsyncWorker;
    const det = await loadDeterministicEspeak();
    const jobs: Promise<unknown>[] = [];
    // The first runs; the others belong to closed streams (skipped when their turn comes).
    jobs.push(plain.synthesize('A short sentence to keep the thread busy.', () => false));
    for (let i = 1; i < ESPEAK_WASM_QUEUE; i++) jobs.push((i % 2 ? det : plain).synthesize('skipped', () => true));
    expect(plain.queued).toBe(ESPEAK_WASM_QUEUE);
    const refused = await det.synthesize('one more', () => false).then(() => undefined, (e: unknown) => e);
    expect(refused).toBeInstanceOf(VoicewireError);
    expect((refused as VoicewireError).code).toBe('ENGINE_BUSY');
    await Promise.all(jobs);
    expect(plain.queued).toBe(0);
  }, 60000);

  it('an idle thread does not keep the process alive (node -e, whose --input-type=module the thread must not inherit)', () => {
    const module = fileURLToPath(new URL('../../src/engines/espeak-module.ts', import.meta.url));
    const script = `import { loadEspeak, loadDeterministicEspeak } from ${JSON.stringify(module)};
      const w = await loadEspeak(); const d = await loadDeterministicEspeak();
      await w.synthesize('Hi.', () => false); await d.synthesize('Hi.', () => false);
      console.log('spoke at', w.get_samplerate());`;
    // A thread kept referenced would hold the process until the timeout: the call would throw.
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { timeout: 60_000, encoding: 'utf8' });
    expect(out.trim()).toBe('spoke at 22050');
  }, 90000);

  it('a stopped thread fails its running job with a VoicewireError, and the next load makes a new thread', async () => {
    const w = await loadEspeak();
    const job = Promise.resolve(w.synthesize(LONG, () => false));
    const failure = job.then(() => undefined, (e: unknown) => e);
    await closeEspeakThread();
    expect(await failure).toBeInstanceOf(VoicewireError);
    const again = await loadEspeak();
    expect(again).not.toBe(w);
    let samples = 0;
    await again.synthesize('Hello again.', (s) => ((samples += s.length), false));
    expect(samples).toBeGreaterThan(1000);
  }, 60000);
});
