/**
 * sherpa-onnx model folders (issue 24): which family a folder holds, the sherpa-onnx config that
 * loads it, and a check that it loads, made in a child process before the server loads it.
 *
 * The family comes from the folder's files and the model's ONNX metadata, as sherpa-onnx's
 * released folders are laid out (`--tts-model-type` / `--stt-model-type` force it):
 *
 * - TTS: `*.onnx` + `tokens.txt` whose metadata `comment` holds "piper" → `piper` (espeak-ng
 *   phonemes: the folder's `espeak-ng-data`, else the system's); `model_type` "kokoro" or a
 *   `voices.bin` → `kokoro`; other VITS → `vits` (needs `lexicon.txt` or `espeak-ng-data`).
 * - STT: `*-encoder.onnx` + `*-decoder.onnx` + `*-tokens.txt` → `whisper`; `encoder*` + `decoder*`
 *   + `joiner*` → `transducer`; `preprocess.onnx` + `encode.onnx` → `moonshine`; one model with an
 *   `audio_signal` input or NeMo's metadata (`subsampling_factor`, `normalize_type`) → `nemo-ctc`; with
 *   `lfr_window_size` and "sense" in `model_type`/`comment` → `sense-voice`, else `paraformer`; one
 *   model with a streaming NeMo export's metadata (`window_size`, `chunk_shift`, `cache_last_*`) →
 *   `nemo-ctc-online` (a streaming model: {@link SherpaModel.streaming}); one
 *   model with no such metadata → `zipformer2-ctc` (it declares nothing: its graph's shapes are
 *   checked instead, features `[N, T, 80]` and log-probs `[N, T', V]` with V fixed and ≤ the tokens).
 *
 * sherpa-onnx ends the process (`_Exit`, SIGABRT) on a missing metadata key, a malformed
 * `tokens.txt` or a corrupt model, so a folder is checked twice before the server touches it:
 * here (files, tokens, the metadata the family needs: precise messages), then by loading it and
 * running it once in a child process ({@link validateSherpaModel}), whose death is a refusal
 * naming the folder and sherpa-onnx's own last words.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, join, resolve } from 'node:path';
import { describeValue, objectArg, stringArg } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';
import { PROTOCOL_LANGUAGES } from '../protocol/validate.js';
import { readOnnxInfo as readOnnx, type OnnxInfo, type OnnxShape } from './onnx-info.js';

/** The npm package of sherpa-onnx's Node binding (its native binary is `sherpa-onnx-linux-x64` etc.). */
export const SHERPA_PACKAGE = 'sherpa-onnx-node';

/** TTS families `--tts-model-type` accepts. */
export const SHERPA_TTS_TYPES = ['piper', 'vits', 'kokoro'] as const;
/** STT families `--stt-model-type` accepts. */
export const SHERPA_STT_TYPES = ['nemo-ctc', 'nemo-ctc-online', 'zipformer2-ctc', 'whisper', 'sense-voice', 'paraformer', 'moonshine', 'transducer'] as const;
export type SherpaTtsType = (typeof SHERPA_TTS_TYPES)[number];
export type SherpaSttType = (typeof SHERPA_STT_TYPES)[number];

/** Where Debian's espeak-ng-data lives (package `espeak-ng-data`). */
export const SYSTEM_ESPEAK_DATA = ['/usr/lib/x86_64-linux-gnu/espeak-ng-data', '/usr/lib/aarch64-linux-gnu/espeak-ng-data', '/usr/share/espeak-ng-data'];

/** The five languages of §1. */
const API_LANGUAGES: readonly string[] = PROTOCOL_LANGUAGES;

/** A model folder, resolved: what sherpa-onnx is given and what the server says about it. */
export interface SherpaModel {
  kind: 'tts' | 'stt';
  dir: string;
  type: SherpaTtsType | SherpaSttType;
  /** The config object sherpa-onnx-node's `OfflineTts` / `OfflineRecognizer` takes (plain JSON). */
  config: Record<string, unknown>;
  /** Languages the model serves (STT: what `language` accepts; TTS: the voices' language). */
  languages: string[];
  /**
   * STT: the recognizer's language is set per request (a multilingual Whisper: `setConfig` with
   * `whisper.language` before the segment is decoded, see sherpa-pool.ts). Otherwise fixed at load.
   */
  perRequestLanguage?: boolean;
  /**
   * STT: a streaming (online) model, run by sherpa-onnx's `OnlineRecognizer` (`config` is its
   * config): each request's stream lives on one worker (sherpa-online.ts). Otherwise offline.
   */
  streaming?: boolean;
  /**
   * TTS: the speakers the model names (a Kokoro folder's `speaker_names`), by speaker id; absent
   * when it names none (the speakers are then numbered).
   */
  speakers?: SherpaSpeaker[];
  /** A name for `ready` and logs: the folder's name. */
  name: string;
}

/** A named speaker of a TTS model: one library voice. */
export interface SherpaSpeaker {
  /** As the model names it, e.g. `af_bella`. */
  name: string;
  /** ISO 639-1 code, e.g. `en`. */
  language: string;
  /** Country code (`us`, `gb`, `br`), when the name says. */
  country?: string;
  gender?: 'Feminine' | 'Masculine';
}

/**
 * Kokoro's voice names start with a language letter and a gender letter (`af_bella`: American
 * English, female), as its voices are published (hexgrad/Kokoro-82M VOICES.md).
 */
const KOKORO_LANGUAGES: Record<string, [string, string | undefined]> = {
  a: ['en', 'us'], b: ['en', 'gb'], e: ['es', 'es'], f: ['fr', 'fr'], h: ['hi', 'in'], i: ['it', 'it'], j: ['ja', 'jp'], p: ['pt', 'br'], z: ['zh', 'cn'],
};

/** A Kokoro speaker from its name; a name without the prefix speaks the model's language. */
function kokoroSpeaker(name: string, fallback: string): SherpaSpeaker {
  const m = /^([a-z])([fm])_/.exec(name);
  const lang = m ? KOKORO_LANGUAGES[m[1]!] : undefined;
  if (!m || lang === undefined) return { name, language: fallback };
  return { name, language: lang[0], ...(lang[1] !== undefined ? { country: lang[1] } : {}), gender: m[2] === 'f' ? 'Feminine' : 'Masculine' };
}

/** `model` is a {@link SherpaModel} (as resolved here), else INVALID_ARGUMENT naming `what`. */
export function sherpaModelArg(model: SherpaModel, what: string): SherpaModel {
  objectArg(model, what);
  const ok =
    (model.kind === 'tts' || model.kind === 'stt') &&
    typeof model.dir === 'string' &&
    typeof model.name === 'string' &&
    typeof model.type === 'string' &&
    Array.isArray(model.languages) &&
    model.languages.every((l) => typeof l === 'string') &&
    model.config !== null &&
    typeof model.config === 'object' &&
    (model.streaming === undefined || typeof model.streaming === 'boolean');
  if (!ok) throw new VoicewireError('INVALID_ARGUMENT', `${what} must be a model resolved by resolveSherpaTtsModel or resolveSherpaSttModel, got ${describeValue(model)}`);
  return model;
}

/** The sherpa-onnx version voicewire pins (package.json's optionalDependencies; a test holds them equal). */
export const SHERPA_VERSION = '1.13.8';

/**
 * The resolved path of the sherpa-onnx-node package, checked to have its native binary
 * (`sherpa-onnx-<platform>-<arch>`, an optional dependency: `npm install --omit=optional`, or a
 * platform sherpa-onnx ships no binary for, leaves it out), looked up from `from` (a directory;
 * default: this module's, i.e. voicewire's own node_modules).
 * @throws VoicewireError `ENGINE_UNAVAILABLE` naming the missing package and the command that installs both.
 */
export function sherpaPackagePath(from?: string): string {
  if (from !== undefined) stringArg(from, 'sherpaPackagePath: from');
  const platform = `${process.platform === 'win32' ? 'win' : process.platform}-${process.arch}`;
  const binary = `sherpa-onnx-${platform}`;
  const req = createRequire(from === undefined ? import.meta.url : join(resolve(from), 'noop.js'));
  const missing = (name: string, what: string, err: unknown): never => {
    throw new VoicewireError(
      'ENGINE_UNAVAILABLE',
      `the sherpa-onnx engines need the npm package ${name} (${what}), which is not installed: install both with \`npm install ${SHERPA_PACKAGE}@${SHERPA_VERSION} ${binary}@${SHERPA_VERSION}\` (optional dependencies of voicewire: an install with --omit=optional leaves them out), on a platform sherpa-onnx ships binaries for (linux-x64, linux-arm64, darwin-x64, darwin-arm64, win-x64)`,
      { cause: err },
    );
  };
  let pkg: string;
  try {
    pkg = req.resolve(SHERPA_PACKAGE);
  } catch (err) {
    return missing(SHERPA_PACKAGE, 'sherpa-onnx\'s Node binding', err);
  }
  try {
    // The wrapper finds its native binary in this optional package, installed beside it (or nested).
    createRequire(pkg).resolve(`${binary}/package.json`);
  } catch (err) {
    missing(binary, `sherpa-onnx's native binary for ${platform}`, err);
  }
  return pkg;
}

function invalid(dir: string, cause: string): never {
  throw new VoicewireError('MODEL_INVALID', `model folder ${dir}: ${cause}`);
}

/** The model's metadata and graph names; a file that is not ONNX is refused naming the folder. */
function readOnnxInfo(dir: string, model: string): OnnxInfo {
  try {
    return readOnnx(model);
  } catch (err) {
    return invalid(dir, (err as Error).message.replace(model, basename(model)));
  }
}

function files(dir: string): string[] {
  let st;
  try {
    st = statSync(dir);
  } catch {
    invalid(dir, 'does not exist');
  }
  if (!st.isDirectory()) invalid(dir, 'is not a directory');
  return readdirSync(dir).sort();
}

/** The one model file of a single-model folder: `model.onnx`, else `model.int8.onnx`, else the only `*.onnx`. */
function singleOnnx(dir: string, names: string[]): string {
  for (const n of ['model.onnx', 'model.int8.onnx']) if (names.includes(n)) return join(dir, n);
  const onnx = names.filter((n) => n.endsWith('.onnx'));
  if (onnx.length === 1) return join(dir, onnx[0]!);
  return invalid(dir, onnx.length === 0 ? 'holds no .onnx model file' : `holds several .onnx files (${onnx.join(', ')}) and none is model.onnx: name the family with --tts-model-type / --stt-model-type or keep one`);
}

function need(dir: string, names: string[], name: string, why: string): string {
  if (!names.includes(name)) invalid(dir, `${name} is missing (${why})`);
  return join(dir, name);
}

function requireMetadata(dir: string, model: string, info: OnnxInfo, keys: readonly string[], family: string): void {
  const missing = keys.filter((k) => !(k in info.metadata));
  if (missing.length > 0) invalid(dir, `${basename(model)} lacks the metadata ${missing.map((k) => `"${k}"`).join(', ')} a ${family} model needs (sherpa-onnx would end the process on it)`);
}

/**
 * Checks a Piper/VITS `tokens.txt` as sherpa-onnx reads it (piper-phonemize-lexicon.cc: `symbol id`
 * per line, one code point each, a bare id is the space; `_`, `^`, `$` must be there).
 */
function checkPiperTokens(dir: string, path: string): void {
  const seen = new Set<string>();
  const lines = readFileSync(path, 'utf8').split('\n');
  lines.forEach((raw, i) => {
    const line = raw.replace(/\r$/, '');
    if (line === '') return;
    const m = /^(\S*)\s*(\S+)\s*$/u.exec(line.startsWith(' ') ? line.slice(1) : line);
    const sym = line.startsWith(' ') || m?.[1] === '' ? ' ' : m?.[1];
    if (!m || !/^\d+$/.test(m[2]!) || sym === undefined || [...sym].length !== 1) {
      if (!/^<BLNK>\s+\d+$/.test(line)) invalid(dir, `tokens.txt line ${i + 1} (${JSON.stringify(line)}) is not "symbol id" with a one-character symbol`);
      return;
    }
    if (seen.has(sym)) invalid(dir, `tokens.txt line ${i + 1} repeats the symbol ${JSON.stringify(sym)}`);
    seen.add(sym);
  });
  for (const s of ['_', '^', '$']) if (!seen.has(s)) invalid(dir, `tokens.txt has no "${s}" (Piper's pad, start and end symbols)`);
}

/** Checks a recognizer's `tokens.txt`: `token id` lines and a blank (`<blk>`, `<blank>` or `<eps>`). */
function checkCtcTokens(dir: string, path: string): void {
  const lines = readFileSync(path, 'utf8').split('\n').filter((l) => l.trim() !== '');
  if (lines.length === 0) invalid(dir, 'tokens.txt is empty');
  lines.forEach((l, i) => {
    if (!/^\S+\s+-?\d+\s*$/u.test(l) && !/^\s+\d+\s*$/.test(l)) invalid(dir, `tokens.txt line ${i + 1} (${JSON.stringify(l)}) is not "token id"`);
  });
  if (!lines.some((l) => /^(<blk>|<blank>|<eps>)\s/.test(l))) invalid(dir, 'tokens.txt has no blank token (<blk>, <blank> or <eps>) a CTC model needs');
}

const showShape = (s: OnnxShape): string => (s === null ? 'of undeclared shape' : `[${s.join(', ')}]`);

/**
 * Checks a Zipformer CTC graph as sherpa-onnx uses it (offline-zipformer-ctc-model.cc,
 * offline-recognizer-ctc-impl.h): inputs by position, fbank features `[N, T, 80]` then lengths;
 * the vocabulary is output 0's declared dim 2 (`[N, T', V]`), so it must be a number, and every
 * id below it must be in tokens.txt (an id past the table ends the process).
 */
function checkZipformerCtc(dir: string, model: string, info: OnnxInfo, tokens: string): void {
  const name = basename(model);
  if (info.inputs.length !== 2) invalid(dir, `${name} has ${info.inputs.length} inputs (${info.inputs.join(', ')}): a Zipformer CTC model takes features and their lengths`);
  const x = info.inputShapes[0] ?? null;
  if (x !== null && (x.length !== 3 || x[2] !== 80)) invalid(dir, `${name} input 0 is ${showShape(x)}: a Zipformer CTC model takes fbank features [N, T, 80]`);
  const out = info.outputShapes[0] ?? null;
  const vocab = out?.[2];
  if (out === null || out.length !== 3 || typeof vocab !== 'number' || vocab < 1) invalid(dir, `${name} output 0 is ${showShape(out)}: a Zipformer CTC model gives log-probs [N, T', V] with V a fixed number (sherpa-onnx reads the vocabulary from it)`);
  const count = readFileSync(tokens, 'utf8').split('\n').filter((l) => l.trim() !== '').length;
  if (count < vocab) invalid(dir, `${basename(tokens)} holds ${count} tokens, the model's vocabulary is ${vocab} (an id past the table would end the process)`);
}

/** The system's espeak-ng-data, or undefined. */
function systemEspeakData(): string | undefined {
  return SYSTEM_ESPEAK_DATA.find((d) => existsSync(join(d, 'phontab')));
}

const LANGUAGE_CODES: Record<string, string> = { english: 'en', french: 'fr', german: 'de', spanish: 'es', portuguese: 'pt', chinese: 'zh', japanese: 'ja', korean: 'ko', italian: 'it', russian: 'ru', dutch: 'nl' };

/** An ISO 639-1 code from a model's `language` metadata ("English", "en-us", "es_ES"), or undefined. */
function languageCodeOf(value: string | undefined): string | undefined {
  const v = (value ?? '').trim().toLowerCase();
  return LANGUAGE_CODES[v] ?? /^[a-z]{2,3}(?![a-z])/.exec(v)?.[0];
}

/** An ISO 639-1 code from a TTS model's `language` metadata; English when it says nothing readable. */
function languageCode(value: string | undefined): string {
  return languageCodeOf(value) ?? 'en';
}

/** Codes from a comma-separated metadata list ("en,zh,de", "English, French"), unknown entries dropped, in order, once each. */
function languageList(value: string): string[] {
  const out: string[] = [];
  for (const part of value.split(',')) {
    const c = languageCodeOf(part);
    if (c !== undefined && !out.includes(c)) out.push(c);
  }
  return out;
}

/**
 * What `language` accepts for a model whose own languages are `own` (undefined: it declares
 * none): its §1 languages, narrowed by `--stt-language` when given; a model that declares nothing
 * serves `--stt-language`, else English (voicewire does not guess a model's language).
 */
function servedLanguages(dir: string, own: string[] | undefined, flag: readonly string[] | undefined): string[] {
  if (own === undefined) return flag !== undefined ? [...flag] : ['en'];
  const served = own.filter((l) => API_LANGUAGES.includes(l));
  if (flag !== undefined) {
    const outside = flag.filter((l) => !served.includes(l));
    if (outside.length > 0) invalid(dir, `--stt-language ${flag.join(',')}: the model serves ${served.length > 0 ? served.join(', ') : 'none of them'} (its languages: ${own.join(', ')})`);
    return [...flag];
  }
  if (served.length === 0) invalid(dir, `the model serves none of ${API_LANGUAGES.join(', ')} (its languages: ${own.join(', ') || 'none declared'}), the languages of speech-to-text here`);
  // API order, so the list reads the same for every model.
  return API_LANGUAGES.filter((l) => served.includes(l));
}

/**
 * The TTS model in `dir`: its family and config.
 * @throws VoicewireError `MODEL_INVALID` naming the folder and what is wrong.
 */
export function resolveSherpaTtsModel(dir: string, type?: SherpaTtsType): SherpaModel {
  dir = resolve(stringArg(dir, 'resolveSherpaTtsModel: dir'));
  if (type !== undefined) stringArg(type, 'resolveSherpaTtsModel: type');
  const names = files(dir);
  if (type !== undefined && !SHERPA_TTS_TYPES.includes(type)) invalid(dir, `unknown TTS model type "${type}" (one of ${SHERPA_TTS_TYPES.join(', ')})`);
  const model = singleOnnx(dir, names);
  const tokens = need(dir, names, 'tokens.txt', 'the model\'s symbols');
  const info = readOnnxInfo(dir, model);
  const family: SherpaTtsType = type ?? (info.metadata.model_type === 'kokoro' || names.includes('voices.bin') ? 'kokoro' : (info.metadata.comment ?? '').includes('piper') ? 'piper' : 'vits');
  const dataDir = names.includes('espeak-ng-data') ? join(dir, 'espeak-ng-data') : systemEspeakData();
  const language = languageCode(info.metadata.language ?? info.metadata.voice);
  const base: Omit<SherpaModel, 'config'> = { kind: 'tts' as const, dir, type: family, languages: [language], name: basename(dir) };
  if (family === 'kokoro') {
    // What offline-tts-kokoro-model.cc reads; a missing key, a style_dim not [L, 1, D] or a
    // voices.bin not L·D·n_speakers floats ends the process.
    requireMetadata(dir, model, info, ['sample_rate', 'n_speakers', 'has_espeak', 'style_dim'], 'Kokoro');
    const voices = need(dir, names, 'voices.bin', 'Kokoro\'s speaker embeddings');
    const style = info.metadata.style_dim!.split(',').map((v) => Number(v.trim()));
    if (style.length !== 3 || style[1] !== 1 || !style.every((v) => Number.isInteger(v) && v > 0)) invalid(dir, `${basename(model)} metadata style_dim "${info.metadata.style_dim}" is not "L,1,D"`);
    const numSpeakers = Number(info.metadata.n_speakers);
    if (!Number.isInteger(numSpeakers) || numSpeakers < 1) invalid(dir, `${basename(model)} metadata n_speakers "${info.metadata.n_speakers}" is not a whole number ≥ 1`);
    const expected = style[0]! * style[2]! * numSpeakers * 4;
    const size = statSync(voices).size;
    if (size !== expected) invalid(dir, `voices.bin holds ${size} bytes; style_dim ${style.join(',')} and n_speakers ${numSpeakers} need ${expected} (float32)`);
    // Named speakers (speaker_names, comma-separated, by id) become voices with those names.
    const named = (info.metadata.speaker_names ?? '').split(',').map((n) => n.trim()).filter((n) => n !== '');
    if (named.length === numSpeakers) base.speakers = named.map((n) => kokoroSpeaker(n, language));
    if (dataDir === undefined) invalid(dir, 'has no espeak-ng-data and the system has none (Debian package espeak-ng-data)');
    const lexicon = names.filter((n) => /^lexicon.*\.txt$/.test(n)).map((n) => join(dir, n)).join(',');
    return { ...base, config: { model: { kokoro: { model, voices, tokens, dataDir, lexicon }, numThreads: 1 }, maxNumSentences: 1 } };
  }
  requireMetadata(dir, model, info, ['sample_rate', 'n_speakers', 'language', 'comment'], 'VITS/Piper');
  if (family === 'piper') {
    checkPiperTokens(dir, tokens);
    if (dataDir === undefined) invalid(dir, 'has no espeak-ng-data and the system has none (Debian package espeak-ng-data)');
    return { ...base, config: { model: { vits: { model, tokens, dataDir }, numThreads: 1 }, maxNumSentences: 1 } };
  }
  const lexicon = names.includes('lexicon.txt') ? join(dir, 'lexicon.txt') : '';
  if (lexicon === '' && dataDir === undefined) invalid(dir, 'a VITS model needs lexicon.txt or espeak-ng-data');
  return { ...base, config: { model: { vits: { model, tokens, lexicon, dataDir: lexicon === '' ? dataDir : '' }, numThreads: 1 }, maxNumSentences: 1 } };
}

/**
 * The STT model in `dir`: its family, config and the languages it serves (what `language`
 * accepts): a multilingual Whisper the §1 languages of its encoder's `all_language_codes` (set per
 * request), a `.en` Whisper (`is_multilingual` 0) and Moonshine English, SenseVoice its fixed set's
 * English (zh, en, ja, ko, yue: `lang_*` keys); NeMo, Zipformer, Paraformer and transducers the
 * model's `language` metadata (a code, a name or a comma-separated list) when it has one, else
 * `languages` (`--stt-language`), else English. `languages` may only narrow a declared list.
 * @throws VoicewireError `MODEL_INVALID` naming the folder and what is wrong.
 */
export function resolveSherpaSttModel(dir: string, type?: SherpaSttType, languages?: readonly string[]): SherpaModel {
  dir = resolve(stringArg(dir, 'resolveSherpaSttModel: dir'));
  if (type !== undefined) stringArg(type, 'resolveSherpaSttModel: type');
  if (languages !== undefined) {
    const ok = Array.isArray(languages) && languages.length > 0 && languages.every((l) => typeof l === 'string' && API_LANGUAGES.includes(l));
    if (!ok) throw new VoicewireError('INVALID_ARGUMENT', `resolveSherpaSttModel: languages must be a non-empty list of ${API_LANGUAGES.join(', ')}, got ${describeValue(languages)}`);
  }
  const names = files(dir);
  if (type !== undefined && !SHERPA_STT_TYPES.includes(type)) invalid(dir, `unknown STT model type "${type}" (one of ${SHERPA_STT_TYPES.join(', ')})`);
  const find = (re: RegExp): string | undefined => {
    const hits = names.filter((n) => re.test(n));
    // Prefer the full-precision file when both are released.
    const n = hits.find((h) => !h.includes('int8')) ?? hits[0];
    return n === undefined ? undefined : join(dir, n);
  };
  const tokensFile = find(/(^|-)tokens\.txt$/);
  const tokens = tokensFile ?? invalid(dir, 'tokens.txt is missing (the model\'s vocabulary)');
  const base = { kind: 'stt' as const, dir, name: basename(dir) };
  const featConfig = { sampleRate: 16000, featureDim: 80 };
  const modelConfig = (m: Record<string, unknown>): Record<string, unknown> => ({ featConfig, modelConfig: { ...m, tokens, numThreads: 1 } });
  const enc = find(/encoder.*\.onnx$/);
  const dec = find(/decoder.*\.onnx$/);
  const joiner = find(/joiner.*\.onnx$/);
  let family: SherpaSttType | undefined = type;
  if (family === undefined) {
    if (enc && dec && joiner) family = 'transducer';
    else if (enc && dec) family = 'whisper';
    else if (names.includes('preprocess.onnx') && names.includes('encode.onnx')) family = 'moonshine';
  }
  if (family === 'transducer') {
    const encoder = enc ?? invalid(dir, 'no encoder*.onnx');
    const declared = readOnnxInfo(dir, encoder).metadata.language;
    return { ...base, type: family, languages: servedLanguages(dir, declared === undefined ? undefined : languageList(declared), languages), config: modelConfig({ transducer: { encoder, decoder: dec ?? invalid(dir, 'no decoder*.onnx'), joiner: joiner ?? invalid(dir, 'no joiner*.onnx') } }) };
  }
  if (family === 'whisper') {
    const encoder = enc ?? invalid(dir, 'no *-encoder.onnx');
    const info = readOnnxInfo(dir, encoder);
    requireMetadata(dir, encoder, info, WHISPER_KEYS, 'Whisper');
    const multilingual = info.metadata.is_multilingual !== '0';
    let own = ['en'];
    if (multilingual) {
      requireMetadata(dir, encoder, info, ['all_language_codes', 'all_language_tokens'], 'multilingual Whisper');
      const codes = info.metadata.all_language_codes!.split(',').map((c) => c.trim());
      const ids = info.metadata.all_language_tokens!.split(',');
      if (codes.length !== ids.length) invalid(dir, `${basename(encoder)} lists ${codes.length} language codes and ${ids.length} language tokens (sherpa-onnx would end the process)`);
      own = codes;
    }
    const served = servedLanguages(dir, own, languages);
    // Multilingual: the language is set per request (sherpa-onnx ends the process on a code not in the list, so only listed ones get there).
    return { ...base, type: family, languages: served, perRequestLanguage: multilingual, config: modelConfig({ whisper: { encoder, decoder: dec ?? invalid(dir, 'no *-decoder.onnx'), language: multilingual ? served[0] : '', task: 'transcribe' } }) };
  }
  if (family === 'moonshine') {
    const m = (n: string): string => need(dir, names, n, 'a Moonshine model');
    // Moonshine's released models are English.
    return { ...base, type: family, languages: servedLanguages(dir, ['en'], languages), config: modelConfig({ moonshine: { preprocessor: m('preprocess.onnx'), encoder: m('encode.onnx'), uncachedDecoder: find(/^uncached_decode.*\.onnx$/) ?? invalid(dir, 'no uncached_decode*.onnx'), cachedDecoder: find(/^cached_decode.*\.onnx$/) ?? invalid(dir, 'no cached_decode*.onnx') } }) };
  }
  const model = singleOnnx(dir, names);
  const info = readOnnxInfo(dir, model);
  const meta = info.metadata;
  const declared = (): string[] => servedLanguages(dir, meta.language === undefined ? undefined : languageList(meta.language), languages);
  if (family === undefined) {
    // NeMo's exports take `audio_signal`; any of its metadata keys marks one too (a missing one is then named).
    // A streaming NeMo export declares its chunking and caches; an offline one does not.
    if ('window_size' in meta || 'cache_last_channel_dim1' in meta) family = 'nemo-ctc-online';
    else if (info.inputs.includes('audio_signal') || 'subsampling_factor' in meta || 'normalize_type' in meta) family = 'nemo-ctc';
    else if ('lfr_window_size' in meta) family = /sense/i.test(`${meta.model_type ?? ''} ${meta.comment ?? ''}`) ? 'sense-voice' : 'paraformer';
    else family = 'zipformer2-ctc';
  }
  if (family === 'nemo-ctc') {
    requireMetadata(dir, model, info, ['vocab_size', 'subsampling_factor', 'normalize_type'], 'NeMo CTC');
    for (const n of ['audio_signal', 'length']) if (!info.inputs.includes(n)) invalid(dir, `${basename(model)} has no input "${n}" (a NeMo CTC model takes audio_signal and length; it has ${info.inputs.join(', ')})`);
    checkCtcTokens(dir, tokens);
    return { ...base, type: family, languages: declared(), config: modelConfig({ nemoCtc: { model } }) };
  }
  if (family === 'nemo-ctc-online') {
    requireMetadata(dir, model, info, ONLINE_NEMO_KEYS, 'streaming NeMo CTC');
    // Inputs and outputs are taken by position (online-nemo-ctc-model.cc): features, length, the three caches; log-probs, lengths, the three next caches.
    if (info.inputs.length !== 5) invalid(dir, `${basename(model)} has ${info.inputs.length} inputs (${info.inputs.join(', ')}): a streaming NeMo CTC model takes audio_signal, length, cache_last_channel, cache_last_time, cache_last_channel_len`);
    if (info.outputs.length !== 5) invalid(dir, `${basename(model)} has ${info.outputs.length} outputs (${info.outputs.join(', ')}): a streaming NeMo CTC model gives log-probs, their lengths and the three next caches`);
    checkCtcTokens(dir, tokens);
    const vocab = info.outputShapes[0]?.[2];
    const count = readFileSync(tokens, 'utf8').split('\n').filter((l) => l.trim() !== '').length;
    if (typeof vocab === 'number' && count < vocab) invalid(dir, `${basename(tokens)} holds ${count} tokens, the model's vocabulary is ${vocab} (an id past the table would end the process)`);
    return {
      ...base,
      type: family,
      languages: declared(),
      streaming: true,
      // Endpoints (sherpa-onnx's defaults): 2.4 s of silence before any word, 0.8 s after one, or 20 s of speech.
      config: { ...modelConfig({ nemoCtc: { model } }), decodingMethod: 'greedy_search', enableEndpoint: 1, rule1MinTrailingSilence: 2.4, rule2MinTrailingSilence: 0.8, rule3MinUtteranceLength: 20 },
    };
  }
  if (family === 'zipformer2-ctc') {
    checkCtcTokens(dir, tokens);
    checkZipformerCtc(dir, model, info, tokens);
    return { ...base, type: family, languages: declared(), config: modelConfig({ zipformerCtc: { model } }) };
  }
  if (family === 'sense-voice') {
    requireMetadata(dir, model, info, SENSE_VOICE_KEYS, 'SenseVoice');
    // Its fixed set, as sherpa-onnx reads it (offline-sense-voice-model.cc: lang_zh, lang_en, …).
    const own = ['zh', 'en', 'ja', 'ko', 'yue'].filter((l) => `lang_${l}` in meta);
    const served = servedLanguages(dir, own, languages);
    // Set once at load: SenseVoice has no setConfig of its own (the base one replaces the feature settings it made at load); of the five it serves English only.
    return { ...base, type: family, languages: served, config: modelConfig({ senseVoice: { model, language: served.length === 1 ? served[0] : '', useInverseTextNormalization: 1 } }) };
  }
  return { ...base, type: family, languages: declared(), config: modelConfig({ paraformer: { model } }) };
}

/** The encoder metadata sherpa-onnx's Whisper reads (offline-whisper-model.cc): a missing key ends the process. */
const WHISPER_KEYS = ['n_mels', 'n_text_layer', 'n_text_ctx', 'n_text_state', 'n_vocab', 'sot', 'eot', 'blank_id', 'translate', 'transcribe', 'is_multilingual', 'no_timestamps', 'no_speech', 'sot_sequence'];
/** The metadata sherpa-onnx's streaming NeMo CTC reads (online-nemo-ctc-model.cc): a missing key ends the process. */
const ONLINE_NEMO_KEYS = ['window_size', 'chunk_shift', 'subsampling_factor', 'vocab_size', 'cache_last_channel_dim1', 'cache_last_channel_dim2', 'cache_last_channel_dim3', 'cache_last_time_dim1', 'cache_last_time_dim2', 'cache_last_time_dim3'];
/** The metadata sherpa-onnx's SenseVoice reads (offline-sense-voice-model.cc). */
const SENSE_VOICE_KEYS = ['vocab_size', 'lfr_window_size', 'lfr_window_shift', 'normalize_samples', 'with_itn', 'without_itn', 'lang_auto', 'lang_zh', 'lang_en', 'lang_ja', 'lang_ko', 'lang_yue', 'neg_mean', 'inv_stddev'];

/** What loading a model in a child process found out. */
export interface SherpaModelFacts {
  /** TTS: speakers and output rate. */
  numSpeakers?: number;
  sampleRate?: number;
}

/** How long the child may take to load and run a model once, ms (a large Whisper loads in ~10 s on one core). */
export const MODEL_CHECK_TIMEOUT_MS = 120_000;

/**
 * The check the child runs: load with the async API (a streaming model: the only, synchronous, one), run once (TTS one word, STT one second of
 * quiet noise, a VAD two seconds of noise), print the facts as one JSON line.
 */
const CHECK_SCRIPT = `
const [pkg, kind, config] = process.argv.slice(1);
const sherpa = require(pkg);
(async () => {
  const c = JSON.parse(config);
  if (kind === 'tts') {
    const tts = await sherpa.OfflineTts.createAsync(c);
    const a = await tts.generateAsync({ text: 'Hello.', sid: 0, speed: 1 });
    if (!(a.samples.length > 0)) throw new Error('the model made no audio for "Hello."');
    console.log(JSON.stringify({ numSpeakers: tts.numSpeakers, sampleRate: tts.sampleRate }));
  } else if (kind === 'stt') {
    const rec = await sherpa.OfflineRecognizer.createAsync(c);
    const s = rec.createStream();
    const samples = new Float32Array(16000);
    for (let i = 0; i < samples.length; i++) samples[i] = 0.01 * Math.sin(i * 0.3);
    s.acceptWaveform({ samples, sampleRate: 16000 });
    await rec.decodeAsync(s);
    console.log(JSON.stringify({}));
  } else if (kind === 'stt-online') {
    // A streaming model: sherpa-onnx 1.13.8 has no async online API (the server runs it on a worker thread).
    const rec = new sherpa.OnlineRecognizer(c);
    const s = rec.createStream();
    const samples = new Float32Array(16000);
    for (let i = 0; i < samples.length; i++) samples[i] = 0.3 * Math.sin(i * 0.3) * Math.sin(i * 0.0007);
    s.acceptWaveform({ samples, sampleRate: 16000 });
    s.inputFinished();
    while (rec.isReady(s)) rec.decode(s);
    rec.getResult(s);
    console.log(JSON.stringify({}));
  } else {
    // A VAD (sherpa-vad.ts): synchronous, which is fine here; two seconds of noise, then a flush.
    const vad = new sherpa.Vad(c, 30);
    const samples = new Float32Array(32000);
    for (let i = 0; i < samples.length; i++) samples[i] = 0.1 * Math.sin(i * 0.3) * Math.sin(i * 0.0007);
    for (let o = 0; o < samples.length; o += 1280) vad.acceptWaveform(samples.subarray(o, o + 1280));
    vad.flush();
    while (!vad.isEmpty()) vad.pop();
    console.log(JSON.stringify({}));
  }
})().catch((e) => { console.error(String(e && e.message || e)); process.exit(3); });
`;

/** sherpa-onnx's log lines start with its source path: keep what it says. */
function lastWords(stderr: string): string {
  const lines = stderr
    .split('\n')
    .map((l) => l.replace(/^\S*sherpa-onnx\/\S+:\d+\s*/, '').trim())
    .filter((l) => l !== '' && !/^Skip unknown phonemes/.test(l));
  return lines.slice(-2).join('; ').slice(0, 500);
}

/**
 * Loads `model` in a child process and runs it once; resolves its facts, or rejects with
 * `MODEL_INVALID` naming the folder and the cause (sherpa-onnx's last message and how the child
 * ended). The server's process never loads a model this check has not passed.
 */
export function validateSherpaModel(model: SherpaModel, timeoutMs: number = MODEL_CHECK_TIMEOUT_MS): Promise<SherpaModelFacts> {
  sherpaModelArg(model, 'validateSherpaModel: model');
  return checkInChild(model.streaming === true ? 'stt-online' : model.kind, model.config, `model folder ${model.dir}`, ` (${model.type})`, timeoutMs, 'validateSherpaModel');
}

/**
 * Loads `config` (a `kind` of sherpa-onnx object) in a child process and runs it once; rejects
 * with `MODEL_INVALID` that starts with `what` (the folder or file, as the user named it).
 */
export function checkInChild(kind: 'tts' | 'stt' | 'stt-online' | 'vad', config: Record<string, unknown>, what: string, detail: string, timeoutMs: number, caller: string): Promise<SherpaModelFacts> {
  if (typeof timeoutMs !== 'number' || !(timeoutMs > 0 && timeoutMs <= 3_600_000)) throw new VoicewireError('INVALID_ARGUMENT', `${caller}: timeoutMs must be a number in (0, 3600000], got ${describeValue(timeoutMs)}`);
  const pkg = sherpaPackagePath();
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, ['-e', CHECK_SCRIPT, pkg, kind, JSON.stringify(config)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => {
      if (out.length < 1 << 16) out += String(d);
    });
    child.stderr.on('data', (d: Buffer) => {
      err = (err + String(d)).slice(-(1 << 16));
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new VoicewireError('MODEL_INVALID', `${what}: the check could not start: ${e.message}`, { cause: e }));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const line = out.trim().split('\n').pop() ?? '';
      if (code === 0) {
        try {
          resolvePromise(JSON.parse(line) as SherpaModelFacts);
          return;
        } catch {
          /* falls through to the refusal */
        }
      }
      const how = signal === 'SIGKILL' ? `it did not load within ${timeoutMs / 1000} s` : signal ? `sherpa-onnx crashed (${signal})` : `sherpa-onnx exited with code ${code}`;
      const said = lastWords(err);
      reject(new VoicewireError('MODEL_INVALID', `${what}${detail} cannot be loaded: ${said === '' ? how : `${said} (${how})`}`));
    });
  });
}
