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
 *   model with no such metadata → `zipformer2-ctc`.
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
import { readOnnxInfo as readOnnx, type OnnxInfo } from './onnx-info.js';

/** The npm package of sherpa-onnx's Node binding (its native binary is `sherpa-onnx-linux-x64` etc.). */
export const SHERPA_PACKAGE = 'sherpa-onnx-node';

/** TTS families `--tts-model-type` accepts. */
export const SHERPA_TTS_TYPES = ['piper', 'vits', 'kokoro'] as const;
/** STT families `--stt-model-type` accepts. */
export const SHERPA_STT_TYPES = ['nemo-ctc', 'zipformer2-ctc', 'whisper', 'sense-voice', 'paraformer', 'moonshine', 'transducer'] as const;
export type SherpaTtsType = (typeof SHERPA_TTS_TYPES)[number];
export type SherpaSttType = (typeof SHERPA_STT_TYPES)[number];

/** Where Debian's espeak-ng-data lives (package `espeak-ng-data`). */
export const SYSTEM_ESPEAK_DATA = ['/usr/lib/x86_64-linux-gnu/espeak-ng-data', '/usr/lib/aarch64-linux-gnu/espeak-ng-data', '/usr/share/espeak-ng-data'];

/** The five languages of §1. */
const API_LANGUAGES = ['en', 'fr', 'de', 'es', 'pt'];

/** A model folder, resolved: what sherpa-onnx is given and what the server says about it. */
export interface SherpaModel {
  kind: 'tts' | 'stt';
  dir: string;
  type: SherpaTtsType | SherpaSttType;
  /** The config object sherpa-onnx-node's `OfflineTts` / `OfflineRecognizer` takes (plain JSON). */
  config: Record<string, unknown>;
  /** Languages the model serves (STT: what `language` accepts; TTS: the voices' language). */
  languages: string[];
  /** A name for `ready` and logs: the folder's name. */
  name: string;
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
    typeof model.config === 'object';
  if (!ok) throw new VoicewireError('INVALID_ARGUMENT', `${what} must be a model resolved by resolveSherpaTtsModel or resolveSherpaSttModel, got ${describeValue(model)}`);
  return model;
}

/** The resolved path of the sherpa-onnx-node package, or a reason it cannot be used. */
export function sherpaPackagePath(): string {
  const binary = `sherpa-onnx-${process.platform === 'win32' ? 'win' : process.platform}-${process.arch}`;
  try {
    const req = createRequire(import.meta.url);
    const pkg = req.resolve(SHERPA_PACKAGE);
    // The wrapper finds its native binary in this optional package, installed beside it (or nested).
    createRequire(pkg).resolve(`${binary}/package.json`);
    return pkg;
  } catch (err) {
    throw new VoicewireError('ENGINE_UNAVAILABLE', `the sherpa-onnx engines need the npm packages ${SHERPA_PACKAGE} and ${binary} (its native binary for this platform), optional dependencies of voicewire: reinstall without --omit=optional, on a platform sherpa-onnx ships binaries for`, { cause: err });
  }
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

/** The system's espeak-ng-data, or undefined. */
function systemEspeakData(): string | undefined {
  return SYSTEM_ESPEAK_DATA.find((d) => existsSync(join(d, 'phontab')));
}

const LANGUAGE_CODES: Record<string, string> = { english: 'en', french: 'fr', german: 'de', spanish: 'es', portuguese: 'pt' };

/** An ISO 639-1 code from a model's `language` metadata ("English", "en-us", "es_ES"). */
function languageCode(value: string | undefined): string {
  const v = (value ?? '').trim().toLowerCase();
  return LANGUAGE_CODES[v] ?? (/^[a-z]{2}\b/.exec(v)?.[0] ?? 'en');
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
  const base = { kind: 'tts' as const, dir, type: family, languages: [language], name: basename(dir) };
  if (family === 'kokoro') {
    requireMetadata(dir, model, info, ['sample_rate'], 'Kokoro');
    const voices = need(dir, names, 'voices.bin', 'Kokoro\'s speaker embeddings');
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
 * The STT model in `dir`: its family, config and languages.
 * @throws VoicewireError `MODEL_INVALID` naming the folder and what is wrong.
 */
export function resolveSherpaSttModel(dir: string, type?: SherpaSttType): SherpaModel {
  dir = resolve(stringArg(dir, 'resolveSherpaSttModel: dir'));
  if (type !== undefined) stringArg(type, 'resolveSherpaSttModel: type');
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
  if (family === 'transducer') return { ...base, type: family, languages: ['en'], config: modelConfig({ transducer: { encoder: enc ?? invalid(dir, 'no encoder*.onnx'), decoder: dec ?? invalid(dir, 'no decoder*.onnx'), joiner: joiner ?? invalid(dir, 'no joiner*.onnx') } }) };
  if (family === 'whisper') {
    // A multilingual Whisper serves every language of §1; `tiny.en` and the like English only.
    const englishOnly = /\.en[-.]/.test(basename(enc ?? '')) || /\.en$/.test(basename(dir));
    return { ...base, type: family, languages: englishOnly ? ['en'] : API_LANGUAGES, config: modelConfig({ whisper: { encoder: enc ?? invalid(dir, 'no *-encoder.onnx'), decoder: dec ?? invalid(dir, 'no *-decoder.onnx'), language: '', task: 'transcribe' } }) };
  }
  if (family === 'moonshine') {
    const m = (n: string): string => need(dir, names, n, 'a Moonshine model');
    return { ...base, type: family, languages: ['en'], config: modelConfig({ moonshine: { preprocessor: m('preprocess.onnx'), encoder: m('encode.onnx'), uncachedDecoder: find(/^uncached_decode.*\.onnx$/) ?? invalid(dir, 'no uncached_decode*.onnx'), cachedDecoder: find(/^cached_decode.*\.onnx$/) ?? invalid(dir, 'no cached_decode*.onnx') } }) };
  }
  const model = singleOnnx(dir, names);
  const info = readOnnxInfo(dir, model);
  const meta = info.metadata;
  if (family === undefined) {
    // NeMo's exports take `audio_signal`; any of its metadata keys marks one too (a missing one is then named).
    if (info.inputs.includes('audio_signal') || 'subsampling_factor' in meta || 'normalize_type' in meta) family = 'nemo-ctc';
    else if ('lfr_window_size' in meta) family = /sense/i.test(`${meta.model_type ?? ''} ${meta.comment ?? ''}`) ? 'sense-voice' : 'paraformer';
    else family = 'zipformer2-ctc';
  }
  if (family === 'nemo-ctc') {
    requireMetadata(dir, model, info, ['vocab_size', 'subsampling_factor', 'normalize_type'], 'NeMo CTC');
    for (const n of ['audio_signal', 'length']) if (!info.inputs.includes(n)) invalid(dir, `${basename(model)} has no input "${n}" (a NeMo CTC model takes audio_signal and length; it has ${info.inputs.join(', ')})`);
    checkCtcTokens(dir, tokens);
    return { ...base, type: family, languages: ['en'], config: modelConfig({ nemoCtc: { model } }) };
  }
  if (family === 'zipformer2-ctc') {
    checkCtcTokens(dir, tokens);
    return { ...base, type: family, languages: ['en'], config: modelConfig({ zipformerCtc: { model } }) };
  }
  if (family === 'sense-voice') return { ...base, type: family, languages: ['en'], config: modelConfig({ senseVoice: { model, language: '', useInverseTextNormalization: 1 } }) };
  return { ...base, type: family, languages: ['en'], config: modelConfig({ paraformer: { model } }) };
}

/** What loading a model in a child process found out. */
export interface SherpaModelFacts {
  /** TTS: speakers and output rate. */
  numSpeakers?: number;
  sampleRate?: number;
}

/** How long the child may take to load and run a model once, ms (a large Whisper loads in ~10 s on one core). */
export const MODEL_CHECK_TIMEOUT_MS = 120_000;

/**
 * The check the child runs: load with the async API, run once (TTS one word, STT one second of
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
  return checkInChild(model.kind, model.config, `model folder ${model.dir}`, ` (${model.type})`, timeoutMs, 'validateSherpaModel');
}

/**
 * Loads `config` (a `kind` of sherpa-onnx object) in a child process and runs it once; rejects
 * with `MODEL_INVALID` that starts with `what` (the folder or file, as the user named it).
 */
export function checkInChild(kind: 'tts' | 'stt' | 'vad', config: Record<string, unknown>, what: string, detail: string, timeoutMs: number, caller: string): Promise<SherpaModelFacts> {
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
