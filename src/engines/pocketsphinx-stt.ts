/**
 * Speech-to-text with pocketsphinx (US English, Debian's `pocketsphinx-en-us`), streaming
 * (docs/api.md §4.4):
 *
 * - each 80 ms frame (24 kHz) is resampled to 16 kHz with voicewire's resampler and decoded as
 *   it arrives; pocketsphinx's own voice-activity detector cuts utterances, and one that reaches
 *   {@link PocketsphinxSttOptions.maxUtteranceSeconds} (30 s) is cut there (issue 31 §4);
 * - a word is sent as `text` (with `start_s`) once it and every word before it have stood in the
 *   partial hypothesis (same word, same start) for {@link PocketsphinxSttOptions.stableFrames}
 *   frames, a later word follows it and the decoder has heard 0.3 s past its end. Each word's hold
 *   counts on its own: a flickering last word no longer holds back the settled ones before it, and
 *   a word the first pass keeps changing its mind about waits until it has held; its `end_text` (`stop_s`) goes just before the next word's
 *   `text`, or when the utterance or the stream ends. A word already sent is never taken back:
 *   when the final hypothesis of an utterance differs, only its words after the last word sent
 *   (by time) are added;
 * - every frame gets its `step` with the VAD horizons of vad.ts.
 *
 * Languages other than English are refused at setup with `STT_LANGUAGE_UNSUPPORTED` (1008),
 * naming the installed languages. Another pocketsphinx model plugs in with `model` (the server's
 * `--stt-model DIR`), another engine by implementing `SttEngine` (see README "Engines").
 */
import { createInt16Resampler, type Resampler } from '../audio/resampler.js';
import type { SttEngine, SttEngineEvent, SttEngineStream } from '../sessions/engine.js';
import { arrayArg, describeValue, functionArg, objectArg, optionsArg } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';
import { checkModel, PocketsphinxDecoder, pocketsphinxAvailable, pocketsphinxModelFromDir, type PocketsphinxModel, type PsWord } from './pocketsphinx-ffi.js';
import { loadVad, VoiceActivity } from './vad.js';
import { EngineBudget, STT_DECODER_BUDGET } from './budget.js';
import { tenantPath, type TenantPath } from './fair-queue.js';

/** Options of {@link createPocketsphinxSttEngine}. */
export interface PocketsphinxSttOptions {
  /** The model. Default: Debian's US English model (`/usr/share/pocketsphinx/model/en-us`). */
  model?: PocketsphinxModel;
  /** Languages the model serves. Default `['en']`. */
  languages?: readonly string[];
  /** A JSGF grammar to decode with instead of the n-gram model (small vocabularies). */
  jsgf?: string;
  /**
   * Frames (80 ms) a word, with every word before it, must stand unchanged in the partial hypothesis
   * before it is sent. Default 6 (0.48 s): the first pass's words are revised by the second pass at
   * the utterance's end, and words sent cannot be taken back (bench/stt-accuracy.ts measures the
   * cost against `pocketsphinx_continuous`). A request's `json_config.delay_in_frames` sets it
   * for that request (see `sphinxHold`).
   */
  stableFrames?: number;
  /** Audio the decoder must have heard past a word's end before the word is sent, seconds. Default 0.3. */
  settleSeconds?: number;
  /**
   * Longest utterance, seconds. Default 30. pocketsphinx's VAD ends an utterance at a pause; speech
   * over continuous noise has none, and an utterance's search tables, the hypothesis read every
   * frame and its final passes at the end grow with its length (issue 31: +0.75 MB of native memory
   * per second of audio, a 290 s utterance's end took over 30 s). One that reaches this length is
   * ended there (its words sent) and the next starts at once; a word spoken across the cut may be
   * heard in two pieces or not at all.
   */
  maxUtteranceSeconds?: number;
  /** Model name in `ready`. Default `pocketsphinx-en-us`. */
  modelName?: string;
  /** Idle decoders kept for reuse (loading the model takes 0.3–0.7 s of CPU). Default 2. */
  poolSize?: number;
  /** The budget of live decoders (in use or idle) this engine counts against. Default: the process's {@link STT_DECODER_BUDGET}. */
  budget?: EngineBudget;
}

/**
 * The pocketsphinx engine. It owns its decoders (~95 MB of native memory each): a stream takes an
 * idle one or loads one within the budget, and gives it back when it closes; the pool keeps
 * `poolSize` for reuse and frees the rest (`ps_free`). Make one per process and share it: every
 * engine made keeps its own pool.
 */
export interface PocketsphinxSttEngine extends SttEngine {
  /** Decoders idle in the pool now. */
  readonly idle: number;
  /** Frees the idle decoders (and their budget slots); open streams keep theirs. */
  freeIdle(): void;
}

/** A decoder and its slot in the budget. */
interface HeldDecoder {
  decoder: PocketsphinxDecoder;
  release: () => void;
}

/** The pocketsphinx STT engine. */
export function createPocketsphinxSttEngine(options: PocketsphinxSttOptions = {}): PocketsphinxSttEngine {
  options = optionsArg(options, 'createPocketsphinxSttEngine: options');
  checkSttOptions(options);
  const model = options.model ?? pocketsphinxModelFromDir();
  const languages = options.languages ?? ['en'];
  const stable = options.stableFrames ?? 6;
  const poolSize = options.poolSize ?? 2;
  const budget = options.budget ?? STT_DECODER_BUDGET;
  const decoderOptions = options.jsgf === undefined ? { model } : { model, jsgf: options.jsgf };
  const pool: HeldDecoder[] = [];
  // Registered only while the pool holds a decoder, so a budget's list of reclaimers stays as
  // short as the number of engines with idle decoders.
  let unregister: (() => void) | undefined;
  const free = (held: HeldDecoder): void => {
    try {
      held.decoder.free();
    } finally {
      held.release();
    }
  };
  const popIdle = (): HeldDecoder | undefined => {
    const held = pool.pop();
    if (pool.length === 0) {
      unregister?.();
      unregister = undefined;
    }
    return held;
  };
  const reclaim = (): boolean => {
    const held = popIdle();
    if (held === undefined) return false;
    free(held);
    return true;
  };
  const take = async (tenant: TenantPath): Promise<HeldDecoder> => {
    const idle = popIdle();
    if (idle !== undefined) return idle;
    const release = budget.acquire();
    try {
      return { decoder: await PocketsphinxDecoder.create({ ...decoderOptions, tenant }), release };
    } catch (err) {
      release();
      throw err;
    }
  };
  const giveBack = (held: HeldDecoder): void => {
    if (pool.length >= poolSize) return free(held);
    try {
      // The next stream hears its audio as a new decoder would (the same words for the same audio).
      held.decoder.reset();
    } catch {
      return free(held);
    }
    pool.push(held);
    unregister ??= budget.addReclaimer(reclaim);
  };
  return {
    get idle() {
      return pool.length;
    },
    freeIdle() {
      while (reclaim()) {
        /* every idle decoder */
      }
    },
    async open(config, emit) {
      objectArg(config, 'pocketsphinx open: config');
      functionArg(emit, 'pocketsphinx open: emit');
      const language = optionsArg(config.jsonConfig, 'pocketsphinx open: config.jsonConfig').language ?? 'en';
      if (typeof language !== 'string') throw new VoicewireError('INVALID_ARGUMENT', `pocketsphinx open: config.jsonConfig.language must be a string, got ${describeValue(language)}`);
      if (!languages.includes(language)) {
        throw new VoicewireError('STT_LANGUAGE_UNSUPPORTED', `speech-to-text in "${language}" is not installed here; installed languages: ${languages.join(', ')}`);
      }
      const reason = pocketsphinxAvailable(model);
      if (reason !== undefined) throw new VoicewireError('ENGINE_UNAVAILABLE', reason);
      const fvad = await loadVad();
      // The slot in the budget is taken before the model loads (off the event loop); from then on
      // nothing else is awaited: what was taken is given back on every failure.
      const tenant = tenantPath(config.tenant);
      const held = await take(tenant);
      // Its calls wait this caller's turn (issue 31).
      held.decoder.tenant = tenant;
      let vad: VoiceActivity | undefined;
      try {
        vad = new VoiceActivity(fvad);
        const v = vad;
        const { hold, margin } = sphinxHold(stable, options.settleSeconds ?? 0.3, config.jsonConfig);
        return new SphinxStream(held.decoder, vad, emit, hold, margin, options.modelName ?? 'pocketsphinx-en-us', config.modelName, () => {
          v.free();
          giveBack(held);
        }, Math.round((options.maxUtteranceSeconds ?? 30) * 16000));
      } catch (err) {
        vad?.free();
        giveBack(held);
        throw err;
      }
    },
  };
}

/**
 * A request's word hold (issue 35): `temp` t (0 to 1, "helpful if no text is recognized") lowers
 * the audio a word must have behind it to `(1 − t)` of `settleSeconds` (centiseconds, as the
 * decoder's frames), so a word is sent on less evidence; `delay_in_frames` D sets the frames a
 * word must hold so that the delay `ready` reports, hold + ⌈margin / 8⌉, is D. The decoder's beams
 * are fixed when the model loads (decoders are pooled), so neither changes what it recognizes.
 */
function sphinxHold(stable: number, settleSeconds: number, jsonConfig: { temp?: number; delay_in_frames?: number }): { hold: number; margin: number } {
  const margin = Math.round(settleSeconds * 100 * (1 - (jsonConfig.temp ?? 0)));
  const asked = jsonConfig.delay_in_frames;
  return { hold: asked === undefined ? stable : Math.max(0, asked - Math.ceil(margin / 8)), margin };
}

function checkSttOptions(options: PocketsphinxSttOptions): void {
  const fail = (what: string, expected: string, value: unknown): never => {
    throw new VoicewireError('INVALID_ARGUMENT', `createPocketsphinxSttEngine: ${what} must be ${expected}, got ${describeValue(value)}`);
  };
  if (options.model !== undefined) checkModel(options.model, 'createPocketsphinxSttEngine: model');
  if (options.languages !== undefined && !arrayArg(options.languages, 'createPocketsphinxSttEngine: languages').every((l) => typeof l === 'string')) {
    fail('languages', 'an array of strings', options.languages);
  }
  for (const k of ['jsgf', 'modelName'] as const) if (options[k] !== undefined && typeof options[k] !== 'string') fail(k, 'a string', options[k]);
  const { stableFrames, settleSeconds, poolSize, maxUtteranceSeconds } = options;
  if (stableFrames !== undefined && !(Number.isInteger(stableFrames) && stableFrames >= 0)) fail('stableFrames', 'an integer ≥ 0', stableFrames);
  if (settleSeconds !== undefined && !(typeof settleSeconds === 'number' && Number.isFinite(settleSeconds) && settleSeconds >= 0)) fail('settleSeconds', 'a finite number ≥ 0', settleSeconds);
  if (maxUtteranceSeconds !== undefined && !(typeof maxUtteranceSeconds === 'number' && maxUtteranceSeconds >= 1 && maxUtteranceSeconds <= 600)) fail('maxUtteranceSeconds', 'a number in [1, 600]', maxUtteranceSeconds);
  if (poolSize !== undefined && !(Number.isInteger(poolSize) && poolSize >= 0)) fail('poolSize', 'an integer ≥ 0', poolSize);
  if (options.budget !== undefined && !(options.budget instanceof EngineBudget)) fail('budget', 'an EngineBudget', options.budget);
}

/** Frames (80 ms) the whole hypothesis must hold, after pocketsphinx's VAD says speech ended, before the utterance is finished. */
const UTTERANCE_STEADY = 3;

class SphinxStream implements SttEngineStream {
  readonly info;
  private readonly resampler: Resampler<Int16Array>;
  /** 16 kHz samples decoded before the current utterance started. */
  private uttStart = 0;
  /** 16 kHz samples decoded in this stream. pocketsphinx counts word frames (10 ms) from the stream's start too, not the utterance's. */
  private samples = 0;
  private inUtt = false;
  /** End frame of the last word sent (frames of the stream: a word already sent is never sent again, across utterances too). */
  private lastEnd = -1;
  /** stop_s of the last word sent, until its end_text goes. */
  private openStop: number | undefined;
  private history: string[] = [];
  /** The partial hypothesis of the previous frame, each word with the frame since which it and the words before it have stood as they are. */
  private held: { word: string; startFrame: number; since: number }[] = [];
  private frames = 0;
  private closed = false;
  /**
   * The push or end running, if any. The decoder is used between its awaits too (the hypothesis is
   * read on the event loop), so a close waits for the whole operation, not only its native call:
   * the utterance's end must never run on a thread while the event loop reads the same decoder.
   */
  private running: Promise<void> | undefined;

  constructor(
    private readonly decoder: PocketsphinxDecoder,
    private readonly vad: VoiceActivity,
    private readonly emit: (e: SttEngineEvent) => void,
    private readonly stable: number,
    private readonly margin: number,
    defaultName: string,
    requested: string,
    private readonly release: () => void,
    /** Longest utterance, 16 kHz samples. */
    private readonly maxUtterance: number,
  ) {
    this.resampler = createInt16Resampler({ from: 24000, to: 16000 });
    // Text for a frame comes out once the word has settled (margin) and held (stable frames).
    this.info = { modelName: requested === 'default' ? defaultName : requested, sampleRate: 24000, frameSize: 1920, delayInFrames: stable + Math.ceil(margin / 8) };
    decoder.startUtt();
    this.inUtt = true;
  }

  push(frame: Int16Array): Promise<void> {
    return this.track(async () => {
      const pcm = this.resampler.push(frame);
      await this.decode(pcm);
      if (!this.closed) this.emit({ type: 'step', vad: this.vad.frame(pcm) });
    });
  }

  end(): Promise<void> {
    return this.track(async () => {
      const rest = this.resampler.flush();
      await this.decode(rest);
      await this.finishUtterance();
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    // After `end` (the usual close) nothing runs: the decoder is back at once, for the next request.
    if (this.running === undefined && !this.inUtt) return this.release();
    // The operation still running owns the decoder until it returns (it stops at its next await);
    // an utterance left open is then ended (ps_start_utt refuses to start one over it), off the
    // event loop. Then the decoder goes back to the pool (or is freed) and the VAD instance is
    // freed, whatever those calls did.
    void (this.running ?? Promise.resolve())
      .catch(() => undefined)
      .then(() => {
        if (!this.inUtt) return undefined;
        this.inUtt = false;
        return this.decoder.endUtt();
      })
      .catch(() => undefined)
      .finally(() => this.release());
  }

  /** Runs a push or end, remembered until it settles. */
  private track(op: () => Promise<void>): Promise<void> {
    const p = op();
    this.running = p;
    const done = (): void => {
      if (this.running === p) this.running = undefined;
    };
    p.then(done, done);
    return p;
  }

  /** Runs one decoder call off the event loop; nothing after a close. */
  private async call(f: () => Promise<void>): Promise<boolean> {
    if (this.closed) return false;
    await f();
    return !this.closed;
  }

  private async decode(pcm: Int16Array): Promise<void> {
    if (!(await this.call(() => this.decoder.process(pcm)))) return;
    this.samples += pcm.length;
    this.frames++;
    const words = this.decoder.words();
    const now = this.samples / 160;
    // Words before the last are final once they and the words before them have held for `stable`
    // frames and the decoder has heard `margin` frames past their end (the context that settles a word).
    const held: typeof this.held = [];
    let same = true;
    let ready = 0;
    for (let i = 0; i < words.length; i++) {
      const w = words[i]!;
      const before = this.held[i];
      same &&= before !== undefined && before.word === w.word && before.startFrame === w.startFrame;
      const since = same ? before!.since : this.frames;
      held.push({ word: w.word, startFrame: w.startFrame, since });
      if (ready === i && i < words.length - 1 && this.frames - since >= this.stable && w.endFrame <= now - this.margin) ready = i + 1;
    }
    this.held = held;
    this.send(words.slice(0, ready));
    const key = words.map((w) => `${w.word}@${w.startFrame}`).join(' ');
    this.history.push(key);
    if (this.history.length > UTTERANCE_STEADY) this.history.shift();
    const steady = this.history.length === UTTERANCE_STEADY && this.history.every((h) => h === key);
    // pocketsphinx's VAD says the utterance is over, or it reached its longest: finish it and
    // start the next (ps_start_utt reuses the search tables from their start, so an utterance's
    // memory and the hypothesis read above stay those of maxUtterance samples at most).
    if ((!this.decoder.inSpeech() && words.length > 0 && steady) || this.samples - this.uttStart >= this.maxUtterance) {
      await this.finishUtterance();
      if (this.closed) return;
      this.decoder.startUtt();
      this.inUtt = true;
      this.uttStart = this.samples;
    }
  }

  /**
   * Sends the words of `words` that lie after the last word sent in this utterance (by time, so a
   * revised hypothesis neither repeats nor reorders words), closing the previous word first.
   */
  private send(words: readonly PsWord[]): void {
    for (const w of words) {
      if ((w.startFrame + w.endFrame) / 2 <= this.lastEnd) continue;
      if (this.openStop !== undefined) this.emit({ type: 'end_text', stop_s: this.openStop });
      this.emit({ type: 'text', text: w.word, start_s: this.time(w.startFrame) });
      this.openStop = this.time(w.endFrame + 1);
      this.lastEnd = w.endFrame;
    }
  }

  private async finishUtterance(): Promise<void> {
    if (!this.inUtt) return;
    this.inUtt = false;
    if (!(await this.call(() => this.decoder.endUtt()))) return;
    this.send(this.decoder.words());
    if (this.openStop !== undefined) this.emit({ type: 'end_text', stop_s: this.openStop });
    this.openStop = undefined;
    this.history = [];
    this.held = [];
  }

  private time(frame: number): number {
    // Word frames count from the stream's start (ps_start_stream), across utterances.
    return Math.round(frame * 10) / 1000;
  }
}
