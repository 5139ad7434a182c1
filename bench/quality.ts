/**
 * Resampler quality measurement shared by test/audio/resampler.test.ts and bench/resampler.bench.ts:
 * tones in, a least-squares sine fit over the middle of the output, figures in dB. Independent of
 * the resampler's code (it only sees a `(input, from, to) → output` function), so the same
 * yardstick measures voicewire, speexdsp, wave-resampler and sox.
 */

/** Any one-shot resampler under test. */
export type ResampleFn = (input: Float32Array, from: number, to: number) => Float32Array;

/** `seconds` of a sine at `freq` Hz, amplitude `amplitude` (0.5 = −6 dBFS), float32. */
export function tone(freq: number, rate: number, seconds: number, amplitude = 0.5, phase = 0): Float32Array {
  const n = Math.round(rate * seconds);
  const out = new Float32Array(n);
  const w = (2 * Math.PI * freq) / rate;
  for (let i = 0; i < n; i++) out[i] = amplitude * Math.sin(w * i + phase);
  return out;
}

/** Result of {@link fitSine}. */
export interface SineFit {
  /** Fitted amplitude. */
  amplitude: number;
  /** Fitted phase (radians) of `amplitude·sin(2πf·n/rate + phase)`. */
  phase: number;
  /** RMS of what the fitted sine (and DC) leaves over. */
  residualRms: number;
  /** Tone power over residual power, dB. */
  snrDb: number;
}

/**
 * Least-squares fit of `a·sin(ωn) + b·cos(ωn) + c` to `y[start..end)` (n is the absolute index,
 * so the phase refers to sample 0). Solved by the 3×3 normal equations in float64.
 */
export function fitSine(y: ArrayLike<number>, rate: number, freq: number, start: number, end: number): SineFit {
  const w = (2 * Math.PI * freq) / rate;
  let ss = 0;
  let sc = 0;
  let cc = 0;
  let s1 = 0;
  let c1 = 0;
  let ys = 0;
  let yc = 0;
  let y1 = 0;
  const n = end - start;
  for (let i = start; i < end; i++) {
    const s = Math.sin(w * i);
    const c = Math.cos(w * i);
    const v = y[i]!;
    ss += s * s;
    sc += s * c;
    cc += c * c;
    s1 += s;
    c1 += c;
    ys += v * s;
    yc += v * c;
    y1 += v;
  }
  const [a, b, c] = solve3([
    [ss, sc, s1],
    [sc, cc, c1],
    [s1, c1, n],
  ], [ys, yc, y1]);
  let r2 = 0;
  for (let i = start; i < end; i++) {
    const e = y[i]! - (a * Math.sin(w * i) + b * Math.cos(w * i) + c);
    r2 += e * e;
  }
  const amplitude = Math.hypot(a, b);
  const residualRms = Math.sqrt(r2 / n);
  return {
    amplitude,
    phase: Math.atan2(b, a),
    residualRms,
    snrDb: 10 * Math.log10((amplitude * amplitude) / 2 / Math.max(residualRms * residualRms, 1e-300)),
  };
}

function solve3(m: number[][], v: number[]): [number, number, number] {
  // Gaussian elimination with partial pivoting.
  const a = m.map((row, i) => [...row, v[i]!]);
  for (let col = 0; col < 3; col++) {
    let piv = col;
    for (let r = col + 1; r < 3; r++) if (Math.abs(a[r]![col]!) > Math.abs(a[piv]![col]!)) piv = r;
    [a[col], a[piv]] = [a[piv]!, a[col]!];
    for (let r = col + 1; r < 3; r++) {
      const f = a[r]![col]! / a[col]![col]!;
      for (let k = col; k < 4; k++) a[r]![k]! -= f * a[col]![k]!;
    }
  }
  const x = [0, 0, 0];
  for (let r = 2; r >= 0; r--) {
    let s = a[r]![3]!;
    for (let k = r + 1; k < 3; k++) s -= a[r]![k]! * x[k]!;
    x[r] = s / a[r]![r]!;
  }
  return [x[0]!, x[1]!, x[2]!];
}

/** RMS of `y[start..end)`. */
export function rms(y: ArrayLike<number>, start: number, end: number): number {
  let s = 0;
  for (let i = start; i < end; i++) s += y[i]! * y[i]!;
  return Math.sqrt(s / Math.max(1, end - start));
}

/** Level of a residual signal as the dBFS of a sine with the same RMS (full-scale sine = 0 dBFS). */
export function dbfsOfRms(r: number): number {
  return 20 * Math.log10(Math.max(r * Math.SQRT2, 1e-30));
}

/** The middle of an output: drop `edge` of its length at each end. */
export function middle(len: number, edge = 0.25): [number, number] {
  return [Math.floor(len * edge), Math.ceil(len * (1 - edge))];
}

/** Figures of one resampler on one rate pair. */
export interface QualityFigures {
  from: number;
  to: number;
  /** SNR of a 1 kHz −6 dBFS tone (sine fit over the middle second of 2 s), dB. */
  snr1kDb: number;
  /**
   * Downsampling only: output level of a −6 dBFS tone at 1.25× the output Nyquist, dBFS. `null`
   * when that tone would be at or above the INPUT Nyquist (pairs with to > 0.8·from, e.g.
   * 24000→22050 or 48000→44100): such a tone cannot exist in the input (it would already be its
   * own alias there), so the probe would measure nothing meaningful and is skipped.
   */
  aliasDbfs: number | null;
  /**
   * Downsampling only: output level of a −6 dBFS tone at (2 − passband)× the output Nyquist
   * (1.1× by default), whose alias would land on the passband edge, dBFS. `null` when that tone
   * is at or above the input Nyquist (to > from/(2 − passband), e.g. 24000→22050, 48000→44100).
   */
  aliasEdgeDbfs: number | null;
  /**
   * Downsampling only: output level of a −6 dBFS tone at 1.05× the output Nyquist, dBFS: inside
   * the transition band of a filter whose −6 dB point is at the Nyquist, so it shows whether
   * content just above the Nyquist folds back (to 0.95×). `null` when at or above the input Nyquist.
   */
  aliasNearDbfs: number | null;
  /**
   * Upsampling only: level of the image (at 1.05× the input Nyquist) of an input tone at 0.95×
   * the input Nyquist, dB relative to the input tone (see {@link imageLevelDb}).
   */
  imageNearDb: number | null;
  /** Largest |gain| deviation of tones up to the passband edge (0.9× the lower Nyquist), dB. */
  passbandDevDb: number;
  /** Upsampling only: tone over images, worst of 1 kHz and the passband edge, dB. */
  imageRejectionDb: number | null;
  /**
   * Alias-freedom from 1.0× the lower Nyquist (issue 12 §2), worst case, dBFS for −6 dBFS tones:
   * downsampling, the output level of tones at 1.0005×, 1.01×, 1.03×, 1.05×, 1.1×, 1.25× and 1.5×
   * the output Nyquist (those below the input Nyquist); upsampling, the image level (dB re the
   * tone, minus 6 dB for −6 dBFS) of input tones at 0.9×, 0.95×, 0.99× and 0.999× the input Nyquist.
   */
  stopbandDbfs: number;
  /** Lag of the output against the ideal `k/to` timing, from the fitted phase, output samples. */
  lagSamples: number;
  /** Output length minus round(N·to/from), for N = 2 s of input. */
  lengthError: number;
}

/**
 * Measures `fn` on `from → to` with 2 s tones at −6 dBFS: `passbandTones` tones up to
 * `passband`× the lower Nyquist for the gain, and the image test at 1 kHz and at that edge.
 */
export function measureQuality(fn: ResampleFn, from: number, to: number, passbandTones = 6, passband = 0.9): QualityFigures {
  const seconds = 2;
  const lowNyq = Math.min(from, to) / 2;
  const run = (freq: number, phase = 0): { y: Float32Array; start: number; end: number } => {
    const y = fn(tone(freq, from, seconds, 0.5, phase), from, to);
    const [start, end] = middle(y.length);
    return { y, start, end };
  };

  const t1 = run(1000, 0.3);
  const fit1 = fitSine(t1.y, to, 1000, t1.start, t1.end);
  // Ideal output phase at sample k is 2π·1000·k/to + 0.3; a lag of d samples shows as −2π·1000·d/to.
  let dphi = fit1.phase - 0.3;
  dphi = Math.atan2(Math.sin(dphi), Math.cos(dphi));
  const lagSamples = (-dphi * to) / (2 * Math.PI * 1000);

  let aliasDbfs: number | null = null;
  let aliasEdgeDbfs: number | null = null;
  let aliasNearDbfs: number | null = null;
  if (to < from) {
    // An alias probe is a tone above the output Nyquist but below the input Nyquist; for close
    // rates (24000→22050: 1.25 × 11025 Hz = 13781 Hz > 12000 Hz) there is no such tone at the
    // probe frequency, so the probe is skipped (null) rather than report a folded input tone.
    const probe = (freq: number): number | null => {
      if (freq >= from / 2) return null;
      const t = run(freq);
      return dbfsOfRms(rms(t.y, t.start, t.end));
    };
    aliasDbfs = probe(1.25 * (to / 2));
    aliasNearDbfs = probe(1.05 * (to / 2));
    aliasEdgeDbfs = probe((2 - passband) * (to / 2));
  }

  let passbandDevDb = 0;
  for (let i = 1; i <= passbandTones; i++) {
    const f = (passband * lowNyq * i) / passbandTones;
    const t = run(f);
    const g = 20 * Math.log10(fitSine(t.y, to, f, t.start, t.end).amplitude / 0.5);
    passbandDevDb = Math.max(passbandDevDb, Math.abs(g));
  }

  let imageRejectionDb: number | null = null;
  let imageNearDb: number | null = null;
  if (to > from) {
    imageNearDb = imageLevelDb(fn, 0.95 * (from / 2), from, to);
    imageRejectionDb = Infinity;
    for (const f of [1000, passband * lowNyq]) {
      const t = f === 1000 ? t1 : run(f);
      imageRejectionDb = Math.min(imageRejectionDb, fitSine(t.y, to, f, t.start, t.end).snrDb);
    }
  }

  let stopbandDbfs = -Infinity;
  if (to < from) {
    for (const k of [1.0005, 1.01, 1.03, 1.05, 1.1, 1.25, 1.5]) {
      const f = k * (to / 2);
      if (f >= from / 2) continue;
      const t = run(f);
      stopbandDbfs = Math.max(stopbandDbfs, dbfsOfRms(rms(t.y, t.start, t.end)));
    }
  } else {
    for (const k of [0.9, 0.95, 0.99, 0.999]) stopbandDbfs = Math.max(stopbandDbfs, imageLevelDb(fn, k * (from / 2), from, to) - 6);
  }

  const n = from * seconds;
  return {
    stopbandDbfs,
    from,
    to,
    snr1kDb: fit1.snrDb,
    aliasDbfs,
    aliasEdgeDbfs,
    aliasNearDbfs,
    passbandDevDb,
    imageRejectionDb,
    imageNearDb,
    lagSamples,
    lengthError: t1.y.length - Math.round((n * to) / from),
  };
}

/**
 * Upsampling: level of the image (at `from − freq`) of a 2 s −6 dBFS input tone at `freq`, dB
 * relative to the input tone. The tone is fitted and subtracted first: a direct fit at the image
 * frequency would pick up the tone's own leakage over the finite window (about −70 dB when the
 * two are 1 kHz apart), hiding images below that.
 */
export function imageLevelDb(fn: ResampleFn, freq: number, from: number, to: number): number {
  const y = fn(tone(freq, from, 2), from, to);
  const [a, b] = middle(y.length);
  const t = fitSine(y, to, freq, a, b);
  const w = (2 * Math.PI * freq) / to;
  const r = new Float64Array(y.length);
  for (let i = a; i < b; i++) r[i] = y[i]! - t.amplitude * Math.sin(w * i + t.phase);
  return 20 * Math.log10(Math.max(fitSine(r, to, from - freq, a, b).amplitude / 0.5, 1e-30));
}

/**
 * Magnitude response, dB, at `freqs` (input Hz): the output level of a −6 dBFS tone relative to
 * its input, from the RMS of the middle of the output (so a tone above the output Nyquist counts
 * as its alias). Used for the response plot.
 */
export function responseDb(fn: ResampleFn, from: number, to: number, freqs: readonly number[], seconds = 0.5): number[] {
  return freqs.map((f) => {
    const y = fn(tone(f, from, seconds), from, to);
    const [s, e] = middle(y.length);
    return 20 * Math.log10(Math.max(rms(y, s, e) / (0.5 / Math.SQRT2), 1e-12));
  });
}
