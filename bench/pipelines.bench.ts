/**
 * Audio pipelines end to end, per 80 ms frame, voicewire side by side with the peer pipeline a
 * team would assemble from popular packages (same process, rounds interleaved):
 *  - G.711: alawmulaw; resampling: @echogarden/speex-resampler-wasm (SIMD build) at quality 5,
 *    through its int16 API; Opus: prism-media's Encoder/Decoder/OggDemuxer over opusscript, plus
 *    the small Ogg muxer prism lacks (written here, as a team would); WAV: wavefile; framing:
 *    Buffer.concat + subarray.
 *  - TTS: 48 kHz s16 frames of 3840 samples → each of the 12 output formats.
 *  - STT: 80 ms chunks of each of the 12 input formats → 1920-sample 24 kHz frames.
 * Per path: median and p99 of the time to process one 80 ms frame (750 frames = 60 s of speech,
 * 3 rounds each), mean, and streams per core (0.08 s / mean: real-time streams one core carries).
 * Scale: a 7680-byte memcpy and the base64 + JSON wrapping of a TTS `audio` message, measured here.
 * Quality: SNR against sox's `rate -v` on band-limited speech, for every resampling path of both
 * pipelines (sox needed; skipped otherwise).
 * Writes bench/results/pipelines.json and bench/results/pipelines.svg.
 *
 * Run: node --import tsx bench/pipelines.bench.ts   (BENCH_ROUNDS=n to change the rounds)
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import alawmulaw from 'alawmulaw';
import prism from 'prism-media';
import wavefile from 'wavefile';
import { decodeAlaw, decodeMulaw, encodeAlaw, encodeMulaw } from '../src/audio/g711.js';
import { encodeOggOpus } from '../src/audio/ogg-opus.js';
import { serializeTtsAudioMessage } from '../src/protocol/parse.js';
import { resampleInt16, type ResamplerQuality } from '../src/audio/resampler.js';
import { createSttAudioDecoder } from '../src/pipelines/stt-audio-decoder.js';
import { createTtsAudioEncoder } from '../src/pipelines/tts-audio-encoder.js';
import { decodeWav, encodeWav } from '../src/audio/wav.js';
import { machine, median, now, quantile, save, saveFile } from './util.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const FRAMES = 750; // 60 s
/** Untimed rounds over all frames per case first, so every path is measured at V8's top tier. */
const WARMUP_ROUNDS = 2;

// ---------------------------------------------------------------------------------------------
// Inputs: 60 s of speech (the espeak sentence repeated)
// ---------------------------------------------------------------------------------------------

const speech48 = decodeWav(readFileSync(new URL('../fixtures/speech/en_48k.wav', import.meta.url)), { output: 'int16', mono: true }).samples;
const long48 = new Int16Array(FRAMES * 3840);
for (let i = 0; i < long48.length; i++) long48[i] = speech48[i % speech48.length]!;
const frames48 = Array.from({ length: FRAMES }, (_, i) => long48.subarray(i * 3840, (i + 1) * 3840));

const bytesOf = (x: Int16Array) => new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
function chunksOf(bytes: Uint8Array, size: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size));
  return out;
}
/** Each chunk in its own buffer (as a socket delivers them). */
const own = (chunks: Uint8Array[]) => chunks.map((c) => c.slice());

// ---------------------------------------------------------------------------------------------
// The peer pipeline's parts
// ---------------------------------------------------------------------------------------------

interface SpeexModule {
  HEAP16: Int16Array;
  HEAPU32: Uint32Array;
  _malloc(n: number): number;
  _speex_resampler_init(ch: number, inRate: number, outRate: number, quality: number, err: number): number;
  _speex_resampler_process_int(st: number, ch: number, inp: number, inLen: number, out: number, outLen: number): number;
  _speex_resampler_skip_zeros(st: number): number;
}
// @ts-expect-error the package ships no types
const speex = (await (await import('@echogarden/speex-resampler-wasm/simd')).default()) as SpeexModule;

/** speexdsp quality 5, int16 in and out, as a team would wrap it: a new Int16Array per call. */
class SpeexInt16 {
  private readonly st: number;
  private readonly inPtr: number;
  private readonly outPtr: number;
  private readonly lenPtr: number;
  private readonly maxOut: number;
  constructor(
    readonly from: number,
    readonly to: number,
  ) {
    const err = speex._malloc(4);
    this.st = speex._speex_resampler_init(1, from, to, 5, err);
    speex._speex_resampler_skip_zeros(this.st);
    this.inPtr = speex._malloc(2 * 16384);
    this.maxOut = Math.ceil((16384 * to) / from) + 64;
    this.outPtr = speex._malloc(2 * this.maxOut);
    this.lenPtr = speex._malloc(8);
  }
  process(chunk: Int16Array): Int16Array {
    speex.HEAP16.set(chunk, this.inPtr >> 1);
    speex.HEAPU32[this.lenPtr >> 2] = chunk.length;
    speex.HEAPU32[(this.lenPtr >> 2) + 1] = this.maxOut;
    speex._speex_resampler_process_int(this.st, 0, this.inPtr, this.lenPtr, this.outPtr, this.lenPtr + 4);
    const produced = speex.HEAPU32[(this.lenPtr >> 2) + 1]!;
    return speex.HEAP16.slice(this.outPtr >> 1, (this.outPtr >> 1) + produced);
  }
}

/** The usual framer: Buffer.concat, then cut 3840-byte frames. */
function concatFramer(): (b: Buffer) => Buffer[] {
  let held: Buffer = Buffer.alloc(0);
  return (b) => {
    held = held.length === 0 ? b : Buffer.concat([held, b]);
    const out: Buffer[] = [];
    while (held.length >= 3840) {
      out.push(held.subarray(0, 3840));
      held = held.subarray(3840);
    }
    return out;
  };
}

const i16buf = (x: Int16Array) => Buffer.from(x.buffer, x.byteOffset, x.byteLength);
const asInt16 = (b: Uint8Array) => (b.byteOffset & 1 ? new Int16Array(b.slice().buffer) : new Int16Array(b.buffer, b.byteOffset, b.byteLength >> 1));

/** The Ogg muxer prism-media lacks, written the straightforward way (Buffer.concat per page). */
const CRC = new Uint32Array(256);
for (let i = 0; i < 256; i++) {
  let r = i << 24;
  for (let k = 0; k < 8; k++) r = r & 0x80000000 ? (r << 1) ^ 0x04c11db7 : r << 1;
  CRC[i] = r >>> 0;
}
function oggPage(serial: number, seq: number, granule: bigint, flags: number, packets: Buffer[]): Buffer {
  const segs: number[] = [];
  for (const p of packets) {
    let n = p.length;
    while (n >= 255) {
      segs.push(255);
      n -= 255;
    }
    segs.push(n);
  }
  const h = Buffer.alloc(27 + segs.length);
  h.write('OggS', 0, 'latin1');
  h[5] = flags;
  h.writeBigInt64LE(granule, 6);
  h.writeUInt32LE(serial, 14);
  h.writeUInt32LE(seq, 18);
  h[26] = segs.length;
  segs.forEach((s, i) => (h[27 + i] = s));
  const page = Buffer.concat([h, ...packets]);
  let crc = 0;
  for (const b of page) crc = ((crc << 8) ^ CRC[((crc >>> 24) ^ b) & 0xff]!) >>> 0;
  page.writeUInt32LE(crc, 22);
  return page;
}

/** prism-media's opus Transform, driven synchronously: `_transform` with its `push` captured. */
function syncTransform(t: { _transform(c: unknown, e: unknown, cb: (err?: unknown) => void): void; push(x: unknown): boolean }): (c: unknown) => Buffer[] {
  let out: Buffer[] = [];
  t.push = (x: unknown) => (out.push(x as Buffer), true);
  return (c) => {
    out = [];
    t._transform(c, 'buffer', (err) => {
      if (err) throw err;
    });
    return out;
  };
}

// ---------------------------------------------------------------------------------------------
// TTS: 48 kHz frames → output format
// ---------------------------------------------------------------------------------------------

type FrameFn<I> = (x: I) => unknown;
const TTS_FORMATS = ['pcm', 'pcm_8000', 'pcm_16000', 'pcm_22050', 'pcm_24000', 'pcm_44100', 'pcm_48000', 'ulaw_8000', 'mulaw_8000', 'alaw_8000', 'wav', 'opus'];

function voicewireTts(format: string, quality: ResamplerQuality = 'high'): FrameFn<Int16Array> {
  const enc = createTtsAudioEncoder(format, { quality });
  return (f) => enc.encode(f).bytes;
}

function peerTts(format: string): FrameFn<Int16Array> {
  if (format === 'pcm' || format === 'pcm_48000') return (f) => i16buf(f);
  if (format.startsWith('pcm_')) {
    const r = new SpeexInt16(48000, Number(format.slice(4)));
    return (f) => i16buf(r.process(f));
  }
  if (format.includes('law')) {
    const r = new SpeexInt16(48000, 8000);
    const law = format.startsWith('alaw') ? alawmulaw.alaw : alawmulaw.mulaw;
    return (f) => Buffer.from(law.encode(r.process(f)));
  }
  if (format === 'wav') {
    let first = true;
    return (f) => {
      if (!first) return i16buf(f);
      first = false;
      const w = new wavefile.WaveFile();
      w.fromScratch(1, 48000, '16', new Int16Array(0));
      const header = Buffer.from(w.toBuffer().subarray(0, 44));
      header.writeUInt32LE(0xffffffff, 4);
      header.writeUInt32LE(0xffffffff, 40);
      return Buffer.concat([header, i16buf(f)]);
    };
  }
  // opus: prism-media Encoder (opusscript), 20 ms packets, a page per 80 ms frame.
  const enc = syncTransform(new prism.opus.Encoder({ rate: 48000, channels: 1, frameSize: 960 }) as never);
  const serial = 1234;
  let seq = 0;
  let granule = 312n;
  let started = false;
  return (f) => {
    const pages: Buffer[] = [];
    if (!started) {
      started = true;
      const head = Buffer.from([...Buffer.from('OpusHead'), 1, 1, 0x38, 0x01, 0x80, 0xbb, 0, 0, 0, 0, 0]);
      const tags = Buffer.concat([Buffer.from('OpusTags'), Buffer.from([4, 0, 0, 0]), Buffer.from('peer'), Buffer.alloc(4)]);
      pages.push(oggPage(serial, seq++, 0n, 2, [head]), oggPage(serial, seq++, 0n, 0, [tags]));
    }
    const packets = enc(i16buf(f));
    granule += BigInt(packets.length * 960);
    pages.push(oggPage(serial, seq++, granule, 0, packets));
    return pages.length === 1 ? pages[0] : Buffer.concat(pages);
  };
}

// ---------------------------------------------------------------------------------------------
// STT: 80 ms chunks of an input format → 1920-sample frames at 24 kHz
// ---------------------------------------------------------------------------------------------

const STT_FORMATS = ['pcm', 'pcm_8000', 'pcm_16000', 'pcm_22050', 'pcm_24000', 'pcm_44100', 'pcm_48000', 'wav', 'opus', 'ulaw_8000', 'mulaw_8000', 'alaw_8000'];
const rateOf = (format: string) => (format === 'pcm' ? 24000 : format.includes('law') ? 8000 : format === 'wav' || format === 'opus' ? 48000 : Number(format.slice(4)));

/** 60 s of speech as 80 ms chunks of the format (each in its own buffer). */
function sttInput(format: string): Uint8Array[] {
  const rate = rateOf(format);
  const pcm = rate === 48000 ? long48 : resampleInt16(long48, 48000, rate);
  const per = Math.round(rate * 0.08);
  if (format.startsWith('pcm')) return own(chunksOf(bytesOf(pcm), per * 2));
  if (format.includes('law')) return own(chunksOf(format.startsWith('alaw') ? encodeAlaw(pcm) : encodeMulaw(pcm), per));
  if (format === 'wav') {
    const file = encodeWav(pcm, { sampleRate: 48000 });
    return own([file.subarray(0, 44 + 7680), ...chunksOf(file.subarray(44 + 7680), 7680)]);
  }
  // opus: the Ogg stream voicewire writes (80 ms pages), one page per chunk, headers with the first.
  const ogg = encodeOggOpus(pcm, { serial: 99 });
  const pages: Uint8Array[] = [];
  for (let at = 0; at < ogg.length; ) {
    const nseg = ogg[at + 26]!;
    let len = 27 + nseg;
    for (let i = 0; i < nseg; i++) len += ogg[at + 27 + i]!;
    pages.push(ogg.subarray(at, at + len));
    at += len;
  }
  return own([Buffer.concat(pages.slice(0, 3)), ...pages.slice(3)]);
}

function voicewireStt(format: string, quality: ResamplerQuality = 'high'): FrameFn<Uint8Array> {
  const dec = createSttAudioDecoder(format, { quality });
  return (c) => dec.push(c);
}

function peerStt(format: string): FrameFn<Uint8Array> {
  const frame = concatFramer();
  const rate = rateOf(format);
  if (format === 'pcm' || format === 'pcm_24000') return (c) => frame(Buffer.from(c.buffer, c.byteOffset, c.byteLength));
  if (format.startsWith('pcm_')) {
    const r = new SpeexInt16(rate, 24000);
    return (c) => frame(i16buf(r.process(asInt16(c))));
  }
  if (format.includes('law')) {
    const r = new SpeexInt16(8000, 24000);
    const law = format.startsWith('alaw') ? alawmulaw.alaw : alawmulaw.mulaw;
    return (c) => frame(i16buf(r.process(law.decode(c))));
  }
  if (format === 'wav') {
    let r: SpeexInt16 | null = null;
    return (c) => {
      if (r === null) {
        const w = new wavefile.WaveFile();
        w.fromBuffer(c);
        r = new SpeexInt16((w.fmt as { sampleRate: number }).sampleRate, 24000);
        return frame(i16buf(r.process(w.getSamples(false, Int16Array) as unknown as Int16Array)));
      }
      return frame(i16buf(r.process(asInt16(c))));
    };
  }
  const demux = syncTransform(new prism.opus.OggDemuxer() as never);
  const decode = syncTransform(new prism.opus.Decoder({ rate: 24000, channels: 1, frameSize: 480 }) as never);
  return (c) => {
    const out: Buffer[] = [];
    for (const packet of demux(Buffer.from(c.buffer, c.byteOffset, c.byteLength))) for (const pcm of decode(packet)) out.push(...frame(pcm));
    return out;
  };
}

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

interface Stats {
  /** Median time to process one 80 ms frame, µs (each frame timed on its own). */
  medianUs: number;
  /** 99th percentile of the same, µs. */
  p99Us: number;
  /** Mean per frame from whole-round timings (no timer overhead per frame), µs. */
  meanUs: number;
  /** Real-time streams one core carries: 80 ms / mean. */
  streamsPerCore: number;
}

/** Runs a fresh pipeline over every input: per-frame times into `each`, the round's total returned (ns). */
function timeRound<I>(make: () => FrameFn<I>, inputs: I[], each: number[] | null): number {
  const fn = make();
  const t0 = process.hrtime.bigint();
  if (each === null) {
    // Whole rounds on the process's CPU clock (bench/util.ts: descheduled time is not ours), ns.
    const c0 = now();
    for (const x of inputs) fn(x);
    return (now() - c0) * 1e6;
  } else {
    for (const x of inputs) {
      const a = process.hrtime.bigint();
      fn(x);
      each.push(Number(process.hrtime.bigint() - a));
    }
  }
  return Number(process.hrtime.bigint() - t0);
}

function measure<I>(make: () => FrameFn<I>, inputs: I[], each: number[], totals: number[]): void {
  timeRound(make, inputs, each);
  totals.push(timeRound(make, inputs, null) / inputs.length);
}

function stats(each: number[], totals: number[]): Stats {
  const s = Float64Array.from(each).sort();
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]! / 1000;
  const mean = Math.min(...totals) / 1000; // the least disturbed round
  return { medianUs: at(0.5), p99Us: at(0.99), meanUs: mean, streamsPerCore: Math.floor(80000 / mean) };
}

interface PathResult {
  path: string;
  voicewire: Stats;
  peer: Stats;
  /** voicewire with the resampler's `'fast'` quality, for paths that resample. */
  voicewireFast?: Stats;
  /** Peer mean / voicewire mean: how many times faster voicewire is per frame. */
  speedup: number;
  /** p10 and p90 of the per-round ratio (peer's round time / voicewire's). */
  speedupP10: number;
  speedupP90: number;
  speedupFast?: number;
}

function compare<I>(path: string, vw: () => FrameFn<I>, peer: () => FrameFn<I>, inputs: I[], vwFast?: () => FrameFn<I>): PathResult {
  const cases = [vw, peer, ...(vwFast ? [vwFast] : [])];
  for (let w = 0; w < WARMUP_ROUNDS; w++) for (const c of cases) timeRound(c, inputs, null);
  const each = cases.map(() => [] as number[]);
  const totals = cases.map(() => [] as number[]);
  // Interleaved rounds, rotating who goes first; the speedup is the median of per-round ratios.
  for (let r = 0; r < ROUNDS; r++) {
    for (let j = 0; j < cases.length; j++) {
      const i = (j + r) % cases.length;
      measure(cases[i]!, inputs, each[i]!, totals[i]!);
    }
  }
  const [a, b, c] = cases.map((_, i) => stats(each[i]!, totals[i]!));
  const per = (k: number) => totals[1]!.map((t, r) => t / totals[k]![r]!);
  const sp = per(0);
  const result: PathResult = { path, voicewire: a!, peer: b!, speedup: median(sp), speedupP10: quantile(sp, 0.1), speedupP90: quantile(sp, 0.9) };
  if (c) {
    result.voicewireFast = c;
    result.speedupFast = median(per(2));
  }
  const f = (s: Stats) => `${s.medianUs.toFixed(1).padStart(7)} µs median ${s.p99Us.toFixed(1).padStart(7)} p99 ${s.meanUs.toFixed(1).padStart(7)} mean ${String(s.streamsPerCore).padStart(6)}/core`;
  console.log(`${path.padEnd(16)} voicewire ${f(a!)} | peer ${f(b!)} | ${result.speedup.toFixed(2)}x (p10-p90 ${result.speedupP10.toFixed(2)}-${result.speedupP90.toFixed(2)})${c ? ` | fast ${c.meanUs.toFixed(1)} µs mean, ${result.speedupFast!.toFixed(2)}x` : ''}`);
  return result;
}

// ---------------------------------------------------------------------------------------------
// Quality: SNR against sox `rate -v` on speech band-limited to 0.8× the lower Nyquist
// ---------------------------------------------------------------------------------------------

function soxRate(pcm: Int16Array, from: number, to: number): Int16Array | null {
  const raw = (r: number) => ['-t', 'raw', '-e', 'signed', '-b', '16', '-c', '1', '-r', String(r)];
  const r = spawnSync('sox', ['-D', ...raw(from), '-', ...raw(to), '-', 'rate', '-v'], { input: bytesOf(pcm), maxBuffer: 1 << 28 });
  if (r.status !== 0) return null;
  return new Int16Array(r.stdout.buffer.slice(r.stdout.byteOffset, r.stdout.byteOffset + (r.stdout.byteLength & ~1)));
}
function lowpass(pcm: Int16Array, rate: number, hz: number): Int16Array | null {
  const raw = ['-t', 'raw', '-e', 'signed', '-b', '16', '-c', '1', '-r', String(rate)];
  const r = spawnSync('sox', ['-D', ...raw, '-', ...raw, '-', 'sinc', `-${hz}`], { input: bytesOf(pcm), maxBuffer: 1 << 28 });
  if (r.status !== 0) return null;
  return new Int16Array(r.stdout.buffer.slice(r.stdout.byteOffset, r.stdout.byteOffset + (r.stdout.byteLength & ~1)));
}
function snr(ref: Int16Array, x: Int16Array, skip = 2000): number {
  let s = 0;
  let e = 0;
  for (let i = skip; i < Math.min(ref.length, x.length) - skip; i++) {
    const d = ref[i]! - x[i]!;
    s += ref[i]! * ref[i]!;
    e += d * d;
  }
  return 10 * Math.log10(s / Math.max(e, 1e-9));
}
function joinI16(parts: Int16Array[]): Int16Array {
  const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) out.set(p, (at += p.length) - p.length);
  return out;
}

interface QualityFigures {
  /** Gain error of a tone at 0.9× the lower Nyquist, dB (0 is flat). */
  passbandDb: number;
  /** Level left of a −6 dBFS tone at 1.25× the output Nyquist, dBFS (downsampling only; lower is better). */
  aliasDbfs: number | null;
  /** SNR of band-limited speech against sox `rate -v`, dB (null without sox). */
  speechSnrDb: number | null;
}

interface QualityRow {
  path: string;
  voicewire: QualityFigures;
  voicewireFast: QualityFigures;
  peer: QualityFigures;
}

function tone(hz: number, rate: number, seconds: number, amplitude = 0.5): Int16Array {
  const x = new Int16Array(Math.round(rate * seconds));
  for (let i = 0; i < x.length; i++) x[i] = Math.round(32767 * amplitude * Math.sin((2 * Math.PI * hz * i) / rate));
  return x;
}
/** RMS over the middle half (away from the start and end transients). */
function midRms(x: Int16Array): number {
  let s = 0;
  const a = x.length >> 2;
  const b = x.length - a;
  for (let i = a; i < b; i++) s += x[i]! * x[i]!;
  return Math.sqrt(s / (b - a));
}

type Run = (pcm: Int16Array) => Int16Array;
/** A TTS pipeline over a whole 48 kHz signal, in frames: PCM out. */
const ttsRun = (make: () => FrameFn<Int16Array>): Run => (pcm) => {
  const fn = make();
  const out: Int16Array[] = [];
  for (let i = 0; i + 3840 <= pcm.length; i += 3840) out.push(asInt16((fn(pcm.subarray(i, i + 3840)) as Uint8Array).slice()));
  return joinI16(out);
};
/** An STT pipeline over a whole signal at `rate`, in 80 ms chunks: 24 kHz PCM out. */
const sttRun = (make: () => FrameFn<Uint8Array>, rate: number): Run => (pcm) => {
  const fn = make();
  const out: Int16Array[] = [];
  for (const c of own(chunksOf(bytesOf(pcm), Math.round(rate * 0.16)))) for (const f of fn(c) as Uint8Array[]) out.push(f instanceof Int16Array ? f : asInt16(f.slice()));
  return joinI16(out);
};

function figures(run: Run, from: number, to: number, speech: { input: Int16Array; ref: Int16Array } | null): QualityFigures {
  const nyquist = Math.min(from, to) / 2;
  const pass = tone(0.9 * nyquist, from, 1);
  const passbandDb = 20 * Math.log10(midRms(run(pass)) / midRms(pass));
  const aliasDbfs = to < from && 1.25 * (to / 2) < from / 2 ? 20 * Math.log10(Math.max(midRms(run(tone(1.25 * (to / 2), from, 1))), 1e-3) / (32767 / Math.SQRT2)) : null;
  return { passbandDb, aliasDbfs, speechSnrDb: speech ? snr(speech.ref, run(speech.input)) : null };
}

function quality(): QualityRow[] {
  const hasSox = spawnSync('sox', ['--version']).status === 0;
  const rows: QualityRow[] = [];
  const speechAt = (from: number, to: number) => {
    if (!hasSox) return null;
    const src = from === 48000 ? speech48 : soxRate(speech48, 48000, from)!;
    const input = lowpass(src, from, Math.min(from, to) * 0.4)!;
    return { input, ref: soxRate(input, from, to)! };
  };
  for (const to of [8000, 16000, 22050, 24000, 44100]) {
    const f = `pcm_${to}`;
    const sp = speechAt(48000, to);
    rows.push({
      path: `tts ${f}`,
      voicewire: figures(ttsRun(() => voicewireTts(f)), 48000, to, sp),
      voicewireFast: figures(ttsRun(() => voicewireTts(f, 'fast')), 48000, to, sp),
      peer: figures(ttsRun(() => peerTts(f)), 48000, to, sp),
    });
  }
  for (const from of [8000, 16000, 22050, 44100, 48000]) {
    const f = `pcm_${from}`;
    const sp = speechAt(from, 24000);
    rows.push({
      path: `stt ${f}`,
      voicewire: figures(sttRun(() => voicewireStt(f), from), from, 24000, sp),
      voicewireFast: figures(sttRun(() => voicewireStt(f, 'fast'), from), from, 24000, sp),
      peer: figures(sttRun(() => peerStt(f), from), from, 24000, sp),
    });
  }
  const q = (x: QualityFigures) => `passband ${x.passbandDb.toFixed(3).padStart(7)} dB, alias ${x.aliasDbfs === null ? '    -' : x.aliasDbfs.toFixed(0).padStart(5)} dBFS, speech SNR ${x.speechSnrDb === null ? '-' : x.speechSnrDb.toFixed(1)} dB`;
  for (const r of rows) console.log(`${r.path.padEnd(16)} voicewire ${q(r.voicewire)} | fast ${q(r.voicewireFast)} | peer ${q(r.peer)}`);
  return rows;
}

// ---------------------------------------------------------------------------------------------
// Scale: memcpy and base64 + JSON of one TTS audio message
// ---------------------------------------------------------------------------------------------

function limits(): { memcpy7680Us: number; base64JsonAudioMessageUs: number } {
  const src = bytesOf(frames48[0]!);
  const dst = new Uint8Array(7680);
  const time = (fn: () => void, n: number) => {
    for (let i = 0; i < n; i++) fn();
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) fn();
    return Number(process.hrtime.bigint() - t0) / n / 1000;
  };
  const memcpy7680Us = time(() => dst.set(src), 200000);
  let sink = 0;
  const base64JsonAudioMessageUs = time(() => (sink += serializeTtsAudioMessage(src, { start_s: 1.2, stop_s: 1.28, stream_id: 0 }).length), 20000);
  if (sink === 0) console.log('');
  console.log(`memcpy 7680 B: ${memcpy7680Us.toFixed(3)} µs; base64 + JSON audio message of a 48 kHz frame: ${base64JsonAudioMessageUs.toFixed(2)} µs`);
  return { memcpy7680Us, base64JsonAudioMessageUs };
}

// ---------------------------------------------------------------------------------------------
// The plot: streams per core, voicewire and peer, per path (log scale)
// ---------------------------------------------------------------------------------------------

function svg(rows: PathResult[]): string {
  const W = 900;
  const rowH = 22;
  const left = 150;
  const top = 50;
  const H = top + rows.length * rowH + 50;
  const max = Math.max(...rows.flatMap((r) => [r.voicewire.streamsPerCore, r.peer.streamsPerCore]));
  const lo = 10;
  const decades = Math.ceil(Math.log10(max / lo));
  const x = (v: number) => left + ((W - left - 90) * Math.log10(Math.max(v, lo) / lo)) / decades;
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="11">`);
  out.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  out.push(`<text x="${W / 2}" y="18" text-anchor="middle" font-size="14">Real-time streams per core, 80 ms frames (log scale; higher is better)</text>`);
  out.push(`<rect x="${left}" y="28" width="10" height="10" fill="#2b6cb0"/><text x="${left + 14}" y="37">voicewire</text>`);
  out.push(`<rect x="${left + 90}" y="28" width="10" height="10" fill="#bbbbbb"/><text x="${left + 104}" y="37">peer (alawmulaw, speexdsp q5, prism-media + opusscript, wavefile)</text>`);
  for (let d = 0; d <= decades; d++) {
    const v = lo * 10 ** d;
    out.push(`<line x1="${x(v)}" y1="${top - 4}" x2="${x(v)}" y2="${H - 40}" stroke="#ddd"/><text x="${x(v)}" y="${H - 26}" text-anchor="middle">${v.toLocaleString('en-US')}</text>`);
  }
  rows.forEach((r, i) => {
    const y = top + i * rowH;
    out.push(`<text x="${left - 6}" y="${y + 13}" text-anchor="end">${esc(r.path)}</text>`);
    out.push(`<rect x="${left}" y="${y + 2}" width="${Math.max(1, x(r.voicewire.streamsPerCore) - left)}" height="8" fill="#2b6cb0"/>`);
    out.push(`<rect x="${left}" y="${y + 11}" width="${Math.max(1, x(r.peer.streamsPerCore) - left)}" height="8" fill="#bbbbbb"/>`);
    out.push(`<text x="${x(r.voicewire.streamsPerCore) + 4}" y="${y + 10}" font-size="9">${r.voicewire.streamsPerCore} (${r.speedup.toFixed(1)}×)</text>`);
  });
  out.push(`<text x="${W / 2}" y="${H - 8}" text-anchor="middle" fill="#555">${esc(machine())}</text>`);
  out.push('</svg>');
  return out.join('\n') + '\n';
}

// ---------------------------------------------------------------------------------------------

console.log(`\nTTS: 48 kHz frames of 3840 samples → format (${FRAMES} frames × ${ROUNDS} rounds)`);
const resamples = (f: string, inRate: number) => f !== 'opus' && f !== 'wav' && f !== 'pcm' && rateOf(f) !== inRate;
const tts = TTS_FORMATS.map((f) => compare(`tts ${f}`, () => voicewireTts(f), () => peerTts(f), frames48, resamples(f, 48000) && f !== 'pcm_48000' ? () => voicewireTts(f, 'fast') : undefined));
console.log(`\nSTT: 80 ms chunks → 1920-sample 24 kHz frames`);
const stt = STT_FORMATS.map((f) => {
  const input = sttInput(f);
  return compare(`stt ${f}`, () => voicewireStt(f), () => peerStt(f), input, f === 'opus' || rateOf(f) === 24000 ? undefined : () => voicewireStt(f, 'fast'));
});
console.log('\nScale');
const scale = limits();
console.log('\nQuality');
const q = quality();
save('pipelines', { frameMs: 80, rounds: ROUNDS, framesPerRound: FRAMES, tts, stt, limits: scale, quality: q });
saveFile('pipelines.svg', svg([...tts, ...stt]));
