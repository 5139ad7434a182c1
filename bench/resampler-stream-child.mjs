/**
 * voicewire's side of bench/soxr.bench.ts, in its own process: one continuous stream of
 * 80 ms chunks through `createResampler` (no flush), pushing into a preallocated output, timed by
 * this process's CPU time (`process.cpuUsage`: every thread, JIT and GC included) around the
 * measured stretch only. Plain JavaScript, run by plain `node`, so that the built package entry
 * is loaded exactly as a user's `import 'voicewire'` loads it (no loader hooks).
 *
 * Usage: node resampler-stream-child.mjs MODULE FROM TO INPUT.f32 WARM_S MEASURE_S [QUALITY]
 *   MODULE: `voicewire` (the package's own entry, resolved through package.json "exports": on
 *   Node, the `node` condition, dist/index-node.js), or a path/URL to any module exporting
 *   `createResampler` (another build; src/audio/resampler.ts when run with `--import tsx`).
 * Prints one JSON line.
 */
import { readFileSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { pathToFileURL } from 'node:url';

const [spec, fromS, toS, file, warmS, measureS, quality = 'high'] = process.argv.slice(2);
const from = Number(fromS);
const to = Number(toS);
const mod = await import(isAbsolute(spec) ? pathToFileURL(spec).href : spec);
const bytes = readFileSync(file);
const input = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 2);
const chunk = Math.round(from * 0.08);
const r = mod.createResampler({ from, to, quality });
const out = new Float32Array(r.maxOutputLength(chunk));
let at = 0;
let produced = 0;

/** Streams `seconds` of audio (whole 80 ms chunks, looping the input), as the C harness does. */
function stream(seconds) {
  const chunks = Math.round((seconds * from) / chunk);
  for (let c = 0; c < chunks; c++) {
    if (at + chunk > input.length) at = 0;
    produced += r.push(input.subarray(at, at + chunk), out).length;
    at += chunk;
  }
}

const w0 = process.cpuUsage();
stream(Number(warmS));
const w = process.cpuUsage(w0);
const before = produced;
const u0 = process.cpuUsage();
stream(Number(measureS));
const u = process.cpuUsage(u0);
const backend = typeof mod.resamplerBackend === 'function' ? mod.resamplerBackend() : 'unknown';
console.log(JSON.stringify({ cpuMs: (u.user + u.system) / 1000, warmCpuMs: (w.user + w.system) / 1000, audioS: Number(measureS), outSamples: produced - before, engine: backend }));
