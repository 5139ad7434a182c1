/**
 * What switching a multilingual Whisper's language per request costs (issue 24): sherpa-onnx-node's
 * `OfflineRecognizer.setConfig` (what a worker of sherpa-pool.ts calls before a segment in another
 * language) against a decode, with the test suite's tiny Whisper (make-models.py whisper). Rounds
 * interleave a decode in the last language, a switch alone and a switch + decode, so a busy
 * machine weighs on all three alike.
 *
 *   npx tsx bench/sherpa-language.ts            # 200 rounds
 *   npx tsx bench/sherpa-language.ts --short    # 30 rounds
 *
 * The tiny model decodes in well under a millisecond; a real Whisper takes 0.1–1 s a segment, so
 * the switch's share there is the switch time over that.
 */
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { resolveSherpaSttModel, sherpaPackagePath } from '../src/engines/sherpa-model.js';

interface Recognizer {
  setConfig(c: unknown): void;
  createStream(): { acceptWaveform(w: { samples: Float32Array; sampleRate: number }): void };
  decodeAsync(s: unknown): Promise<{ text: string }>;
}

const root = fileURLToPath(new URL('..', import.meta.url));
const rounds = process.argv.includes('--short') ? 30 : 200;
const dir = mkdtempSync(join(tmpdir(), 'vw-sherpa-lang-bench-'));

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

async function main(): Promise<void> {
  const folder = join(dir, 'whisper');
  execFileSync('/usr/bin/python3', [join(root, 'test/fixtures/models/make-models.py'), 'whisper', folder]);
  const model = resolveSherpaSttModel(folder);
  const sherpa = createRequire(import.meta.url)(sherpaPackagePath()) as { OfflineRecognizer: { createAsync(c: unknown): Promise<Recognizer> } };
  const rec = await sherpa.OfflineRecognizer.createAsync(model.config);
  const samples = new Float32Array(32000).map((_, i) => 0.1 * Math.sin(i * 0.05));
  const withLanguage = (language: string): unknown => {
    const c = structuredClone(model.config) as { modelConfig: { whisper: { language: string } } };
    c.modelConfig.whisper.language = language;
    return c;
  };
  const decode = async (): Promise<string> => {
    const s = rec.createStream();
    s.acceptWaveform({ samples, sampleRate: 16000 });
    return (await rec.decodeAsync(s)).text;
  };
  const same: number[] = [];
  const switchOnly: number[] = [];
  const switched: number[] = [];
  const languages = model.languages;
  for (let r = 0; r < rounds + 1; r++) {
    const lang = languages[r % languages.length]!;
    let t0 = performance.now();
    await decode();
    const a = performance.now() - t0;
    t0 = performance.now();
    rec.setConfig(withLanguage(lang));
    const b = performance.now() - t0;
    t0 = performance.now();
    rec.setConfig(withLanguage(languages[(r + 1) % languages.length]!));
    const text = await decode();
    const c = performance.now() - t0;
    if (text.trim() === '') throw new Error('the tiny Whisper transcribed nothing');
    if (r === 0) continue; // warm-up
    same.push(a);
    switchOnly.push(b);
    switched.push(c);
  }
  const f = (ms: number): string => (ms < 1 ? `${(ms * 1000).toFixed(0)} µs` : `${ms.toFixed(1)} ms`);
  console.log(`${rounds} rounds, tiny Whisper, 2 s segment (medians; min – max):`);
  console.log(`  decode, same language:        ${f(median(same))} (${f(Math.min(...same))} – ${f(Math.max(...same))})`);
  console.log(`  setConfig (language switch):  ${f(median(switchOnly))} (${f(Math.min(...switchOnly))} – ${f(Math.max(...switchOnly))})`);
  console.log(`  setConfig + decode:           ${f(median(switched))} (${f(Math.min(...switched))} – ${f(Math.max(...switched))})`);
}

main()
  .catch((e) => {
    console.error(e);
    process.exitCode = 1;
  })
  .finally(() => rmSync(dir, { recursive: true, force: true }));
