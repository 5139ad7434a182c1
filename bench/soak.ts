/**
 * The long soak (issue 20): the built server (`node dist/cli.js serve`, default engines: espeak-ng
 * and pocketsphinx) under ordinary mixed traffic for a long time, its RSS sampled every 30 s. The
 * CI's soak (test/product/soak.test.ts) runs a few minutes; this one runs 30 by default.
 *
 *   npm run build && npx tsx bench/soak.ts [--minutes 30] [--concurrency 2]
 *
 * Traffic, `concurrency` clients in a loop: STT POST and WebSocket of a 1 s LibriVox clip, TTS
 * POST (wav, μ-law) and WebSocket (pcm, opus), a temporary token then TTS with it, voice design.
 * Prints RSS by minute and its growth after the first five minutes (the warm-up); the server is
 * killed past 3 GB (a leak stops the bench, not the machine).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rssOf, root, startBuiltServer, sttMessages, wavHead, wsSession, type BuiltServer } from '../test/product/built-server.js';
import { fetchFresh } from '../test/product/built-server.js';

function flag(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i < 0 ? fallback : Number(process.argv[i + 1]);
  if (!(v > 0)) throw new Error(`--${name} takes a positive number`);
  return v;
}
const minutes = flag('minutes', 30);
const concurrency = flag('concurrency', 2);
const clip = new Uint8Array(wavHead(readFileSync(join(root, 'fixtures/speech/librivox-0880.wav')), 1));

async function one(s: BuiltServer, i: number): Promise<void> {
  const h = { 'x-api-key': s.key };
  const json = { ...h, 'content-type': 'application/json' };
  const check = async (r: Response): Promise<void> => {
    await r.arrayBuffer();
    if (r.status >= 300) throw new Error(`${r.url}: ${r.status}`);
  };
  switch (i % 8) {
    case 0:
      return check(await fetchFresh(`${s.base}/post/speech/asr`, { method: 'POST', headers: { ...h, 'content-type': 'audio/wav' }, body: clip }));
    case 1: {
      const got = await wsSession(`${s.wsBase}/speech/asr`, h, sttMessages(clip));
      if (got.at(-1)?.type !== 'end_of_stream') throw new Error(`STT WebSocket ended with ${JSON.stringify(got.at(-1))}`);
      return;
    }
    case 2:
    case 3:
      return check(await fetchFresh(`${s.base}/post/speech/tts`, { method: 'POST', headers: json, body: JSON.stringify({ text: `Soak request ${i}, spoken.`, output_format: i % 2 ? 'wav' : 'ulaw_8000', only_audio: true }) }));
    case 4:
    case 5: {
      const got = await wsSession(`${s.wsBase}/speech/tts`, h, [{ type: 'setup', output_format: i % 2 ? 'opus' : 'pcm' }, { type: 'text', text: 'Hello there,' }, { type: 'text', text: `this is ${i}.` }, { type: 'end_of_stream' }]);
      if (got.at(-1)?.type !== 'end_of_stream') throw new Error(`TTS WebSocket ended with ${JSON.stringify(got.at(-1))}`);
      return;
    }
    case 6: {
      const t = (await (await fetchFresh(`${s.base}/api-keys/token`, { headers: h })).json()) as { token: string };
      await wsSession(`${s.wsBase}/speech/tts?token=${encodeURIComponent(t.token)}`, {}, [{ type: 'setup', output_format: 'pcm_16000' }, { type: 'text', text: `Token ${i}.` }, { type: 'end_of_stream' }]);
      return;
    }
    default: {
      const g = await fetchFresh(`${s.base}/voice-generator/generate`, { method: 'POST', headers: json, body: JSON.stringify({ prompt: `A calm narrator ${i}`, n_samples: 2, language: 'en' }) });
      const { embeddings } = (await g.json()) as { embeddings: Array<{ embedding_id: string }> };
      await check(await fetchFresh(`${s.base}/voices/from-embedding`, { method: 'POST', headers: json, body: JSON.stringify({ voice_embedding_id: embeddings[0]!.embedding_id, name: `soak ${i}`, description: 'soak' }) }));
      return check(await fetchFresh(`${s.base}/voice-generator/embeddings/${embeddings[1]!.embedding_id}`, { method: 'DELETE', headers: h }));
    }
  }
}

const dir = mkdtempSync(join(tmpdir(), 'voicewire-soak-'));
const s = await startBuiltServer({ dataDir: join(dir, 'data'), maxRssBytes: 3 * 2 ** 30 });
const stop = async (): Promise<void> => {
  await s.stop();
  rmSync(dir, { recursive: true, force: true });
};
process.once('SIGINT', () => void stop().then(() => process.exit(130)));
const t0 = Date.now();
const end = t0 + minutes * 60_000;
let requests = 0;
let failures = 0;
const samples: Array<{ min: number; rss: number; requests: number }> = [];
const sampler = setInterval(() => samples.push({ min: (Date.now() - t0) / 60_000, rss: rssOf(s.child.pid!), requests }), 30_000);
let next = 0;
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (Date.now() < end && s.alive()) {
      try {
        await one(s, next++);
      } catch (err) {
        failures++;
        if (failures <= 5) console.error(`request failed: ${(err as Error).message}`);
      }
      requests++;
    }
  }),
);
clearInterval(sampler);
samples.push({ min: (Date.now() - t0) / 60_000, rss: rssOf(s.child.pid!), requests });
const mb = (b: number) => (b / 2 ** 20).toFixed(0);
console.log('| minute | RSS MB | requests |\n|---|---|---|');
for (const x of samples.filter((_, i) => i % 4 === 3 || i === samples.length - 1)) console.log(`| ${x.min.toFixed(1)} | ${mb(x.rss)} | ${x.requests} |`);
const warm = samples.find((x) => x.min >= Math.min(5, minutes / 3)) ?? samples[0]!;
const last = samples.at(-1)!;
console.log(`\n${requests} requests in ${minutes} min (${failures} failed), concurrency ${concurrency}; RSS ${mb(warm.rss)} MB after warm-up → ${mb(last.rss)} MB at the end (${last.rss - warm.rss >= 0 ? '+' : ''}${mb(last.rss - warm.rss)} MB), peak ${mb(s.peakRss())} MB${s.killedForMemory() ? `; ${s.killedForMemory()}` : ''}; alive: ${s.alive()}`);
await stop();
process.exit(s.killedForMemory() || failures > requests / 100 ? 1 : 0);
