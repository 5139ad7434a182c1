/**
 * Deterministic built-in engines (`--tts tone`, `--stt tone`): they make every route testable end
 * to end without a model, and the STT one reads back what the TTS one says.
 *
 * TTS: each word is a run of 80 ms tones, one per character, at `TONE_BASE_HZ + i · TONE_STEP_HZ`
 * for the character's index `i` in {@link TONE_ALPHABET} (unknown characters are `?`). Words are
 * separated by `2 + round(padding_bonus)` silent frames (at least 1; §2.8: positive is slower).
 * A `<break>` is `round(s / 0.08)` silent frames. `json_config.rewrite_rules` (§2.8) rewrites each
 * word as espeak's does (rewrite-rules.ts {@link rewriteWordWithRules}; a pronunciation respelling
 * wins for its word); a word rewritten into several (`1234` → `1 thousand 234`) is said as several,
 * and the word events name what was said, so the tone STT reads them back. `cfg_coef` other than its default 2 is refused
 * (PROTOCOL_INVALID_CONFIG, 1008): there is no timbre to be similar to. Output: 48 kHz s16 mono, 3840-sample frames. Word
 * timestamps are exact: a word's `start_s`/`stop_s` are the bounds of its tones on the 80 ms grid.
 *
 * STT: 24 kHz frames are cut into 20 ms blocks; a block is voiced when its RMS is above
 * {@link TONE_RMS_THRESHOLD} (which `json_config.temp` lowers and `padding_bonus` moves, {@link toneSttThreshold}). A run of voiced blocks is a word (runs under 40 ms are ignored), ended by two unvoiced blocks; its
 * characters are read with the Goertzel filter over the middle 40 ms of each 80 ms slot (robust to
 * the few samples a resampler or codec shifts). Each frame emits one `step` whose `vad` is the
 * trailing silence over each horizon (0.5, 1, 2 s), capped at 1.
 */
import { VoicewireError } from '../util/errors.js';
import type { SttEngine, SttEngineEvent, SttEngineStream, TtsEngine, TtsEngineEvent, TtsEngineStream } from '../sessions/engine.js';
import type { EngineContext } from './registry.js';
import { rewriteWordWithRules } from './rewrite-rules.js';
import { parseRewriteRules, type RewriteRuleName } from '../protocol/config.js';

/** Characters a tone can say; anything else is said as `?`. */
export const TONE_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789'-?";
/** Frequency of the first character, Hz. */
export const TONE_BASE_HZ = 300;
/** Spacing between characters, Hz (all tones stay below 3.5 kHz, inside 8 kHz G.711). */
export const TONE_STEP_HZ = 80;
/** Block RMS above which STT hears a tone (tones are made at amplitude 8000, RMS ≈ 5657). */
export const TONE_RMS_THRESHOLD = 1500;

const TTS_RATE = 48000;
const TTS_FRAME = 3840;
const AMPLITUDE = 8000;

function charIndex(c: string): number {
  const i = TONE_ALPHABET.indexOf(c);
  return i < 0 ? TONE_ALPHABET.length - 1 : i;
}

/** Applies a dictionary's respelling rules (whole words, case-insensitive). */
function respell(word: string, rules: ReadonlyMap<string, string>): string {
  return rules.get(word.toLowerCase()) ?? word;
}

/**
 * A frame of 80 ms of any tone is 24 + 6.4·i whole cycles: its phase repeats every
 * {@link PHASES} frames. The frames are computed once per character and phase and shared by every
 * request (issue 22: the sine per sample and an array per frame were 45 % of a loaded server's
 * CPU). They are read-only to receivers (TtsEngineEvent).
 */
const PHASES = 5;
const toneTables: Array<Array<Int16Array | undefined>> = [];
/** The one silent frame, shared. */
const SILENCE = new Int16Array(TTS_FRAME);

function toneFrame(index: number, frameNo: number): Int16Array {
  const phase = frameNo % PHASES;
  const perChar = (toneTables[index] ??= []);
  let out = perChar[phase];
  if (out === undefined) {
    const f = TONE_BASE_HZ + index * TONE_STEP_HZ;
    out = new Int16Array(TTS_FRAME);
    const w = (2 * Math.PI * f) / TTS_RATE;
    // Phase continues across frames of the request, so there is no click at a frame edge.
    const offset = phase * TTS_FRAME;
    for (let n = 0; n < TTS_FRAME; n++) out[n] = Math.round(AMPLITUDE * Math.sin(w * (offset + n)));
    perChar[phase] = out;
  }
  return out;
}

const round6 = (s: number): number => Math.round(s * 1e6) / 1e6;

/** No respelling rules (a request without a `pronunciation_id`): one map for all. */
const NO_RULES: ReadonlyMap<string, string> = new Map();

/**
 * One request's tone stream. A class, not an object of closures: its methods are shared, so an
 * open but idle request costs its fields alone (issue 22: an idle session's memory).
 */
class ToneTtsStream implements TtsEngineStream {
  readonly info: TtsEngineStream['info'];
  private frames = 0;
  private spoken = 0;
  private pending = '';
  private closed = false;

  constructor(
    modelName: string,
    private readonly emit: (event: TtsEngineEvent) => void,
    private readonly rules: ReadonlyMap<string, string>,
    private readonly gap: number,
    private readonly rewriteRules: readonly RewriteRuleName[],
  ) {
    this.info = { modelName, sampleRate: TTS_RATE, frameSize: TTS_FRAME, audioStreamNames: ['main'], textStreamNames: ['main'] };
  }

  text(text: string): void {
    if (this.closed) throw new VoicewireError('INVALID_STATE', 'tone TTS: text after close');
    this.pending += text;
    this.speakPending(false);
  }

  pause(seconds: number): void {
    this.speakPending(true);
    this.silence(Math.round(seconds / 0.08));
  }

  flush(): void {
    this.speakPending(true);
  }

  end(): void {
    this.speakPending(true);
  }

  close(): void {
    this.closed = true;
  }

  private silence(n: number): void {
    for (let i = 0; i < n; i++) this.emit({ type: 'audio', pcm: SILENCE });
    this.frames += n;
  }

  /** A client's word: its respelling (said as the client's word), else its rewrite (each word of it said and named). */
  private sayWord(word: string): void {
    const respelled = respell(word, this.rules);
    if (respelled !== word || this.rewriteRules.length === 0) return this.say(word, respelled);
    for (const w of rewriteWordWithRules(word, this.rewriteRules).split(/\s+/)) if (w !== '') this.say(w, w);
  }

  private say(word: string, spoken: string): void {
    const chars = [...spoken.toLowerCase()].filter((c) => c.trim() !== '');
    if (chars.length === 0) return;
    if (this.spoken > 0) this.silence(this.gap);
    this.spoken++;
    this.emit({ type: 'word', text: word, start_s: round6(this.frames * 0.08), stop_s: round6((this.frames + chars.length) * 0.08) });
    for (const c of chars) {
      this.emit({ type: 'audio', pcm: toneFrame(charIndex(c), this.frames) });
      this.frames++;
    }
  }

  /** The last word of a piece may continue in the next piece: it waits for whitespace, a tag or the end. */
  private speakPending(all: boolean): void {
    const words = this.pending.split(/\s+/);
    this.pending = all ? '' : words.pop()!;
    for (const w of words) if (w !== '') this.sayWord(w);
  }
}

/** The tone TTS engine for one request/connection context (voices and dictionaries are resolved through it). */
export function createToneTtsEngine(context: EngineContext): TtsEngine {
  return new ToneTtsEngine(context);
}

class ToneTtsEngine implements TtsEngine {
  constructor(private readonly context: EngineContext) {}

  async open(config: Parameters<TtsEngine['open']>[0], emit: (event: TtsEngineEvent) => void): Promise<TtsEngineStream> {
    const context = this.context;
    if (config.voiceId !== undefined && (await context.resolveVoice(config.voiceId)) === undefined) {
      throw new VoicewireError('VOICE_NOT_FOUND', `invalid voice ID ${JSON.stringify(config.voiceId)}`);
    }
    let rules = NO_RULES;
    if (config.pronunciationId !== undefined) {
      const dict = await context.resolvePronunciation(config.pronunciationId);
      if (dict === undefined) throw new VoicewireError('VOICE_NOT_FOUND', `unknown pronunciation_id ${JSON.stringify(config.pronunciationId)}`);
      const own = new Map<string, string>();
      for (const r of dict.rules) if (r.kind === 'respelling') own.set(r.word.toLowerCase(), r.replacement);
      rules = own;
    }
    // §2.8 cfg_coef is the similarity to the target voice; tone voices have no timbre to be
    // similar to, so only the default is accepted rather than ignored (issue 21).
    const cfg = config.jsonConfig.cfg_coef;
    if (cfg !== undefined && cfg !== null && cfg !== 2) {
      throw new VoicewireError('PROTOCOL_INVALID_CONFIG', `json_config.cfg_coef ${String(cfg)}: the tone engine has no voice timbre to be similar to; only the default 2.0 is accepted`);
    }
    const gap = Math.max(1, 2 + Math.round(config.jsonConfig.padding_bonus ?? 0));
    // Names were checked at the edge (422 §2.7); unknown ones left here are dropped, as espeak does.
    const rewrite = typeof config.jsonConfig.rewrite_rules === 'string' ? parseRewriteRules(config.jsonConfig.rewrite_rules).rules : [];
    return new ToneTtsStream(config.modelName === 'default' ? 'tone' : config.modelName, emit, rules, gap, rewrite);
  }
}

// ---------------------------------------------------------------------------------------------
// STT
// ---------------------------------------------------------------------------------------------

const STT_RATE = 24000;
const BLOCK = 480; // 20 ms
const BLOCKS_PER_SLOT = 4; // 80 ms per character
const HORIZONS = [0.5, 1, 2];

/** Goertzel power of `f` over `x[from, from+len)`. */
function goertzel(x: Int16Array, from: number, len: number, f: number): number {
  const k = (2 * Math.cos((2 * Math.PI * f) / STT_RATE));
  let s1 = 0;
  let s2 = 0;
  for (let n = from; n < from + len; n++) {
    const s0 = x[n]! + k * s1 - s2;
    s2 = s1;
    s1 = s0;
  }
  return s1 * s1 + s2 * s2 - k * s1 * s2;
}

/**
 * The RMS a block must pass to be heard, for an STT `json_config` (issue 35): `temp` t (0 to 1,
 * "helpful if no text is recognized") lowers it to `(1 − t/2)` of {@link TONE_RMS_THRESHOLD}, so
 * quieter tones are heard; `padding_bonus` p scales it by `2^(p/4)` (positive: more of the input is
 * heard as padding, i.e. silence; negative: less).
 */
export function toneSttThreshold(jsonConfig: { temp?: number; padding_bonus?: number }): number {
  const t = jsonConfig.temp ?? 0;
  const p = jsonConfig.padding_bonus ?? 0;
  return TONE_RMS_THRESHOLD * (1 - t / 2) * 2 ** (p / 4);
}

/** The tone STT engine. Context is unused (no voices in STT) but kept for the registry's one shape. */
export function createToneSttEngine(_context?: EngineContext): SttEngine {
  return {
    open(config, emit: (event: SttEngineEvent) => void): SttEngineStream {
      const threshold = toneSttThreshold(config.jsonConfig);
      // Samples of the word being heard (voiced blocks and the unvoiced blocks inside it).
      let word: Int16Array[] = [];
      let wordStartBlock = -1;
      let voicedBlocks = 0;
      let silentRun = 0;
      let block = 0;
      let segments = 0;
      const decode = (): void => {
        if (voicedBlocks < 2) {
          // Shorter than half a character: a click or a codec's ringing, not a word.
          word = [];
          wordStartBlock = -1;
          voicedBlocks = 0;
          return;
        }
        const samples = new Int16Array(voicedBlocks * BLOCK);
        let o = 0;
        for (const b of word.slice(0, voicedBlocks)) {
          samples.set(b, o);
          o += BLOCK;
        }
        // Whole slots, a partial last one only from 60 ms on: a microphone path (Chromium's echo
        // cancellation and noise suppression, under load) can lengthen the last tone by 40 ms,
        // which rounding read as one letter more ("worldd", "helloo": issue 25).
        const slots = Math.max(1, Math.floor((voicedBlocks + 1) / BLOCKS_PER_SLOT));
        let text = '';
        for (let s = 0; s < slots; s++) {
          const from = Math.min(samples.length - 2 * BLOCK, s * BLOCKS_PER_SLOT * BLOCK + BLOCK);
          if (from < 0) break;
          let best = 0;
          let bestP = -1;
          for (let i = 0; i < TONE_ALPHABET.length; i++) {
            const p = goertzel(samples, from, 2 * BLOCK, TONE_BASE_HZ + i * TONE_STEP_HZ);
            if (p > bestP) {
              bestP = p;
              best = i;
            }
          }
          text += TONE_ALPHABET[best];
        }
        const start = wordStartBlock * 0.02;
        emit({ type: 'text', text, start_s: round6(start), stream_id: null });
        emit({ type: 'end_text', stop_s: round6(start + voicedBlocks * 0.02), stream_id: null });
        segments++;
        word = [];
        wordStartBlock = -1;
        voicedBlocks = 0;
      };
      const stream: SttEngineStream = {
        info: { modelName: config.modelName === 'default' ? 'tone' : config.modelName, sampleRate: STT_RATE, frameSize: 1920, delayInFrames: 1 },
        push(frame) {
          for (let b = 0; b + BLOCK <= frame.length; b += BLOCK, block++) {
            let sum = 0;
            for (let n = b; n < b + BLOCK; n++) sum += frame[n]! * frame[n]!;
            const voiced = Math.sqrt(sum / BLOCK) > threshold;
            if (voiced) {
              if (wordStartBlock < 0) wordStartBlock = block;
              // Unvoiced blocks inside a word (a codec's dip) count as part of it.
              for (let i = 0; i < silentRun && word.length > 0; i++) word.push(new Int16Array(BLOCK));
              if (word.length > 0) voicedBlocks = word.length;
              word.push(frame.slice(b, b + BLOCK));
              voicedBlocks = word.length;
              silentRun = 0;
            } else {
              silentRun++;
              if (wordStartBlock >= 0 && silentRun >= 2) decode();
            }
          }
          const silentS = wordStartBlock >= 0 ? 0 : silentRun * 0.02;
          emit({ type: 'step', vad: HORIZONS.map((h) => ({ horizon_s: h, inactivity_prob: Math.min(1, round6(silentS / h)) })) });
        },
        end() {
          if (wordStartBlock >= 0) decode();
          void segments;
        },
        close() {},
      };
      return stream;
    },
  };
}
