/**
 * Voice activity for the STT `step` messages (docs/api.md §4.4, protocol-notes.md "Turn-taking").
 *
 * The model is WebRTC's VAD (libfvad, `@echogarden/fvad-wasm`, BSD-3-Clause): 35 kB of
 * WebAssembly, no weights to download, a few microseconds per 20 ms frame, no native runtime.
 * Silero VAD is more accurate in noise but needs an ONNX runtime (onnxruntime-node is over
 * 100 MB of native binaries, onnxruntime-web several MB of wasm) and ~1 ms per frame; for
 * clean close-talk speech and turn ends (where the pause length model below does most of the
 * work) the WebRTC VAD is enough, and it keeps `npm install` small and every platform working.
 *
 * Each 80 ms frame (four 20 ms VAD decisions at 16 kHz, mode 2 "aggressive") gives three
 * {@link VAD_HORIZONS}, 0.5 s, 1 s and 2 s, each with `inactivity_prob` = the probability that no
 * speech is heard within that horizon, from a model of pause lengths:
 *
 * - `x`: the speech probability of the frame, an exponential moving average (weight 0.5) of the
 *   fraction of its 20 ms frames the VAD calls speech;
 * - `t`: the silence so far, seconds since the last frame that was mostly speech;
 * - pauses inside a turn last `S(t) = exp(−(t/τ)^k)` (Weibull survival, τ = 0.5 s, k = 1.5:
 *   median 0.39 s, as measured for within-turn pauses in conversation), and a pause is a turn end
 *   with prior probability π = 0.35 (a turn end is a pause that does not end);
 * - `P_end(t) = π / (π + (1 − π)·S(t))`, and
 *   `inactivity_prob(h) = (1 − x) · [P_end(t) + (1 − P_end(t)) · S(t + h) / S(t)]`.
 *
 * While someone speaks, `x` ≈ 1 and every horizon is near 0. After the speaker stops, the 2 s
 * horizon passes 0.5 after about 0.45 s of silence and tends to 1; pauses shorter than about
 * 0.35 s (between words and phrases) stay below 0.5. Before any speech the silence counts from the
 * start of the stream.
 */
import type { VadPrediction } from '../protocol/messages.js';
import { describeValue, objectArg } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';

/** The horizons of each `step` (§4.4), seconds. */
export const VAD_HORIZONS = [0.5, 1, 2] as const;

/** The pause-length model's parameters (see the module comment). */
export const PAUSE_MODEL = Object.freeze({ tau: 0.5, k: 1.5, turnEndPrior: 0.35, smoothing: 0.5 });

/** The loaded libfvad wasm module, as {@link loadVad} resolves it. */
export interface FvadModule {
  _fvad_new(): number;
  _fvad_free(inst: number): void;
  _fvad_set_mode(inst: number, mode: number): number;
  _fvad_set_sample_rate(inst: number, rate: number): number;
  _fvad_process(inst: number, ptr: number, length: number): number;
  _malloc(n: number): number;
  _free(ptr: number): void;
  HEAP16: Int16Array;
}

/** The WebRTC VAD build (a dependency of voicewire). */
const FVAD_PACKAGE = '@echogarden/fvad-wasm';

let loading: Promise<FvadModule> | undefined;

/** Loads the WebRTC VAD (once). */
export function loadVad(): Promise<FvadModule> {
  loading ??= (async () => {
    try {
      const mod = (await import(/* @vite-ignore */ FVAD_PACKAGE)) as unknown as { default: () => Promise<FvadModule> };
      return await mod.default();
    } catch (err) {
      throw new VoicewireError('ENGINE_UNAVAILABLE', 'the WebRTC VAD (@echogarden/fvad-wasm) could not be loaded: reinstall voicewire\'s dependencies', { cause: err });
    }
  })();
  loading.catch(() => {
    loading = undefined;
  });
  return loading;
}

/** What the constructor calls of the module. */
const FVAD_FUNCTIONS = ['_fvad_new', '_fvad_free', '_fvad_set_mode', '_fvad_set_sample_rate', '_fvad_process', '_malloc', '_free'] as const;

const RATE = 16000;
const SUB = 320; // 20 ms at 16 kHz

function survival(t: number): number {
  return Math.exp(-((t / PAUSE_MODEL.tau) ** PAUSE_MODEL.k));
}

/** The pause-length model alone: horizons for speech probability `x` after `t` seconds of silence. */
export function inactivityFromPause(x: number, t: number): VadPrediction[] {
  if (typeof x !== 'number' || !(x >= 0 && x <= 1)) throw new VoicewireError('INVALID_ARGUMENT', `inactivityFromPause: x must be a probability from 0 to 1, got ${describeValue(x)}`);
  if (typeof t !== 'number' || !(t >= 0)) throw new VoicewireError('INVALID_ARGUMENT', `inactivityFromPause: t must be a number of seconds ≥ 0, got ${describeValue(t)}`);
  const pi = PAUSE_MODEL.turnEndPrior;
  const s = survival(t);
  const pEnd = pi / (pi + (1 - pi) * s);
  return VAD_HORIZONS.map((h) => ({
    horizon_s: h,
    inactivity_prob: round((1 - x) * (pEnd + (1 - pEnd) * (s > 0 ? survival(t + h) / s : 0))),
  }));
}

/** Voice activity over one 16 kHz stream, one `vad` array per 80 ms frame. */
export class VoiceActivity {
  private inst: number;
  private ptr: number;
  private readonly pending = new Int16Array(SUB);
  private fill = 0;
  private x = 0;
  private silence = 0;
  private readonly fvad: FvadModule;

  /** `fvad`: the loaded WebRTC VAD ({@link loadVad}). */
  constructor(fvad: FvadModule) {
    objectArg(fvad, 'VoiceActivity: fvad');
    for (const m of FVAD_FUNCTIONS) {
      if (typeof fvad[m] !== 'function') throw new VoicewireError('INVALID_ARGUMENT', `VoiceActivity: fvad must be the loaded WebRTC VAD (loadVad()); its ${m} is ${describeValue(fvad[m])}`);
    }
    if (!(fvad.HEAP16 instanceof Int16Array)) throw new VoicewireError('INVALID_ARGUMENT', 'VoiceActivity: fvad must be the loaded WebRTC VAD (loadVad()); it has no HEAP16');
    this.fvad = fvad;
    this.inst = fvad._fvad_new();
    this.ptr = this.inst ? fvad._malloc(SUB * 2) : 0;
    if (!this.ptr) {
      if (this.inst) fvad._fvad_free(this.inst);
      this.inst = 0;
      throw new VoicewireError('ENGINE_UNAVAILABLE', 'the WebRTC VAD could not allocate an instance');
    }
    fvad._fvad_set_mode(this.inst, 2);
    fvad._fvad_set_sample_rate(this.inst, RATE);
  }

  /** Feeds the 16 kHz samples of one 80 ms frame (any length) and returns that frame's horizons. */
  frame(samples16k: Int16Array, frameSeconds = 0.08): VadPrediction[] {
    if (!(samples16k instanceof Int16Array)) throw new VoicewireError('INVALID_ARGUMENT', `VoiceActivity.frame: samples must be an Int16Array, got ${describeValue(samples16k)}`);
    if (typeof frameSeconds !== 'number' || !(frameSeconds >= 0 && frameSeconds < Infinity)) {
      throw new VoicewireError('INVALID_ARGUMENT', `VoiceActivity.frame: frameSeconds must be a finite number ≥ 0, got ${describeValue(frameSeconds)}`);
    }
    // After free() the buffer at `ptr` may belong to another instance, and libfvad aborts on a freed one.
    if (!this.inst) throw new VoicewireError('INVALID_STATE', 'VoiceActivity.frame after free()');
    let speech = 0;
    let total = 0;
    for (let i = 0; i < samples16k.length; ) {
      const n = Math.min(SUB - this.fill, samples16k.length - i);
      this.pending.set(samples16k.subarray(i, i + n), this.fill);
      this.fill += n;
      i += n;
      if (this.fill === SUB) {
        this.fvad.HEAP16.set(this.pending, this.ptr >> 1);
        if (this.fvad._fvad_process(this.inst, this.ptr, SUB) === 1) speech++;
        total++;
        this.fill = 0;
      }
    }
    const fraction = total > 0 ? speech / total : 0;
    this.x = PAUSE_MODEL.smoothing * fraction + (1 - PAUSE_MODEL.smoothing) * this.x;
    this.silence = fraction >= 0.5 ? 0 : this.silence + frameSeconds;
    return inactivityFromPause(this.x, this.silence);
  }

  free(): void {
    if (this.inst) {
      this.fvad._fvad_free(this.inst);
      this.fvad._free(this.ptr);
    }
    this.inst = 0;
  }
}

function round(p: number): number {
  return Math.round(Math.min(1, Math.max(0, p)) * 1e4) / 1e4;
}
