/**
 * NDJSON decode of 100k STT `step` lines (service-api.md §4.4: vad with three horizons, step_idx,
 * step_duration_s, total_duration_s) fed in random chunks of 1 B to 64 KB, beside split2 +
 * JSON.parse in a Node stream pipeline (the usual Node way). The stream cases are asynchronous,
 * so they are timed here (interleaved runs, median of per-round ratios) rather than by runGroup; the synchronous
 * core runs in the same loop for a like-for-like ratio.
 */
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import split2 from 'split2';
import { createNdjsonDecoder, createNdjsonDecoderStream } from '../src/text/ndjson.js';
import { createNdjsonDecoderTransform } from '../src/node/ndjson.js';
import { median, now, printGroup, quantile, save, type GroupResult } from './util.js';

const LINES = 100_000;
const text =
  Array.from({ length: LINES }, (_, i) =>
    JSON.stringify({
      type: 'step',
      vad: [
        { horizon_s: 0.5, inactivity_prob: ((i * 7919) % 1000) / 1000 },
        { horizon_s: 1.0, inactivity_prob: ((i * 104729) % 1000) / 1000 },
        { horizon_s: 2.0, inactivity_prob: ((i * 1299709) % 1000) / 1000 },
      ],
      step_idx: i,
      step_duration_s: 0.08,
      total_duration_s: Math.round((i + 1) * 8) / 100,
    }),
  ).join('\n') + '\n';
const bytes = Buffer.from(text, 'utf8');

// Random chunk sizes, log-uniform from 1 B to 64 KB, from a fixed seed (mulberry32).
let seed = 0x5eed;
function random(): number {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const chunks: Buffer[] = [];
for (let at = 0; at < bytes.length; ) {
  const size = Math.max(1, Math.round(Math.exp(random() * Math.log(65536))));
  chunks.push(bytes.subarray(at, at + size));
  at += size;
}

let count = 0;
const sinkStream = () =>
  new Writable({
    objectMode: true,
    highWaterMark: 1024,
    write(_v, _e, cb) {
      count++;
      cb();
    },
  });

const cases: { name: string; run: () => Promise<void> | void }[] = [
  {
    name: 'voicewire createNdjsonDecoder (push)',
    run: () => {
      const d = createNdjsonDecoder();
      for (const c of chunks) count += d.push(c).length;
      count += d.flush().length;
    },
  },
  { name: 'voicewire Node Transform pipeline', run: () => pipeline(Readable.from(chunks), createNdjsonDecoderTransform(), sinkStream()) },
  { name: 'split2 + JSON.parse pipeline', run: () => pipeline(Readable.from(chunks), split2(JSON.parse), sinkStream()) },
  {
    name: 'voicewire web TransformStream',
    run: () =>
      new ReadableStream<Uint8Array>({
        start(c) {
          for (const ch of chunks) c.enqueue(ch);
          c.close();
        },
      })
        .pipeThrough(createNdjsonDecoderStream())
        .pipeTo(new WritableStream({ write: () => void count++ })),
  },
];

async function main(): Promise<void> {
  // Interleaved rounds (rotating order), two warm-up rounds; figures are medians of per-round
  // ratios with their p10-p90 (bench/util.ts explains why).
  const runs = Number(process.env.BENCH_RUNS ?? 15);
  const times = cases.map(() => [] as number[]);
  for (let r = 0; r < runs + 2; r++) {
    for (let j = 0; j < cases.length; j++) {
      const k = (j + r) % cases.length;
      count = 0;
      const t0 = now();
      await cases[k]!.run();
      const dt = now() - t0;
      if (count !== LINES) throw new Error(`${cases[k]!.name} decoded ${count} lines`);
      if (r >= 2) times[k]!.push(dt);
    }
  }
  const ref = times[0]!;
  const group: GroupResult = {
    group: `ndjson: ${LINES / 1000}k step lines (${(bytes.length / 1e6).toFixed(1)} MB) in ${chunks.length} random chunks`,
    rounds: runs,
    results: cases.map((c, k) => {
      const t = times[k]!;
      const m = median(t);
      const faster = t.map((x, r) => ref[r]! / x);
      const slower = t.map((x, r) => x / ref[r]!);
      return {
        name: c.name,
        hz: 1000 / m,
        rme: ((quantile(t, 0.9) - quantile(t, 0.1)) / 2 / m) * 100,
        meanUs: (t.reduce((a, b) => a + b, 0) / t.length) * 1000,
        medianUs: m * 1000,
        ratio: median(faster),
        ratioP10: quantile(faster, 0.1),
        ratioP90: quantile(faster, 0.9),
        refSpeedup: median(slower),
        refSpeedupP10: quantile(slower, 0.1),
        refSpeedupP90: quantile(slower, 0.9),
      };
    }),
  };
  printGroup(group);
  for (const r of group.results) console.log(`  ${r.name.padEnd(38)} ${((LINES / r.medianUs) * 1e6 / 1e6).toFixed(2)} M lines/s, ${(bytes.length / r.medianUs).toFixed(0)} MB/s`);
  save('ndjson', [group]);
}

await main();
