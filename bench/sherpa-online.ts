/**
 * When the first word comes (issue 24): a streaming model (make-models.py nemo-ctc-online) against
 * an offline one (nemo-ctc, VAD-segmented), through one in-process server, over the STT WebSocket,
 * with the audio sent in real time (an 80 ms frame every 80 ms: 2.3 s of speech, then silence).
 * Rounds interleave the two, so a busy machine weighs on both alike. Figures: ms from the first
 * frame sent to the first `text`, median and worst of the rounds.
 *
 *   npx tsx bench/sherpa-online.ts            # 10 rounds
 *   npx tsx bench/sherpa-online.ts --short    # 3 rounds
 *
 * The tiny models decode in microseconds, so this measures the path (pinning, partial results,
 * word stability against VAD segmentation), not a real model's compute.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeWav } from '../src/audio/wav.js';
import { registerSttEngine, sherpaSttEntry } from '../src/engines/registry.js';
import { connect, startServer } from '../test/server/harness.js';
import { ModelFolders } from '../test/helpers/sherpa-models.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const rounds = process.argv.includes('--short') ? 3 : 10;
const FRAME = 1920;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

async function firstWordMs(wsBase: string, apiKey: string, clip: Int16Array): Promise<number> {
  const c = connect(`${wsBase}/speech/asr`, { 'x-api-key': apiKey });
  await c.opened;
  c.send({ type: 'setup', input_format: 'pcm_24000' });
  await c.waitFor((m) => m['type'] === 'ready');
  let at = -1;
  const t0 = performance.now();
  void c.waitFor((m) => m['type'] === 'text').then(() => (at = performance.now() - t0), () => undefined);
  for (let o = 0; o < clip.length && at < 0; o += FRAME) {
    const f = clip.subarray(o, Math.min(clip.length, o + FRAME));
    c.send({ type: 'audio', audio: Buffer.from(f.buffer, f.byteOffset, f.byteLength).toString('base64') });
    // Real time: frame n leaves at n × 80 ms.
    await sleep(Math.max(0, t0 + ((o / FRAME) + 1) * 80 - performance.now()));
  }
  c.send({ type: 'end_of_stream' });
  await c.closed;
  return at;
}

async function main(): Promise<void> {
  const folders = new ModelFolders();
  const speech = decodeWav(readFileSync(join(root, 'fixtures/speech/en_24k.wav')), { output: 'int16', mono: true }).samples;
  const clip = new Int16Array(speech.length + 24000 * 2);
  clip.set(speech);
  const online = await sherpaSttEntry(folders.make('nemo-ctc-online'));
  const offline = await sherpaSttEntry(folders.make('nemo-ctc'));
  registerSttEngine('bench-online', online);
  registerSttEngine('bench-offline', offline);
  const hOn = await startServer({ stt: 'bench-online', limits: { sherpaWorkers: 1 } });
  const hOff = await startServer({ stt: 'bench-offline', limits: { sherpaWorkers: 1 } });
  const times: Record<string, number[]> = { online: [], offline: [] };
  try {
    for (let r = 0; r < rounds; r++) {
      times['online']!.push(await firstWordMs(hOn.wsBase, hOn.apiKey, clip));
      times['offline']!.push(await firstWordMs(hOff.wsBase, hOff.apiKey, clip));
    }
  } finally {
    await Promise.all([hOn.close(), hOff.close()]);
    await Promise.all([online.close?.(), offline.close?.()]);
    folders.cleanup();
  }
  console.log(`first word after the first frame, real-time audio (${(speech.length / 24000).toFixed(2)} s of speech, then silence), ${rounds} rounds:`);
  for (const [k, xs] of Object.entries(times)) console.log(`  ${k.padEnd(8)} median ${median(xs).toFixed(0)} ms, worst ${Math.max(...xs).toFixed(0)} ms`);
}

void main();
