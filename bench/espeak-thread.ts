/**
 * The WebAssembly espeak-ng on its worker thread against the same module on the main thread (how
 * it ran before): wall time of one synthesis (short sentence and ~2,000 characters), and the longest
 * wait of a 10 ms timer meanwhile. Rounds interleave the two, so a busy machine weighs on both alike.
 *
 *   npx tsx bench/espeak-thread.ts            # 10 rounds
 *   npx tsx bench/espeak-thread.ts --short    # 3 rounds
 */
import { ESPEAK_PACKAGE, loadEspeak, type EspeakWorker } from '../src/engines/espeak-module.js';

const rounds = process.argv.includes('--short') ? 3 : 10;
const SHORT = 'The quick brown fox jumps over the lazy dog near the river.';
const LONG = Array.from({ length: 64 }, (_, i) => `the number ${i + 1} goes by quickly`).join(', ') + '.';

/** The module instantiated in this thread, warmed as the thread warms its own. */
async function mainThreadWorker(): Promise<EspeakWorker> {
  const factory = ((await import(ESPEAK_PACKAGE)) as { default: () => Promise<{ eSpeakNGWorker: new () => EspeakWorker }> }).default;
  const w = new (await factory()).eSpeakNGWorker();
  for (const v of ['en-us', 'fr', 'de', 'es', 'pt-br']) {
    w.set_voice(v);
    void w.synthesize('a.', () => false);
  }
  w.set_voice('en-us');
  return w;
}

async function measure(w: EspeakWorker, text: string): Promise<{ ms: number; gap: number }> {
  let last = performance.now();
  let gap = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    gap = Math.max(gap, now - last);
    last = now;
  }, 10);
  const t0 = performance.now();
  await w.synthesize(text, () => false);
  const ms = performance.now() - t0;
  await new Promise((r) => setTimeout(r, 30));
  clearInterval(timer);
  return { ms, gap };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const threaded = await loadEspeak();
  threaded.set_voice('en-us');
  const local = await mainThreadWorker();
  const r: Record<string, { ms: number[]; gap: number[] }> = {};
  for (let i = 0; i < rounds; i++) {
    for (const [name, w] of [['thread', threaded], ['main', local]] as const) {
      for (const [len, text] of [['short', SHORT], ['long', LONG]] as const) {
        const m = await measure(w, text);
        const k = `${name} ${len}`;
        r[k] ??= { ms: [], gap: [] };
        r[k].ms.push(m.ms);
        r[k].gap.push(m.gap);
      }
    }
  }
  console.log(`espeak-ng WebAssembly, ${rounds} interleaved rounds (median; max timer gap = longest wait of a 10 ms interval)`);
  for (const [k, v] of Object.entries(r)) console.log(`  ${k.padEnd(13)} synthesis ${median(v.ms).toFixed(1).padStart(7)} ms   max timer gap ${median(v.gap).toFixed(0).padStart(5)} ms`);
}

void main();
