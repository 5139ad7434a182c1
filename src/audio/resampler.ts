/**
 * Sample-rate conversion by exact rational polyphase filtering: `to/from` is reduced by the gcd
 * to `L/M` (44100→24000 is 80/147), and output sample `k` is the dot product of the input around
 * input time `k·M/L` with phase `k·M mod L` of a windowed-sinc or minimax kernel (see
 * resampler-design.ts). `'high'` runs some pairs as two such stages in a row (a wide, short one
 * and the sharp 2:1 one: `designStages`), with the same timing and exactness.
 *
 * One core serves both uses. `resample()` runs it over the whole input and flushes; a streaming
 * {@link Resampler} emits output `k` as soon as input `⌊k·M/L⌋ + half` has arrived and `flush()`
 * pads with the same zeros, so any chunking gives output bit-identical to `resample()`.
 * Timing: output sample `k` stands for time `k/to` (zero lag; the filter is centred), and the
 * whole output has exactly `round(N·to/from)` samples per channel.
 *
 * Platform-neutral: no `node:` imports; typed arrays in and out.
 */
import { describe } from '../util/bytes.js';
import { VoicewireError } from '../util/errors.js';
import { objectArg, optionsArg, shown } from '../util/args.js';
import { incrementalArg, type Incremental } from '../util/stream-core.js';
import { toWebTransformStream, type WebTransformOptions } from '../util/web.js';
import { CLAMP_ABOVE, FLUSH_BELOW, resamplerBackend, roundToInt16, runDecimator, runPolyphase, SCAN_NEEDS_TAME, SCAN_NON_FINITE, scanAt, scanFloat32, tame, tameAt } from './resampler-simd.js';
import { MAX_PIECE, ResamplerHistory } from './resampler-history.js';
import { designStages, RESAMPLER_QUALITIES, resamplerCost as designCost, type PolyphaseFilter, type ResamplerCost, type ResamplerQuality, type ResamplerStage } from './resampler-design.js';

export type { ResamplerQuality, ResamplerQualitySpec } from './resampler-design.js';
export { RESAMPLER_QUALITIES } from './resampler-design.js';
export type { ResamplerCost } from './resampler-design.js';
export { resamplerBackend, setResamplerBackend } from './resampler-simd.js';
export type { ResamplerBackend } from './resampler-simd.js';

/** Options of {@link resample} and {@link resampleInt16}. */
export interface ResampleOptions {
  /**
   * `'high'` (default: alias-free, ≥ 100 dB stopband from 1.0× the lower Nyquist, flat ±0.01 dB to
   * 0.9×), `'best'` (alias-free, ≥ 125 dB from 1.0×, flat to 0.9×), `'folding'` (≥ 125 dB from
   * 1.1×, flat to 0.9×; content between 1.0× and 1.1× folds back into 0.9×–1.0× at up to −6 dB;
   * `'high'` in 0.1.0) or `'fast'` (≥ 96 dB from 1.15×, flat to 0.85×, folds like
   * `'folding'`). What each guarantees and measures: {@link RESAMPLER_QUALITIES}.
   */
  quality?: ResamplerQuality;
  /** Interleaved channels in the input. Default 1. */
  channels?: number;
}

/** Options of {@link createResampler}. */
export interface ResamplerOptions extends ResampleOptions {
  /** Input sample rate, Hz: a positive integer. */
  from: number;
  /** Output sample rate, Hz: a positive integer. */
  to: number;
}

/** A streaming resampler over one input stream (interleaved channels). */
export interface Resampler<T extends Float32Array | Int16Array = Float32Array> {
  /**
   * Takes the next chunk (any length, even empty or cutting a multi-channel frame) and returns
   * every output sample whose input has now arrived. Without `out`, the result is a new array
   * (empty when none is ready). With `out` (at least {@link maxOutputLength}`(chunk.length)`
   * long, not overlapping `chunk`), nothing is allocated: the result is `out.subarray(0, n)`, a
   * view of `out`, valid until `out` is next written. A rejected chunk (wrong type, NaN/Infinity,
   * `out` of the wrong type or too short) throws and leaves the state untouched.
   */
  push(chunk: T, out?: T): T;
  /**
   * Ends the input: pads with zeros and returns the rest, so that everything emitted totals
   * `round(N·to/from)` samples per channel. The resampler is then reset, ready for a new stream.
   * `out` works as in {@link push}; {@link maxOutputLength}`(0)` is always enough for it.
   */
  flush(out?: T): T;
  /**
   * The most samples (interleaved) that a `push` of `inputLength` samples can return, whatever
   * was pushed before, and also the most a `flush()` returns: size `out` with it, once, for the
   * largest chunk you push. It is `ceil(frames·to/from)·channels` for the at most
   * `⌈inputLength/channels⌉` frames the chunk completes (a two-stage `'high'` pair, see
   * `RESAMPLER_QUALITIES`: `ceil(ceil(frames·mid/from)·to/mid)`, each stage's bound in turn), or
   * the flush's bound when larger.
   */
  maxOutputLength(inputLength: number): number;
  /** Drops all buffered input and output position (barge-in): the next push starts a new stream. */
  reset(): void;
  /**
   * The latency this streaming resampler adds, in output samples (may be fractional): output
   * `k`, which stands for time `k/to`, is emitted once the input up to `k/to + delaySeconds` has
   * arrived. It is the kernel's half-length (two stages: the sum of both, each in its own input
   * rate's time); 0 when `from === to`.
   */
  readonly delay: number;
  /** {@link delay} in seconds. */
  readonly delaySeconds: number;
  readonly from: number;
  readonly to: number;
  readonly channels: number;
  readonly quality: ResamplerQuality;
}

const EMPTY_F32 = new Float32Array(0);

function checkRate(name: string, rate: unknown): number {
  if (typeof rate !== 'number' || !Number.isInteger(rate) || rate <= 0 || rate > 0x7fffffff) {
    throw new VoicewireError('RESAMPLER_INVALID_RATE', `resampler: ${name} rate must be a positive integer (Hz), got ${shown(rate)}`);
  }
  return rate;
}

/**
 * What resampling `from → to` at `quality` costs per input frame (multiply-adds, table size): a
 * deterministic proxy for CPU that a server can check before accepting a rate (issue 11 §6).
 * @throws VoicewireError `RESAMPLER_INVALID_RATE`, `INVALID_ARGUMENT` as {@link createResampler}.
 */
export function resamplerCost(from: number, to: number, quality: ResamplerQuality = 'high'): ResamplerCost {
  const o = checkOptions(from, to, { quality });
  return designCost(o.from, o.to, o.quality);
}

function checkOptions(from: unknown, to: unknown, opts: ResampleOptions | undefined): { from: number; to: number; channels: number; quality: ResamplerQuality } {
  const options = optionsArg(opts, 'resampler options');
  const f = checkRate('input', from);
  const t = checkRate('output', to);
  const ratio = Math.max(f, t) / Math.min(f, t);
  if (ratio > 1024) {
    throw new VoicewireError('RESAMPLER_INVALID_RATE', `resampler: ratio ${f}→${t} is beyond 1024:1`);
  }
  const channels = options.channels ?? 1;
  if (!Number.isInteger(channels) || channels < 1 || channels > 64) {
    throw new VoicewireError('INVALID_ARGUMENT', `resampler: channels must be an integer from 1 to 64, got ${shown(channels)}`);
  }
  const quality = options.quality ?? 'high';
  if (typeof quality !== 'string' || !Object.prototype.hasOwnProperty.call(RESAMPLER_QUALITIES, quality)) {
    throw new VoicewireError('INVALID_ARGUMENT', `resampler: quality must be 'high', 'best', 'folding' or 'fast', got ${shown(quality)}`);
  }
  return { from: f, to: t, channels, quality };
}

/**
 * Checks float input before any state changes (NaN/Infinity → `RESAMPLER_NON_FINITE`) and
 * returns whether it needs taming ({@link RESAMPLER_FLUSH_BELOW}, {@link RESAMPLER_CLAMP_ABOVE}):
 * one pass for both ({@link scanFloat32}), so audio that needs no taming skips that pass.
 */
function checkFloat32(chunk: unknown): boolean {
  if (!(chunk instanceof Float32Array)) {
    throw new VoicewireError('INVALID_ARGUMENT', `resampler: expected a Float32Array, got ${describe(chunk)}`);
  }
  return checkFlags(chunk, scanFloat32(chunk));
}

/** Throws `RESAMPLER_NON_FINITE` for {@link scanFloat32}'s flags of `chunk`; else whether it needs taming. */
function checkFlags(chunk: Float32Array, flags: number): boolean {
  if ((flags & SCAN_NON_FINITE) !== 0) {
    let at = 0;
    while (Number.isFinite(chunk[at]!)) at++;
    throw new VoicewireError('RESAMPLER_NON_FINITE', `resampler: input sample ${at} is ${shown(chunk[at])}`, { details: { index: at } });
  }
  return (flags & SCAN_NEEDS_TAME) !== 0;
}

/**
 * Checks a caller's output buffer for `need` samples: the right type, long enough, and not sharing
 * memory with the input `chunk` (the core writes outputs while it still reads the chunk).
 */
function checkOut<T extends Float32Array | Int16Array>(out: unknown, type: { new (n: number): T; name: string }, need: number, chunk: ArrayBufferView | null): T {
  if (!(out instanceof type)) {
    throw new VoicewireError('INVALID_ARGUMENT', `resampler: out must be a ${type.name}, got ${describe(out)}`);
  }
  if (out.length < need) {
    throw new VoicewireError('INVALID_ARGUMENT', `resampler: out holds ${out.length} samples, this call writes ${need} (size it with maxOutputLength)`, {
      details: { need, have: out.length },
    });
  }
  if (chunk !== null && out.buffer === chunk.buffer && out.byteOffset < chunk.byteOffset + chunk.byteLength && chunk.byteOffset < out.byteOffset + out.byteLength) {
    throw new VoicewireError('INVALID_ARGUMENT', 'resampler: out must not overlap the input chunk');
  }
  return out as T;
}

function checkInt16(chunk: unknown): Int16Array {
  if (!(chunk instanceof Int16Array)) {
    throw new VoicewireError('INVALID_ARGUMENT', `resampler: expected an Int16Array, got ${describe(chunk)}`);
  }
  return chunk;
}

/**
 * Output length of resampling `frames` input frames from `from` to `to` Hz: `round(frames·to/from)`
 * (halves round up), computed exactly.
 */
export function resampledLength(frames: number, from: number, to: number): number {
  checkRate('input', from);
  checkRate('output', to);
  if (!Number.isSafeInteger(frames) || frames < 0) {
    throw new VoicewireError('INVALID_ARGUMENT', `resampledLength: frames must be a non-negative integer, got ${shown(frames)}`);
  }
  return roundRatio(frames, to, from);
}

/** round(n·a/b) = ⌊(2·n·a + b) / (2·b)⌋, in BigInt when the product leaves the safe range. */
function roundRatio(n: number, a: number, b: number): number {
  const p = n * a;
  if (p <= 2 ** 51) return Math.floor((2 * p + b) / (2 * b));
  return Number((2n * BigInt(n) * BigInt(a) + BigInt(b)) / (2n * BigInt(b)));
}

/**
 * The resampling engine shared by the one-shot functions and the streaming objects. It keeps,
 * per channel, a linear history of the input ({@link ResamplerHistory}: in the kernels' wasm
 * memory where there is one, compacted when full, which copies about `taps` frames per push).
 */
class PolyphaseCore implements Core {
  readonly channels: number;
  readonly identity: boolean;
  private readonly f: PolyphaseFilter | null;
  private readonly up: number;
  private readonly down: number;
  private readonly taps: number;
  private readonly h: ResamplerHistory | null;
  private readonly part: Float32Array;
  private partLen = 0;
  private phase = 0;
  /** While ≥ 0: outputs go to wasm memory from this byte address ({@link pushToWasm}). */
  private sink = -1;
  /** Whole input frames taken since the start (or the last reset). */
  private inFrames = 0;
  /** Output frames emitted since the start. */
  private outFrames = 0;

  /** Output frames emitted since the start (or the last reset). */
  get emitted(): number {
    return this.outFrames;
  }

  /** Whole input frames taken since the start (or the last reset). */
  get taken(): number {
    return this.inFrames;
  }
  /** Whether input is flushed and clamped ({@link tame}): float input; int16 input needs neither. */
  tame = true;
  readonly delayFrames: number;
  readonly delaySeconds: number;

  constructor(readonly from: number, readonly to: number, channels: number, filter: PolyphaseFilter | null) {
    this.channels = channels;
    this.identity = filter === null;
    this.part = new Float32Array(channels);
    if (this.identity) {
      this.f = null;
      this.up = this.down = 1;
      this.taps = 0;
      this.h = null;
      this.delayFrames = 0;
      this.delaySeconds = 0;
      return;
    }
    const f = filter!;
    this.f = f;
    this.up = f.up;
    this.down = f.down;
    this.taps = f.taps;
    this.h = new ResamplerHistory(channels, f.taps, f.fold !== null);
    this.delayFrames = (f.half * f.up) / f.down;
    this.delaySeconds = f.half / from;
    this.reset();
  }

  reset(): void {
    this.partLen = 0;
    this.inFrames = 0;
    this.outFrames = 0;
    if (this.identity) return;
    // The history starts with the zeros before input 0: inputs n0 − (taps − half) + 1 … −1 of output 0.
    this.h!.reset(this.taps - this.f!.half - 1);
    this.phase = 0;
  }

  /** Outputs computable once `extra` more frames are in the history. */
  private ready(extra: number): number {
    const h = this.h!;
    const m = h.len + extra - this.taps - h.base;
    if (m < 0) return 0;
    return Math.floor(((m + 1) * this.up - 1 - this.phase) / this.down) + 1;
  }

  /** Output frames the next push of `samples` interleaved samples returns. */
  outputFramesFor(samples: number): number {
    if (this.identity) return Math.floor((this.partLen + samples) / this.channels);
    return this.ready(Math.floor((this.partLen + samples) / this.channels));
  }

  /**
   * {@link pushInto} for a float chunk not yet checked: throws `RESAMPLER_NON_FINITE` (state
   * untouched) and tames as needed. Mono with the history in wasm memory: the chunk is written
   * into the history once, then checked and tamed there (one pass each, over data in cache)
   * before `len` moves; otherwise {@link checkFloat32} first, then {@link pushInto}.
   */
  pushChecked(chunk: Float32Array, out: Float32Array, at: number): number {
    const h = this.h;
    const n = chunk.length;
    // room() last: it makes room (compacts or grows) only for a chunk that will be written in place.
    if (h === null || !h.inWasm || this.channels !== 1 || n > MAX_PIECE || n < 64 || resamplerBackend() !== 'wasm-simd' || h.room(n) < n) {
      this.tame = checkFloat32(chunk);
      return this.pushInto(chunk, out, at);
    }
    const v = h.view();
    const p = h.at(0) + h.len;
    v.set(chunk, p);
    v.fill(0, p + n, p + ((n + 3) & ~3)); // the scan reads whole vectors
    if (checkFlags(chunk, scanAt(p * 4, n))) tameAt(p * 4, n);
    this.inFrames += n;
    return this.frames(chunk, 0, n, out, at, Infinity, true);
  }

  release(): void {
    this.h?.release();
  }

  /** The history (null for `from === to`). */
  get history(): ResamplerHistory | null {
    return this.h;
  }

  /**
   * Whether {@link pushToWasm} works: mono, a table design (not the decimator or the
   * interpolated table), a history in wasm memory.
   */
  get canSink(): boolean {
    const f = this.f;
    return this.channels === 1 && this.h !== null && this.h.inWasm && f!.decimator === null && f!.interp === null;
  }

  /**
   * {@link pushInto} (or, `checked`, {@link pushChecked}) with the outputs written to wasm memory
   * from byte address `addr` on, where the next stage's history takes them ({@link canSink}).
   */
  pushToWasm(chunk: Float32Array | Int16Array, addr: number, checked: boolean): number {
    this.sink = addr;
    try {
      return checked ? this.pushChecked(chunk as Float32Array, EMPTY_F32, 0) : this.pushInto(chunk, EMPTY_F32, 0);
    } finally {
      this.sink = -1;
    }
  }

  /**
   * Takes `k` mono frames that an earlier stage wrote at `len` in this history (after
   * `history.room(k)`), computing the outputs they make ready.
   */
  pushWritten(k: number, out: Float32Array, at: number): number {
    this.inFrames += k;
    return this.frames(EMPTY_F32, 0, k, out, at, Infinity, true);
  }

  /** Pushes a validated chunk, writing its outputs into `out` from frame `at`; returns frames written. */
  pushInto(chunk: Float32Array | Int16Array, out: Float32Array, at: number): number {
    const C = this.channels;
    let i = 0;
    let written = 0;
    const n = chunk.length;
    if (this.partLen > 0) {
      while (this.partLen < C && i < n) this.part[this.partLen++] = chunk[i++]!;
      if (this.partLen < C) return 0;
      this.partLen = 0;
      this.inFrames += 1;
      written += this.frames(this.part, 0, 1, out, at);
    }
    const whole = Math.floor((n - i) / C);
    if (whole > 0) {
      this.inFrames += whole;
      written += this.frames(chunk, i, whole, out, at + written);
    }
    i += whole * C;
    while (i < n) this.part[this.partLen++] = chunk[i++]!;
    return written;
  }

  /**
   * Upper bound of the samples a push of `samples` samples returns in any state, or a flush:
   * a push completes at most ⌈samples/C⌉ frames, and f more input frames make at most ⌈f·L/M⌉
   * more outputs ready (outputs ready after T frames: ⌈(T − half)·L/M⌉); a flush emits
   * round(N·L/M) − ⌈(N − half)·L/M⌉ ≤ ⌊half·L/M + 1/2⌋ frames.
   */
  maxOutputSamples(samples: number): number {
    const frames = Math.ceil(samples / this.channels);
    if (this.identity) return frames * this.channels;
    const f = this.f!;
    const push = Math.ceil((frames * f.up) / f.down);
    const flush = Math.floor((f.half * f.up) / f.down + 0.5);
    return Math.max(push, flush) * this.channels;
  }

  /** Total output frames {@link flushInto} writes. */
  flushFrames(): number {
    if (this.identity) return 0;
    return roundRatio(this.inFrames, this.to, this.from) - this.outFrames;
  }

  /**
   * Ends the stream: pads with zeros, writes the remaining outputs, resets. `total` (a cascade's
   * last stage) replaces the stream's output count `round(N·to/from)`: the zeros then also
   * stand for the earlier stage's output past its end.
   */
  flushInto(out: Float32Array, at: number, total = -1): number {
    if (this.partLen > 0) {
      const got = this.partLen;
      this.reset();
      throw new VoicewireError('PCM_PARTIAL_SAMPLE', `resampler: the input ended inside a frame (${got} of ${this.channels} channel samples)`);
    }
    if (this.identity) {
      this.reset();
      return 0;
    }
    const remaining = total < 0 ? this.flushFrames() : total - this.outFrames;
    // `half` zeros after the last input make every output up to round(N·L/M) − 1 computable
    // (its n0 ≤ N − 1); the count limit stops there, exactly where one-shot stops. A cascade's
    // total may be one more: `down` more zeros cover it.
    const written = this.frames(null, 0, this.f!.half + (total < 0 ? 0 : this.f!.down), out, at, remaining);
    this.reset();
    return written;
  }

  /**
   * Appends `frames` frames (interleaved in `src` from sample `s0`, or zeros when `src` is null;
   * `inPlace`: mono frames already written at `len`, room made) piece by piece, computing every
   * output that becomes ready (at most `limit`). The caller counts `inFrames`.
   */
  private frames(src: Float32Array | Int16Array | null, s0: number, frames: number, out: Float32Array, at: number, limit = Infinity, inPlace = false): number {
    const C = this.channels;
    let done = 0;
    let written = 0;
    if (this.identity) {
      if (src !== null) out.set(src.subarray(s0, s0 + frames * C), at * C);
      this.outFrames += src === null ? 0 : frames;
      return src === null ? 0 : frames;
    }
    const h = this.h!;
    while (done < frames && written < limit) {
      const k = h.room(frames - done);
      const len = h.len;
      const v = h.view();
      for (let c = 0; c < C; c++) {
        const p = h.at(c) + len;
        if (inPlace) {
          // written and checked by pushChecked
        } else if (src === null) {
          v.fill(0, p, p + k);
        } else if (C === 1) {
          v.set(src.subarray(s0 + done, s0 + done + k), p); // Int16Array: converted as it is written
          if (this.tame) tame(v, p, p + k);
        } else {
          for (let j = 0, s = s0 + done * C + c; j < k; j++, s += C) v[p + j] = src[s]!;
          if (this.tame) tame(v, p, p + k);
        }
        h.wrote(c, len, k);
      }
      h.len = len + k;
      done += k;
      const n = Math.min(this.ready(0), limit - written);
      if (n > 0) {
        this.compute(out, at + written, n);
        written += n;
      }
    }
    this.outFrames += written;
    return written;
  }

  private compute(out: Float32Array, at: number, n: number): void {
    const f = this.f!;
    const C = this.channels;
    const h = this.h!;
    // The view is fetched per call: a kernel's first call may allocate its tables (memory grows).
    if (f.decimator !== null) {
      for (let c = 0; c < C; c++) runDecimator(f.decimator, f.down, f.taps, h.view(), h.at(c), h.base, out, at * C + c, C, n);
      h.base += n * f.down;
      return;
    }
    if (f.interp === null) {
      let r = 0;
      for (let c = 0; c < C; c++) {
        r = runPolyphase(f, h.view(), h.at(c), h.base, this.phase, out, at * C + c, C, n, h.xr(c), this.sink < 0 ? -1 : this.sink + at * 4);
      }
      h.base = Math.floor(r / f.up);
      this.phase = r - h.base * f.up;
      return;
    }
    // No exact table (issue 11 §6): the two rows around the exact offset p/L, interpolated.
    const ip = f.interp!;
    const rows = ip.rows;
    const tab = ip.coefs;
    const taps = f.taps;
    const hist = h.view();
    let base = h.base;
    let phase = this.phase;
    for (let k = 0; k < n; k++) {
      const pos = (phase * rows) / f.up;
      const q = Math.floor(pos);
      const t = pos - q;
      const r0 = q * taps;
      const r1 = q === rows ? r0 : r0 + taps;
      for (let c = 0; c < C; c++) {
        const x0 = h.at(c) + base;
        // Four partial sums per row (taps is a multiple of 8): breaks the add dependency chain.
        let a0 = 0, a1 = 0, a2 = 0, a3 = 0, b0 = 0, b1 = 0, b2 = 0, b3 = 0; // prettier-ignore
        for (let j = 0; j < taps; j += 4) {
          const x = x0 + j;
          const u0 = hist[x]!;
          const u1 = hist[x + 1]!;
          const u2 = hist[x + 2]!;
          const u3 = hist[x + 3]!;
          a0 += tab[r0 + j]! * u0;
          a1 += tab[r0 + j + 1]! * u1;
          a2 += tab[r0 + j + 2]! * u2;
          a3 += tab[r0 + j + 3]! * u3;
          b0 += tab[r1 + j]! * u0;
          b1 += tab[r1 + j + 1]! * u1;
          b2 += tab[r1 + j + 2]! * u2;
          b3 += tab[r1 + j + 3]! * u3;
        }
        const a = a0 + a1 + (a2 + a3);
        const b = b0 + b1 + (b2 + b3);
        out[(at + k) * C + c] = a + (b - a) * t;
      }
      const s = phase + f.down;
      base += Math.floor(s / f.up);
      phase = s % f.up;
    }
    h.base = base;
    this.phase = phase;
  }
}


/**
 * Below this magnitude an input sample is read as 0 (2^-50, −300 dBFS): denormal inputs, and
 * products of tiny inputs with small coefficients, would otherwise take the CPU's slow path
 * (issue 11 §7: 40× the time; WebAssembly cannot set flush-to-zero).
 */
export const RESAMPLER_FLUSH_BELOW = FLUSH_BELOW;
/**
 * Input samples are clamped to ±this (2^64, +385 dBFS): a constant 3.4e38 input would overflow
 * float32 sums to ±Infinity and NaN (issue 11 §7); with the clamp every output is finite.
 */
export const RESAMPLER_CLAMP_ABOVE = CLAMP_ABOVE;

/** The engine for `from → to` at `quality`: one polyphase stage or a cascade of two. */
function createCore(from: number, to: number, channels: number, quality: ResamplerQuality): Core {
  if (from === to) return new PolyphaseCore(from, to, channels, null);
  const stages = designStages(from, to, quality);
  if (stages.length === 1) return new PolyphaseCore(from, to, channels, stages[0]!.filter);
  return new CascadeCore(from, to, channels, stages);
}

function checkedMax(core: Core, inputLength: number): number {
  if (!Number.isSafeInteger(inputLength) || inputLength < 0) {
    throw new VoicewireError('INVALID_ARGUMENT', `resampler: maxOutputLength needs a non-negative integer, got ${shown(inputLength)}`);
  }
  return core.maxOutputSamples(inputLength);
}

/** What the resamplers need of an engine: {@link PolyphaseCore}, or {@link CascadeCore} of two. */
interface Core {
  readonly identity: boolean;
  tame: boolean;
  readonly delayFrames: number;
  readonly delaySeconds: number;
  reset(): void;
  outputFramesFor(samples: number): number;
  pushInto(chunk: Float32Array | Int16Array, out: Float32Array, at: number): number;
  pushChecked(chunk: Float32Array, out: Float32Array, at: number): number;
  maxOutputSamples(samples: number): number;
  flushFrames(): number;
  flushInto(out: Float32Array, at: number): number;
  /** Returns the wasm memory now (one-shot resampling); the core is unusable after. */
  release(): void;
}

/**
 * Two polyphase stages in a row (resampler-design.ts `designStages`): the first stage's output
 * goes through a scratch buffer (grown to the largest push, then reused) into the second. Each
 * stage is chunking-exact, so the cascade is; the flush ends the first stage, feeds its tail
 * through, and ends the second at `round(N·to/from)` outputs, exactly like one stage.
 */
class CascadeCore implements Core {
  readonly identity = false;
  readonly delayFrames: number;
  readonly delaySeconds: number;
  private readonly a: PolyphaseCore;
  private readonly b: PolyphaseCore;
  private mid = EMPTY_F32;
  /** Whether stage 1 writes into stage 2's history ({@link PolyphaseCore.pushToWasm}). */
  private readonly direct: boolean;
  /** Input frames per piece of a long chunk: stage 1 makes at most MAX_PIECE/2 + 1 outputs of it. */
  private readonly pieceIn: number;

  constructor(readonly from: number, readonly to: number, readonly channels: number, stages: readonly ResamplerStage[]) {
    const [s1, s2] = stages as [ResamplerStage, ResamplerStage];
    this.a = new PolyphaseCore(s1.from, s1.to, channels, s1.filter);
    this.b = new PolyphaseCore(s2.from, s2.to, channels, s2.filter);
    this.b.tame = false; // the first stage's output is finite and bounded
    this.direct = this.a.canSink && this.b.history !== null && this.b.history.inWasm;
    this.pieceIn = Math.max(1, Math.floor(((MAX_PIECE / 2) * s1.from) / s1.to));
    // Output k needs stage-1 output ⌊k·M₂/L₂⌋ + half₂, which needs input ⌊…·M₁/L₁⌋ + half₁.
    this.delaySeconds = this.a.delaySeconds + this.b.delaySeconds;
    this.delayFrames = this.delaySeconds * to;
  }

  get tame(): boolean {
    return this.a.tame;
  }

  set tame(v: boolean) {
    this.a.tame = v;
  }

  reset(): void {
    this.a.reset();
    this.b.reset();
  }

  outputFramesFor(samples: number): number {
    return this.b.outputFramesFor(this.a.outputFramesFor(samples) * this.channels);
  }

  private scratch(frames: number): Float32Array {
    const n = frames * this.channels;
    if (this.mid.length < n) this.mid = new Float32Array(Math.max(n, this.mid.length * 2));
    return this.mid;
  }

  pushInto(chunk: Float32Array | Int16Array, out: Float32Array, at: number): number {
    return this.push(chunk, out, at, false);
  }

  release(): void {
    this.a.release();
    this.b.release();
  }

  pushChecked(chunk: Float32Array, out: Float32Array, at: number): number {
    return this.push(chunk, out, at, true);
  }

  /**
   * Stage 1's outputs go straight into stage 2's history where both are in wasm memory (mono);
   * else through the scratch buffer.
   */
  private push(chunk: Float32Array | Int16Array, out: Float32Array, at: number, checked: boolean): number {
    if (this.direct && chunk.length > this.pieceIn) {
      // A long chunk (one-shot) goes through in pieces that stage 2's history takes whole,
      // checked as a whole first so that a rejected chunk changes nothing.
      if (checked) this.a.tame = checkFloat32(chunk as Float32Array);
      let written = 0;
      for (let i = 0; i < chunk.length; i += this.pieceIn) written += this.push(chunk.subarray(i, i + this.pieceIn), out, at + written, false);
      return written;
    }
    const m = this.a.outputFramesFor(chunk.length);
    const hb = this.b.history!;
    // room() keeps the state: a rejected chunk changes nothing.
    if (this.direct && m <= MAX_PIECE && hb.room(m) >= m) {
      const n = this.a.pushToWasm(chunk, (hb.at(0) + hb.len) * 4, checked);
      return this.b.pushWritten(n, out, at);
    }
    const mid = this.scratch(m);
    if (checked) this.a.pushChecked(chunk as Float32Array, mid, 0);
    else this.a.pushInto(chunk, mid, 0);
    return this.b.pushInto(mid.subarray(0, m * this.channels), out, at);
  }

  /** ⌈⌈f·L₁/M₁⌉·L₂/M₂⌉ for a push (each stage's bound in turn), or the flush's bound. */
  maxOutputSamples(samples: number): number {
    const C = this.channels;
    const push = this.b.maxOutputSamples(this.a.maxOutputSamples(samples));
    return Math.max(push, this.flushBound() * C);
  }

  /** Frames a flush writes at most: stage 2's own flush, what stage 1's tail makes ready, and one. */
  private flushBound(): number {
    const C = this.channels;
    return this.b.maxOutputSamples(this.a.maxOutputSamples(0)) / C + this.b.maxOutputSamples(0) / C + 1;
  }

  flushFrames(): number {
    return roundRatio(this.a.taken, this.to, this.from) - this.b.emitted;
  }

  flushInto(out: Float32Array, at: number): number {
    const total = roundRatio(this.a.taken, this.to, this.from);
    // Stage 1 ends first (it throws on a partial frame and resets itself); its tail goes on.
    const tail = this.scratch(this.a.flushFrames());
    let m: number;
    try {
      m = this.a.flushInto(tail, 0);
    } catch (err) {
      this.reset();
      throw err;
    }
    const n = this.b.pushInto(tail.subarray(0, m * this.channels), out, at);
    return n + this.b.flushInto(out, at + n, total);
  }
}

/** What the Float32 and Int16 resamplers share: the core, its delay, `maxOutputLength`, `reset`. */
abstract class CoreResampler {
  protected readonly core: Core;
  readonly delay: number;
  readonly delaySeconds: number;

  constructor(readonly from: number, readonly to: number, readonly channels: number, readonly quality: ResamplerQuality) {
    this.core = createCore(from, to, channels, quality);
    this.delay = this.core.delayFrames;
    this.delaySeconds = this.core.delaySeconds;
  }

  maxOutputLength(inputLength: number): number {
    return checkedMax(this.core, inputLength);
  }

  reset(): void {
    this.core.reset();
  }
}

/** Float32 streaming resampler: validation around the core, one output array per call (or the caller's). */
class FloatResampler extends CoreResampler implements Resampler<Float32Array> {
  /** Whether a partial frame held over from an earlier chunk may need taming. */
  private carry = false;

  push(chunk: Float32Array, out?: Float32Array): Float32Array {
    if (!(chunk instanceof Float32Array)) checkFloat32(chunk); // throws INVALID_ARGUMENT
    const m = this.core.outputFramesFor(chunk.length) * this.channels;
    const dst = out === undefined ? new Float32Array(m) : checkOut(out, Float32Array, m, chunk);
    if (this.channels === 1) {
      // Mono: checked (and tamed where needed) as it is written into the history.
      this.core.pushChecked(chunk, dst, 0);
    } else {
      const need = checkFloat32(chunk);
      // Tame only where some sample needs it: the held-over part of a frame counts as this chunk's.
      this.core.tame = need || this.carry;
      this.carry = need || (this.carry && chunk.length < this.channels);
      this.core.pushInto(chunk, dst, 0);
    }
    return out === undefined ? dst : dst.subarray(0, m);
  }

  flush(out?: Float32Array): Float32Array {
    const m = this.core.flushFrames() * this.channels;
    const dst = out === undefined ? new Float32Array(m) : checkOut(out, Float32Array, m, null);
    this.core.flushInto(dst, 0);
    return out === undefined ? dst : dst.subarray(0, m);
  }
}

/**
 * Int16 streaming resampler. The float core runs on the raw sample values (unity scale), so
 * int16 in → int16 out has exactly unity gain and `from === to` is bit-exact (chaining pcm.ts's
 * `int16ToFloat32` (÷32768) and `float32ToInt16` (×32767) would lose 0.00027 dB and change
 * samples); results are rounded half away from zero and clamped. The input is converted as the
 * history takes it (one pass); the float output scratch grows to the largest chunk and is reused.
 */
class Int16Resampler extends CoreResampler implements Resampler<Int16Array> {
  private outBuf = new Float32Array(0);

  constructor(from: number, to: number, channels: number, quality: ResamplerQuality) {
    super(from, to, channels, quality);
    this.core.tame = false; // int16 values are neither tiny nor huge
  }

  push(chunk: Int16Array, out?: Int16Array): Int16Array {
    checkInt16(chunk);
    const n = chunk.length;
    const m = this.core.outputFramesFor(n) * this.channels;
    // The outputs go to float scratch first and `dst` is written only after the whole chunk is
    // read, so `out` may even overlap `chunk` here; it is only checked for type and length.
    const dst = out === undefined ? new Int16Array(m) : checkOut(out, Int16Array, m, null);
    const fOut = this.scratchOut(m);
    this.core.pushInto(chunk, fOut, 0); // int16 → float32 (exact) as the history takes it
    roundToInt16(fOut, m, dst);
    return out === undefined ? dst : dst.subarray(0, m);
  }

  flush(out?: Int16Array): Int16Array {
    const m = this.core.flushFrames() * this.channels;
    const dst = out === undefined ? new Int16Array(m) : checkOut(out, Int16Array, m, null);
    const fOut = this.scratchOut(m);
    this.core.flushInto(fOut, 0);
    roundToInt16(fOut, m, dst);
    return out === undefined ? dst : dst.subarray(0, m);
  }

  private scratchOut(m: number): Float32Array {
    if (this.outBuf.length < m) this.outBuf = new Float32Array(Math.max(m, this.outBuf.length * 2));
    return this.outBuf;
  }
}

/**
 * Creates a streaming Float32 resampler. Output sample `k` of the stream is emitted as soon as
 * the input it needs has arrived (see {@link Resampler.delay}); pushes plus `flush()` concatenate
 * to exactly `resample(wholeInput, from, to)`, bit for bit, however the input is chunked.
 * Default quality `'high'` (alias-free); see {@link ResampleOptions.quality}.
 *
 * Speed: every pair of the six service rates runs on a phase table built once per process.
 * Ratios whose reduced `L` exceeds 1024 phases (48000 → 47999) or whose table would exceed 1 M
 * coefficients run on an interpolated table (two dot products per output, in JS): at most about
 * twice the work per input sample of a table pair, whatever the rates (see `resamplerCost`).
 *
 * @example
 * const r = createResampler({ from: 48000, to: 24000 });
 * const out = new Float32Array(r.maxOutputLength(3840)); // optional: no allocation per push
 * for (const chunk of chunks) send(r.push(chunk, out)); // a view of `out`: send/copy before the next push
 * send(r.flush(out));
 */
export function createResampler(options: ResamplerOptions): Resampler<Float32Array> {
  const o = checkOptions(objectArg(options, 'createResampler options').from, options.to, options);
  return new FloatResampler(o.from, o.to, o.channels, o.quality);
}

/**
 * Creates a streaming resampler with Int16 input and output (same timing and chunk exactness as
 * {@link createResampler}); unity gain, results rounded to nearest and clamped to int16.
 */
export function createInt16Resampler(options: ResamplerOptions): Resampler<Int16Array> {
  const o = checkOptions(objectArg(options, 'createInt16Resampler options').from, options.to, options);
  return new Int16Resampler(o.from, o.to, o.channels, o.quality);
}

/**
 * Resamples a whole Float32 signal (interleaved when `channels > 1`) from `fromRate` to
 * `toRate` Hz. The output has exactly `round(frames·toRate/fromRate)` frames and zero lag: output
 * sample `k` stands for time `k/toRate`. Default quality `'high'`.
 */
export function resample(input: Float32Array, fromRate: number, toRate: number, options: ResampleOptions = {}): Float32Array {
  const o = checkOptions(fromRate, toRate, options);
  const need = checkFloat32(input);
  if (input.length % o.channels !== 0) {
    throw new VoicewireError('PCM_PARTIAL_SAMPLE', `resample: ${input.length} samples is not a whole number of ${o.channels}-channel frames`);
  }
  const frames = input.length / o.channels;
  const out = new Float32Array(roundRatio(frames, o.to, o.from) * o.channels);
  const core = createCore(o.from, o.to, o.channels, o.quality);
  try {
    core.tame = need;
    const at = core.pushInto(input, out, 0);
    core.flushInto(out, at);
  } finally {
    core.release();
  }
  return out;
}

/**
 * {@link resample} for Int16 samples: unity gain (no float scaling), output rounded to nearest
 * and clamped to int16.
 */
export function resampleInt16(input: Int16Array, fromRate: number, toRate: number, options: ResampleOptions = {}): Int16Array {
  const o = checkOptions(fromRate, toRate, options);
  checkInt16(input);
  if (input.length % o.channels !== 0) {
    throw new VoicewireError('PCM_PARTIAL_SAMPLE', `resampleInt16: ${input.length} samples is not a whole number of ${o.channels}-channel frames`);
  }
  // The core converts int16 → float32 (exact) as its history takes the input: no float copy of it.
  const f = new Float32Array(roundRatio(input.length / o.channels, o.to, o.from) * o.channels);
  const core = createCore(o.from, o.to, o.channels, o.quality);
  try {
    core.tame = false; // int16 values are neither tiny nor huge
    const at = core.pushInto(input, f, 0);
    core.flushInto(f, at);
  } finally {
    core.release();
  }
  const out = new Int16Array(f.length);
  roundToInt16(f, f.length, out);
  return out;
}

/** Wraps a {@link Resampler} as an {@link Incremental} core (empty outputs are not emitted). */
export function resamplerCore<T extends Float32Array | Int16Array>(r: Resampler<T>): Incremental<T, T> {
  incrementalArg(r, 'resamplerCore resampler');
  return {
    push(chunk: T): readonly T[] {
      const out = r.push(chunk);
      return out.length > 0 ? [out] : [];
    },
    flush(): readonly T[] {
      const out = r.flush();
      return out.length > 0 ? [out] : [];
    },
  };
}

/**
 * A web `TransformStream` of Float32Array chunks through a streaming resampler (interleaved
 * when `channels > 1`). Backpressure is the platform's.
 */
export function createResamplerStream(
  options: ResamplerOptions,
  streamOptions: WebTransformOptions<Float32Array, Float32Array> = {},
): TransformStream<Float32Array, Float32Array> {
  return toWebTransformStream(resamplerCore(createResampler(options)), streamOptions);
}
