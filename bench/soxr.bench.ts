/**
 * The resampler against its limit (issue 22): libsoxr, in this process, on the same 80 ms chunks.
 *
 * - libsoxr 0.1.3 (Debian `libsoxr0`, `libsoxr.so.0`) through koffi: `soxr_create` at SOXR_HQ
 *   (20-bit recipe: its single-precision SIMD engine `cr32s`, passband to 0.913×, stopband from
 *   1.0×) and SOXR_VHQ (28-bit, double precision), one thread, float32 in and out; each call
 *   `soxr_process`es the chunks, flushes (`soxr_process(NULL, 0)` until it returns nothing) and
 *   `soxr_clear`s, as voicewire's stream pushes, flushes and resets.
 * - voicewire `'high'` (the default) streaming into a preallocated output, and `'best'`.
 * - speexdsp q5 and q10 in-process through `@echogarden/speex-resampler-wasm` (its SIMD build);
 *   the native `libspeexdsp1` is not installed on the bench machine (issue 22's native figures,
 *   from a C harness, are quoted in docs/benchmarks.md and labelled as such).
 *
 * Per pair: interleaved rounds (bench/util.ts), process CPU time; printed are CPU ms per second
 * of audio for each, and voicewire 'high' / soxr HQ (time over time, median of per-round ratios,
 * p10–p90): below 2 meets issue 22's goal.
 *
 * Run: `npm run bench -- soxr` (about a minute); short: `BENCH_GROUP_S=1 BENCH_ROUNDS=15 npm run bench -- soxr`;
 * some pairs only: `BENCH_PAIRS=48000:24000,44100:24000 npm run bench -- soxr`.
 * Needs libsoxr (`apt-get install libsoxr0`) and koffi; exits 0 with a note when either is missing.
 */
import { createRequire } from 'node:module';
import { createResampler, resamplerBackend, type ResamplerQuality } from '../src/audio/resampler.js';
import { audio, chunked, SPEED_PAIRS } from './resampler-input.js';
import { fmtRatio, machine, runGroup, save, type GroupResult } from './util.js';

// ---------------------------------------------------------------------------------------------
// libsoxr through koffi
// ---------------------------------------------------------------------------------------------

type Fn = (...args: unknown[]) => unknown;

/** soxr.h's recipes. */
const SOXR_HQ = 4; // SOXR_20_BITS
const SOXR_VHQ = 6; // SOXR_28_BITS

interface Soxr {
  qspec: Fn;
  rspec: Fn;
  create: Fn;
  process: Fn;
  clear: Fn;
  del: Fn;
  engine: Fn;
}

function loadSoxr(): Soxr | string {
  try {
    const require = createRequire(import.meta.url);
    const koffi = require('koffi') as { load(p: string): { func(proto: string): Fn }; struct(n: string, d: Record<string, string>): unknown };
    koffi.struct('soxr_quality_spec', { precision: 'double', phase_response: 'double', passband_end: 'double', stopband_begin: 'double', e: 'void *', flags: 'unsigned long' });
    koffi.struct('soxr_runtime_spec', {
      log2_min_dft_size: 'unsigned int', log2_large_dft_size: 'unsigned int', coef_size_kbytes: 'unsigned int', num_threads: 'unsigned int', e: 'void *', flags: 'unsigned long', // prettier-ignore
    });
    const lib = koffi.load('libsoxr.so.0');
    return {
      qspec: lib.func('soxr_quality_spec soxr_quality_spec(unsigned long, unsigned long)'),
      rspec: lib.func('soxr_runtime_spec soxr_runtime_spec(unsigned int)'),
      create: lib.func('void *soxr_create(double, double, unsigned int, _Out_ const char **, void *, const soxr_quality_spec *, const soxr_runtime_spec *)'),
      process: lib.func('const char *soxr_process(void *, const float *, size_t, _Out_ size_t *, _Out_ float *, size_t, _Out_ size_t *)'),
      clear: lib.func('const char *soxr_clear(void *)'),
      del: lib.func('void soxr_delete(void *)'),
      engine: lib.func('const char *soxr_engine(void *)'),
    };
  } catch (err) {
    return `libsoxr not available (apt-get install libsoxr0; npm package koffi): ${err instanceof Error ? err.message : String(err)}`;
  }
}

/** One soxr stream (mono float32), one thread. */
class SoxrStream {
  private readonly s: unknown;
  private readonly out: Float32Array;
  private readonly idone = [0];
  private readonly odone = [0];
  readonly engine: string;
  /** Output samples of the last {@link run}. */
  produced = 0;

  constructor(private readonly lib: Soxr, from: number, to: number, recipe: number, maxChunk: number) {
    const err: (string | null)[] = [null];
    const s = lib.create(from, to, 1, err, null, lib.qspec(recipe, 0), lib.rspec(1));
    if (err[0] !== null || s === null) throw new Error(`soxr_create: ${err[0]}`);
    this.s = s;
    this.engine = lib.engine(s) as string;
    this.out = new Float32Array(Math.ceil((maxChunk * to) / from) + 4096);
  }

  /** Processes every chunk, flushes, clears: one stream start to end. */
  run(chunks: readonly Float32Array[], sink?: (y: Float32Array) => void): void {
    const { lib, s, out, idone, odone } = this;
    this.produced = 0;
    for (const c of chunks) {
      for (let at = 0; at < c.length; ) {
        const e = lib.process(s, at === 0 ? c : c.subarray(at), c.length - at, idone, out, out.length, odone);
        if (e !== null) throw new Error(`soxr_process: ${String(e)}`);
        at += idone[0]!;
        this.produced += odone[0]!;
        if (sink) sink(out.subarray(0, odone[0]!));
      }
    }
    do {
      lib.process(s, null, 0, idone, out, out.length, odone);
      this.produced += odone[0]!;
      if (sink) sink(out.subarray(0, odone[0]!));
    } while (odone[0]! > 0);
    lib.clear(s);
  }

  destroy(): void {
    this.lib.del(this.s);
  }
}

// ---------------------------------------------------------------------------------------------
// speexdsp (wasm SIMD build), as in bench/resampler.bench.ts
// ---------------------------------------------------------------------------------------------

interface SpeexModule {
  HEAPF32: Float32Array;
  HEAPU32: Uint32Array;
  _malloc(n: number): number;
  _free(p: number): void;
  _speex_resampler_init(ch: number, inRate: number, outRate: number, quality: number, err: number): number;
  _speex_resampler_process_float(st: number, ch: number, inp: number, inLen: number, out: number, outLen: number): number;
  _speex_resampler_reset_mem(st: number): number;
  _speex_resampler_destroy(st: number): void;
}

async function loadSpeex(): Promise<SpeexModule | null> {
  try {
    // @ts-expect-error the package ships no types
    const factory = (await import('@echogarden/speex-resampler-wasm/simd')).default as () => Promise<SpeexModule>;
    return await factory();
  } catch {
    return null;
  }
}

function speexRunner(m: SpeexModule, from: number, to: number, quality: number, chunks: readonly Float32Array[]): { fn: () => void; destroy: () => void } {
  const err = m._malloc(4);
  const st = m._speex_resampler_init(1, from, to, quality, err);
  m._free(err);
  const maxIn = Math.max(...chunks.map((c) => c.length));
  const maxOut = Math.ceil((maxIn * to) / from) + 64;
  const inPtr = m._malloc(maxIn * 4);
  const outPtr = m._malloc(maxOut * 4);
  const lenPtr = m._malloc(8);
  const fn = (): void => {
    for (const c of chunks) {
      m.HEAPF32.set(c, inPtr >> 2);
      m.HEAPU32[lenPtr >> 2] = c.length;
      m.HEAPU32[(lenPtr >> 2) + 1] = maxOut;
      m._speex_resampler_process_float(st, 0, inPtr, lenPtr, outPtr, lenPtr + 4);
    }
    m._speex_resampler_reset_mem(st);
  };
  const destroy = (): void => {
    m._speex_resampler_destroy(st);
    for (const p of [inPtr, outPtr, lenPtr]) m._free(p);
  };
  return { fn, destroy };
}

// ---------------------------------------------------------------------------------------------
// The comparison
// ---------------------------------------------------------------------------------------------

const soxr = loadSoxr();
if (typeof soxr === 'string') {
  console.log(`skipped: ${soxr}`);
  process.exit(0);
}
const speex = await loadSpeex();
console.log(`voicewire resampler backend: ${resamplerBackend()}; ${machine()}`);
const seconds = 2;
const groups: GroupResult[] = [];
const summary: { pair: string; cpuMsPerAudioS: Record<string, number>; highOverHq: number; p10: number; p90: number; highOverVhq: number }[] = [];
// BENCH_PAIRS=48000:24000,44100:24000 re-measures only those pairs (default: all six).
const pairs = process.env.BENCH_PAIRS ? process.env.BENCH_PAIRS.split(',').map((p) => p.split(':').map(Number) as [number, number]) : SPEED_PAIRS;
for (const [from, to] of pairs) {
  const x = audio(from, seconds);
  const chunks = chunked(x, from);
  const maxChunk = chunks[0]!.length;
  const hq = new SoxrStream(soxr, from, to, SOXR_HQ, maxChunk);
  const vhq = new SoxrStream(soxr, from, to, SOXR_VHQ, maxChunk);
  const stream = (quality: ResamplerQuality) => {
    const r = createResampler({ from, to, quality });
    const out = new Float32Array(r.maxOutputLength(maxChunk));
    return (): void => {
      for (const c of chunks) r.push(c, out);
      r.flush(out);
    };
  };
  const sp = speex === null ? [] : [5, 10].map((q) => ({ q, ...speexRunner(speex, from, to, q, chunks) }));
  // soxr HQ first: every ratio is per round against it.
  const g = runGroup(
    `${from} -> ${to} Hz, ${seconds} s mono float in 80 ms chunks (soxr engines: HQ ${hq.engine}, VHQ ${vhq.engine})`,
    [
      { name: 'soxr HQ', fn: () => hq.run(chunks) },
      { name: 'voicewire high (default)', fn: stream('high') },
      { name: 'soxr VHQ', fn: () => vhq.run(chunks) },
      { name: 'voicewire best', fn: stream('best') },
      ...sp.map((s) => ({ name: `speexdsp q${s.q} (wasm SIMD)`, fn: s.fn })),
    ],
    seconds,
  );
  groups.push(g);
  const cpu: Record<string, number> = {};
  for (const r of g.results) cpu[r.name] = r.medianUs / 1000 / seconds;
  const high = g.results[1]!;
  const vh = g.results[2]!;
  summary.push({ pair: `${from}->${to}`, cpuMsPerAudioS: cpu, highOverHq: high.refSpeedup, p10: high.refSpeedupP10, p90: high.refSpeedupP90, highOverVhq: high.refSpeedup / vh.refSpeedup });
  console.log(`  voicewire high / soxr HQ (CPU time, median of per-round ratios): ${fmtRatio(high.refSpeedup, high.refSpeedupP10, high.refSpeedupP90)}${high.refSpeedup <= 2 ? '  within 2x' : '  NOT within 2x'}`);
  hq.destroy();
  vhq.destroy();
  for (const s of sp) s.destroy();
}

console.log('\nCPU ms per second of audio (median); voicewire high / soxr HQ and / VHQ');
const names = groups[0]!.results.map((r) => r.name);
console.log(`  ${'pair'.padEnd(14)} ${names.map((n) => n.replace(' (default)', '').replace(' (wasm SIMD)', '').padStart(14)).join(' ')}   high/HQ (p10-p90)       high/VHQ`);
for (const s of summary) {
  console.log(
    `  ${s.pair.padEnd(14)} ${names.map((n) => (s.cpuMsPerAudioS[n]?.toFixed(3) ?? '—').padStart(14)).join(' ')}   ` +
      `${s.highOverHq.toFixed(2)}x (${s.p10.toFixed(2)}-${s.p90.toFixed(2)})${s.highOverHq <= 2 ? ' ok ' : ' >2x'}   ${s.highOverVhq.toFixed(2)}x`,
  );
}
save('soxr', { groups, summary });
