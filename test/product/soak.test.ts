/**
 * The built server under ordinary mixed traffic, long enough for a leak to show (issue 20): `node
 * dist/cli.js serve` with its default engines (espeak-ng, pocketsphinx), then hundreds of STT
 * requests on both routes, sequential and concurrent, thousands of TTS requests, temporary tokens
 * and voice design. RSS after warm-up may grow by at most {@link GROWTH_BOUND}, and the process
 * must be alive at the end. The watchdog kills the server past {@link WATCHDOG}: before issue 20,
 * each STT request leaked a pocketsphinx decoder (~95 MB) and this test took the server there in
 * a dozen requests.
 *
 * A longer soak lives in bench/soak.ts (its figures in the README).
 */
import { afterAll, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bugLines, pool, rssOf, startBuiltServer, sttMessages, wavHead, wsSession, root, type BuiltServer } from './built-server.js';
import { fetchFresh } from './built-server.js';
import { describeBuilt } from './describe-built.js';

/** Most RSS may grow from after warm-up to the end of the soak, bytes (README "Limits and budgets"). */
const GROWTH_BOUND = 50 << 20;
/** The server is killed past this: the test fails instead of taking the machine. */
const WATCHDOG = 1536 << 20;

const clip = new Uint8Array(wavHead(readFileSync(join(root, 'fixtures/speech/librivox-0880.wav')), 1));

/** One round of mixed traffic, `scale` times the base counts. */
async function traffic(s: BuiltServer, scale: number): Promise<void> {
  const h = { 'x-api-key': s.key };
  const json = { ...h, 'content-type': 'application/json' };
  const sttPost = async (): Promise<void> => {
    const r = await fetchFresh(`${s.base}/post/speech/asr`, { method: 'POST', headers: { ...h, 'content-type': 'audio/wav' }, body: clip });
    const text = await r.text();
    expect(r.status, text).toBe(200);
    expect(text).toContain('"type":"step"');
  };
  const sttWs = async (): Promise<void> => {
    const got = await wsSession(`${s.wsBase}/speech/asr`, h, sttMessages(clip));
    expect(got[0]?.type, JSON.stringify(got[0])).toBe('ready');
    expect(got.at(-1)?.type).toBe('end_of_stream');
  };
  const ttsPost = async (i: number): Promise<void> => {
    const r = await fetchFresh(`${s.base}/post/speech/tts`, { method: 'POST', headers: json, body: JSON.stringify({ text: `Request number ${i} of the soak.`, output_format: i % 3 === 0 ? 'ulaw_8000' : 'wav', only_audio: true }) });
    const body = new Uint8Array(await r.arrayBuffer());
    expect(r.status).toBe(200);
    expect(body.length).toBeGreaterThan(1000);
  };
  const ttsWs = async (i: number): Promise<void> => {
    const got = await wsSession(`${s.wsBase}/speech/tts`, h, [
      { type: 'setup', model_name: 'default', output_format: i % 2 ? 'opus' : 'pcm' },
      { type: 'text', text: 'Hello there,' },
      { type: 'text', text: `this is session ${i}.` },
      { type: 'end_of_stream' },
    ]);
    expect(got.filter((m) => m.type === 'audio').length).toBeGreaterThan(0);
    expect(got.at(-1)?.type).toBe('end_of_stream');
  };
  const tokenTts = async (i: number): Promise<void> => {
    const t = (await (await fetchFresh(`${s.base}/api-keys/token`, { headers: h })).json()) as { token: string };
    const got = await wsSession(`${s.wsBase}/speech/tts?token=${encodeURIComponent(t.token)}`, {}, [
      { type: 'setup', output_format: 'pcm_16000' },
      { type: 'text', text: `Token ${i}.` },
      { type: 'end_of_stream' },
    ]);
    expect(got.at(-1)?.type).toBe('end_of_stream');
  };
  const design = async (i: number): Promise<void> => {
    const g = await fetchFresh(`${s.base}/voice-generator/generate`, { method: 'POST', headers: json, body: JSON.stringify({ prompt: `A calm narrator, take ${i}`, n_samples: 2, language: 'en' }) });
    expect(g.status).toBe(200);
    const { embeddings } = (await g.json()) as { embeddings: Array<{ embedding_id: string }> };
    const kept = await fetchFresh(`${s.base}/voices/from-embedding`, { method: 'POST', headers: json, body: JSON.stringify({ voice_embedding_id: embeddings[0]!.embedding_id, name: `soak ${i}`, description: 'soak' }) });
    expect(kept.status).toBe(200);
    const del = await fetchFresh(`${s.base}/voice-generator/embeddings/${embeddings[1]!.embedding_id}`, { method: 'DELETE', headers: h });
    expect(del.status).toBeLessThan(300);
    expect((await fetchFresh(`${s.base}/voices/?limit=0&include_catalog=1`, { headers: h })).status).toBe(200);
  };
  const n = (k: number) => Math.max(1, Math.round(k * scale));
  for (let i = 0; i < n(20); i++) await sttPost();
  for (let i = 0; i < n(10); i++) await sttWs();
  await Promise.all([
    pool(n(30), 3, sttPost),
    pool(n(20), 2, sttWs),
    pool(n(600), 4, ttsPost),
    pool(n(40), 2, ttsWs),
    pool(n(20), 1, tokenTts),
    pool(n(10), 1, design),
  ]);
}

/** Median RSS of 5 samples 100 ms apart (one sample may catch a transient). */
async function settledRss(pid: number): Promise<number> {
  const xs: number[] = [];
  for (let i = 0; i < 5; i++) {
    await new Promise((r) => setTimeout(r, 100));
    xs.push(rssOf(pid));
  }
  return xs.sort((a, b) => a - b)[2]!;
}

describeBuilt('the built server under mixed traffic', () => {
  // A test that times out never reaches its `finally`: this hook still ends the server, which
  // would otherwise outlive the run (an orphan found after a 600 s timeout on a loaded machine).
  const started: Array<{ s: BuiltServer; dir: string }> = [];
  afterAll(() => {
    for (const { s, dir } of started) {
      if (s.alive()) s.child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
  it('RSS after warm-up stays within the bound over hundreds of STT and thousands of TTS requests; the process lives', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'voicewire-soak-'));
    const s = await startBuiltServer({ dataDir: join(dir, 'data'), maxRssBytes: WATCHDOG });
    started.push({ s, dir });
    try {
      // The warm-up is a whole round: every engine, pool and allocator arena reaches the high-water
      // mark of this traffic's concurrency (5 STT decoders at once), so what grows after it is kept.
      // A failed request names its cause and shows what the server logged (warnings and up).
      const round = (scale: number) =>
        traffic(s, scale).catch((err: unknown) => {
          throw new Error(`${String(err)} (cause: ${String((err as { cause?: unknown }).cause)}); server said:\n${s.output().slice(-3000)}`);
        });
      // The decoders' high-water mark first: as many concurrent STT requests as one key may hold
      // (sttDecodersPerKey, 8). Freed decoder memory stays in the allocator, so a later peak of
      // concurrency (a loaded machine overlaps more requests) read as +100 MB of "growth".
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          const r = await fetchFresh(`${s.base}/post/speech/asr`, { method: 'POST', headers: { 'x-api-key': s.key, 'content-type': 'audio/wav' }, body: clip });
          expect(r.status, await r.text()).toBe(200);
        }),
      );
      await round(1);
      const warm = await settledRss(s.child.pid!);
      const t0 = Date.now();
      await round(0.75);
      await round(0.75);
      const end = await settledRss(s.child.pid!);
      const mb = (b: number) => (b / 2 ** 20).toFixed(0);
      console.log(`soak: RSS ${mb(warm)} MB after warm-up → ${mb(end)} MB after 2 rounds (${((Date.now() - t0) / 1000).toFixed(0)} s), peak ${mb(s.peakRss())} MB`);
      expect(s.killedForMemory()).toBeUndefined();
      expect(s.alive(), s.output()).toBe(true);
      expect(end - warm, `RSS grew ${mb(end - warm)} MB (${mb(warm)} → ${mb(end)} MB)`).toBeLessThan(GROWTH_BOUND);
      // Ordinary traffic never reaches a last resort, an unhandled rejection or an uncaught exception.
      expect(bugLines(s.output()), 'the server logged a last resort, an unhandled rejection or an uncaught exception').toEqual([]);
      expect(await s.stop()).toBe(0);
    } finally {
      if (s.alive()) s.child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 600_000);
});
