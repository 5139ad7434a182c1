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
 * - `'high'` (the default) and `'best'` put the stopband edge AT the Nyquist (sox's `rate`
 *   class, like soxr and libsamplerate): nothing above the Nyquist folds back. `'high'` is a
 *   minimax (Parks–McClellan, remez.ts) design for 102 dB with ±0.007 dB passband ripple, which
 *   is about 25 % shorter than a Kaiser window for the same stopband; `'best'` is a 126 dB Kaiser.
 * - `'folding'` and `'fast'` put the cutoff AT the Nyquist (stopband 1.1× / 1.15×): content
 *   between 1.0× and the stopband edge folds back into the band between the passband edge and the
 *   Nyquist, at up to −6 dB (the top 10 % / 15 % of the band is not alias-free). This makes the
 *   2:1 filter a half-band filter (every other tap zero) and the upsamplers copy every L-th
 *   output, which is why they are fast.
 *
 * Phase tables are bounded (issue 11 §6: a WAV header picks the rates): a reduced ratio `L/M`
 * with at most {@link MAX_PHASES} phases and a table of at most {@link MAX_TABLE_COEFS} gets the
 * exact table; any other gets a table of at most 1024 rows at fractional offsets `q/P` of an
 * input sample, each output interpolating linearly between the two rows around its exact offset
 * (as speexdsp does): the error of that interpolation is below (π·r/P)²/8 (r = the lower rate over
 * the input rate), under −107 dB, and the cost per input sample stays within 2× of a table's.
 *
 * The Kaiser length and β come from Kaiser's formulas (J. F. Kaiser, "Nonrecursive digital filter
 * design using the I0-sinh window function", 1974): β = 0.1102·(A − 8.7),
 * N − 1 = (A − 7.95) / (2.285·Δω), with Δω the transition width `stopband − passband`.
 */
import { remezLowpass } from './remez.js';

/** A resampler quality setting: `'high'` (default, alias-free), `'best'`, `'folding'` or `'fast'`. */
export type ResamplerQuality = 'high' | 'fast' | 'best' | 'folding';

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
  /**
   * Minimax design (remez.ts) with this passband ripple, dB (± around unity), where the
   * prototype is short enough (≤ {@link MAX_REMEZ_TAPS}); else, and when absent, a Kaiser window.
   */
  readonly passbandRippleDb?: number;
}

/**
 * The four settings, with what they guarantee and measure (2 s tones at −6 dBFS, sine fit; worst
 * case over the pairs of the six service rates in bench/quality.ts and test/audio/resampler.test.ts).
 * "Nyquist" is the lower of the two Nyquist frequencies; "folds back" means an alias (when
 * downsampling) or an image (when upsampling) of content near the Nyquist.
 *
 * - `high` (default): alias-free (issue 12 §2). Minimax design for 104 dB, passband ripple
 *   ±0.007 dB to 0.9×, stopband from 1.0× (a Kaiser 104 dB window where the minimax prototype
 *   would exceed {@link MAX_REMEZ_TAPS}). Guarantees: tones at 1.0005×–1.5× come out ≤ −100 dBFS
 *   (measured ≤ −107.7 dBFS for −6 dBFS tones; 24k→16k is the worst, two alias paths add up);
 *   upsampling, images of tones at 0.9×–0.999× of the input Nyquist ≥ 100 dB down; gain within
 *   ±0.01 dB to 0.9× (measured ±0.0067 dB); 1 kHz SNR ≥ 105 dB. Taps per output: 200 for 2:1,
 *   296 for 3:1, 584 for 6:1, 152 for 24k→16k — about 1.25× speexdsp q5's, which is not
 *   alias-free (−1.8 dB at 0.9×, −107 dBFS at 1.05×); their rows are symmetric, so they run
 *   folded ({@link FoldedRows}: 100, 148, 292 and 76 multiplies per output). Where it halves the
 *   work, a pair runs as two stages ({@link designStages}: 48k→8k, 44.1k→24k, 22.05k→48k and
 *   most pairs that are not 2:1, 3:2 or 3:1): the sharp edge is then filtered by the 2:1 (or,
 *   decimating where cheaper, 3:2) minimax design (so those pairs, once Kaiser, now have its
 *   ±0.007 dB ripple) and a wide stage (≥ 110
 *   dB, ±0.001 dB) does the rest.
 * - `best` (sox's default `rate` class: 125 dB): Kaiser 126 dB, flat to 0.9× (±0.00001 dB),
 *   −6 dB at 0.95×, stopband from 1.0×: tones at 1.0×–1.05× ≤ −134 dBFS, at 1.25× ≤ −145 dBFS;
 *   images ≥ 128 dB down; SNR ≥ 137.5 dB. 336 taps for 2:1, 496 for 3:1.
 * - `folding` (`high` in 0.1.0): Kaiser 126 dB, flat to 0.9× (±0.00001 dB), −6 dB AT
 *   the Nyquist, stopband from 1.1×. Content between 1.0× and 1.1× folds back into 0.9×–1.0×
 *   (48k→24k: a tone at 1.017× aliases at −11 dB, 1.05× at −30 dB, 1.083× at −70 dB; 24k→48k:
 *   an input tone at 0.95× leaves an image at 1.05× only −30 dB down); at 1.1× and above ≤ −132
 *   dBFS. A half-band filter at 2:1 (84 non-zero taps), 88 taps per output when upsampling.
 * - `fast`: Kaiser 96 dB, flat to 0.85× (±0.0002 dB), −6 dB at the Nyquist, stopband from 1.15×;
 *   folds like `folding` between 1.0× and 1.15× (at 1.05×: −16.5 dB). Half the taps of `folding`.
 */
export const RESAMPLER_QUALITIES: { readonly [Q in ResamplerQuality]: ResamplerQualitySpec } = {
  high: { attenuationDb: 104, passband: 0.9, stopband: 1, passbandRippleDb: 0.007 },
  best: { attenuationDb: 126, passband: 0.9, stopband: 1 },
  folding: { attenuationDb: 126, passband: 0.9, stopband: 1.1 },
  fast: { attenuationDb: 96, passband: 0.85, stopband: 1.15 },
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
  /** The minimax prototype (`2K + 1` taps at `up ×` the input rate, centre at K), or null for a Kaiser design. */
  readonly proto: Float64Array | null;
  /**
   * For ratios without an exact table: `rows + 1` rows (`taps` each) at input-sample offsets
   * `q / rows`, q = 0 … rows; an output at exact offset `p / up` interpolates rows ⌊p·rows/up⌋
   * and the next. Null with an exact table.
   */
  readonly interp: { readonly rows: number; readonly coefs: Float32Array } | null;
  /**
   * The rows folded on their symmetry (see {@link FoldedRows}) when every row of the exact
   * table is symmetric and none is a unit row: integer decimation and 3:2 (all of `'high'`'s
   * integer-ratio pairs), else null.
   */
  readonly fold: FoldedRows | null;
}

/**
 * A linear-phase prototype sampled at offset 0 or ½ of an input sample gives a symmetric row
 * (`row[lo + i] === row[hi − i]`, exactly: the prototype is stored symmetric), so each output is
 * `Σ g[i]·(x[lo + i] + x[hi − i])` over half the taps: half the multiplies and coefficient loads.
 * `g[i] = row[lo + i]`, the middle tap of an odd span halved (exact: `g·(x + x)` is then `row·x`),
 * zero-padded to `taps` (a multiple of 4: the kernels take 4 taps per vector, so at most 3
 * padded multiplies, not 7 as with 8); the padded taps read inside the row's span, times 0.
 */
export interface FoldedRows {
  /** Folded taps per phase, a multiple of 4. */
  readonly taps: number;
  /** `up × taps` folded coefficients, phase-major. */
  readonly coefs: Float32Array;
  /** By phase: the first and last non-zero tap of the row (indices into the unfolded row). */
  readonly lo: Int32Array;
  readonly hi: Int32Array;
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

/** Largest phase table (1 M coefficients, 4 MB; its design costs at most ~0.1 s, once per ratio). */
export const MAX_TABLE_COEFS = 1 << 20;
/** Most phases of an exact table; ratios with more get the interpolated table. */
export const MAX_PHASES = 1024;
/** Most rows of an interpolated table (fewer when `taps` is long: rows × taps ≤ {@link MAX_TABLE_COEFS}). */
export const MAX_INTERP_ROWS = 1024;
/** Longest minimax prototype designed (remez.ts, ~0.2 s at this length); longer ones use a Kaiser window. */
export const MAX_REMEZ_TAPS = 1201;
/**
 * Largest `down` whose table is folded ({@link FoldedRows}): the SIMD kernel is assembled once
 * per `down` (the two outputs of a pair are `down` inputs apart, an offset in its loads).
 */
export const MAX_FOLD_DOWN = 8;
/** Coefficients smaller than this are stored as 0 (−240 dB: keeps products out of the slow denormal range). */
const TINY_COEF = 1e-12;

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
/** Designs kept (most recently used); a hostile stream of rates cannot grow memory past it. */
const CACHE_SIZE = 32;

/**
 * The polyphase filter for `from → to` at `quality`, designed on first use and cached (the
 * {@link CACHE_SIZE} most recently used). `from` and `to` are positive integers (checked by the caller).
 */
export function designPolyphaseFilter(from: number, to: number, quality: ResamplerQuality): PolyphaseFilter {
  const g = gcd(from, to);
  const up = to / g;
  const down = from / g;
  const key = `${up}/${down}/${quality}`;
  let f = cache.get(key);
  if (f === undefined) {
    f = build(up, down, RESAMPLER_QUALITIES[quality]);
    if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value!);
  } else {
    cache.delete(key);
  }
  cache.set(key, f);
  return f;
}

/**
 * The wide stage of a two-stage `'high'` design (see {@link designStages}), in Hz of the final
 * lower Nyquist `B`: flat (±0.001 dB) to 0.9·B, ≥ 110 dB from 3·B — every frequency that would
 * land in the final band [0, B] at the narrow stage's rate 2·B·2 (an alias when decimating, an
 * image when interpolating) starts at 3·B. 110 dB and ±0.001 dB so that the cascade keeps
 * `'high'`'s figures (±0.007 dB, 104 dB) with the narrow stage's ripple and stopband.
 */
const WIDE_ATTENUATION_DB = 110;
const WIDE_RIPPLE_DB = 0.001;
/** A cascade is used when it costs at most this fraction of the single stage's work (see {@link designStages}). */
const CASCADE_GAIN = 0.8;

/** One stage of a design: its rates and filter. */
export interface ResamplerStage {
  readonly from: number;
  readonly to: number;
  readonly filter: PolyphaseFilter;
}

/**
 * Multiply-adds per input frame of one filter as the kernels run it: folded taps where the rows
 * are folded, nothing for unit rows (copied), half the taps with a half-band decimator.
 */
export function filterWork(f: PolyphaseFilter): number {
  if (f.interp !== null) return (2 * f.taps * f.up) / f.down;
  if (f.decimator !== null) return f.decimator.branches.reduce((n, b) => n + b.count, 1) / f.down;
  let sum = 0;
  for (let p = 0; p < f.up; p++) sum += f.copy !== null && f.copy[p] !== 0 ? 0 : f.fold !== null ? f.fold.taps : f.taps;
  return sum / f.down;
}

const stagesCache = new Map<string, readonly ResamplerStage[]>();

/**
 * The stages that resample `from → to` at `quality`: one polyphase filter, or for `'high'`,
 * where it costs at most {@link CASCADE_GAIN} of that, two (issue 22: within 2× of libsoxr):
 *
 * - decimating (`from > to`): a wide, short stage `from → 2·to` (its transition band spans
 *   0.9·B … 3·B, B = to/2), then the narrow 2:1 `'high'` stage `2·to → to` whose rows fold; or,
 *   where {@link stageAdds} says it costs ≥ 12 % less, `from → 1.5·to` (transition 0.9·B … 2·B)
 *   then the folded 3:2 stage: the sharp edge at 1.5·to instead of 2·to (44.1k→24k via 36 kHz,
 *   44.1k→16k, 48k→22.05k, 22.05k→8k);
 * - interpolating (`from < to`): the narrow 1:2 `'high'` stage `from → 2·from` (two symmetric,
 *   folded phases), then a wide stage `2·from → to` (B = from/2).
 *
 * The narrow stage is `'high'`'s own design for 2:1, so the sharp band edge (0.9 → 1.0 of the
 * lower Nyquist) is filtered at the lowest rate that can hold it; the wide stage has a
 * transition band 21× wider and about a tenth of the taps. 48k→8k: 1.2 M multiply-adds per
 * second of audio instead of 2.4 M. Both stages centred: the cascade has zero lag too.
 */
export function designStages(from: number, to: number, quality: ResamplerQuality): readonly ResamplerStage[] {
  const key = `${from}/${to}/${quality}`;
  let s = stagesCache.get(key);
  if (s !== undefined) return s;
  const single: readonly ResamplerStage[] = [{ from, to, filter: designPolyphaseFilter(from, to, quality) }];
  s = single;
  if (quality === 'high' && from !== to && 2 * to !== from && 2 * from !== to) {
    const cascade = designCascade(from, to, from > to ? 2 * to : 2 * from);
    if (cascade !== null) {
      const mid = cascade[0]!.to;
      const work = filterWork(cascade[0]!.filter) + (filterWork(cascade[1]!.filter) * mid) / from;
      if (work <= CASCADE_GAIN * filterWork(single[0]!.filter)) s = cascade;
    }
    // Decimating, a 3:2 narrow stage at 1.5·to runs the sharp edge at a lower rate than 2:1 does.
    const mid32 = 1.5 * to;
    if (from > to && Number.isInteger(mid32) && mid32 < from) {
      const alt = designCascade(from, to, mid32);
      if (alt !== null && stageAdds(alt, from) <= NARROW_32_GAIN * stageAdds(s, from)) s = alt;
    }
  }
  if (stagesCache.size >= CACHE_SIZE) stagesCache.delete(stagesCache.keys().next().value!);
  stagesCache.set(key, s);
  return s;
}

/**
 * A wide stage and the narrow `'high'` stage through `mid` (decimating: `from → mid → to`;
 * interpolating: `from → mid → to` with the narrow stage first), or null where either would need
 * an interpolated table. The wide stage is flat to 0.9·B and stops from `mid − B` (B the final
 * lower Nyquist): decimating, content above `mid − B` is what would alias into [0, B] at `mid`;
 * interpolating, images of [0, B] at `mid` start at `mid − B`. With `mid` = 2·B·2 that is 3·B.
 */
function designCascade(from: number, to: number, mid: number): readonly ResamplerStage[] | null {
  const [wideFrom, wideTo] = from > to ? [from, mid] : [mid, to];
  // Only where the wide stage gets an exact table (an interpolated one is never designed for nothing).
  if (wideTo / gcd(wideFrom, wideTo) > MAX_PHASES) return null;
  const b = Math.min(from, to) / 2;
  const w = Math.min(wideFrom, wideTo) / 2;
  let wide = designWide(wideFrom, wideTo, { attenuationDb: WIDE_ATTENUATION_DB, passband: b / w, stopband: (mid - b) / w, passbandRippleDb: WIDE_RIPPLE_DB });
  // A Kaiser wide stage (no minimax prototype at this many phases) only has to be flat to the
  // cascade's passband, 0.9·B: the band 0.9·B … B is the narrow stage's transition, where
  // 'high' promises nothing. The wider transition shortens it where that saves taps (44.1k→36k:
  // 32 → 24; issue 34); elsewhere the design stays as it was.
  if (wide.proto === null) {
    const short = designWide(wideFrom, wideTo, { attenuationDb: WIDE_ATTENUATION_DB, passband: (RESAMPLER_QUALITIES.high.passband * b) / w, stopband: (mid - b) / w });
    if (short.taps < wide.taps) wide = short;
  }
  const narrow = from > to ? designPolyphaseFilter(mid, to, 'high') : designPolyphaseFilter(from, mid, 'high');
  if (wide.interp !== null || narrow.interp !== null) return null;
  return from > to ? [{ from, to: mid, filter: wide }, { from: mid, to, filter: narrow }] : [{ from, to: mid, filter: narrow }, { from: mid, to, filter: wide }];
}

/**
 * The 3:2 narrow stage replaces the 2:1 one where {@link stageAdds} is at most this fraction:
 * the model is rough (measured gains 5–14 % where it predicts 15 %; none where it predicts 7–10 %).
 */
const NARROW_32_GAIN = 0.88;
/** {@link stageAdds}' cost of one output beside its dot product (zeroing, lane sums, pointers), in adds. */
const OUTPUT_OVERHEAD_ADDS = 40;

/**
 * f32 adds per input frame of a design, the kernels' bound (issue 22: two FP-add pipes): a folded
 * tap costs two adds (the fold and the accumulation), an unfolded one one, plus
 * {@link OUTPUT_OVERHEAD_ADDS} per output. Unlike {@link filterWork}, it does not count a folded
 * tap as half.
 */
function stageAdds(stages: readonly ResamplerStage[], from: number): number {
  let sum = 0;
  for (const st of stages) {
    const f = st.filter;
    const adds = f.fold !== null ? 2 * f.fold.taps : f.taps;
    sum += (st.to / from) * (adds + OUTPUT_OVERHEAD_ADDS);
  }
  return sum;
}

/** {@link build} for a wide stage's spec, cached like the quality designs. */
function designWide(from: number, to: number, spec: ResamplerQualitySpec): PolyphaseFilter {
  const g = gcd(from, to);
  const key = `${to / g}/${from / g}/wide/${spec.passband}/${spec.stopband}`;
  let f = cache.get(key);
  if (f === undefined) {
    f = build(to / g, from / g, spec, true);
    if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value!);
    cache.set(key, f);
  }
  return f;
}

/** What one design costs to run: a deterministic proxy for CPU per input sample (issue 11 §6). */
export interface ResamplerCost {
  /** Phases of the exact table, or rows of the interpolated one. */
  readonly phases: number;
  readonly interpolated: boolean;
  /** Taps per output (multiply-adds of one dot product). */
  readonly taps: number;
  /** Multiply-adds per input frame: taps × dot products per output × outputs per input (half-band: half the taps). */
  readonly macsPerInput: number;
  /** Coefficients held in the tables. */
  readonly tableCoefs: number;
}

/**
 * The {@link ResamplerCost} of `from → to` at `quality` (designs the filters if needed). A
 * two-stage design ({@link designStages}) adds its stages' multiply-adds per input frame (the
 * second's scaled by its input rate over `from`) and tables; `taps` and `phases` are the larger.
 */
export function resamplerCost(from: number, to: number, quality: ResamplerQuality): ResamplerCost {
  let phases = 0;
  let taps = 0;
  let macsPerInput = 0;
  let tableCoefs = 0;
  let interpolated = false;
  for (const s of designStages(from, to, quality)) {
    const f = s.filter;
    const dots = f.interp !== null ? 2 : 1;
    const t = f.decimator !== null ? f.decimator.branches.reduce((n, b) => n + b.count, 1) : f.taps;
    phases = Math.max(phases, f.interp !== null ? f.interp.rows : f.up);
    taps = Math.max(taps, t);
    macsPerInput += ((t * dots * f.up) / f.down) * (s.from / from);
    tableCoefs += f.interp !== null ? f.interp.coefs.length : f.coefs!.length;
    interpolated ||= f.interp !== null;
  }
  return { phases, interpolated, taps, macsPerInput, tableCoefs };
}

/** The shortest minimax prototype (remez.ts) meeting `spec` at the ratio, or null beyond {@link MAX_REMEZ_TAPS}. */
function designEquiripple(up: number, down: number, spec: ResamplerQualitySpec): Float64Array | null {
  // Prototype rate: up × the input rate; the lower Nyquist in cycles per prototype sample.
  const nyq = 0.5 / Math.max(up, down);
  const fp = spec.passband * nyq;
  const fs = spec.stopband * nyq;
  const dp = Math.pow(10, spec.passbandRippleDb! / 20) - 1;
  const ds = Math.pow(10, -spec.attenuationDb / 20);
  // Kaiser's length estimate for equiripple filters; then lengthened until the ripple is met.
  let n = Math.ceil((-20 * Math.log10(Math.sqrt(dp * ds)) - 13) / (14.6 * (fs - fp))) + 1;
  for (let tries = 0; tries < 8; tries++) {
    n |= 1;
    if (n > MAX_REMEZ_TAPS) return null;
    const r = remezLowpass((n - 1) / 2, fp, fs, dp / ds);
    if (r.converged && r.delta <= dp) {
      // Gain `up` (each phase sees 1/up of the taps): every row then sums to about 1.
      for (let i = 0; i < r.h.length; i++) r.h[i]! *= up;
      return r.h;
    }
    n = Math.ceil(n * 1.02) + 2;
  }
  return null;
}

/**
 * `wide`: a cascade's wide stage. A Kaiser design then scales the whole prototype to unity DC
 * gain instead of each phase: its band edges sit beyond the input Nyquist (22.05k→32k: passband
 * to 7.2 kHz, stopband from 24 kHz), so the phases' sums differ by the transition band's gain at
 * the input rate, and equalising them modulates the kernel (measured: stopband −59 dB instead
 * of −110). The ripple that leaves around multiples of the input rate lands where the narrow
 * stage removes it.
 */
function build(up: number, down: number, spec: ResamplerQualitySpec, wide = false): PolyphaseFilter {
  // r: the lower Nyquist over the input Nyquist. The kernel, in input-sample time τ, is
  // c·r·sinc(c·r·τ)·kaiser(τ/half), c the cutoff (fraction of the lower Nyquist): −6 dB at c×
  // the lower Nyquist, unity gain at DC.
  const r = Math.min(1, up / down);
  // Cutoff as an exact fraction (to 1/1000): 1/1 when the band plan is symmetric around the Nyquist.
  let cutNum = Math.round(((spec.passband + spec.stopband) / 2) * 1000);
  let cutDen = 1000;
  const g = gcd(cutNum, cutDen);
  cutNum /= g;
  cutDen /= g;
  const beta = kaiserBeta(spec.attenuationDb);
  // A minimax prototype where the exact table holds it; its half-length covers |m| ≤ K at m/up.
  const proto = spec.passbandRippleDb !== undefined && up <= MAX_PHASES ? designEquiripple(up, down, spec) : null;
  let half: number;
  if (proto !== null) {
    half = Math.floor((proto.length - 1) / 2 / up) + 1;
  } else {
    // Transition band passband … stopband (× the lower Nyquist), its width in cycles per input sample.
    const width = ((spec.stopband - spec.passband) / 2) * r;
    half = kaiserHalfLength(spec.attenuationDb, width);
  }
  const taps = (2 * half + 7) & ~7;
  const partial = { up, down, half, taps, beta, attenuationDb: spec.attenuationDb, cutNum, cutDen, proto };
  if (up > MAX_PHASES || up * taps > MAX_TABLE_COEFS) {
    // No exact table: rows at q/rows of an input sample, interpolated per output (issue 11 §6).
    const rows = Math.max(2, Math.min(MAX_INTERP_ROWS, Math.floor(MAX_TABLE_COEFS / taps) - 1));
    const coefs = new Float32Array((rows + 1) * taps);
    for (let q = 0; q <= rows; q++) kernelRow(partial, q, rows, coefs.subarray(q * taps, (q + 1) * taps));
    return { ...partial, coefs: null, step: null, next: null, copy: null, decimator: null, interp: { rows, coefs }, fold: null };
  }
  const coefs = new Float32Array(up * taps);
  if (wide && proto === null) {
    let sum = 0;
    for (let p = 0; p < up; p++) sum += kernelRow(partial, p, up, coefs.subarray(p * taps, (p + 1) * taps), 1);
    for (let p = 0; p < up; p++) kernelRow(partial, p, up, coefs.subarray(p * taps, (p + 1) * taps), up / sum);
  } else {
    for (let p = 0; p < up; p++) fillPhaseRow(partial, p, coefs.subarray(p * taps, (p + 1) * taps));
  }
  const step = new Int32Array(up);
  const next = new Int32Array(up);
  for (let p = 0; p < up; p++) {
    const t = p + down;
    step[p] = Math.floor(t / up);
    next[p] = t % up;
  }
  const copy = unitRows(coefs, up, taps);
  const fold = copy === null && down <= MAX_FOLD_DOWN ? foldRows(coefs, up, taps) : null;
  const f: PolyphaseFilter = { ...partial, coefs, step, next, copy, decimator: null, interp: null, fold };
  // Only M = 2 pays: for M = 3 the two remaining branches cost as much as the zeros they skip.
  // Only a Kaiser cutoff at the Nyquist (1/1) gives the half-band's zero taps.
  return up === 1 && down === 2 && cutNum === cutDen && proto === null ? { ...f, decimator: splitDecimator(f) } : f;
}

/** The {@link FoldedRows} of a table, or null when a row is not exactly symmetric. */
function foldRows(coefs: Float32Array, up: number, taps: number): FoldedRows | null {
  const lo = new Int32Array(up);
  const hi = new Int32Array(up);
  let ft = 0;
  for (let p = 0; p < up; p++) {
    const r = p * taps;
    let a = 0;
    let b = taps - 1;
    while (a < taps && coefs[r + a] === 0) a++;
    while (b > a && coefs[r + b] === 0) b--;
    if (a >= b) return null;
    for (let i = a, j = b; i < j; i++, j--) if (coefs[r + i] !== coefs[r + j]) return null;
    lo[p] = a;
    hi[p] = b;
    ft = Math.max(ft, (((b - a + 2) >> 1) + 3) & ~3);
  }
  // The padded taps must stay inside the row (they read x[lo + i] and x[hi − i]).
  for (let p = 0; p < up; p++) if (lo[p]! + ft > taps || hi[p]! - ft + 1 < 0) return null;
  const out = new Float32Array(up * ft);
  for (let p = 0; p < up; p++) {
    const a = lo[p]!;
    const b = hi[p]!;
    const h = (b - a + 2) >> 1;
    for (let i = 0; i < h; i++) out[p * ft + i] = coefs[p * taps + a + i]!;
    if (((b - a) & 1) === 0) out[p * ft + h - 1] = coefs[p * taps + a + h - 1]! / 2;
  }
  return { taps: ft, coefs: out, lo, hi };
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
      up: 1, down: 1, half: 0, taps, coefs, step: Int32Array.of(1), next: Int32Array.of(0), copy: null, beta: f.beta, attenuationDb: f.attenuationDb, cutNum: 1, cutDen: 1, decimator: null, proto: null, interp: null, fold: null, // prettier-ignore
    };
    branches.push({ first, count, pad, filter });
  }
  return { center: row[centerTap]!, centerTap, branches };
}

const rowScratch: { buf: Float64Array } = { buf: new Float64Array(256) };

type RowSpec = { readonly up: number; readonly down: number; readonly half: number; readonly taps: number; readonly beta: number; readonly cutNum: number; readonly cutDen: number; readonly proto: Float64Array | null };

/**
 * Writes the `taps` coefficients of phase `p` (offset p/up of an input sample) into `dst`. The
 * one definition of an exact table's rows.
 */
export function fillPhaseRow(f: RowSpec, p: number, dst: Float32Array): void {
  kernelRow(f, p, f.up, dst);
}

/**
 * Writes the row at input-sample offset `num / den` (0 ≤ num ≤ den) into `dst`: tap j holds the
 * kernel at `τ = taps − half − 1 − j + num/den`, computed in float64, normalised to unity DC gain,
 * stored as float32 (coefficients under {@link TINY_COEF} as 0). A minimax design reads its
 * prototype (then `den` must be `up`); a Kaiser design evaluates its window and sinc, with the
 * sinc's zeros exact when the offset is a fraction of `up`. `scale` (a cascade's wide stage)
 * replaces the per-row normalisation by one factor; returns the row's sum before scaling.
 */
function kernelRow(f: RowSpec, num0: number, den: number, dst: Float32Array, scale = 0): number {
  const { up, down, half, taps, beta, cutNum, cutDen, proto } = f;
  if (rowScratch.buf.length < taps) rowScratch.buf = new Float64Array(taps);
  const row = rowScratch.buf;
  const lead = taps - half;
  let sum = 0;
  if (proto !== null) {
    // A minimax prototype is used as designed (scaled by `up`, so each phase sums to about 1):
    // renormalising its phases would move its stopband (24k→16k: 99 dB instead of 102) and push
    // its ±δ passband ripple to 0…2δ; the phases' DC gains differ by at most the stopband ripple.
    const K = (proto.length - 1) / 2;
    for (let j = 0; j < taps; j++) {
      const m = (lead - 1 - j) * up + num0;
      const v = m >= -K && m <= K ? proto[K + m]! : 0;
      dst[j] = v < TINY_COEF && v > -TINY_COEF ? 0 : v;
    }
    return 1;
  } else {
    const i0Beta = besselI0(beta);
    // sinc argument c·r·τ as an exact fraction x / xDen, so the sinc's zeros come out exactly 0
    // (c = cutNum / cutDen, r = up / max(up, down); τ = num / den).
    const xDen = den * (up < down ? down : up) * cutDen;
    for (let j = 0; j < taps; j++) {
      const num = (lead - 1 - j) * den + num0; // τ = num / den
      const u = num / den / half;
      let v = 0;
      if (u > -1 && u < 1) {
        const w = besselI0(beta * Math.sqrt(1 - u * u)) / i0Beta;
        const x = num * cutNum * up;
        const s = x === 0 ? 1 : x % xDen === 0 ? 0 : Math.sin((Math.PI * x) / xDen) / ((Math.PI * x) / xDen);
        v = s * w;
      }
      row[j] = v;
      sum += v;
    }
  }
  // Normalise every phase to unity DC gain (this also supplies the factor r of r·sinc(r·τ)):
  // removes the DC-image spurs a Kaiser ripple would leave at multiples of the input rate.
  const g = scale > 0 ? scale : 1 / sum;
  for (let j = 0; j < taps; j++) {
    const v = row[j]! * g;
    dst[j] = v < TINY_COEF && v > -TINY_COEF ? 0 : v;
  }
  return sum;
}
