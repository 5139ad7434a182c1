/**
 * Voices of the espeak-ng engine: the catalog (docs/api.md §2.1: language, country, age group,
 * gender, description), voice design from a prompt (§2.2, §4.7) and voices from a sample
 * (`POST /voices/`). A voice is a set of espeak parameters, {@link EspeakVoiceParams}, stored in
 * the voice record's `params`.
 */
import { SPEECH_LANGUAGES, type SpeechLanguage } from './number-words.js';
import { describeValue, objectArg, stringArg } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';

/**
 * espeak parameters of a voice. Defaults are espeak's own: pitch 50 and range 50 (0–100), rate
 * 175 words per minute (80–450). A type alias, so it fits a voice record's `Record<string, unknown>` params.
 */
export type EspeakVoiceParams = {
  engine: 'espeak';
  /** An espeak voice of one of the five languages, e.g. `en-us`, `fr-fr`, `pt-br` (see {@link ESPEAK_LANGUAGE_VOICES}). */
  voice: string;
  /** An espeak variant (`f1`–`f5`, `m1`–`m7`, or a named one such as `Annie`), or none. */
  variant?: string;
  pitch: number;
  range: number;
  rate: number;
};

/** The espeak voices per language, with the country each stands for (the first is the default). */
export const ESPEAK_LANGUAGE_VOICES: Readonly<Record<SpeechLanguage, readonly (readonly [voice: string, country: string])[]>> = {
  en: [['en-us', 'us'], ['en-gb', 'gb'], ['en-gb-scotland', 'gb'], ['en-029', 'jm'], ['en-us-nyc', 'us']],
  fr: [['fr-fr', 'fr'], ['fr-be', 'be'], ['fr-ch', 'ch']],
  de: [['de', 'de']],
  es: [['es', 'es'], ['es-419', 'mx']],
  pt: [['pt-br', 'br'], ['pt', 'pt']],
};

const VARIANTS = new Set(['f1', 'f2', 'f3', 'f4', 'f5', 'm1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7', 'Annie', 'Andy', 'Alicia', 'Diogo', 'Henrique', 'Marco', 'Mario', 'Michael', 'anika', 'belinda', 'benjamin', 'david', 'edward', 'grandma', 'grandpa', 'linda', 'michel', 'pablo', 'paul', 'pedro', 'steph', 'victor', 'whisper', 'whisperf']);

/** A catalog voice, shaped as the server's `VoiceRecord` (orgId null). */
export interface CatalogVoice {
  uid: string;
  orgId: null;
  name: string;
  description: string;
  language: string;
  filename: string;
  startS: number;
  tags: string[];
  isProClone: boolean;
  params: Record<string, unknown>;
  createdAt: string;
}

type Age = 'Young Adult' | 'Adult' | 'Mature';
type Gender = 'Feminine' | 'Masculine' | 'Neutral';

/** name, language, espeak voice, country, age, gender, variant, pitch, range, rate, what it sounds like. */
const CATALOG: readonly (readonly [string, SpeechLanguage, string, string, Age, Gender, string, number, number, number, string])[] = [
  ['Ava', 'en', 'en-us', 'us', 'Adult', 'Feminine', 'f2', 55, 55, 170, 'Warm American narrator, even pace'],
  ['Noah', 'en', 'en-us', 'us', 'Young Adult', 'Masculine', 'm3', 48, 60, 185, 'Bright, quick American voice for assistants'],
  ['Oliver', 'en', 'en-gb', 'gb', 'Mature', 'Masculine', 'm1', 38, 45, 160, 'Calm, low British voice for long reads'],
  ['Isla', 'en', 'en-gb-scotland', 'gb', 'Young Adult', 'Feminine', 'f4', 62, 65, 180, 'Lively Scottish voice'],
  ['Camille', 'fr', 'fr-fr', 'fr', 'Adult', 'Feminine', 'f3', 56, 55, 165, 'Voix française claire et posée'],
  ['Louis', 'fr', 'fr-fr', 'fr', 'Mature', 'Masculine', 'm2', 40, 45, 155, 'Voix grave et calme, pour la lecture'],
  ['Léa', 'fr', 'fr-be', 'be', 'Young Adult', 'Feminine', 'f5', 64, 62, 180, 'Voix belge jeune et vive'],
  ['Hanna', 'de', 'de', 'de', 'Adult', 'Feminine', 'f1', 55, 50, 165, 'Klare deutsche Erzählerstimme'],
  ['Jonas', 'de', 'de', 'de', 'Young Adult', 'Masculine', 'm4', 47, 58, 180, 'Junge, lebhafte Stimme'],
  ['Klaus', 'de', 'de', 'de', 'Mature', 'Masculine', 'm1', 36, 42, 150, 'Tiefe, ruhige Stimme'],
  ['Lucía', 'es', 'es', 'es', 'Adult', 'Feminine', 'f2', 57, 58, 175, 'Voz castellana cálida'],
  ['Mateo', 'es', 'es-419', 'mx', 'Young Adult', 'Masculine', 'm3', 46, 60, 185, 'Voz mexicana joven y enérgica'],
  ['Carmen', 'es', 'es-419', 'mx', 'Mature', 'Feminine', 'f4', 48, 45, 160, 'Voz latinoamericana serena'],
  ['Beatriz', 'pt', 'pt-br', 'br', 'Adult', 'Feminine', 'f3', 58, 58, 170, 'Voz brasileira acolhedora'],
  ['Rafael', 'pt', 'pt-br', 'br', 'Young Adult', 'Masculine', 'm2', 47, 60, 185, 'Voz brasileira jovem e animada'],
  ['João', 'pt', 'pt', 'pt', 'Mature', 'Masculine', 'm1', 38, 45, 155, 'Voz portuguesa grave e calma'],
];

/** The catalog creation date: fixed, so listings are stable. */
const CATALOG_DATE = '2026-01-01T00:00:00.000Z';

/** The catalog voices (3–4 per language); their `uid`s never change (`espeak-<lang>-<name>`). */
export function catalogVoices(): CatalogVoice[] {
  return CATALOG.map(([name, language, voice, country, age, gender, variant, pitch, range, rate, description]) => ({
    uid: `espeak-${language}-${asciiSlug(name)}`,
    orgId: null,
    name,
    description: `${description}. ${gender}, ${age}, ${language}-${country}.`,
    language,
    filename: '',
    startS: 0,
    tags: [language, country, age, gender],
    isProClone: false,
    params: { engine: 'espeak', voice, variant, pitch, range, rate } satisfies EspeakVoiceParams,
    createdAt: CATALOG_DATE,
  }));
}

function asciiSlug(s: string): string {
  return s.normalize('NFD').replace(/[\u0300-\u036f]/g, '').toLowerCase().replace(/[^a-z0-9]+/g, '-');
}

/** The default voice of a language (the first catalog voice of it). */
export function defaultVoiceParams(language: SpeechLanguage = 'en'): EspeakVoiceParams {
  if (!SPEECH_LANGUAGES.includes(language)) throw new VoicewireError('INVALID_ARGUMENT', `defaultVoiceParams: language must be one of ${SPEECH_LANGUAGES.join(', ')}, got ${typeof language === 'string' ? JSON.stringify(language) : describeValue(language)}`);
  return catalogVoices().find((v) => v.language === language)!.params as unknown as EspeakVoiceParams;
}

/** The language of an espeak voice name (`fr-be` → `fr`), or undefined when it is not one of the five. */
export function languageOfVoice(voice: string): SpeechLanguage | undefined {
  for (const lang of SPEECH_LANGUAGES) if (ESPEAK_LANGUAGE_VOICES[lang].some(([v]) => v === voice)) return lang;
  return undefined;
}

/**
 * A voice record's `params` as valid espeak parameters: unknown voices fall back to the
 * language's default voice (`language` names it), numbers are clamped to espeak's ranges.
 */
export function normalizeVoiceParams(params: Record<string, unknown> | undefined, language?: string): EspeakVoiceParams {
  const lang = (SPEECH_LANGUAGES as readonly string[]).includes(language ?? '') ? (language as SpeechLanguage) : undefined;
  const base = defaultVoiceParams(lang ?? 'en');
  const p = params ?? {};
  const voice = typeof p.voice === 'string' && languageOfVoice(p.voice) ? p.voice : base.voice;
  const variant = typeof p.variant === 'string' && VARIANTS.has(p.variant) ? p.variant : undefined;
  const num = (v: unknown, d: number, lo: number, hi: number): number => (typeof v === 'number' && Number.isFinite(v) ? clamp(Math.round(v), lo, hi) : d);
  const out: EspeakVoiceParams = { engine: 'espeak', voice, pitch: num(p.pitch, base.pitch, 0, 100), range: num(p.range, base.range, 0, 100), rate: num(p.rate, base.rate, 80, 450) };
  if (variant) out.variant = variant;
  return out;
}

function clamp(x: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, x));
}

// ---------------------------------------------------------------------------------------------
// Voice design (§2.2, §4.7)
// ---------------------------------------------------------------------------------------------

/** Input of {@link designVoices}. */
export interface DesignVoicesInput {
  prompt: string;
  /** Candidates to make, 1 to 5 (§8). */
  nSamples: number;
  language: string;
  /** Seed of the variations; the same prompt and seed give the same candidates. Default 0. */
  seed?: number;
}

/** Words of a prompt and how they move the parameters (and, for gender, the variant family). */
const PROMPT_WORDS: readonly (readonly [RegExp, Partial<{ pitch: number; range: number; rate: number; gender: 'f' | 'm' }>])[] = [
  [/\b(woman|female|feminine|girl|lady|she|her|femme|frau|mujer|mulher)\b/, { gender: 'f', pitch: 8 }],
  [/\b(man|male|masculine|boy|guy|he|his|homme|mann|hombre|homem)\b/, { gender: 'm', pitch: -6 }],
  [/\b(young|youthful|teen|teenage|child|kid|jeune|jung|joven|jovem)\b/, { pitch: 8, rate: 10, range: 5 }],
  [/\b(old|elderly|aged|mature|senior|grandfather|grandmother|vieux|alt|viejo|velho)\b/, { pitch: -8, rate: -20, range: -5 }],
  [/\b(fast|quick|rapid|hurried|energetic|excited)\b/, { rate: 45 }],
  [/\b(slow|slowly|calm|relaxed|soothing|measured|gentle)\b/, { rate: -35 }],
  [/\b(high|high-pitched|squeaky|bright)\b/, { pitch: 15 }],
  [/\b(deep|low|low-pitched|bass|gravelly|husky)\b/, { pitch: -15 }],
  [/\b(monotone|flat|robotic|bored)\b/, { range: -35 }],
  [/\b(expressive|lively|animated|cheerful|dramatic|enthusiastic)\b/, { range: 25 }],
];

/** Accent words → espeak voice (only those of the requested language apply). */
const ACCENT_WORDS: readonly (readonly [RegExp, string])[] = [
  [/\b(british|english accent|london|rp)\b/, 'en-gb'],
  [/\b(scottish|scotland)\b/, 'en-gb-scotland'],
  [/\b(caribbean|jamaican)\b/, 'en-029'],
  [/\b(new york|nyc|brooklyn)\b/, 'en-us-nyc'],
  [/\b(american|us)\b/, 'en-us'],
  [/\b(belgian|belgium|belge)\b/, 'fr-be'],
  [/\b(swiss|suisse)\b/, 'fr-ch'],
  [/\b(parisian|france)\b/, 'fr-fr'],
  [/\b(mexican|latin|latino|latina|latin american)\b/, 'es-419'],
  [/\b(castilian|spain|madrid)\b/, 'es'],
  [/\b(brazilian|brazil|brasil)\b/, 'pt-br'],
  [/\b(european portuguese|portugal|lisbon)\b/, 'pt'],
];

/**
 * Voice design: `nSamples` candidates for a prompt, deterministic in (prompt, seed). The prompt's
 * words set one character (gender → variant family, age, speed, pitch, expressiveness, accent →
 * espeak voice; see `PROMPT_WORDS`), a hash of the prompt places it within that character, and
 * each candidate is a small variation on it (pitch ±4, range ±6, rate ±8 wpm, same voice and
 * variant), so candidates sound like siblings.
 */
export function designVoices(input: DesignVoicesInput): EspeakVoiceParams[] {
  objectArg(input, 'designVoices: input');
  stringArg(input.prompt, 'designVoices: prompt');
  stringArg(input.language, 'designVoices: language');
  // Any count is clamped to 1–5 below; NaN would make none.
  if (typeof input.nSamples !== 'number' || Number.isNaN(input.nSamples)) throw new VoicewireError('INVALID_ARGUMENT', `designVoices: nSamples must be a number, got ${describeValue(input.nSamples)}`);
  if (input.seed !== undefined && (typeof input.seed !== 'number' || !Number.isFinite(input.seed))) {
    throw new VoicewireError('INVALID_ARGUMENT', `designVoices: seed must be a finite number, got ${describeValue(input.seed)}`);
  }
  const lang: SpeechLanguage = (SPEECH_LANGUAGES as readonly string[]).includes(input.language) ? (input.language as SpeechLanguage) : 'en';
  const prompt = input.prompt.toLowerCase();
  const rnd = mulberry32(hash32(`${prompt}\u0000${input.seed ?? 0}`));
  let pitch = 50;
  let range = 50;
  let rate = 175;
  let gender: 'f' | 'm' | undefined;
  for (const [re, d] of PROMPT_WORDS) {
    if (!re.test(prompt)) continue;
    pitch += d.pitch ?? 0;
    range += d.range ?? 0;
    rate += d.rate ?? 0;
    gender ??= d.gender;
  }
  gender ??= rnd() < 0.5 ? 'f' : 'm';
  const family = gender === 'f' ? ['f1', 'f2', 'f3', 'f4', 'f5'] : ['m1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7'];
  const variant = family[Math.floor(rnd() * family.length)]!;
  const voices = ESPEAK_LANGUAGE_VOICES[lang];
  const accent = ACCENT_WORDS.find(([re, v]) => re.test(prompt) && voices.some(([name]) => name === v))?.[1];
  const voice = accent ?? voices[0]![0];
  // The character: the prompt's direction plus a prompt-specific offset.
  pitch += Math.round((rnd() - 0.5) * 10);
  range += Math.round((rnd() - 0.5) * 10);
  rate += Math.round((rnd() - 0.5) * 16);
  const n = Math.max(1, Math.min(5, Math.floor(input.nSamples)));
  const out: EspeakVoiceParams[] = [];
  for (let i = 0; i < n; i++) {
    out.push({
      engine: 'espeak',
      voice,
      variant,
      pitch: clamp(pitch + Math.round((rnd() - 0.5) * 8), 0, 100),
      range: clamp(range + Math.round((rnd() - 0.5) * 12), 0, 100),
      rate: clamp(rate + Math.round((rnd() - 0.5) * 16), 80, 450),
    });
  }
  return out;
}

/** FNV-1a over UTF-16 code units. */
function hash32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** A small seeded PRNG (mulberry32): deterministic candidates across platforms. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---------------------------------------------------------------------------------------------
// Voices from a sample (POST /voices/)
// ---------------------------------------------------------------------------------------------

/** What {@link voiceParamsFromSample} measured, with the parameters. */
export interface SampleVoiceEstimate {
  params: EspeakVoiceParams;
  /** Median fundamental frequency of the voiced 30 ms frames, Hz (undefined: no voiced frame). */
  f0Hz: number | undefined;
  /** Syllable nuclei (energy peaks) per second of speech. */
  syllablesPerSecond: number | undefined;
}

/**
 * espeak parameters that imitate a voice sample (s16 mono at `sampleRate`):
 *
 * - pitch: the median F0 of voiced 30 ms frames (autocorrelation, 70–400 Hz, voiced when the
 *   normalized peak is ≥ 0.5). Below 165 Hz the voice takes the male variant `m3` with pitch
 *   50 at 120 Hz, else the female `f2` with pitch 50 at 210 Hz; each semitone away moves pitch
 *   by 3 (clamped to 0–100).
 * - range: the spread of F0 (interquartile range in semitones): 50 at 4 semitones, ±8 per semitone.
 * - rate: syllable nuclei (peaks of the 10 ms energy envelope, at least 120 ms apart and 6 dB
 *   above the surrounding valley) per second of speech; 4.4 syllables/s ↔ espeak's 175 wpm,
 *   proportionally (clamped to 80–450).
 *
 * Nothing measurable (silence, noise) gives espeak's defaults for `language`.
 */
export function voiceParamsFromSample(pcm: Int16Array, sampleRate: number, language: string = 'en'): EspeakVoiceParams {
  return estimateVoiceFromSample(pcm, sampleRate, language).params;
}

/** {@link voiceParamsFromSample} with the measurements behind it. */
export function estimateVoiceFromSample(pcm: Int16Array, sampleRate: number, language: string = 'en'): SampleVoiceEstimate {
  if (!(pcm instanceof Int16Array)) throw new VoicewireError('INVALID_ARGUMENT', `estimateVoiceFromSample: pcm must be an Int16Array, got ${describeValue(pcm)}`);
  // The 10 ms hop must be a whole number of samples > 0: a rate of 40 Hz made it 0, and the
  // energy loop then never advanced (it grew an array until V8 aborted the process).
  if (typeof sampleRate !== 'number' || !Number.isInteger(sampleRate) || sampleRate < 8000 || sampleRate > 192_000) {
    throw new VoicewireError('INVALID_ARGUMENT', `estimateVoiceFromSample: sampleRate must be an integer from 8000 to 192000 Hz, got ${describeValue(sampleRate)}`);
  }
  const base = normalizeVoiceParams(undefined, language);
  const frame = Math.round(sampleRate * 0.03);
  const hop = Math.round(sampleRate * 0.01);
  const minLag = Math.floor(sampleRate / 400);
  const maxLag = Math.ceil(sampleRate / 70);
  // Analyse at most 30 s: CPU stays bounded whatever the sample length.
  const n = Math.min(pcm.length, sampleRate * 30);
  const energies: number[] = [];
  for (let s = 0; s + hop <= n; s += hop) {
    let e = 0;
    for (let i = s; i < s + hop; i++) e += pcm[i]! * pcm[i]!;
    energies.push(e / hop);
  }
  const maxE = Math.max(1, ...energies);
  const speechFloor = maxE * 10 ** (-35 / 10);
  const f0s: number[] = [];
  for (let s = 0; s + frame + maxLag <= n; s += hop * 3) {
    let e0 = 0;
    for (let i = s; i < s + frame; i++) e0 += pcm[i]! * pcm[i]!;
    if (e0 / frame < speechFloor) continue;
    let best = 0;
    let bestLag = 0;
    for (let lag = minLag; lag <= maxLag; lag++) {
      let c = 0;
      let el = 0;
      for (let i = s; i < s + frame; i++) {
        c += pcm[i]! * pcm[i + lag]!;
        el += pcm[i + lag]! * pcm[i + lag]!;
      }
      const r = c / Math.sqrt(e0 * el + 1);
      if (r > best) {
        best = r;
        bestLag = lag;
      }
    }
    if (best >= 0.5) f0s.push(sampleRate / bestLag);
  }
  const speechFrames = energies.filter((e) => e >= speechFloor).length;
  const syllables = countPeaks(energies, speechFloor);
  const syllablesPerSecond = speechFrames > 20 ? syllables / (speechFrames * 0.01) : undefined;
  if (f0s.length < 5) return { params: base, f0Hz: undefined, syllablesPerSecond };
  f0s.sort((a, b) => a - b);
  const f0 = f0s[f0s.length >> 1]!;
  const q1 = f0s[Math.floor(f0s.length / 4)]!;
  const q3 = f0s[Math.floor((3 * f0s.length) / 4)]!;
  const male = f0 < 165;
  const semis = 12 * Math.log2(f0 / (male ? 120 : 210));
  const spread = 12 * Math.log2(q3 / q1);
  const params: EspeakVoiceParams = {
    engine: 'espeak',
    voice: base.voice,
    variant: male ? 'm3' : 'f2',
    pitch: clamp(Math.round(50 + 3 * semis), 0, 100),
    range: clamp(Math.round(50 + 8 * (spread - 4)), 0, 100),
    rate: syllablesPerSecond === undefined ? base.rate : clamp(Math.round((175 * syllablesPerSecond) / 4.4), 80, 450),
  };
  return { params, f0Hz: f0, syllablesPerSecond };
}

/** Energy peaks at least 12 frames apart that rise 6 dB over the valley since the last peak. */
function countPeaks(energies: readonly number[], floor: number): number {
  let peaks = 0;
  let valley = Infinity;
  let lastPeak = -Infinity;
  for (let i = 1; i < energies.length - 1; i++) {
    const e = energies[i]!;
    valley = Math.min(valley, e);
    const isMax = e >= energies[i - 1]! && e > energies[i + 1]! && e >= floor;
    if (isMax && e >= valley * 4 && i - lastPeak >= 12) {
      peaks++;
      lastPeak = i;
      valley = e;
    }
  }
  return peaks;
}
