/**
 * Turn-taking for STT clients (service-api.md §4.4 "Turn-taking guidance", protocol-notes.md):
 * reads the `vad` predictions of `step` messages, decides when the speaker's turn ended, and gives
 * the `delay_in_frames` silent frames to send right away (faster than real time) so the rest of
 * the transcript arrives sooner.
 *
 * Default decision: the turn ended when the `inactivity_prob` of the third `vad` entry (the 2 s
 * horizon) is above 0.5. Thresholds in the wild range from 0.5 to 0.9; one client smooths the
 * probability and ignores the first steps: both are options here.
 */
import { VoicewireError } from '../errors.js';
import { createSilenceFrames } from '../framer.js';
import { readyDelayInFrames, type SttStepMessage } from './messages.js';

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
  /** Bytes per silent frame. Default 3840 (80 ms of 24 kHz s16le, §4.4). */
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
   * The `delay_in_frames` silent frames (zeros, {@link TurnTakingOptions.frameBytes} each) to send
   * right after the end of a turn, faster than real time.
   * @throws VoicewireError `INVALID_STATE` when the delay is not known yet.
   */
  silenceFrames(): Uint8Array[];
  /** Starts a new turn: smoothing, warm-up and the end-of-turn latch start over. */
  reset(): void;
}

function checkNumber(name: string, value: number, min: number, max: number, minOpen = false): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || (minOpen ? value <= min : value < min) || value > max) {
    throw new VoicewireError('INVALID_ARGUMENT', `createTurnTaking: ${name} must be a number in ${minOpen ? '(' : '['}${min}, ${max}], got ${String(value)}`);
  }
  return value;
}

function checkInteger(name: string, value: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new VoicewireError('INVALID_ARGUMENT', `createTurnTaking: ${name} must be a non-negative integer, got ${String(value)}`);
  }
  return value;
}

/** Creates a turn-taking detector (see the module comment for the defaults). */
export function createTurnTaking(options: TurnTakingOptions = {}): TurnTaking {
  const threshold = checkNumber('threshold', options.threshold ?? 0.5, 0, 1);
  const horizonIndex = checkInteger('horizonIndex', options.horizonIndex ?? 2);
  const smoothing = checkNumber('smoothing', options.smoothing ?? 1, 0, 1, true);
  const warmupSteps = checkInteger('warmupSteps', options.warmupSteps ?? 0);
  const frameBytes = checkInteger('frameBytes', options.frameBytes ?? 3840);
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
      seen++;
      if (seen <= warmupSteps) return { probability: null, endOfTurn: false };
      const entry = message.vad[horizonIndex];
      if (entry === undefined || typeof entry.inactivity_prob !== 'number' || !Number.isFinite(entry.inactivity_prob)) {
        return { probability: null, endOfTurn: false };
      }
      const p = entry.inactivity_prob;
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
      return createSilenceFrames(delayInFrames, frameBytes);
    },
    reset() {
      seen = 0;
      smoothed = null;
      ended = false;
    },
  };
}
