/**
 * Filter design for the polyphase resampler: a Kaiser-windowed sinc, sampled at every phase of the
 * exact rational ratio `L/M` (after reducing `to/from` by their gcd), built once per
 * (ratio, quality) and cached. Platform-neutral.
 *
 * Band plan, in fractions of the lower of the two Nyquist frequencies: the passband is flat up to
 * `passband`, the stopband starts at `stopband`, and the sinc's cutoff (its −6 dB point) sits
 * half-way between them. Content at `f ≥ stopband` is attenuated by the design attenuation;
 * content in the transition band is only partly attenuated and, when it lies above the lower
 * Nyquist, folds back (downsampling: an alias at `2 − f`; upsampling: an image at `2 − f` of the
 * input's Nyquist). So the stopband edge decides what can fold back:
 *
 * - `'high'` and `'fast'` put the cutoff AT the Nyquist (stopband 1.1× / 1.15×): content between
 *   1.0× and the stopband edge folds back into the band between the passband edge and the
 *   Nyquist, at up to −6 dB (the top 10 % / 15 % of the band is not alias-free). This makes the 2:1 filter a half-band filter
 *   (every other tap zero) and the upsamplers copy every L-th output, which is why they are fast.
 * - `'best'` puts the stopband edge at the Nyquist (sox's `rate` class): nothing above the Nyquist
 *   folds back at all; it costs twice the taps of `'high'`.
 *
 * The Kaiser length and β come from Kaiser's formulas (J. F. Kaiser, "Nonrecursive digital filter
 * design using the I0-sinh window function", 1974): β = 0.1102·(A − 8.7),
 * N − 1 = (A − 7.95) / (2.285·Δω), with Δω the transition width `stopband − passband`.
 */

/** A resampler quality setting: `'high'` (default), `'fast'` or `'best'`. */
export type ResamplerQuality = 'high' | 'fast' | 'best';

/** What a quality setting designs for. */
export interface ResamplerQualitySpec {
  /** Designed stopband attenuation, dB (Kaiser's A). */
  readonly attenuationDb: number;
  /** Edge of the flat passband, as a fraction of the lower Nyquist frequency. */
  readonly passband: number;
  /**
   * Edge of the stopband, as a fraction of the lower Nyquist frequency: content at or above it
   * is attenuated by `attenuationDb`. 1 means nothing above the Nyquist folds back.
   */
  readonly stopband: number;
}

/**
 * The three settings, with what they guarantee and measure (2 s tones at −6 dBFS, sine fit; worst
 * case over the pairs of the six service rates in bench/quality.ts and test/audio/resampler.test.ts).
 * "Nyquist" is the lower of the two Nyquist frequencies; "folds back" means an alias (when
 * downsampling) or an image (when upsampling) of content near the Nyquist.
 *
 * - `high` (default): designed for 126 dB, flat to 0.9× Nyquist (gain within ±0.00001 dB),
 *   −6 dB AT the Nyquist, stopband from 1.1×. Guarantees: the band 0–0.9× is flat and free of
 *   aliases and images of everything at or above 1.1× (a tone at 1.1× comes out ≤ −132 dBFS, at
 *   1.25× ≤ −144 dBFS); SNR of a 1 kHz tone ≥ 139.9 dB; images of tones up to 0.9× ≥ 125.7 dB
 *   down. NOT guaranteed: content between 1.0× and 1.1× Nyquist folds back into 0.9×–1.0× (the
 *   top 10 % of the output band), attenuated only by the transition band. Measured 48k→24k: a
 *   tone at 1.017× (12.2 kHz) aliases at −11 dB re the tone, 1.05× at −30 dB, 1.083× at −70 dB;
 *   24k→48k: an input tone at 0.95× (11.4 kHz) leaves an image at 1.05× only −30 dB down. (sox
 *   `rate`: −149 / −161 / −182 dB and −130 dB; speexdsp q5 instead rolls off early, −1.8 dB at
 *   0.9×, and lets a tone at 1.05× through at −101 dB.) 88 taps per output when upsampling, 168
 *   for 2:1 (a half-band filter: half of them zero, skipped), 248 for 3:1.
 * - `fast`: designed for 96 dB, flat to 0.85× Nyquist (±0.0002 dB), −6 dB at the Nyquist,
 *   stopband from 1.15×. Guarantees: 0–0.85× is flat and free of aliases and images of everything
 *   at or above 1.15× (≤ −106 dBFS); SNR of a 1 kHz tone ≥ 105.9 dB; images ≥ 101 dB. Content
 *   between 1.0× and 1.15× folds back into 0.85×–1.0× (at 1.05×: −16.5 dB). About half the taps
 *   of `high`, 1.5–1.8× its speed.
 * - `best` (sox's default `rate` class: 125 dB, nothing aliases): designed for 126 dB, flat to
 *   0.9× Nyquist (±0.00001 dB), −6 dB at 0.95× (sox: −3 dB at 0.95×, flat to ~0.92×), stopband
 *   from 1.0×. Guarantees: nothing at or above the Nyquist folds back (tones at 1.0×–1.05× come
 *   out ≤ −134 dBFS, at 1.25× ≤ −145 dBFS; upsampling, the image of a tone at 0.95×–0.99× of the
 *   input's Nyquist is ≥ 128 dB down); SNR of a 1 kHz tone ≥ 137.5 dB; images of tones up to 0.9×
 *   ≥ 133.9 dB down. Twice the taps of `high` and no zero taps (168 per output when upsampling,
 *   336 for 2:1, 496 for 3:1), so 1.5–2.5× slower than `high`: about the speed of speexdsp q5 on
 *   24k→8k, 48k→24k and 24k→16k, several times it on 44.1k→24k and 22.05k→48k. Its look-ahead
 *   (the stream's delay) is twice `high`'s: 3.5 ms at 48k→24k, 10.3 ms at 48k→8k.
 */
export const RESAMPLER_QUALITIES: { readonly [Q in ResamplerQuality]: ResamplerQualitySpec } = {
  high: { attenuationDb: 126, passband: 0.9, stopband: 1.1 },
  fast: { attenuationDb: 96, passband: 0.85, stopband: 1.15 },
  best: { attenuationDb: 126, passband: 0.9, stopband: 1 },
};

/** One designed polyphase filter bank. */
export interface PolyphaseFilter {
  /** Upsampling factor of the reduced ratio (`to / gcd`): the number of phases. */
  readonly up: number;
  /** Downsampling factor of the reduced ratio (`from / gcd`). */
  readonly down: number;
  /**
   * Half-length of the kernel in input samples: output `k` (at input time `t = k·M/L`,
   * `n0 = ⌊t⌋`) needs inputs up to `n0 + half`; this is the look-ahead a stream waits for.
   */
  readonly half: number;
  /**
   * Taps per phase: `2·half` rounded up to a multiple of 8 (zero taps added at the old end), so
   * output `k` reads inputs `n0 − (taps − half) + 1 … n0 + half`.
   */
  readonly taps: number;
  /**
   * `up × taps` coefficients, phase-major, or `null` when that table would exceed
   * {@link MAX_TABLE_COEFS} (rows are then computed per output by {@link fillPhaseRow}). Phase `p`
   * (`p = k·M mod L`) holds, for input `n = n0 − (taps − half) + 1 + j`, the kernel at
   * `τ = t − n = taps − half − 1 − j + p/L`.
   */
  readonly coefs: Float32Array | null;
  /** Input-index step from output `k` to `k+1`, by phase (`null` with `coefs`). */
  readonly step: Int32Array | null;
  /** Phase of output `k+1`, by the phase of output `k` (`null` with `coefs`). */
  readonly next: Int32Array | null;
  /**
   * By phase: `1 + j` when the row is a unit impulse at tap `j` (the output is input `j` itself,
   * copied instead of a dot product: phase 0 of every upsampler, a third of the outputs of 3:1
   * and 3:2), else 0. `null` when no row is one (or without `coefs`).
   */
  readonly copy: Int32Array | null;
  /** Kaiser β of the window. */
  readonly beta: number;
  /**
   * The sinc's cutoff as a fraction of the lower Nyquist, `cutNum / cutDen` (integers; 1/1 for
   * `'high'` and `'fast'`, 19/20 for `'best'`), so the kernel's zeros can be placed exactly.
   */
  readonly cutNum: number;
  readonly cutDen: number;
  /** Designed stopband attenuation, dB. */
  readonly attenuationDb: number;
  /** Decimation by 2 (a half-band filter): the same taps split into branches that skip the zeros, else null. */
  readonly decimator: DecimatorBranches | null;
}

/**
 * Integer decimation by M (L = 1) with the cutoff at the output Nyquist: the kernel
 * r·sinc(τ/M) is zero at every τ that is a non-zero multiple of M, so of the M interleaved
 * sub-filters (taps `j ≡ r mod M`) one holds only the centre tap (a half-band filter when M = 2).
 * The others run as plain FIRs over the input de-interleaved by M (each output steps one sample),
 * so the zeros cost nothing. Used for M = 2, where it halves the work; the code handles any M.
 */
export interface DecimatorBranches {
  /** The centre tap's coefficient and its index in the phase row. */
  readonly center: number;
  readonly centerTap: number;
  /**
   * The sub-filters: `filter` is a one-phase FIR (`up = down = 1`) whose row is `pad` zeros then
   * the `count` coefficients at row indices `first, first + M, …`.
   */
  readonly branches: readonly { readonly first: number; readonly count: number; readonly pad: number; readonly filter: PolyphaseFilter }[];
}

/** Largest phase table kept in memory (4 M coefficients, 16 MB); larger ones are computed per output. */
export const MAX_TABLE_COEFS = 1 << 22;

/** Greatest common divisor of two positive integers. */
export function gcd(a: number, b: number): number {
  while (b !== 0) {
    const t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/** Modified Bessel function of the first kind, order 0, by its power series. */
export function besselI0(x: number): number {
  const q = (x * x) / 4;
  let term = 1;
  let sum = 1;
  for (let k = 1; k < 500; k++) {
    term *= q / (k * k);
    sum += term;
    if (term < sum * 1e-17) break;
  }
  return sum;
}

/** Kaiser β for a stopband attenuation of `a` dB. */
export function kaiserBeta(a: number): number {
  if (a > 50) return 0.1102 * (a - 8.7);
  if (a >= 21) return 0.5842 * Math.pow(a - 21, 0.4) + 0.07886 * (a - 21);
  return 0;
}

/**
 * Half-length (in input samples, rounded up) of the Kaiser window for attenuation `a` dB and a
 * transition band `width` wide, in cycles per input sample.
 */
export function kaiserHalfLength(a: number, width: number): number {
  const n1 = (a - 7.95) / (2.285 * 2 * Math.PI * width);
  return Math.max(1, Math.ceil(n1 / 2));
}

const cache = new Map<string, PolyphaseFilter>();

/**
 * The polyphase filter for `from → to` at `quality`, designed on first use and cached. `from` and
 * `to` are positive integers (checked by the caller).
 */
export function designPolyphaseFilter(from: number, to: number, quality: ResamplerQuality): PolyphaseFilter {
  const g = gcd(from, to);
  const up = to / g;
  const down = from / g;
  const key = `${up}/${down}/${quality}`;
  let f = cache.get(key);
  if (f === undefined) {
    f = build(up, down, RESAMPLER_QUALITIES[quality]);
    cache.set(key, f);
  }
  return f;
}

function build(up: number, down: number, spec: ResamplerQualitySpec): PolyphaseFilter {
  // r: the lower Nyquist over the input Nyquist. The kernel, in input-sample time τ, is
  // c·r·sinc(c·r·τ)·kaiser(τ/half), c the cutoff (fraction of the lower Nyquist): −6 dB at c×
  // the lower Nyquist, unity gain at DC.
  const r = Math.min(1, up / down);
  // Transition band passband … stopband (× the lower Nyquist), its width in cycles per input sample.
  const width = ((spec.stopband - spec.passband) / 2) * r;
  const half = kaiserHalfLength(spec.attenuationDb, width);
  const taps = (2 * half + 7) & ~7;
  const beta = kaiserBeta(spec.attenuationDb);
  // Cutoff as an exact fraction (to 1/1000): 1/1 when the band plan is symmetric around the Nyquist.
  let cutNum = Math.round(((spec.passband + spec.stopband) / 2) * 1000);
  let cutDen = 1000;
  const g = gcd(cutNum, cutDen);
  cutNum /= g;
  cutDen /= g;
  const partial = { up, down, half, taps, beta, attenuationDb: spec.attenuationDb, cutNum, cutDen };
  if (up * taps > MAX_TABLE_COEFS) return { ...partial, coefs: null, step: null, next: null, copy: null, decimator: null };
  const coefs = new Float32Array(up * taps);
  for (let p = 0; p < up; p++) fillPhaseRow(partial, p, coefs.subarray(p * taps, (p + 1) * taps));
  const step = new Int32Array(up);
  const next = new Int32Array(up);
  for (let p = 0; p < up; p++) {
    const t = p + down;
    step[p] = Math.floor(t / up);
    next[p] = t % up;
  }
  const f: PolyphaseFilter = { ...partial, coefs, step, next, copy: unitRows(coefs, up, taps), decimator: null };
  // Only M = 2 pays: for M = 3 the two remaining branches cost as much as the zeros they skip.
  // Only a cutoff at the Nyquist (1/1) gives the half-band's zero taps.
  return up === 1 && down === 2 && cutNum === cutDen ? { ...f, decimator: splitDecimator(f) } : f;
}

/** The {@link PolyphaseFilter.copy} table: which rows are a single tap of exactly 1. */
function unitRows(coefs: Float32Array, up: number, taps: number): Int32Array | null {
  const copy = new Int32Array(up);
  let any = false;
  for (let p = 0; p < up; p++) {
    let at = -1;
    for (let j = 0; j < taps; j++) {
      const v = coefs[p * taps + j]!;
      if (v === 0) continue;
      if (v !== 1 || at >= 0) {
        at = -2;
        break;
      }
      at = j;
    }
    if (at >= 0) {
      copy[p] = at + 1;
      any = true;
    }
  }
  return any ? copy : null;
}

function splitDecimator(f: PolyphaseFilter): DecimatorBranches {
  const M = f.down;
  const row = f.coefs!;
  const lead = f.taps - f.half;
  const centerTap = lead - 1; // τ = 0
  const lo = lead - f.half; // first index with |τ| < half
  const hi = f.taps - 2; // last one
  const branches: { first: number; count: number; pad: number; filter: PolyphaseFilter }[] = [];
  for (let r = 0; r < M; r++) {
    if (r === centerTap % M) continue;
    const first = lo + ((r - (lo % M) + M) % M);
    const count = Math.floor((hi - first) / M) + 1;
    const taps = (count + 7) & ~7;
    const pad = taps - count;
    const coefs = new Float32Array(taps);
    for (let i = 0; i < count; i++) coefs[pad + i] = row[first + i * M]!;
    const filter: PolyphaseFilter = {
      up: 1, down: 1, half: 0, taps, coefs, step: Int32Array.of(1), next: Int32Array.of(0), copy: null, beta: f.beta, attenuationDb: f.attenuationDb, cutNum: 1, cutDen: 1, decimator: null, // prettier-ignore
    };
    branches.push({ first, count, pad, filter });
  }
  return { center: row[centerTap]!, centerTap, branches };
}

const rowScratch: { buf: Float64Array } = { buf: new Float64Array(256) };

/**
 * Writes the `taps` coefficients of phase `p` into `dst` (computed in float64, normalised to
 * unity DC gain, stored as float32). The one definition of the kernel: the cached tables are
 * filled by it, and the huge-ratio path calls it per output, so both give identical values.
 */
export function fillPhaseRow(
  f: { readonly up: number; readonly down: number; readonly half: number; readonly taps: number; readonly beta: number; readonly cutNum: number; readonly cutDen: number },
  p: number,
  dst: Float32Array,
): void {
  const { up, down, half, taps, beta, cutNum, cutDen } = f;
  if (rowScratch.buf.length < taps) rowScratch.buf = new Float64Array(taps);
  const row = rowScratch.buf;
  const i0Beta = besselI0(beta);
  const lead = taps - half;
  // sinc argument c·r·τ as an exact fraction (num·cutNum) / xDen, so the sinc's zeros come out
  // exactly 0 (c = cutNum / cutDen; with c = 1 this is num / max(up, down)).
  const xDen = (up < down ? down : up) * cutDen;
  let sum = 0;
  for (let j = 0; j < taps; j++) {
    const num = (lead - 1 - j) * up + p; // τ = num / up
    const u = num / up / half;
    let v = 0;
    if (u > -1 && u < 1) {
      const w = besselI0(beta * Math.sqrt(1 - u * u)) / i0Beta;
      const x = num * cutNum;
      const s = x === 0 ? 1 : x % xDen === 0 ? 0 : Math.sin((Math.PI * x) / xDen) / ((Math.PI * x) / xDen);
      v = s * w;
    }
    row[j] = v;
    sum += v;
  }
  // Normalise every phase to unity DC gain (this also supplies the factor r of r·sinc(r·τ)):
  // removes the DC-image spurs a Kaiser ripple would leave at multiples of the input rate.
  const g = 1 / sum;
  for (let j = 0; j < taps; j++) dst[j] = row[j]! * g;
}
