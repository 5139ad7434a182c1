/**
 * Turn-taking for STT clients (docs/api.md §4.4 "Turn-taking guidance", protocol-notes.md):
 * reads the `vad` predictions of `step` messages, decides when the speaker's turn ended, and gives
 * the `delay_in_frames` silent frames to send right away (faster than real time) so the rest of
 * the transcript arrives sooner.
 *
 * Default decision: the turn ended when the `inactivity_prob` of the third `vad` entry (the 2 s
 * horizon) is above 0.5. Thresholds in the wild range from 0.5 to 0.9; one client smooths the
 * probability and ignores the first steps: both are options here.
 *
 * The silent frames are in the request's `input_format` (silence is not zero bytes in G.711, and
 * 80 ms is a different byte count at each rate); for `opus` the client's own encoder makes them.
 */
import { objectArg, optionsArg, shown } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';
import { parseAudioFormat } from '../audio/format.js';
import { createSilenceFrames } from '../audio/framer.js';
import { readyDelayInFrames, type SttStepMessage } from '../protocol/messages.js';

/** Options of {@link createTurnTaking}. */
export interface TurnTakingOptions {
  /** The turn ended when the (smoothed) probability is above this. Default 0.5. */
  threshold?: number;
  /** Which `vad` entry to read. Default 2 (the third, 2 s horizon). */
  horizonIndex?: number;
  /**
   * Exponential moving average weight of the newest value, in (0, 1]:
   * `smoothed = smoothing · p + (1 − smoothing) · smoothed`, starting from the first value read.
   * Default 1 (no smoothing).
   */
  smoothing?: number;
  /** Steps ignored at the start of each turn (after creation and after each {@link TurnTaking.reset}). Default 0. */
  warmupSteps?: number;
  /** Model delay in frames, when known before `ready`. Default: taken from `ready`. */
  delayInFrames?: number;
  /**
   * The setup's `input_format` (§4.4), which decides what a silent frame is (see
   * {@link TurnTaking.silenceFrames}). Default `'pcm'` (24 kHz s16le).
   */
  inputFormat?: string;
  /** Rate of the WAV's data, Hz, for `inputFormat: 'wav'` (the header the client already sent says it). Default 24000. */
  wavSampleRate?: number;
  /** Bits per sample of the WAV's data (16, 24 or 32, §4.4), for `inputFormat: 'wav'`. Default 16. */
  wavBitsPerSample?: 16 | 24 | 32;
  /**
   * Encodes one 80 ms frame of silence (`pcm` holds zero samples at `sampleRate`: 48000 for
   * `opus`) into the bytes the client sends. Required for `opus`: Ogg Opus is a stateful stream
   * (page sequence numbers, granules, the encoder's own state), so only the client's own encoder can
   * continue it; pass a function that feeds the zeros to that encoder and returns its pages. When
   * given it is used for every format.
   */
  encodeSilence?: (pcm: Int16Array, sampleRate: number) => Uint8Array;
  /** Bytes per silent frame, overriding the format's 80 ms (raw formats only). Default: from `inputFormat`. */
  frameBytes?: number;
}

/** What {@link TurnTaking.step} decided. */
export interface TurnTakingDecision {
  /** The (smoothed) probability read from this step, or `null` while warming up or when the step has no such horizon. */
  probability: number | null;
  /** True exactly once per turn: on the step where the probability first went above the threshold. */
  endOfTurn: boolean;
}

/** A turn-taking detector for one request. */
export interface TurnTaking {
  /** Reads the model delay from `ready` (`delay_in_frames`, or `delay_in_tokens`). */
  ready(message: { delay_in_frames?: number; delay_in_tokens?: number }): void;
  /** Reads one `step` (or legacy `vad`) message. */
  step(message: Pick<SttStepMessage, 'vad'>): TurnTakingDecision;
  /** The model delay in frames, once known. */
  readonly delayInFrames: number | undefined;
  /** True after an end of turn, until the probability falls back to the threshold or below (speech resumed) or {@link reset}. */
  readonly turnEnded: boolean;
  /**
   * The `delay_in_frames` silent 80 ms frames to send right after the end of a turn, faster than
   * real time, in the request's `input_format`:
   * - `pcm` (24 kHz) and `pcm_N`: `round(N · 0.08)` zero samples, s16le (3840 bytes for `pcm`,
   *   1280 for `pcm_8000`, 3528 for `pcm_22050`);
   * - `ulaw_8000` / `mulaw_8000`: 640 bytes of 0xFF (G.711 μ-law of 0; 0x00 would be −32124);
   * - `alaw_8000`: 640 bytes of 0xD5 (A-law of 0, decodes to +8; 0x00 would be −5504);
   * - `wav`: raw zero PCM at {@link TurnTakingOptions.wavSampleRate} and `wavBitsPerSample`, to
   *   send after the header (the WAV stream already started);
   * - `opus`: what {@link TurnTakingOptions.encodeSilence} returns for 3840 zero samples at 48 kHz.
   * @throws VoicewireError `INVALID_STATE` when the delay is not known yet; `INVALID_ARGUMENT` for
   *   `opus` without `encodeSilence`.
   */
  silenceFrames(): Uint8Array[];
  /** Starts a new turn: smoothing, warm-up and the end-of-turn latch start over. */
  reset(): void;
}

function checkNumber(name: string, value: number, min: number, max: number, minOpen = false): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || (minOpen ? value <= min : value < min) || value > max) {
    throw new VoicewireError('INVALID_ARGUMENT', `createTurnTaking: ${name} must be a number in ${minOpen ? '(' : '['}${min}, ${max}], got ${shown(value)}`);
  }
  return value;
}

function checkInteger(name: string, value: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new VoicewireError('INVALID_ARGUMENT', `createTurnTaking: ${name} must be a non-negative integer, got ${shown(value)}`);
  }
  return value;
}

/** What one silent frame is, decided once from the options. */
type SilenceSpec =
  | { kind: 'bytes'; frameBytes: number; fill: number }
  | { kind: 'encode'; encode: (pcm: Int16Array, sampleRate: number) => Uint8Array; samples: number; sampleRate: number }
  | { kind: 'missing'; format: string };

/** G.711 code of a zero sample (ITU-T G.711 / G.191): μ-law 0xFF, A-law 0xD5. */
const MULAW_ZERO = 0xff;
const ALAW_ZERO = 0xd5;
/** Frame length of the STT route, seconds (§4.4: 80 ms). */
const FRAME_SECONDS = 0.08;

function silenceSpec(options: TurnTakingOptions): SilenceSpec {
  const format = parseAudioFormat(options.inputFormat ?? 'pcm', { direction: 'stt-input' });
  let rate = format.sampleRate;
  let bytesPerSample = format.bytesPerSample;
  if (format.container === 'wav') {
    rate = checkInteger('wavSampleRate', options.wavSampleRate ?? 24000);
    const bits = options.wavBitsPerSample ?? 16;
    if (bits !== 16 && bits !== 24 && bits !== 32) throw new VoicewireError('INVALID_ARGUMENT', `createTurnTaking: wavBitsPerSample must be 16, 24 or 32, got ${shown(bits)}`);
    bytesPerSample = bits / 8;
  }
  const samples = Math.round((rate ?? 48000) * FRAME_SECONDS);
  if (options.encodeSilence !== undefined) {
    if (typeof options.encodeSilence !== 'function') throw new VoicewireError('INVALID_ARGUMENT', 'createTurnTaking: encodeSilence must be a function');
    return { kind: 'encode', encode: options.encodeSilence, samples, sampleRate: rate ?? 48000 };
  }
  if (format.codec === 'opus' || bytesPerSample === null) return { kind: 'missing', format: format.name };
  const fill = format.codec === 'mulaw' ? MULAW_ZERO : format.codec === 'alaw' ? ALAW_ZERO : 0;
  const frameBytes = options.frameBytes === undefined ? samples * bytesPerSample : checkInteger('frameBytes', options.frameBytes);
  if (frameBytes === 0) throw new VoicewireError('INVALID_ARGUMENT', 'createTurnTaking: frameBytes must be positive');
  return { kind: 'bytes', frameBytes, fill };
}

function makeSilence(spec: SilenceSpec, count: number): Uint8Array[] {
  switch (spec.kind) {
    case 'bytes': {
      if (spec.fill === 0) return createSilenceFrames(count, spec.frameBytes);
      const all = new Uint8Array(count * spec.frameBytes).fill(spec.fill);
      const frames = new Array<Uint8Array>(count);
      for (let i = 0; i < count; i++) frames[i] = all.subarray(i * spec.frameBytes, (i + 1) * spec.frameBytes);
      return frames;
    }
    case 'encode': {
      const frames = new Array<Uint8Array>(count);
      // A fresh zero frame per call: an encoder may keep or modify what it is given.
      for (let i = 0; i < count; i++) frames[i] = spec.encode(new Int16Array(spec.samples), spec.sampleRate);
      return frames;
    }
    case 'missing':
      throw new VoicewireError(
        'INVALID_ARGUMENT',
        `TurnTaking.silenceFrames: '${spec.format}' input is a stateful Ogg Opus stream; pass createTurnTaking({ encodeSilence }) that feeds zero samples to the client's own encoder`,
      );
  }
}

/** Creates a turn-taking detector (see the module comment for the defaults). */
export function createTurnTaking(options: TurnTakingOptions = {}): TurnTaking {
  options = optionsArg(options, 'createTurnTaking: options');
  const threshold = checkNumber('threshold', options.threshold ?? 0.5, 0, 1);
  const horizonIndex = checkInteger('horizonIndex', options.horizonIndex ?? 2);
  const smoothing = checkNumber('smoothing', options.smoothing ?? 1, 0, 1, true);
  const warmupSteps = checkInteger('warmupSteps', options.warmupSteps ?? 0);
  const silence = silenceSpec(options);
  let delayInFrames = options.delayInFrames === undefined ? undefined : checkInteger('delayInFrames', options.delayInFrames);
  let seen = 0;
  let smoothed: number | null = null;
  let ended = false;

  return {
    ready(message) {
      const d = readyDelayInFrames(message);
      if (d !== undefined) delayInFrames = checkInteger('delay_in_frames', d);
    },
    step(message) {
      objectArg(message, 'TurnTaking.step message');
      seen++;
      if (seen <= warmupSteps) return { probability: null, endOfTurn: false };
      // A step without a usable estimate at the horizon carries no decision (nor does a malformed one).
      const vad: unknown = message.vad;
      const entry: unknown = Array.isArray(vad) ? vad[horizonIndex] : undefined;
      if (typeof entry !== 'object' || entry === null || typeof (entry as { inactivity_prob?: unknown }).inactivity_prob !== 'number' || !Number.isFinite((entry as { inactivity_prob: number }).inactivity_prob)) {
        return { probability: null, endOfTurn: false };
      }
      const p = (entry as { inactivity_prob: number }).inactivity_prob;
      smoothed = smoothed === null ? p : smoothing * p + (1 - smoothing) * smoothed;
      let endOfTurn = false;
      if (smoothed > threshold) {
        if (!ended) endOfTurn = true;
        ended = true;
      } else {
        ended = false;
      }
      return { probability: smoothed, endOfTurn };
    },
    get delayInFrames() {
      return delayInFrames;
    },
    get turnEnded() {
      return ended;
    },
    silenceFrames() {
      if (delayInFrames === undefined) throw new VoicewireError('INVALID_STATE', 'TurnTaking.silenceFrames: the model delay is unknown (no ready yet, and no delayInFrames option)');
      return makeSilence(silence, delayInFrames);
    },
    reset() {
      seen = 0;
      smoothed = null;
      ended = false;
    },
  };
}
