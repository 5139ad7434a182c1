/**
 * Text-to-speech with a sherpa-onnx model (Piper/VITS, Kokoro) on worker threads (issue 24).
 *
 * Text is spoken sentence by sentence, as espeak-tts.ts does: a sentence leaves once its end
 * (`.`, `!`, `?`, `…`, `;` then a space) has arrived; without one, the phrase so far leaves once
 * it holds {@link SHERPA_LAG_WORDS} complete words (cut at a clause mark when there is one); a
 * `<flush>`, a `<break>` or the end speak the rest. Each piece is at most
 * {@link SherpaTtsOptions.maxChunkChars} characters (cut at a space): one worker job, one
 * `generateAsync` call with `maxNumSentences: 1`, so a request that has gone stops after the piece
 * being generated (sherpa-onnx cannot stop a generation midway). A piece with no letter or digit
 * is not sent (sherpa-onnx aborts on text that yields no tokens).
 *
 * The model's audio (22.05 kHz for most Piper voices) is resampled to 48 kHz and sent in 80 ms
 * frames. Word timestamps: Piper and VITS models give no durations through sherpa-onnx, so each
 * piece's words share its audio in proportion to their length in characters (per sentence, not
 * per phoneme: a word's edges may be off by a syllable).
 *
 * `json_config.padding_bonus` p sets the speed to `2^(−p/4)` (p = −4 twice as fast, +4 half as
 * fast; sherpa-onnx's length scale is 1/speed). `temp` and `cfg_coef` have no counterpart here.
 * The voice is a speaker of the model: a catalog voice `params.sid`; any other voice (a design or
 * clone made with another engine) speaks as speaker 0.
 */
import { ENGINE_FRAME, FramePacker } from './frame-packer.js';
import { resampleInt16 } from '../audio/resampler.js';
import type { TtsEngine, TtsEngineConfig, TtsEngineEvent, TtsEngineStream } from '../sessions/engine.js';
import { describeValue, functionArg, objectArg, optionsArg } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';
import type { EngineContext, EngineVoice } from './context.js';
import { phraseCut } from './espeak-tts.js';
import type { CatalogVoice } from './registry.js';
import { sherpaModelArg, type SherpaModel } from './sherpa-model.js';
import type { SherpaPool } from './sherpa-pool.js';

/** Options of {@link createSherpaTtsEngine}. */
export interface SherpaTtsOptions {
  /** Speakers of the model (its `n_speakers`). */
  numSpeakers: number;
  /** Longest piece of text per generation, characters (cut at a space). Default 300. */
  maxChunkChars?: number;
}

/** Complete words held without a sentence end before they are spoken (a neural voice reads a phrase better than a word). */
export const SHERPA_LAG_WORDS = 8;

const OUT_RATE = 48000;
const FRAME = ENGINE_FRAME;

/** The speed of `padding_bonus` p: `2^(−p/4)`, within 0.25 to 4. */
export function speedFromPaddingBonus(p: number | undefined | null): number {
  if (p !== undefined && p !== null && (typeof p !== 'number' || !Number.isFinite(p))) throw new VoicewireError('INVALID_ARGUMENT', `padding_bonus must be a finite number, got ${describeValue(p)}`);
  const s = 2 ** (-(p ?? 0) / 4);
  return Math.min(4, Math.max(0.25, s));
}

/**
 * The catalog voices of a model: one per speaker (at most 256), uid `sherpa-<folder>-<sid>`. A
 * speaker the model names (Kokoro's `speaker_names`) is a voice of that name, language, country
 * and gender (tags as the library voices read them); others are `<folder> #<sid>` in the model's language.
 */
export function sherpaCatalogVoices(model: SherpaModel, numSpeakers: number): CatalogVoice[] {
  sherpaModelArg(model, 'sherpaCatalogVoices: model');
  if (!Number.isInteger(numSpeakers) || numSpeakers < 1) throw new VoicewireError('INVALID_ARGUMENT', `sherpaCatalogVoices: numSpeakers must be an integer ≥ 1, got ${describeValue(numSpeakers)}`);
  const slug = model.name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '') || 'model';
  const language = model.languages[0] ?? 'en';
  const n = Math.max(1, Math.min(256, numSpeakers));
  return Array.from({ length: n }, (_, sid) => {
    const speaker = model.speakers?.[sid];
    if (speaker === undefined) {
      return { uid: `sherpa-${slug}-${sid}`, name: n === 1 ? model.name : `${model.name} #${sid}`, description: `sherpa-onnx ${model.type} voice ${model.name}, speaker ${sid}`, language, filename: '', startS: 0, tags: [language, 'Neural'], isProClone: false, params: { engine: 'sherpa-onnx', sid } };
    }
    const tags = [speaker.language, ...(speaker.country !== undefined ? [speaker.country] : []), ...(speaker.gender !== undefined ? [speaker.gender] : []), 'Neural'];
    const about = [speaker.gender, [speaker.language, speaker.country].filter((x) => x !== undefined).join('-')].filter((x) => x !== undefined).join(', ');
    return { uid: `sherpa-${slug}-${sid}`, name: speaker.name, description: `sherpa-onnx ${model.type} voice ${speaker.name} (${about}) of ${model.name}, speaker ${sid}`, language: speaker.language, filename: '', startS: 0, tags, isProClone: false, params: { engine: 'sherpa-onnx', sid } };
  });
}

/** The sherpa-onnx TTS engine over `pool`; `context` resolves the connection's voices. */
export function createSherpaTtsEngine(pool: SherpaPool, context: EngineContext<Pick<EngineVoice, 'uid' | 'params'>>, options: SherpaTtsOptions): TtsEngine {
  objectArg(context, 'createSherpaTtsEngine: context');
  functionArg(context.resolveVoice, 'createSherpaTtsEngine: context.resolveVoice');
  options = optionsArg(options, 'createSherpaTtsEngine: options');
  const maxChunk = options.maxChunkChars ?? 300;
  if (!Number.isInteger(maxChunk) || maxChunk < 1) throw new VoicewireError('INVALID_ARGUMENT', `createSherpaTtsEngine: maxChunkChars must be an integer ≥ 1, got ${describeValue(maxChunk)}`);
  return {
    async open(config, emit) {
      objectArg(config, 'sherpa-onnx open: config');
      functionArg(emit, 'sherpa-onnx open: emit');
      const jsonConfig = optionsArg(config.jsonConfig, 'sherpa-onnx open: config.jsonConfig');
      const voice = config.voiceId ? await context.resolveVoice(config.voiceId) : undefined;
      if (config.voiceId && voice === undefined) throw new VoicewireError('TTS_UNKNOWN_VOICE', `unknown voice_id ${JSON.stringify(config.voiceId)}: list voices with GET /voices/`);
      const sid = voice?.params?.['engine'] === 'sherpa-onnx' && Number.isInteger(voice.params['sid']) ? (voice.params['sid'] as number) : 0;
      if (sid >= options.numSpeakers) throw new VoicewireError('TTS_UNKNOWN_VOICE', `voice ${JSON.stringify(config.voiceId)} is speaker ${sid}; this model has ${options.numSpeakers}`);
      const p = jsonConfig.padding_bonus;
      const speed = speedFromPaddingBonus(typeof p === 'number' ? p : undefined);
      return new SherpaTtsStream(pool, config, emit, sid, speed, maxChunk);
    },
  };
}

/** Pieces of at most `max` characters, cut at the last space before the limit when there is one. */
function pieces(text: string, max: number): string[] {
  const out: string[] = [];
  let rest = text.trim();
  while (rest.length > max) {
    let cut = rest.lastIndexOf(' ', max);
    if (cut <= 0) cut = max;
    out.push(rest.slice(0, cut));
    rest = rest.slice(cut).trimStart();
  }
  if (rest !== '') out.push(rest);
  return out;
}

/** Text sherpa-onnx can read into at least one token: a letter or a digit. */
const SPEAKABLE = /[\p{L}\p{N}]/u;

class SherpaTtsStream implements TtsEngineStream {
  readonly info;
  private pending = '';
  private closed = false;
  /** Whose turn its sentences wait for in the pool (issue 31). */
  private readonly tenant: string | undefined;
  /** The 80 ms frames; its `out` is the timeline of word timestamps. */
  private readonly packer = new FramePacker((pcm) => {
    if (!this.closed) this.emit({ type: 'audio', pcm });
  });

  constructor(
    private readonly pool: SherpaPool,
    config: TtsEngineConfig,
    private readonly emit: (e: TtsEngineEvent) => void,
    private readonly sid: number,
    private readonly speed: number,
    private readonly maxChunk: number,
  ) {
    this.info = { modelName: config.modelName === 'default' ? pool.model.name : config.modelName, sampleRate: OUT_RATE, frameSize: FRAME, audioStreamNames: ['main'], textStreamNames: ['main'] };
    this.tenant = config.tenant;
  }

  async text(text: string): Promise<void> {
    if (text.trim() === '' && this.pending === '') return;
    this.pending = this.pending === '' || /\s$/.test(this.pending) || /^\s/.test(text) ? this.pending + text : `${this.pending} ${text}`;
    const re = /[.!?…;](?=["'»”’)\]]*\s)/g;
    let cut = -1;
    for (let m = re.exec(this.pending); m; m = re.exec(this.pending)) cut = m.index + 1;
    if (cut < 0 && this.pending.length > this.maxChunk) cut = this.pending.lastIndexOf(' ', this.maxChunk);
    if (cut > 0) await this.speakTo(cut);
    const phrase = phraseCut(this.pending, SHERPA_LAG_WORDS);
    if (phrase > 0) await this.speakTo(phrase);
  }

  async pause(seconds: number): Promise<void> {
    await this.speakTo(this.pending.length);
    this.packer.push(new Int16Array(Math.round(seconds * OUT_RATE)));
  }

  async flush(): Promise<void> {
    await this.speakTo(this.pending.length);
    this.packer.pad();
  }

  async end(): Promise<void> {
    await this.speakTo(this.pending.length);
    this.packer.pad();
  }

  close(): void {
    this.closed = true;
  }

  private async speakTo(at: number): Promise<void> {
    const ready = this.pending.slice(0, at);
    this.pending = this.pending.slice(at);
    for (const sentence of splitSentences(ready)) {
      for (const piece of pieces(sentence, this.maxChunk)) {
        if (this.closed) return;
        if (!SPEAKABLE.test(piece)) continue;
        const { samples, sampleRate } = await this.pool.run({ op: 'tts', text: piece, sid: this.sid, speed: this.speed }, () => this.closed, this.tenant);
        if (this.closed) return;
        this.speakAudio(piece, samples, sampleRate);
      }
    }
  }

  private speakAudio(text: string, samples: Float32Array, rate: number): void {
    const pcm = new Int16Array(samples.length);
    for (let i = 0; i < samples.length; i++) {
      const s = samples[i]!;
      pcm[i] = s >= 1 ? 32767 : s <= -1 ? -32768 : Math.round(s * 32767);
    }
    const audio = rate === OUT_RATE ? pcm : resampleInt16(pcm, rate, OUT_RATE);
    // Per-sentence word timestamps: the words share the audio by their length in characters.
    const words = text.split(/\s+/).filter((w) => SPEAKABLE.test(w));
    const total = words.reduce((n, w) => n + w.length, 0);
    const events: Array<{ type: 'word'; text: string; start_s: number; stop_s: number }> = [];
    let acc = 0;
    for (const w of words) {
      const start = Math.floor((audio.length * acc) / total);
      acc += w.length;
      const stop = Math.floor((audio.length * acc) / total);
      events.push({ type: 'word', text: w, start_s: round((this.packer.out + start) / OUT_RATE), stop_s: round((this.packer.out + stop) / OUT_RATE) });
    }
    let wi = 0;
    for (let s = 0; s < audio.length; ) {
      const room = this.packer.room;
      const frameEnd = this.packer.out + room;
      while (wi < events.length && events[wi]!.start_s * OUT_RATE < frameEnd) this.emit(events[wi++]!);
      const n = Math.min(room, audio.length - s);
      this.packer.push(audio.subarray(s, s + n));
      s += n;
    }
    while (wi < events.length) this.emit(events[wi++]!);
  }
}

/** Sentences of `text`: cut after `.`, `!`, `?`, `…`, `;` (and closing quotes) followed by a space. */
function splitSentences(text: string): string[] {
  const out: string[] = [];
  const re = /[.!?…;]["'»”’)\]]*\s+/g;
  let from = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    out.push(text.slice(from, m.index + m[0].length).trim());
    from = m.index + m[0].length;
  }
  out.push(text.slice(from).trim());
  return out.filter((s) => s !== '');
}

function round(t: number): number {
  return Math.round(t * 1000) / 1000;
}
