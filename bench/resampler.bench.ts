/**
 * Resampler speed and quality, side by side in one process:
 *  - voicewire `'high'` (default, alias-free), `'best'`, `'folding'` and `'fast'`, streaming 80 ms
 *    chunks into a preallocated output (`push(chunk, out)`: no allocation per push);
 *  - speexdsp quality 5 (`@echogarden/speex-resampler-wasm`, its SIMD build), streaming 80 ms chunks;
 *  - `wave-resampler` (sinc method), one-shot over the same audio (its only mode);
 *  - `sox` as a process (default `rate` quality), 60 s of audio per run, timed by hand; the
 *    process start is measured on its own (an empty input) and reported apart.
 * Speed groups: 48k→24k, 24k→16k, 24k→8k, 48k→8k, 44.1k→24k, 22.05k→48k (2 s of audio per call,
 * realtime factor = seconds of audio per CPU second; the figure to quote is the median of
 * per-round ratios against speexdsp q5, see bench/util.ts). BENCH_SOX=1 adds the sox timings. Quality: the same sine-fit yardstick
 * (bench/quality.ts) for every peer, saved to bench/results/resampler-quality.json. Then the
 * frequency-response plot bench/results/resampler-response.svg (voicewire high/fast/best, sox,
 * speexdsp q5), measured by passing tones through each.
 */
import { spawnSync } from 'node:child_process';
import waveResampler from 'wave-resampler';
import { createResampler, resample, resamplerBackend, type ResamplerQuality } from '../src/audio/resampler.js';
import { measureQuality, responseDb, type QualityFigures, type ResampleFn } from './quality.js';
import { audio, chunked, SPEED_PAIRS } from './resampler-input.js';
import { fmtRatio, machine, runGroup, save, saveFile, type GroupResult } from './util.js';

// ---------------------------------------------------------------------------------------------
// Peers
// ---------------------------------------------------------------------------------------------

interface SpeexModule {
  HEAPF32: Float32Array;
  HEAPU32: Uint32Array;
  _malloc(n: number): number;
  _free(p: number): void;
  _speex_resampler_init(ch: number, inRate: number, outRate: number, quality: number, err: number): number;
  _speex_resampler_process_float(st: number, ch: number, inp: number, inLen: number, out: number, outLen: number): number;
  _speex_resampler_skip_zeros(st: number): number;
  _speex_resampler_get_input_latency(st: number): number;
  _speex_resampler_destroy(st: number): void;
}

async function loadSpeex(): Promise<SpeexModule> {
  // @ts-expect-error the package ships no types
  const factory = (await import('@echogarden/speex-resampler-wasm/simd')).default as () => Promise<SpeexModule>;
  return factory();
}

/** A speexdsp resampler (mono float) fed through buffers in its wasm heap. */
class Speex {
  private readonly st: number;
  private readonly inPtr: number;
  private readonly outPtr: number;
  private readonly lenPtr: number;
  private readonly maxIn: number;
  private readonly maxOut: number;

  constructor(private readonly m: SpeexModule, readonly from: number, readonly to: number, quality = 5, maxIn = 1 << 14) {
    const err = m._malloc(4);
    this.st = m._speex_resampler_init(1, from, to, quality, err);
    m._free(err);
    this.maxIn = maxIn;
    this.maxOut = Math.ceil((maxIn * to) / from) + 64;
    this.inPtr = m._malloc(maxIn * 4);
    this.outPtr = m._malloc(this.maxOut * 4);
    this.lenPtr = m._malloc(8);
  }

  /** Processes `chunk` (any length); returns a view of the output in the heap (valid until the next call). */
  process(chunk: Float32Array, sink?: (out: Float32Array) => void): void {
    const m = this.m;
    for (let at = 0; at < chunk.length; ) {
      const n = Math.min(this.maxIn, chunk.length - at);
      m.HEAPF32.set(chunk.subarray(at, at + n), this.inPtr >> 2);
      m.HEAPU32[this.lenPtr >> 2] = n;
      m.HEAPU32[(this.lenPtr >> 2) + 1] = this.maxOut;
      m._speex_resampler_process_float(this.st, 0, this.inPtr, this.lenPtr, this.outPtr, this.lenPtr + 4);
      const used = m.HEAPU32[this.lenPtr >> 2]!;
      const produced = m.HEAPU32[(this.lenPtr >> 2) + 1]!;
      if (sink) sink(m.HEAPF32.subarray(this.outPtr >> 2, (this.outPtr >> 2) + produced));
      at += used;
    }
  }

  /** One-shot with the latency removed (skip_zeros, then zeros pushed behind), length round(N·to/from). */
  oneShot(x: Float32Array): Float32Array {
    this.m._speex_resampler_skip_zeros(this.st);
    const total = Math.round((x.length * this.to) / this.from);
    const out = new Float32Array(total + this.maxOut);
    let at = 0;
    const sink = (o: Float32Array): void => {
      out.set(o.subarray(0, Math.max(0, Math.min(o.length, out.length - at))), at);
      at += o.length;
    };
    this.process(x, sink);
    this.process(new Float32Array(this.m._speex_resampler_get_input_latency(this.st) + 2), sink);
    return out.slice(0, total);
  }

  destroy(): void {
    this.m._speex_resampler_destroy(this.st);
    this.m._free(this.inPtr);
    this.m._free(this.outPtr);
    this.m._free(this.lenPtr);
  }
}

const speexFn = (m: SpeexModule): ResampleFn => (x, from, to) => {
  const s = new Speex(m, from, to);
  const y = s.oneShot(x);
  s.destroy();
  return y;
};

/** wave-resampler, sinc method; it filters its input in place, so it gets a copy. */
const waveFn: ResampleFn = (x, from, to) => {
  const y = waveResampler.resample(Float64Array.from(x), from, to, { method: 'sinc' }) as Float64Array;
  return Float32Array.from(y);
};

/** sox as a process, default `rate` (high quality, linear phase), f32 in and out. */
const soxFn: ResampleFn = (x, from, to) => {
  const r = spawnSync('sox', ['-t', 'f32', '-r', String(from), '-c', '1', '-', '-t', 'f32', '-r', String(to), '-'], {
    input: new Uint8Array(x.buffer, x.byteOffset, x.byteLength),
    maxBuffer: 1 << 28,
  });
  if (r.status !== 0) throw new Error(`sox failed: ${String(r.stderr)}`);
  const b = r.stdout;
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
};

const voicewireFn = (quality: ResamplerQuality): ResampleFn => (x, from, to) => resample(x, from, to, { quality });

// ---------------------------------------------------------------------------------------------
// Speed
// ---------------------------------------------------------------------------------------------

function soxTiming(from: number, to: number, seconds = 60): { spawnMs: number; runMs: number } {
  const x = audio(from, seconds);
  const time = (input: Float32Array): number => {
    const ts: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      soxFn(input, from, to);
      ts.push(performance.now() - t0);
    }
    return ts.sort((a, b) => a - b)[1]!;
  };
  return { spawnMs: time(new Float32Array(0)), runMs: time(x) };
}

const speex = await loadSpeex();
console.log(`voicewire resampler backend: ${resamplerBackend()}`);
const seconds = 2;
const groups: GroupResult[] = [];
const soxRows: { pair: string; spawnMs: number; runMs: number; realtimeWithSpawn: number; realtimeWithoutSpawn: number }[] = [];
for (const [from, to] of SPEED_PAIRS) {
  const x = audio(from, seconds);
  const chunks = chunked(x, from);
  const sp = new Speex(speex, from, to, 5, chunks[0]!.length);
  const stream = (quality: ResamplerQuality) => {
    const r = createResampler({ from, to, quality });
    const out = new Float32Array(r.maxOutputLength(chunks[0]!.length));
    return (): void => {
      for (const c of chunks) r.push(c, out);
      r.flush(out);
    };
  };
  // speexdsp first: every ratio printed is per round against it.
  const g = runGroup(
    `${from} -> ${to} Hz, ${seconds} s mono float in 80 ms chunks (wave-resampler: one-shot)`,
    [
      { name: 'speexdsp q5 (wasm SIMD)', fn: () => chunks.forEach((c) => sp.process(c)) },
      { name: 'voicewire high (default)', fn: stream('high') },
      { name: 'voicewire best', fn: stream('best') },
      { name: 'voicewire folding', fn: stream('folding') },
      { name: 'voicewire fast', fn: stream('fast') },
      { name: 'wave-resampler sinc', fn: () => void waveFn(x, from, to) },
    ],
    seconds,
  );
  const speed = (k: number) => g.results[k]!;
  console.log(`  voicewire speed / speexdsp q5 speed (median of per-round ratios, p10-p90): ` +
    ['high', 'best', 'folding', 'fast'].map((q, i) => `${q} ${fmtRatio(speed(i + 1).ratio, speed(i + 1).ratioP10, speed(i + 1).ratioP90)}`).join(', '));
  sp.destroy();
  groups.push(g);
  if (process.env.BENCH_SOX !== '1') continue;
  const st = soxTiming(from, to);
  const row = {
    pair: `${from}->${to}`,
    spawnMs: st.spawnMs,
    runMs: st.runMs,
    realtimeWithSpawn: 60 / (st.runMs / 1000),
    realtimeWithoutSpawn: 60 / (Math.max(1e-3, st.runMs - st.spawnMs) / 1000),
  };
  soxRows.push(row);
  console.log(
    `  ${'sox (process, 60 s, wall time)'.padEnd(34)} ${st.runMs.toFixed(1).padStart(10)} ms/run, spawn ${st.spawnMs.toFixed(1)} ms  ` +
      `${row.realtimeWithSpawn.toFixed(0)}x realtime (${row.realtimeWithoutSpawn.toFixed(0)}x without spawn)`,
  );
}
save('resampler', { groups, sox: soxRows });

// ---------------------------------------------------------------------------------------------
// Quality
// ---------------------------------------------------------------------------------------------

const QUALITY_PAIRS: [number, number][] = [
  [48000, 8000],
  [48000, 24000],
  [24000, 8000],
  [24000, 16000],
  [44100, 24000],
  [22050, 48000],
  [24000, 48000],
  [8000, 24000],
  [16000, 48000],
];
const peers: { name: string; fn: ResampleFn; passband?: number }[] = [
  { name: 'voicewire high', fn: voicewireFn('high') },
  { name: 'voicewire folding', fn: voicewireFn('folding') },
  // 'fast' is designed flat to 0.85x Nyquist: measured against its own band edge.
  { name: 'voicewire fast', fn: voicewireFn('fast'), passband: 0.85 },
  { name: 'voicewire best', fn: voicewireFn('best') },
  { name: 'speexdsp q5', fn: speexFn(speex) },
  { name: 'wave-resampler sinc', fn: waveFn },
  { name: 'sox rate (default)', fn: soxFn },
];
const quality: Record<string, QualityFigures[]> = {};
const f1 = (v: number | null): string => (v === null ? '—' : v < -200 ? '< -200' : v.toFixed(1));
console.log('\nquality (2 s tones at −6 dBFS, sine fit over the middle second)');
console.log(
  `  ${'resampler'.padEnd(22)} ${'pair'.padEnd(12)} ${'SNR 1k'.padStart(8)} ${'alias'.padStart(8)} ${'alias1.1'.padStart(8)} ${'al1.05'.padStart(8)} ${'images'.padStart(8)} ${'img.95'.padStart(8)} ${'pb dev'.padStart(8)} ${'stop≥1.0'.padStart(8)} ${'lag'.padStart(8)} len`,
);
for (const p of peers) {
  quality[p.name] = [];
  for (const [from, to] of QUALITY_PAIRS) {
    const m = measureQuality(p.fn, from, to, 4, p.passband ?? 0.9);
    quality[p.name]!.push(m);
    console.log(
      `  ${p.name.padEnd(22)} ${`${from}->${to}`.padEnd(12)} ${f1(m.snr1kDb).padStart(8)} ${f1(m.aliasDbfs).padStart(8)} ${f1(m.aliasEdgeDbfs).padStart(8)} ${f1(m.aliasNearDbfs).padStart(8)} ` +
        `${f1(m.imageRejectionDb).padStart(8)} ${f1(m.imageNearDb).padStart(8)} ` +
        `${m.passbandDevDb.toFixed(4).padStart(8)} ${f1(m.stopbandDbfs).padStart(8)} ${m.lagSamples.toFixed(2).padStart(8)} ${m.lengthError}`,
    );
  }
}
saveFile(
  'resampler-quality.json',
  JSON.stringify(
    {
      machine: machine(),
      date: new Date().toISOString(),
      method: '2 s tones at -6 dBFS; least-squares sine fit over the middle second; alias: tone at 1.25x the output Nyquist (dBFS); aliasEdge: tone at 1.1x the output Nyquist, whose alias lands at 0.9x (dBFS); aliasNear: tone at 1.05x the output Nyquist, whose alias lands at 0.95x (dBFS; folds back when the -6 dB point is at the Nyquist); images: worst of 1 kHz and 0.9x the input Nyquist (dB); imageNear: image at 1.05x the input Nyquist of a tone at 0.95x, relative to the tone (dB); alias probes are null where the probe tone would be above the input Nyquist; passband: worst |gain| of 4 tones up to 0.9x the lower Nyquist (voicewire fast: 0.85x, its design edge, also for aliasEdge and images); stopband: worst output (dBFS) of tones at 1.0005x-1.5x the output Nyquist, or worst image (dB re tone - 6) of input tones at 0.9x-0.999x the input Nyquist: alias-free means <= -100; -600 dBFS = exact zero output',
      quality,
    },
    null,
    2,
  ) + '\n',
);

// ---------------------------------------------------------------------------------------------
// Frequency-response plot (hand-written SVG)
// ---------------------------------------------------------------------------------------------

const PLOT_FROM = 48000;
const PLOT_TO = 16000;
const freqs: number[] = [];
for (let f = 100; f < PLOT_FROM / 2; f += f < 6500 || f > 9500 ? 200 : 40) freqs.push(f);
const curves = [
  { name: "voicewire 'high'", color: '#d62728', db: responseDb(voicewireFn('high'), PLOT_FROM, PLOT_TO, freqs) },
  { name: "voicewire 'folding'", color: '#8c564b', db: responseDb(voicewireFn('folding'), PLOT_FROM, PLOT_TO, freqs) },
  { name: "voicewire 'fast'", color: '#ff9896', db: responseDb(voicewireFn('fast'), PLOT_FROM, PLOT_TO, freqs) },
  { name: "voicewire 'best'", color: '#9467bd', db: responseDb(voicewireFn('best'), PLOT_FROM, PLOT_TO, freqs) },
  { name: 'sox rate (default)', color: '#1f77b4', db: responseDb(soxFn, PLOT_FROM, PLOT_TO, freqs) },
  { name: 'speexdsp q5', color: '#2ca02c', db: responseDb(speexFn(speex), PLOT_FROM, PLOT_TO, freqs) },
];
saveFile('resampler-response.svg', responseSvg(freqs, curves));

function responseSvg(fs: number[], cs: { name: string; color: string; db: number[] }[]): string {
  const W = 760;
  const H = 560;
  const left = 60;
  const right = 20;
  const panels = [
    { top: 40, height: 300, min: -160, max: 10, step: 20, label: 'magnitude, dB (tone out / tone in; above 8 kHz: its alias)', fMax: PLOT_FROM / 2 },
    { top: 400, height: 120, min: -0.03, max: 0.03, step: 0.01, label: 'passband detail, dB', fMax: 8000 },
  ];
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="11">`);
  out.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  out.push(`<text x="${W / 2}" y="18" text-anchor="middle" font-size="14">Resampling ${PLOT_FROM / 1000} kHz → ${PLOT_TO / 1000} kHz: measured response (−6 dBFS tones)</text>`);
  for (const p of panels) {
    const xw = W - left - right;
    const X = (f: number): number => left + (f / p.fMax) * xw;
    const Y = (db: number): number => p.top + ((p.max - Math.max(p.min, Math.min(p.max, db))) / (p.max - p.min)) * p.height;
    out.push(`<rect x="${left}" y="${p.top}" width="${xw}" height="${p.height}" fill="none" stroke="#888"/>`);
    for (let v = p.min; v <= p.max + 1e-9; v += p.step) {
      const y = Y(v).toFixed(1);
      out.push(`<line x1="${left}" x2="${W - right}" y1="${y}" y2="${y}" stroke="#eee"/>`);
      out.push(`<text x="${left - 4}" y="${(Y(v) + 4).toFixed(1)}" text-anchor="end">${Math.abs(v) < 1e-9 ? '0' : +v.toFixed(2)}</text>`);
    }
    const fStep = p.fMax > 10000 ? 2000 : 1000;
    for (let f = 0; f <= p.fMax; f += fStep) {
      out.push(`<line x1="${X(f).toFixed(1)}" x2="${X(f).toFixed(1)}" y1="${p.top}" y2="${p.top + p.height}" stroke="#eee"/>`);
      out.push(`<text x="${X(f).toFixed(1)}" y="${p.top + p.height + 14}" text-anchor="middle">${f / 1000}k</text>`);
    }
    // Output Nyquist and the 0.9× passband edge.
    for (const [f, dash] of [[PLOT_TO / 2, '4 3'], [0.9 * (PLOT_TO / 2), '2 3']] as const) {
      if (f <= p.fMax) out.push(`<line x1="${X(f).toFixed(1)}" x2="${X(f).toFixed(1)}" y1="${p.top}" y2="${p.top + p.height}" stroke="#999" stroke-dasharray="${dash}"/>`);
    }
    out.push(`<text x="${left}" y="${p.top - 6}">${p.label}</text>`);
    for (const c of cs) {
      const pts = fs
        .map((f, i) => [f, c.db[i]!] as const)
        .filter(([f]) => f <= p.fMax)
        .map(([f, d]) => `${X(f).toFixed(1)},${Y(d).toFixed(1)}`)
        .join(' ');
      out.push(`<polyline fill="none" stroke="${c.color}" stroke-width="1.5" points="${pts}"/>`);
    }
  }
  out.push(`<text x="${W / 2}" y="${H - 4}" text-anchor="middle">input frequency, Hz (dashed: 0.9× and 1.0× output Nyquist)</text>`);
  cs.forEach((c, i) => {
    const x = W - right - 170;
    const y = 60 + i * 16;
    out.push(`<line x1="${x}" x2="${x + 20}" y1="${y - 4}" y2="${y - 4}" stroke="${c.color}" stroke-width="2"/>`);
    out.push(`<text x="${x + 26}" y="${y}">${c.name}</text>`);
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}
