/**
 * Speech-to-text with an offline sherpa-onnx model (NeMo CTC, Zipformer CTC, Whisper, SenseVoice,
 * Paraformer, Moonshine, transducers) through VAD-segmented decoding, on worker threads (issue 24).
 *
 * Each 80 ms frame (24 kHz) is resampled to 16 kHz and fed to the WebRTC VAD of vad.ts, which also
 * gives the frame's `step` horizons. A segment opens when the 0.5 s horizon says speech (its
 * `inactivity_prob` below 0.5), with the 0.24 s before it, and closes when the 2 s horizon passes
 * 0.5 (about 0.45 s of silence), at {@link SherpaSttOptions.maxSegmentSeconds}, or at the end of
 * the stream. A closed segment is decoded by a worker while the stream goes on (segments are
 * decoded in order; past two waiting, `push` waits for the oldest); its words then go out as `text` (`start_s` from the model's token times when
 * it gives them, else spread over the segment) and `end_text` (the next word's start, or the
 * segment's end). Text therefore comes out about half a second after speech stops
 * (`delayInFrames` 7), as with pocketsphinx's utterances.
 *
 * With a Silero VAD ({@link SherpaSttOptions.vad}, `serve --vad-model FILE`) the segments are
 * Silero's instead, cut by sherpa-onnx on its worker thread (sherpa-vad.ts: a segment opens
 * ~0.32 s before 0.25 s of speech and closes 0.5 s after it); the `step` horizons still come from
 * the WebRTC VAD on every frame, as without it, so a segment's end and the 2 s horizon passing
 * 0.5 no longer come from the same detector (they differ by a frame or two on clean speech, more
 * in noise, where Silero is the better judge).
 *
 * `language` (default `en`) must be one the model serves ({@link SherpaModel.languages}: a
 * multilingual Whisper folder the five of §1); others are refused at setup with
 * `STT_LANGUAGE_UNSUPPORTED` (1008) naming the model's. A multilingual Whisper decodes each
 * segment in the stream's language (no detection); other models have one language set at load.
 */
import { createInt16Resampler, type Resampler } from '../audio/resampler.js';
import type { SttEngine, SttEngineConfig, SttEngineEvent, SttEngineStream } from '../sessions/engine.js';
import { describeValue, functionArg, objectArg, optionsArg } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';
import { SherpaPool, type SttJobResult } from './sherpa-pool.js';
import { SherpaVadWorker, type SherpaVadStream } from './sherpa-vad.js';
import { loadVad, VoiceActivity } from './vad.js';

/** Options of {@link createSherpaSttEngine}. */
export interface SherpaSttOptions {
  /** Longest segment decoded at once, seconds (a longer stretch of speech is cut). Default 20. */
  maxSegmentSeconds?: number;
  /**
   * A Silero VAD on its worker thread, which then cuts the segments (its own `maxSegmentSeconds`
   * applies). Default none: the WebRTC VAD's segments.
   */
  vad?: SherpaVadWorker;
}

const RATE = 16000;
const PREROLL = 3 * 1280; // three 80 ms frames at 16 kHz
/**
 * Closed segments a stream may have waiting for their decode (beside the one decoding): past it,
 * `push` waits for the oldest, so a client that sends audio faster than the model decodes it is
 * slowed (the session stops reading it) instead of piling up segments of 20 s each (issue 31 §4).
 */
const MAX_WAITING_SEGMENTS = 2;

/** The sherpa-onnx STT engine over `pool` (one per process: it serves every request). */
export function createSherpaSttEngine(pool: SherpaPool, options: SherpaSttOptions = {}): SttEngine {
  if (!(pool instanceof SherpaPool)) throw new VoicewireError('INVALID_ARGUMENT', `createSherpaSttEngine: pool must be a SherpaPool, got ${describeValue(pool)}`);
  options = optionsArg(options, 'createSherpaSttEngine: options');
  const maxSeconds = options.maxSegmentSeconds ?? 20;
  if (typeof maxSeconds !== 'number' || !(maxSeconds > 0 && maxSeconds <= 600)) throw new VoicewireError('INVALID_ARGUMENT', `createSherpaSttEngine: maxSegmentSeconds must be a number in (0, 600], got ${describeValue(maxSeconds)}`);
  if (options.vad !== undefined && !(options.vad instanceof SherpaVadWorker)) throw new VoicewireError('INVALID_ARGUMENT', `createSherpaSttEngine: vad must be a SherpaVadWorker, got ${describeValue(options.vad)}`);
  const silero = options.vad;
  return {
    async open(config, emit) {
      const language = sherpaSttLanguage(config, emit, pool.model);
      const fvad = await loadVad();
      const vad = new VoiceActivity(fvad);
      return new SherpaSttStream(pool, vad, emit, config.modelName === 'default' ? pool.model.name : config.modelName, Math.round(maxSeconds * RATE), pool.model.perRequestLanguage === true ? language : undefined, silero, config.tenant);
    },
  };
}

class SherpaSttStream implements SttEngineStream {
  readonly info;
  private readonly resampler: Resampler<Int16Array> = createInt16Resampler({ from: 24000, to: RATE });
  /** 16 kHz samples seen so far. */
  private samples = 0;
  /** The last samples before a segment opens (pre-roll), then the segment's. */
  private chunks: Int16Array[] = [];
  private held = 0;
  private segmentStart = -1;
  private decoding: Promise<void> = Promise.resolve();
  /** The decode of each closed segment not yet done, oldest first. */
  private readonly queued: Promise<void>[] = [];
  private failure: unknown;
  private closed = false;
  /** Silero's side of this stream, when it cuts the segments. */
  private readonly silero: SherpaVadStream | undefined;

  constructor(
    private readonly pool: SherpaPool,
    private readonly vad: VoiceActivity,
    private readonly emit: (e: SttEngineEvent) => void,
    modelName: string,
    private readonly maxSegment: number,
    private readonly language: string | undefined,
    sileroWorker: SherpaVadWorker | undefined,
    /** Whose turn its segments wait for in the pool (issue 31). */
    private readonly tenant: string | undefined,
  ) {
    this.info = { modelName, sampleRate: 24000, frameSize: 1920, delayInFrames: 7 };
    this.silero = sileroWorker?.openStream(
      (start, samples) => this.decode(samples, start, start + samples.length),
      (err) => (this.failure ??= err),
    );
  }

  push(frame: Int16Array): Promise<void> | undefined {
    if (this.failure !== undefined) throw this.failure;
    const pcm = this.resampler.push(frame);
    const horizons = this.vad.frame(pcm);
    if (this.silero !== undefined) {
      this.silero.push(floats(pcm));
      this.emit({ type: 'step', vad: horizons });
      return this.backlog();
    }
    this.take(pcm);
    const speech = (horizons[0]?.inactivity_prob ?? 1) < 0.5;
    const over = (horizons[2]?.inactivity_prob ?? 0) > 0.5;
    if (this.segmentStart < 0) {
      if (speech) this.segmentStart = this.samples - this.held;
      else this.trimPreroll();
    } else if (over || this.held >= this.maxSegment) this.closeSegment();
    this.emit({ type: 'step', vad: horizons });
    return this.backlog();
  }

  /** Past {@link MAX_WAITING_SEGMENTS} waiting, the decode whose end brings them back to it. */
  private backlog(): Promise<void> | undefined {
    const n = this.queued.length - 1 - MAX_WAITING_SEGMENTS;
    return n >= 0 ? this.queued[n] : undefined;
  }

  async end(): Promise<void> {
    if (this.silero !== undefined) {
      this.silero.push(floats(this.resampler.flush()));
      await this.silero.end();
      await this.decoding;
      if (this.failure !== undefined) throw this.failure;
      return;
    }
    this.take(this.resampler.flush());
    if (this.segmentStart >= 0) this.closeSegment();
    await this.decoding;
    if (this.failure !== undefined) throw this.failure;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.silero?.close();
    this.vad.free();
  }

  private take(pcm: Int16Array): void {
    if (pcm.length === 0) return;
    this.chunks.push(pcm);
    this.held += pcm.length;
    this.samples += pcm.length;
  }

  private trimPreroll(): void {
    while (this.chunks.length > 1 && this.held - this.chunks[0]!.length >= PREROLL) this.held -= this.chunks.shift()!.length;
  }

  private closeSegment(): void {
    const audio = new Float32Array(this.held);
    let o = 0;
    for (const c of this.chunks) {
      for (let i = 0; i < c.length; i++) audio[o + i] = c[i]! / 32768;
      o += c.length;
    }
    const start = this.segmentStart;
    const stop = start + this.held;
    this.chunks = [];
    this.held = 0;
    this.segmentStart = -1;
    this.decode(audio, start, stop);
  }

  /** Decodes the segment `audio` (samples `start`–`stop` of the stream) after those before it. */
  private decode(audio: Float32Array, start: number, stop: number): void {
    // Decoded in order while the stream goes on; words go out when their segment is done.
    const done = (this.decoding = this.decoding.then(async () => {
      if (this.closed || this.failure !== undefined) return;
      try {
        const result = await this.pool.run({ op: 'stt', samples: audio, sampleRate: RATE, ...(this.language !== undefined ? { language: this.language } : {}) }, () => this.closed, this.tenant);
        if (!this.closed) this.sendWords(result, start / RATE, stop / RATE);
      } catch (err) {
        if (!this.closed) this.failure = err;
      }
    }));
    this.queued.push(done);
    // They end in order (one chain, never rejected): the oldest is this one. Registered before
    // any push waits on it, so a waiting push resumes with it gone.
    void done.then(() => this.queued.shift());
  }

  /** The segment's words as `text`/`end_text` pairs on the stream's timeline. */
  private sendWords(result: SttJobResult, from: number, to: number): void {
    const words = wordsOf(result, to - from);
    for (let i = 0; i < words.length; i++) {
      const w = words[i]!;
      const start = round(from + w.at);
      const stop = i + 1 < words.length ? round(from + words[i + 1]!.at) : round(to);
      this.emit({ type: 'text', text: w.text, start_s: start });
      this.emit({ type: 'end_text', stop_s: Math.max(start, stop) });
    }
  }
}

/**
 * Words with their start (seconds into the segment): from the tokens and their times when the
 * model gives both (a token that starts with a space or `▁` starts a word), else the text's words
 * spread evenly over the segment.
 */
export function wordsOf(result: SttJobResult, seconds: number): Array<{ text: string; at: number }> {
  const { tokens, timestamps } = result;
  if (tokens.length > 0 && tokens.length === timestamps.length) {
    const words: Array<{ text: string; at: number }> = [];
    for (let i = 0; i < tokens.length; i++) {
      const t = tokens[i]!;
      const starts = /^[\s▁]/.test(t) || words.length === 0;
      const piece = t.replace(/^[\s▁]+/, '');
      if (starts) words.push({ text: piece, at: timestamps[i]! });
      else words[words.length - 1]!.text += piece;
    }
    return words.filter((w) => w.text !== '');
  }
  const texts = result.text.trim().split(/\s+/).filter((w) => w !== '');
  return texts.map((text, i) => ({ text, at: (seconds * i) / texts.length }));
}

/** 16-bit samples as floats in −1…1 (sherpa-onnx's input). */
function floats(pcm: Int16Array): Float32Array {
  const out = new Float32Array(pcm.length);
  for (let i = 0; i < pcm.length; i++) out[i] = pcm[i]! / 32768;
  return out;
}

function round(t: number): number {
  return Math.round(t * 1000) / 1000;
}

/**
 * The checks both sherpa-onnx STT engines make at `open`: the arguments, and the request's
 * `language` (default `en`) among the model's. Returns the language.
 */
export function sherpaSttLanguage(config: SttEngineConfig, emit: unknown, model: { name: string; languages: readonly string[] }): string {
  objectArg(config, 'sherpa-onnx open: config');
  functionArg(emit, 'sherpa-onnx open: emit');
  const language = optionsArg(config.jsonConfig, 'sherpa-onnx open: config.jsonConfig').language ?? 'en';
  if (typeof language !== 'string') throw new VoicewireError('INVALID_ARGUMENT', `sherpa-onnx open: config.jsonConfig.language must be a string, got ${describeValue(language)}`);
  if (!model.languages.includes(language)) throw new VoicewireError('STT_LANGUAGE_UNSUPPORTED', `speech-to-text in "${language}" is not served by the model ${model.name}; its languages: ${model.languages.join(', ')}`);
  return language;
}
