/**
 * Text-to-speech with espeak-ng in the five API languages (docs/api.md §4.2, §4.5).
 *
 * Text is spoken sentence by sentence: a sentence leaves as soon as its end (`.`, `!`, `?`, `…`,
 * `;` followed by a space) has arrived; without one, the phrase so far leaves once it holds a few
 * complete words ({@link ESPEAK_LAG_WORDS}, cut at a comma when there is one), so audio lags the
 * text by a few words (§4.5 "without it, audio lags a few words behind"); a `<flush>`, a
 * `<break>` or the end speak the rest. espeak's 22.05 kHz output is resampled to 48 kHz with
 * voicewire's resampler and sent in 80 ms frames (3840 samples; the last frame of a flush or of
 * the request is padded with silence).
 *
 * Word timestamps come from espeak's word events, on the output timeline: a word starts at its
 * event (moved to the first sound after it) and stops at the last sound before the next word
 * (or the end of the sentence); words with no sound are dropped. Words rewritten by the rewrite
 * rules or a pronunciation rule keep the text the client sent.
 *
 * `json_config` (§2.8): `padding_bonus` p sets the rate to `rate · 2^(−p/4)` words per minute
 * (p = −4 twice as fast, +4 half as fast; monotonic; clamped to espeak's 80–450); `temp` t scales
 * the pitch range, `range · t/0.7` (0 is a monotone; the default 0.7 keeps the voice's range), and
 * temp 0 is deterministic on both builds: identical requests give identical bytes (WebAssembly: a
 * separate espeak instance whose state is restored before every sentence, {@link
 * loadDeterministicEspeak}; system library: a fresh copy of it per sentence, {@link
 * loadDeterministicSystemEspeak}); `cfg_coef` c,
 * the similarity to the voice, scales how far its pitch, range and rate stand from espeak's
 * neutral voice (50, 50, 175 wpm) by c/2 (the default 2 keeps the voice);
 * `rewrite_rules` applies the named rules and language aliases (rewrite-rules.ts
 * {@link rewriteWordWithRules}).
 */
import { ENGINE_FRAME, FramePacker } from './frame-packer.js';
import { resampleInt16 } from '../audio/resampler.js';
import type { TtsEngine, TtsEngineConfig, TtsEngineEvent, TtsEngineStream } from '../sessions/engine.js';
import { describeValue, functionArg, objectArg, optionsArg } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';
import { ESPEAK_RESTART, loadDeterministicEspeak, loadEspeak, type EspeakDeterministicWorker, type EspeakEvent, type EspeakWorker } from './espeak-module.js';
import { loadDeterministicSystemEspeak, loadSystemEspeak } from './espeak-system.js';
import { normalizeVoiceParams, type EspeakVoiceParams } from './espeak-voices.js';
import { rewriteWordWithRules } from './rewrite-rules.js';
import { parseRewriteRules, type RewriteRuleName } from '../protocol/config.js';
import type { EngineContext, EngineDictionary, EngineVoice } from './context.js';

/** What the espeak engine reads of a voice. */
export type EspeakVoice = Pick<EngineVoice, 'uid' | 'language' | 'params'>;

/** What the server binds per connection: its organization's voices and dictionaries. */
export type EspeakTtsContext = EngineContext<EspeakVoice>;

/** Options of {@link createEspeakTtsEngine}. */
export interface EspeakTtsOptions {
  /** Model name in `ready`. Default `espeak-ng`. */
  modelName?: string;
  /**
   * Most characters of text one request may send; more is refused with `TTS_TEXT_TOO_LONG` (1008).
   * Default none: the server's one text limit (`ServerLimits.maxTextChars`) is checked before any
   * text reaches the engine; set this when the engine runs without that server.
   */
  maxTextChars?: number;
  /** A sentence longer than this is spoken in pieces cut at a space, to bound latency. Default 300. */
  maxChunkChars?: number;
  /** The espeak worker (tests). Default: the shared one of {@link loadEspeak}, or of {@link loadSystemEspeak} with `library: 'system'`. */
  worker?: EspeakWorker;
  /**
   * Which espeak-ng speaks: `wasm`, the WebAssembly build (`@echogarden/espeak-ng-emscripten`), or
   * `system`, the system library `libespeak-ng.so.1` through koffi (espeak-system.ts; `temp` 0 is
   * bit-identical there too, from a fresh copy of the library per sentence). Default `wasm`.
   */
  library?: 'wasm' | 'system';
}

const OUT_RATE = 48000;
const FRAME = ENGINE_FRAME;
/**
 * A 5 ms window whose peak is below 1.5 % of the sentence's peak (−36 dB; espeak's pauses and
 * stop closures sit there, not at zero) counts as silence when placing word edges.
 */
const SILENCE_RATIO = 0.015;
const EDGE_WINDOW = 240;

/** A finite number, or left out (`undefined`; `null` too where a JSON config may hold it). */
function finiteArg(value: unknown, what: string, nullable = false): void {
  if (value === undefined || (nullable && value === null)) return;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new VoicewireError('INVALID_ARGUMENT', `${what} must be a finite number, got ${describeValue(value)}`);
}

/** The rate, pitch and range one request speaks with, after `json_config`. */
export function effectiveVoiceParams(voice: EspeakVoiceParams, config: { padding_bonus?: number; temp?: number; cfg_coef?: number }): EspeakVoiceParams {
  objectArg(voice, 'effectiveVoiceParams: voice');
  for (const k of ['rate', 'range'] as const) {
    if (voice[k] === undefined) throw new VoicewireError('INVALID_ARGUMENT', `effectiveVoiceParams: voice.${k} is required`);
    finiteArg(voice[k], `effectiveVoiceParams: voice.${k}`);
  }
  config = optionsArg(config, 'effectiveVoiceParams: config');
  // The protocol's validation reads a JSON null as absent, and keeps it.
  finiteArg(config.padding_bonus, 'effectiveVoiceParams: config.padding_bonus', true);
  finiteArg(config.temp, 'effectiveVoiceParams: config.temp', true);
  finiteArg(config.cfg_coef, 'effectiveVoiceParams: config.cfg_coef', true);
  const p = config.padding_bonus ?? 0;
  const t = config.temp ?? 0.7;
  // cfg_coef: how far the voice stands from espeak's neutral voice (pitch 50, range 50, 175 wpm),
  // relative to the default 2: 1 halves that distance, 4 doubles it.
  const k = (config.cfg_coef ?? 2) / 2;
  const similar = (value: number, neutral: number): number => neutral + (value - neutral) * k;
  const clamp = (x: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, Math.round(x)));
  return {
    ...voice,
    pitch: clamp(similar(voice.pitch, 50), 0, 100),
    rate: clamp(similar(voice.rate, 175) * 2 ** (-p / 4), 80, 450),
    range: clamp((similar(voice.range, 50) * t) / 0.7, 0, 100),
  };
}

/** A count option: an integer ≥ 1, or `undefined` (the default). */
function countOption(value: unknown, what: string): void {
  if (value !== undefined && (typeof value !== 'number' || !Number.isInteger(value) || value < 1)) {
    throw new VoicewireError('INVALID_ARGUMENT', `createEspeakTtsEngine: ${what} must be an integer ≥ 1, got ${describeValue(value)}`);
  }
}

const WORKER_METHODS = ['set_voice', 'set_rate', 'set_pitch', 'set_range', 'get_samplerate', 'synthesize'] as const;

/** The espeak-ng TTS engine; `context` resolves voices and dictionaries for the connection. */
export function createEspeakTtsEngine(context: EspeakTtsContext, options: EspeakTtsOptions = {}): TtsEngine {
  objectArg(context, 'createEspeakTtsEngine: context');
  functionArg(context.resolveVoice, 'createEspeakTtsEngine: context.resolveVoice');
  functionArg(context.resolvePronunciation, 'createEspeakTtsEngine: context.resolvePronunciation');
  options = optionsArg(options, 'createEspeakTtsEngine: options');
  if (options.modelName !== undefined && typeof options.modelName !== 'string') {
    throw new VoicewireError('INVALID_ARGUMENT', `createEspeakTtsEngine: modelName must be a string, got ${describeValue(options.modelName)}`);
  }
  countOption(options.maxTextChars, 'maxTextChars');
  // A chunk of 0 characters never shortens a sentence: splitSentences would loop forever.
  countOption(options.maxChunkChars, 'maxChunkChars');
  if (options.worker !== undefined) {
    objectArg(options.worker, 'createEspeakTtsEngine: worker');
    for (const m of WORKER_METHODS) functionArg(options.worker[m], `createEspeakTtsEngine: worker.${m}`);
  }
  const maxText = options.maxTextChars ?? Infinity;
  const maxChunk = options.maxChunkChars ?? 300;
  if (options.library !== undefined && options.library !== 'wasm' && options.library !== 'system') {
    throw new VoicewireError('INVALID_ARGUMENT', `createEspeakTtsEngine: library must be 'wasm' or 'system', got ${describeValue(options.library)}`);
  }
  const system = options.library === 'system';
  const worker = options.worker;
  const modelName = options.modelName ?? 'espeak-ng';
  return {
    async open(config, emit) {
      objectArg(config, 'espeak open: config');
      functionArg(emit, 'espeak open: emit');
      const jsonConfig = optionsArg(config.jsonConfig, 'espeak open: config.jsonConfig');
      if (config.voiceId !== undefined && config.voiceId !== null && typeof config.voiceId !== 'string') throw new VoicewireError('INVALID_ARGUMENT', `espeak open: config.voiceId must be a string, got ${describeValue(config.voiceId)}`);
      if (config.pronunciationId !== undefined && typeof config.pronunciationId !== 'string') {
        throw new VoicewireError('INVALID_ARGUMENT', `espeak open: config.pronunciationId must be a string, got ${describeValue(config.pronunciationId)}`);
      }
      // temp 0 is deterministic (§2.8): its own instance, restored before every sentence.
      const deterministic = jsonConfig.temp === 0;
      const w = worker ?? (system ? (deterministic ? await loadDeterministicSystemEspeak() : await loadSystemEspeak()) : deterministic ? await loadDeterministicEspeak() : await loadEspeak());
      // No voice_id: the context's default, else the first catalog voice (English).
      const voiceRecord = (await context.resolveVoice(config.voiceId ?? null)) ?? (config.voiceId ? undefined : { uid: 'default', language: 'en', params: {} });
      if (voiceRecord === undefined) {
        throw new VoicewireError('TTS_UNKNOWN_VOICE', `unknown voice_id ${JSON.stringify(config.voiceId ?? null)}: list voices with GET /voices/`);
      }
      let rules = new Map<string, string>();
      if (config.pronunciationId !== undefined) {
        const dict = await context.resolvePronunciation(config.pronunciationId);
        if (dict === undefined) throw new VoicewireError('TTS_UNKNOWN_PRONUNCIATION', `unknown pronunciation_id ${JSON.stringify(config.pronunciationId)}`);
        rules = pronunciationMap(dict.rules);
      }
      const voice = effectiveVoiceParams(normalizeVoiceParams(voiceRecord.params, voiceRecord.language), jsonConfig);
      const rewrite = typeof jsonConfig.rewrite_rules === 'string' ? parseRewriteRules(jsonConfig.rewrite_rules).rules : [];
      return new EspeakStream(w, config, emit, voice, rules, rewrite, maxText, maxChunk, modelName, deterministic);
    },
  };
}

/** Lower-cased word → what espeak reads instead (`[[…]]` is espeak's phoneme input). */
function pronunciationMap(rules: EngineDictionary['rules']): Map<string, string> {
  const map = new Map<string, string>();
  for (const r of rules) {
    const word = r.word.trim().toLowerCase();
    if (word === '' || /\s/.test(word)) continue; // rules are per word
    // Phonemes may come bare (`w'3:ld`) or in espeak's own input form (`[[w'3:ld]]`, what the
    // espeak-ng command takes): wrapped once here. A `[[` or `]]` left inside would nest or end the
    // phoneme block early (`[[[[w'3:ld]]` silenced the word); espeak phoneme strings never need them.
    map.set(word, r.kind === 'phonemes' ? `[[${r.replacement.replace(/\[\[|\]\]/g, '').trim()}]]` : r.replacement.replace(/[[\]]/g, ''));
  }
  return map;
}

function isDeterministic(w: EspeakWorker): w is EspeakDeterministicWorker {
  return typeof (w as Partial<EspeakDeterministicWorker>).restore === 'function';
}

/**
 * The name espeak-ng loads a voice by: its voice files are named `en` (English, Great Britain) and
 * `fr` (French, France), and `set_voice('en-gb')` or `'fr-fr'` fails, leaving the voice loaded
 * before in place (Oliver spoke with the previous request's voice).
 */
export function espeakVoiceFile(voice: string): string {
  return voice === 'en-gb' ? 'en' : voice === 'fr-fr' ? 'fr' : voice;
}

/** The voice each worker has loaded (workers are shared by every stream). */
const currentVoice = new WeakMap<EspeakWorker, string>();

const LEAD = /^[("'«¿¡“‘[]+/;
const TRAIL = /[)"'».,;:!?…”’\]]+$/;

/** One word as sent and as spoken, with where the spoken form sits in the synthesized text. */
interface Segment {
  text: string;
  from: number;
  to: number;
}

class EspeakStream implements TtsEngineStream {
  readonly info;
  private pending = '';
  private received = 0;
  private closed = false;
  /** Whose turn its syntheses wait for in the shared espeak queue (issue 31). */
  private readonly tenant: string | undefined;
  /** The 80 ms frames; its `out` is the timeline of word timestamps. */
  private readonly packer = new FramePacker((pcm) => {
    if (!this.closed) this.emit({ type: 'audio', pcm });
  });

  constructor(
    private readonly worker: EspeakWorker,
    config: TtsEngineConfig,
    private readonly emit: (e: TtsEngineEvent) => void,
    private readonly voice: EspeakVoiceParams,
    private readonly rules: Map<string, string>,
    private readonly rewriteRules: readonly RewriteRuleName[],
    private readonly maxText: number,
    private readonly maxChunk: number,
    modelName: string,
    private readonly deterministic = false,
  ) {
    this.info = { modelName: config.modelName === 'default' ? modelName : config.modelName, sampleRate: OUT_RATE, frameSize: FRAME, audioStreamNames: ['main'], textStreamNames: ['main'] };
    this.tenant = config.tenant;
  }

  async text(text: string): Promise<void> {
    this.received += text.length;
    if (this.received > this.maxText) {
      throw new VoicewireError('TTS_TEXT_TOO_LONG', `text longer than ${this.maxText} characters in one request: split it into several requests`);
    }
    // Spaces alone matter only after a word: they complete it.
    if (text.trim() === '' && this.pending === '') return;
    this.pending = this.pending === '' || /\s$/.test(this.pending) || /^\s/.test(text) ? this.pending + text : `${this.pending} ${text}`;
    // Everything up to the last sentence end followed by a space is ready.
    const re = /[.!?…;](?=["'»”’)\]]*\s)/g;
    let cut = -1;
    for (let m = re.exec(this.pending); m; m = re.exec(this.pending)) cut = m.index + 1;
    if (cut < 0 && this.pending.length > this.maxChunk) cut = this.pending.lastIndexOf(' ', this.maxChunk);
    if (cut > 0) await this.speakPendingTo(cut, false);
    // After the last sentence end: past a few complete words the phrase so far is spoken (§4.5:
    // audio lags a few words behind the text), its tail silence trimmed as it is mid-sentence.
    // The first audio of a request waits for one word only: first audio is the latency promised.
    const spokeNothing = this.packer.out === 0 && this.packer.fill === 0;
    const phrase = phraseCut(this.pending, spokeNothing ? 1 : ESPEAK_LAG_WORDS);
    if (phrase > 0) await this.speakPendingTo(phrase, true);
  }

  /** Speaks `pending` up to `at` and keeps the rest. */
  private async speakPendingTo(at: number, trimTail: boolean): Promise<void> {
    const ready = this.pending.slice(0, at);
    this.pending = this.pending.slice(at);
    await this.speak(ready, trimTail);
  }

  async pause(seconds: number): Promise<void> {
    await this.speakPending(true);
    // A <break> is exact silence of its length (§4.5), after the speech's own trailing silence was trimmed.
    this.packer.push(new Int16Array(Math.round(seconds * OUT_RATE)));
  }

  async flush(): Promise<void> {
    await this.speakPending(false);
    this.packer.pad();
  }

  async end(): Promise<void> {
    await this.speakPending(false);
    this.packer.pad();
  }

  close(): void {
    this.closed = true;
  }

  private speakPending(trimTail: boolean): Promise<void> {
    return this.speakPendingTo(this.pending.length, trimTail);
  }

  /** Speaks `text` sentence by sentence (pieces of at most maxChunk characters). */
  private async speak(text: string, trimTail: boolean): Promise<void> {
    const pieces = splitSentences(text, this.maxChunk);
    for (let i = 0; i < pieces.length; i++) {
      if (this.closed) return;
      await this.speakOne(pieces[i]!, trimTail && i === pieces.length - 1);
      // Let the frames of this sentence leave (and other streams run) before the next one.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  private async speakOne(text: string, trimTail: boolean): Promise<void> {
    const segments: Segment[] = [];
    let spoken = '';
    for (const word of text.split(/\s+/)) {
      if (word === '') continue;
      const form = this.spokenForm(word);
      if (spoken !== '') spoken += ' ';
      segments.push({ text: word, from: spoken.length, to: spoken.length + form.length });
      spoken += form;
    }
    if (spoken === '') return;
    const w = this.worker;
    if (this.deterministic && isDeterministic(w)) {
      w.restore();
      currentVoice.delete(w);
    }
    // Loading a voice reads its files (~2 ms, more under load): only when it changes.
    const file = espeakVoiceFile(this.voice.voice);
    const name = this.voice.variant ? `${file}+${this.voice.variant}` : file;
    if (currentVoice.get(w) !== name) {
      w.set_voice(name);
      currentVoice.set(w, name);
    }
    w.set_rate(this.voice.rate);
    w.set_pitch(this.voice.pitch);
    w.set_range(this.voice.range);
    const chunks: Int16Array[] = [];
    const events: EspeakEvent[] = [];
    let total = 0;
    // Both builds synthesize off the event loop (a promise; the settings above travel with it); a closed stream stops it.
    await w.synthesize(spoken, (samples, evs) => {
      // Interrupted for another organization (espeak-module.ts): it starts over, what came is void.
      if (samples === ESPEAK_RESTART) {
        chunks.length = 0;
        events.length = 0;
        total = 0;
        return this.closed;
      }
      chunks.push(samples);
      total += samples.length;
      for (const e of evs) if (e.type === 'word') events.push(e);
      return this.closed;
    }, this.tenant);
    if (this.closed) return;
    let pcm = new Int16Array(total);
    let o = 0;
    for (const c of chunks) {
      pcm.set(c, o);
      o += c.length;
    }
    const inRate = w.get_samplerate();
    if (trimTail) pcm = pcm.subarray(0, lastSound(pcm, 0, pcm.length, 64) + Math.round(inRate * 0.02));
    const audio = resampleInt16(pcm, inRate, OUT_RATE);
    // Word events → segments (several events inside one rewritten word count once).
    const starts: { seg: number; at: number }[] = [];
    for (const e of events) {
      const pos = e.text_position - 1;
      const seg = segments.findIndex((s) => pos >= s.from && pos < s.to);
      if (seg < 0 || (starts.length > 0 && starts[starts.length - 1]!.seg === seg)) continue;
      starts.push({ seg, at: Math.min(audio.length, Math.round((e.audio_position * OUT_RATE) / 1000)) });
    }
    fillMissingWords(starts, segments);
    const level = Math.max(64, peak(audio, 0, audio.length) * SILENCE_RATIO);
    const words: TtsEngineEvent[] = [];
    for (let i = 0; i < starts.length; i++) {
      const next = i + 1 < starts.length ? starts[i + 1]!.at : audio.length;
      const start = firstSound(audio, starts[i]!.at, next, level);
      const stop = Math.min(next, lastSound(audio, start, next, level) + EDGE_WINDOW);
      if (stop <= start) continue; // no sound: dropped
      words.push({ type: 'word', text: segments[starts[i]!.seg]!.text, start_s: round((this.packer.out + start) / OUT_RATE), stop_s: round((this.packer.out + stop) / OUT_RATE) });
    }
    // Each word timestamp goes out just before the frame its start falls in.
    let wi = 0;
    for (let s = 0; s < audio.length; ) {
      const room = this.packer.room;
      const frameEnd = this.packer.out + room;
      while (wi < words.length && (words[wi] as { start_s: number }).start_s * OUT_RATE < frameEnd) this.emit(words[wi++]!);
      const n = Math.min(room, audio.length - s);
      this.packer.push(audio.subarray(s, s + n));
      s += n;
    }
    while (wi < words.length) this.emit(words[wi++]!);
  }

  /** A word as espeak should read it: the organization's rule, else the rewrite rules, else itself. */
  private spokenForm(word: string): string {
    if (this.rules.size > 0) {
      const lead = LEAD.exec(word)?.[0] ?? '';
      const trail = TRAIL.exec(word.slice(lead.length))?.[0] ?? '';
      const core = word.slice(lead.length, word.length - trail.length);
      const rule = this.rules.get(core.toLowerCase());
      if (rule !== undefined) return `${lead}${rule}${trail}`;
    }
    // `[[`/`]]` would switch espeak to phoneme input: only dictionary rules may do that.
    const plain = word.replace(/\[\[|\]\]/g, '');
    return this.rewriteRules.length > 0 ? rewriteWordWithRules(plain, this.rewriteRules) : plain;
  }
}

/**
 * espeak sometimes reads two words as one (German "Es ist", clitics): a word with letters or
 * digits but no event of its own shares the time of the word before it, split in proportion to
 * the length of their spoken forms, so every word the client sent gets a timestamp.
 */
function fillMissingWords(starts: { seg: number; at: number }[], segments: readonly Segment[]): void {
  const speakable = (i: number) => /[\p{L}\p{N}]/u.test(segments[i]!.text);
  for (let k = starts.length - 1; k >= 0; k--) {
    const cur = starts[k]!;
    const nextSeg = k + 1 < starts.length ? starts[k + 1]!.seg : segments.length;
    const missing: number[] = [];
    for (let i = cur.seg + 1; i < nextSeg; i++) if (speakable(i)) missing.push(i);
    if (missing.length === 0) continue;
    const nextAt = k + 1 < starts.length ? starts[k + 1]!.at : undefined;
    if (nextAt === undefined) continue; // the last word runs to the end; nothing to split against
    const group = [cur.seg, ...missing];
    const lens = group.map((i) => segments[i]!.to - segments[i]!.from);
    const total = lens.reduce((a, b) => a + b, 0);
    const span = nextAt - cur.at;
    const added: { seg: number; at: number }[] = [];
    let acc = lens[0]!;
    for (let j = 1; j < group.length; j++) {
      added.push({ seg: group[j]!, at: cur.at + Math.round((span * acc) / total) });
      acc += lens[j]!;
    }
    starts.splice(k + 1, 0, ...added);
  }
}

/**
 * Complete words (followed by a space) held without a sentence end before they are spoken, once
 * the request has audio. A sentence synthesized whole sounds best, but at 150 words a minute one
 * of 20 words would hold audio 8 s (the load bench's per-stage breakdown: 2.2 s mean in the
 * engine before the first audio).
 */
export const ESPEAK_LAG_WORDS = 4;

/**
 * Where to cut `pending` (no sentence end in it) once it holds `minWords` complete words: after
 * the last clause mark (`,` `:` `—` `–`) among them, else after the last complete word; -1 while
 * it holds fewer.
 */
export function phraseCut(pending: string, minWords: number = ESPEAK_LAG_WORDS): number {
  let words = 0;
  let lastWordEnd = -1;
  let inWord = false;
  for (let i = 0; i < pending.length; i++) {
    const space = /\s/.test(pending[i]!);
    if (space && inWord) {
      words++;
      lastWordEnd = i;
    }
    inWord = !space;
  }
  if (words < minWords) return -1;
  const clause = /[,:—–](?=["'»”’)\]]*\s)/g;
  let cut = -1;
  for (let m = clause.exec(pending); m && m.index < lastWordEnd; m = clause.exec(pending)) cut = m.index + 1;
  return cut > 0 ? cut : lastWordEnd;
}

/** Sentences of `text`, each at most `max` characters (longer ones cut at a space). */
export function splitSentences(text: string, max: number): string[] {
  const out: string[] = [];
  for (const sentence of text.split(/(?<=[.!?…;]["'»”’)\]]*)\s+/)) {
    let s = sentence.trim();
    while (s.length > max) {
      let cut = s.lastIndexOf(' ', max);
      if (cut <= 0) cut = max;
      out.push(s.slice(0, cut));
      s = s.slice(cut).trim();
    }
    if (s !== '') out.push(s);
  }
  return out;
}

/** Index of the first 5 ms window in [from, to) with sound, or `from` when there is none. */
function firstSound(pcm: Int16Array, from: number, to: number, level: number): number {
  for (let i = from; i < to; i += EDGE_WINDOW / 2) {
    if (peak(pcm, i, Math.min(to, i + EDGE_WINDOW / 2)) > level) return i;
  }
  return from;
}

/** Index just after the last sample with sound in [from, to), or `from` when there is none. */
function lastSound(pcm: Int16Array, from: number, to: number, level: number): number {
  for (let i = to - 1; i >= from; i--) if (Math.abs(pcm[i]!) > level) return i + 1;
  return from;
}

function peak(pcm: Int16Array, from: number, to: number): number {
  let p = 0;
  for (let i = from; i < to; i++) p = Math.max(p, Math.abs(pcm[i]!));
  return p;
}

function round(seconds: number): number {
  return Math.round(seconds * 1e4) / 1e4;
}
