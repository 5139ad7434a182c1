/**
 * The model side of a server: what the session machines drive. A server plugs its models in by
 * implementing {@link SttEngine} or {@link TtsEngine}; the session runner does the rest (message
 * validation, ordering, flush barriers, timing, multiplexing, errors).
 *
 * An engine opens one {@link SttEngineStream} / {@link TtsEngineStream} per request. Its methods
 * may be synchronous or return a promise; the runner never calls the next method of a stream
 * before the previous one settled, so engines need no locking. Events go to the `emit` callback
 * given at open time, at any moment while the stream is open (synchronously inside a call, or
 * later as the model produces them). Events emitted after `close()` are dropped.
 *
 * Timing is per stream (i.e. per request): times are seconds from the start of that request.
 */
import { optionsArg } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';
import type { VadPrediction } from '../protocol/messages.js';
import type { SttJsonConfig, TtsJsonConfig } from '../protocol/config.js';
import type { AudioFormatName } from '../audio/format.js';

/** A value or a promise of it. */
export type MaybePromise<T> = T | Promise<T>;

// ---------------------------------------------------------------------------------------------
// STT
// ---------------------------------------------------------------------------------------------

/** What an STT stream tells the `ready` message (§4.4). */
export interface SttEngineInfo {
  /** Model name reported in `ready`. Default: the setup's `model_name`, else `default`. */
  modelName?: string;
  /** Input rate of `push` frames. Default 24000. */
  sampleRate?: number;
  /** Samples per frame. Default 1920 (80 ms at 24 kHz). */
  frameSize?: number;
  /** Model delay in frames: text for a frame comes out this many frames later (§4.4). */
  delayInFrames: number;
  /** Names of the text streams, when there are several. */
  textStreamNames?: string[];
}

/** The request an STT stream serves: the validated setup. */
export interface SttEngineConfig {
  modelName: string;
  inputFormat: AudioFormatName;
  jsonConfig: SttJsonConfig;
  clientReqId?: string;
  /**
   * Who the request is for, so engines with a shared queue serve callers in turn (issue 31):
   * path segments separated by `/`, outermost first (the server sets organization/API key/socket).
   * Default: none (one anonymous caller).
   */
  tenant?: string;
}

/**
 * What an STT stream emits. Each pushed frame yields exactly one `step` (after the `text` and
 * `end_text` that frame produced); the runner numbers steps and adds `step_idx`,
 * `step_duration_s` and `total_duration_s`.
 */
export type SttEngineEvent =
  | { type: 'text'; text: string; start_s: number; stream_id?: number | null }
  | { type: 'end_text'; stop_s: number; stream_id?: number | null }
  | { type: 'step'; vad: VadPrediction[] };

/** One STT request inside the model. */
export interface SttEngineStream {
  readonly info: SttEngineInfo;
  /**
   * One frame of `info.frameSize` samples, 24 kHz s16 mono. Emits that frame's events.
   * `audioSamples`: how many of the frame's samples, from its start, are the client's audio; the
   * rest is silence the server added (the padded last frame, the `delay_in_frames` frames behind
   * a flush or the end), which is not billed. Default: the whole frame.
   */
  push(frame: Int16Array, audioSamples?: number): MaybePromise<void>;
  /** No more frames: emit whatever is still pending (e.g. the last `end_text`). Optional. */
  end?(): MaybePromise<void>;
  /** Release the stream; called once, after `end` or on abort. */
  close(): void;
}

/** An STT model: opens one stream per request. */
export interface SttEngine {
  open(config: SttEngineConfig, emit: (event: SttEngineEvent) => void): MaybePromise<SttEngineStream>;
}

// ---------------------------------------------------------------------------------------------
// TTS
// ---------------------------------------------------------------------------------------------

/** What a TTS stream tells the `ready` message. */
export interface TtsEngineInfo {
  modelName?: string;
  /** Rate of emitted audio. Default 48000. */
  sampleRate?: number;
  /** Samples per emitted frame. Default 3840 (80 ms at 48 kHz). */
  frameSize?: number;
  audioStreamNames?: string[];
  textStreamNames?: string[];
}

/** The request a TTS stream serves: the validated setup. */
export interface TtsEngineConfig {
  modelName: string;
  voiceId?: string;
  outputFormat: AudioFormatName;
  pronunciationId?: string;
  jsonConfig: TtsJsonConfig;
  clientReqId?: string;
  /**
   * Who the request is for, so engines with a shared queue serve callers in turn (issue 31):
   * path segments separated by `/`, outermost first (the server sets organization/API key/socket).
   * Default: none (one anonymous caller).
   */
  tenant?: string;
}

/**
 * What a TTS stream emits: model frames (s16 mono at `info.sampleRate`, normally 3840 samples =
 * 80 ms; the runner stamps `start_s`/`stop_s` from the running sample count and encodes them to
 * the requested format), word timestamps (seconds from the start of the request, on the 80 ms
 * grid), and `need_more_text` when the model waits for look-ahead words. An `audio` event's `pcm`
 * is read-only to its receivers: an engine may hand out the same array again (the tone engine
 * shares its precomputed frames); copy it to change it.
 */
export type TtsEngineEvent =
  | { type: 'audio'; pcm: Int16Array; stream_id?: number | null }
  | { type: 'word'; text: string; start_s: number; stop_s: number; stream_id?: number | null }
  | { type: 'need_more_text' };

/** One TTS request inside the model. Text arrives already split from its tags. */
export interface TtsEngineStream {
  readonly info: TtsEngineInfo;
  /** Plain text (no tags). Consecutive client messages arrive joined with one space. */
  text(text: string): MaybePromise<void>;
  /** A `<break time="…s" />`: a pause of `seconds` (0.1 to 2.0). */
  pause(seconds: number): MaybePromise<void>;
  /** A `<flush>`: produce audio for all text so far, without waiting for look-ahead. */
  flush(): MaybePromise<void>;
  /** End of text: emit all remaining audio and word timestamps. */
  end(): MaybePromise<void>;
  /** Release the stream; called once, after `end` or on abort. */
  close(): void;
}

/** A TTS model: opens one stream per request. */
export interface TtsEngine {
  open(config: TtsEngineConfig, emit: (event: TtsEngineEvent) => void): MaybePromise<TtsEngineStream>;
}

// ---------------------------------------------------------------------------------------------
// Scripted engines for tests and examples
// ---------------------------------------------------------------------------------------------

/** Streams a scripted engine opened and closed so far. */
interface StreamCounts {
  opened: number;
  closed: number;
}

/** Runs `f` now, or on a later microtask when `async`. */
function laterFor(async: boolean | undefined): <T>(f: () => T) => MaybePromise<T> {
  return <T>(f: () => T): MaybePromise<T> => (async ? Promise.resolve().then(f) : f());
}

/** A scripted engine: its `open`, and read-only `opened`/`closed` counters over `counts`. */
function countingEngine<Engine extends object>(counts: StreamCounts, engine: Engine): Engine & { readonly opened: number; readonly closed: number } {
  return {
    get opened() {
      return counts.opened;
    },
    get closed() {
      return counts.closed;
    },
    ...engine,
  };
}

/** Options of {@link createScriptedSttEngine}. */
export interface ScriptedSttEngineOptions {
  /** Model delay announced in `ready`. Default 2. */
  delayInFrames?: number;
  /** Model name. Default `scripted-stt`. */
  modelName?: string;
  /**
   * Events to emit when frame `i` (0-based, per stream) is pushed, before that frame's step.
   * Key: the frame index.
   */
  frames?: Readonly<Record<number, readonly Exclude<SttEngineEvent, { type: 'step' }>[]>>;
  /** Events emitted by `end()`. Default none. */
  atEnd?: readonly Exclude<SttEngineEvent, { type: 'step' }>[];
  /** The `vad` of the step of frame `i`. Default three horizons (0.5, 1, 2 s) with probability 0. */
  vad?: (frameIndex: number, frame: Int16Array) => VadPrediction[];
  /** Throw from `push` when this frame index is reached (tests of the 1011 path). */
  failAtFrame?: number;
  /** Throw from `open` (tests of setup failures). */
  failOpen?: boolean;
  /** Resolve each call asynchronously (on a later microtask) instead of synchronously. */
  async?: boolean;
}

/** A scripted STT engine: a fixed timeline of events per frame index, the same for every stream. */
export function createScriptedSttEngine(options: ScriptedSttEngineOptions = {}): SttEngine & { readonly opened: number; readonly closed: number } {
  options = optionsArg(options, 'createScriptedSttEngine: options');
  if (options.delayInFrames !== undefined && !(Number.isInteger(options.delayInFrames) && options.delayInFrames >= 0)) {
    throw new VoicewireError('INVALID_ARGUMENT', 'createScriptedSttEngine: delayInFrames must be a non-negative integer');
  }
  const delayInFrames = options.delayInFrames ?? 2;
  const counts: StreamCounts = { opened: 0, closed: 0 };
  const later = laterFor(options.async);
  const defaultVad = (): VadPrediction[] => [
    { horizon_s: 0.5, inactivity_prob: 0 },
    { horizon_s: 1, inactivity_prob: 0 },
    { horizon_s: 2, inactivity_prob: 0 },
  ];
  return countingEngine<SttEngine>(counts, {
    open(_config, emit) {
      return later(() => {
        if (options.failOpen) throw new Error('scripted STT engine: open failed');
        counts.opened++;
        let index = 0;
        let closed = false;
        const stream: SttEngineStream = {
          info: { modelName: options.modelName ?? 'scripted-stt', delayInFrames },
          push(frame) {
            return later(() => {
              if (closed) throw new Error('scripted STT engine: push after close');
              const i = index++;
              if (options.failAtFrame === i) throw new Error(`scripted STT engine: failure at frame ${i}`);
              for (const e of options.frames?.[i] ?? []) emit({ ...e });
              emit({ type: 'step', vad: (options.vad ?? defaultVad)(i, frame) });
            });
          },
          end() {
            return later(() => {
              for (const e of options.atEnd ?? []) emit({ ...e });
            });
          },
          close() {
            if (!closed) counts.closed++;
            closed = true;
          },
        };
        return stream;
      });
    },
  });
}

/** Options of {@link createScriptedTtsEngine}. */
export interface ScriptedTtsEngineOptions {
  /** Model name. Default `scripted-tts`. */
  modelName?: string;
  /** Words held back as look-ahead before they are spoken (flush and end release them). Default 1. */
  lookaheadWords?: number;
  /** 80 ms frames per word. Default 1. */
  framesPerWord?: number;
  /** Emit `need_more_text` after a `text` call that leaves words held back. Default false. */
  needMoreText?: boolean;
  /** Samples per frame. Default 3840. */
  frameSize?: number;
  /** Throw from `text` when the stream's word count reaches this number. */
  failAtWord?: number;
  /** Resolve each call asynchronously. */
  async?: boolean;
}

/**
 * A scripted TTS engine. Words are split on whitespace; word `k` (1-based, per stream) is spoken
 * as `framesPerWord` frames filled with the sample value `k`, preceded by its word timestamp
 * (`start_s`/`stop_s` on the 80 ms grid). A pause of `s` seconds is `round(s / 0.08)` frames of
 * zeros. The last `lookaheadWords` words wait for more text, a flush, a pause or the end.
 */
export function createScriptedTtsEngine(options: ScriptedTtsEngineOptions = {}): TtsEngine & { readonly opened: number; readonly closed: number } {
  options = optionsArg(options, 'createScriptedTtsEngine: options');
  for (const k of ['lookaheadWords', 'framesPerWord', 'frameSize'] as const) {
    const v = options[k];
    if (v !== undefined && !(Number.isInteger(v) && v >= 0)) throw new VoicewireError('INVALID_ARGUMENT', `createScriptedTtsEngine: ${k} must be a non-negative integer`);
  }
  const lookahead = options.lookaheadWords ?? 1;
  const framesPerWord = options.framesPerWord ?? 1;
  const frameSize = options.frameSize ?? 3840;
  const frameSeconds = frameSize / 48000;
  const counts: StreamCounts = { opened: 0, closed: 0 };
  const later = laterFor(options.async);
  return countingEngine<TtsEngine>(counts, {
    open(_config, emit) {
      return later(() => {
        counts.opened++;
        const held: string[] = [];
        let frames = 0;
        let words = 0;
        let closed = false;
        const speak = (keep: number): void => {
          while (held.length > keep) {
            const word = held.shift()!;
            words++;
            emit({ type: 'word', text: word, start_s: round(frames * frameSeconds), stop_s: round((frames + framesPerWord) * frameSeconds) });
            for (let f = 0; f < framesPerWord; f++) emit({ type: 'audio', pcm: new Int16Array(frameSize).fill(words) });
            frames += framesPerWord;
          }
        };
        const stream: TtsEngineStream = {
          info: { modelName: options.modelName ?? 'scripted-tts', audioStreamNames: ['main'], textStreamNames: ['main'] },
          text(text) {
            return later(() => {
              if (closed) throw new Error('scripted TTS engine: text after close');
              for (const w of text.split(/\s+/)) {
                if (w === '') continue;
                if (options.failAtWord !== undefined && words + held.length + 1 >= options.failAtWord) {
                  throw new Error(`scripted TTS engine: failure at word ${options.failAtWord}`);
                }
                held.push(w);
              }
              speak(lookahead);
              if (options.needMoreText && held.length > 0) emit({ type: 'need_more_text' });
            });
          },
          pause(seconds) {
            return later(() => {
              speak(0);
              const n = Math.round(seconds / 0.08);
              for (let f = 0; f < n; f++) emit({ type: 'audio', pcm: new Int16Array(frameSize) });
              frames += n;
            });
          },
          flush() {
            return later(() => speak(0));
          },
          end() {
            return later(() => speak(0));
          },
          close() {
            if (!closed) counts.closed++;
            closed = true;
          },
        };
        return stream;
      });
    },
  });
}

function round(seconds: number): number {
  return Math.round(seconds * 1e6) / 1e6;
}
