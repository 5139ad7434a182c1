/**
 * The engines a server can run, by name (`--tts NAME`, `--stt NAME`). A TTS factory is called per
 * request or per connection with an {@link EngineContext} the server binds to the caller's
 * organization, so engines never see the store or the organization: they ask the context for what
 * the setup names (a voice, a pronunciation dictionary); it must stay cheap (a closure over shared
 * state: espeak's one WebAssembly instance). An STT factory is called once per server and the
 * engine it returns serves every request (issue 20: a pocketsphinx engine made per request leaked
 * its ~95 MB decoder pool each time); the pocketsphinx entries return one engine per process.
 *
 * Engines get an {@link EngineContext} (context.ts).
 *
 * `tone` is built in (deterministic, model-free: see tone.ts); espeak-ng (TTS, five languages) and
 * `pocketsphinx` (STT, English) are the real engines (docs/engines.md). espeak-ng comes two ways:
 * `espeak-wasm`, the WebAssembly build (npm `@echogarden/espeak-ng-emscripten`), and
 * `espeak-system`, the system library (Debian `libespeak-ng1`, through koffi); `espeak` names the
 * cheaper of the two installed here, the system library first ({@link chooseTtsEngine}).
 */
import type { SttEngine, TtsEngine } from '../sessions/engine.js';
import { createRequire } from 'node:module';
import { stringArg } from '../util/args.js';
import type { EngineContext, EngineVoice } from './context.js';
import { createToneSttEngine, createToneTtsEngine } from './tone.js';
import { createEspeakTtsEngine } from './espeak-tts.js';
import { ESPEAK_PACKAGE, loadEspeak } from './espeak-module.js';
import { ESPEAK_SYSTEM_INSTALL, loadSystemEspeak, systemEspeakAvailable, systemEspeakLoaded } from './espeak-system.js';
import { VoicewireError } from '../util/errors.js';
import { catalogVoices as espeakCatalog } from './espeak-voices.js';
import { createPocketsphinxSttEngine } from './pocketsphinx-stt.js';
import { pocketsphinxModelFromDir } from './pocketsphinx-ffi.js';
import { resolveSherpaSttModel, resolveSherpaTtsModel, sherpaPackagePath, validateSherpaModel, type SherpaModel, type SherpaSttType, type SherpaTtsType } from './sherpa-model.js';
import { DEFAULT_SHERPA_QUEUE, defaultSherpaWorkers, SherpaPool } from './sherpa-pool.js';
import { createSherpaTtsEngine, sherpaCatalogVoices } from './sherpa-tts.js';
import { createSherpaSttEngine } from './sherpa-stt.js';
import { createSherpaOnlineSttEngine } from './sherpa-stt-online.js';
import { DEFAULT_SHERPA_STREAMS, SherpaOnlinePool } from './sherpa-online.js';
import { resolveSherpaVad, SherpaVadWorker, validateSherpaVad } from './sherpa-vad.js';

/** A catalog voice an engine offers (seeded into the store at start as a voice with orgId null). */
export type CatalogVoice = Omit<EngineVoice, 'orgId' | 'createdAt'>;

/** The server limits an engine with worker threads reads (src/server/config.ts `ServerLimits`). */
export interface EngineLimits {
  sherpaWorkers: number;
  sherpaQueue: number;
  /** Streams per worker of a streaming model (sherpa-online.ts). */
  sherpaStreams: number;
}

/** One TTS engine: its factory and its catalog of voices. */
export interface TtsEngineEntry {
  /** Takes the server's limits before the first request (worker threads, queue). */
  configure?(limits: EngineLimits): void;
  /** Stops what the engine runs (worker threads). */
  close?(): Promise<void>;
  create(context: EngineContext): TtsEngine;
  /** Loads the model before the first request, so its time to first audio is the engine's own. */
  warm?(): Promise<unknown>;
  /** The voices this engine speaks with; seeded as catalog voices. */
  catalogVoices(): CatalogVoice[];
}

/** One STT engine. */
export interface SttEngineEntry {
  /** Takes the server's limits before `create` (worker threads, queue). */
  configure?(limits: EngineLimits): void;
  /** Stops what the engine runs (worker threads). */
  close?(): Promise<void>;
  /** The engine; called once per server, which shares it between all requests (no organization is bound). */
  create(context?: EngineContext): SttEngine;
  /**
   * True when each stream holds a costly model instance (a pocketsphinx decoder, ~95 MB): the
   * server then bounds its streams per socket and per API key (`limits.sttDecodersPerSocket`,
   * `limits.sttDecodersPerKey`). Default false.
   */
  heavy?: boolean;
}

/**
 * An entry whose engine is made on first use and then shared by every caller in the process (its
 * decoders, pool and budget are the process's).
 */
function sharedSttEntry(make: () => SttEngine): SttEngineEntry {
  let engine: SttEngine | undefined;
  return { create: () => (engine ??= make()), heavy: true };
}

/** Five tone voices, one per language (§1), so the catalog is never empty. */
function toneCatalog(): CatalogVoice[] {
  const langs: Array<[string, string, string]> = [
    ['en', 'us', 'Tone English'],
    ['fr', 'fr', 'Tone French'],
    ['de', 'de', 'Tone German'],
    ['es', 'es', 'Tone Spanish'],
    ['pt', 'br', 'Tone Portuguese'],
  ];
  return langs.map(([language, country, name]) => ({
    uid: `tone-${language}`,
    name,
    description: `Deterministic test voice (${language}-${country}): one tone per character`,
    language,
    filename: '',
    startS: 0,
    tags: [language, country, 'Neutral', 'Adult'],
    isProClone: false,
    params: { engine: 'tone' },
  }));
}

/** TTS engines by name. */
export const TTS_ENGINES: Record<string, TtsEngineEntry> = {
  'espeak-wasm': { create: (context) => createEspeakTtsEngine(context), catalogVoices: espeakCatalog, warm: loadEspeak },
  'espeak-system': { create: (context) => createEspeakTtsEngine(context, { library: 'system' }), catalogVoices: espeakCatalog, warm: loadSystemEspeak },
  tone: { create: createToneTtsEngine, catalogVoices: toneCatalog },
};

/** STT engines by name. */
export const STT_ENGINES: Record<string, SttEngineEntry> = {
  pocketsphinx: sharedSttEntry(() => createPocketsphinxSttEngine()),
  tone: { create: createToneSttEngine },
};

/**
 * The engine registered under `name`, or undefined. Own entries only: the registries are plain
 * objects, and `constructor` or `toString` would otherwise name Object's members as engines.
 */
export function ttsEngineEntry(name: string): TtsEngineEntry | undefined {
  // `espeak`: the espeak-ng installed here (chooseTtsEngine names it at start).
  if (name === 'espeak') name = defaultEngineName('tts');
  return Object.prototype.hasOwnProperty.call(TTS_ENGINES, name) ? TTS_ENGINES[name] : undefined;
}

/** The STT engine registered under `name`, or undefined (own entries only, as {@link ttsEngineEntry}). */
export function sttEngineEntry(name: string): SttEngineEntry | undefined {
  return Object.prototype.hasOwnProperty.call(STT_ENGINES, name) ? STT_ENGINES[name] : undefined;
}

/** Adds an STT engine under `name` (`serve --stt-model`): it can then be chosen like the others. */
export function registerSttEngine(name: string, entry: SttEngineEntry): void {
  // Defined, not assigned: `__proto__` would set the registry's prototype instead of an entry.
  Object.defineProperty(STT_ENGINES, name, { value: entry, enumerable: true, writable: true, configurable: true });
}

/**
 * The STT engine of `--stt-model PATH`: a directory laid out like Debian's pocketsphinx model
 * (en-us/, en-us.lm.bin, cmudict-en-us.dict) runs pocketsphinx on it; a module file is imported and
 * its default export is the `SttEngine`.
 */
export async function sttEngineFromPath(path: string, isDirectory: boolean): Promise<SttEngineEntry> {
  if (isDirectory) {
    const model = pocketsphinxModelFromDir(path);
    return sharedSttEntry(() => createPocketsphinxSttEngine({ model }));
  }
  const mod = (await import(path.startsWith('/') ? `file://${path}` : path)) as { default?: SttEngine };
  const engine = mod.default;
  if (engine === undefined || typeof engine.open !== 'function') throw new Error(`${path}: the default export is not an SttEngine (an object with open(config, emit))`);
  // Any other model is assumed to hold a costly instance per stream.
  return { create: () => engine, heavy: true };
}

/** Adds a TTS engine under `name` (`serve --tts sherpa-onnx --tts-model DIR`). */
export function registerTtsEngine(name: string, entry: TtsEngineEntry): void {
  Object.defineProperty(TTS_ENGINES, name, { value: entry, enumerable: true, writable: true, configurable: true });
}

/** The worker pool of a checked model, made on first use with the limits the server gave. */
function lazyPool(model: SherpaModel): { configure(limits: EngineLimits): void; pool(): SherpaPool; close(): Promise<void> } {
  let limits: EngineLimits = { sherpaWorkers: defaultSherpaWorkers(), sherpaQueue: DEFAULT_SHERPA_QUEUE, sherpaStreams: DEFAULT_SHERPA_STREAMS };
  let pool: SherpaPool | undefined;
  return {
    configure(l) {
      limits = { sherpaWorkers: l.sherpaWorkers, sherpaQueue: l.sherpaQueue, sherpaStreams: l.sherpaStreams };
      pool?.setWorkers(limits.sherpaWorkers);
      pool?.setMaxQueued(limits.sherpaQueue);
    },
    pool: () => (pool ??= new SherpaPool(model, { workers: limits.sherpaWorkers, maxQueued: limits.sherpaQueue })),
    close: async () => {
      await pool?.close();
      pool = undefined;
    },
  };
}

/** The streaming pool of a checked streaming model, made on first use with the limits the server gave. */
function lazyOnlinePool(model: SherpaModel): { configure(limits: EngineLimits): void; pool(): SherpaOnlinePool; close(): Promise<void> } {
  let limits = { workers: defaultSherpaWorkers(), streams: DEFAULT_SHERPA_STREAMS };
  let pool: SherpaOnlinePool | undefined;
  return {
    configure(l) {
      limits = { workers: l.sherpaWorkers, streams: l.sherpaStreams };
      pool?.setWorkers(limits.workers);
      pool?.setStreamsPerWorker(limits.streams);
    },
    pool: () => (pool ??= new SherpaOnlinePool(model, { workers: limits.workers, streamsPerWorker: limits.streams })),
    close: async () => {
      await pool?.close();
      pool = undefined;
    },
  };
}

/**
 * The TTS engine of a sherpa-onnx model folder (`--tts sherpa-onnx --tts-model DIR`): the folder
 * is checked, then loaded and run once in a child process, before this process loads it.
 * @throws VoicewireError `ENGINE_UNAVAILABLE` without sherpa-onnx's packages (naming the missing
 * one and the install command); `MODEL_INVALID` naming the folder and the cause.
 */
export async function sherpaTtsEntry(dir: string, type?: SherpaTtsType): Promise<TtsEngineEntry> {
  // The packages first: without them no folder can be checked, and the message says how to install them.
  sherpaPackagePath();
  const model = resolveSherpaTtsModel(dir, type);
  const facts = await validateSherpaModel(model);
  const numSpeakers = facts.numSpeakers ?? 1;
  const lazy = lazyPool(model);
  return {
    configure: lazy.configure,
    close: lazy.close,
    warm: () => lazy.pool().ready,
    create: (context) => createSherpaTtsEngine(lazy.pool(), context, { numSpeakers }),
    catalogVoices: () => sherpaCatalogVoices(model, numSpeakers),
  };
}

/**
 * The STT engine of a sherpa-onnx model folder (`--stt sherpa-onnx --stt-model DIR`), checked as
 * {@link sherpaTtsEntry} is; `languages` (`--stt-language`) is what `language` accepts for a model
 * that declares none, and narrows one that does (see resolveSherpaSttModel). One engine per
 * process; its worker pool bounds the work (not heavy: a stream holds no model instance). With
 * `vadModel` (`--vad-model FILE`), a Silero VAD file checked the same way cuts the segments, on its
 * own worker thread (sherpa-vad.ts). A streaming model (`nemo-ctc-online`) runs on its own pool,
 * a stream pinned to one worker (sherpa-online.ts, sherpa-stt-online.ts); it finds its own
 * endpoints, so `vadModel` cuts nothing there. The steps' horizons are the server's business
 * (`createVoiceServer`'s `vadModel`, silero-steps.ts), for every engine.
 * @throws VoicewireError `MODEL_INVALID` naming the folder or the VAD file and the cause.
 */
export async function sherpaSttEntry(dir: string, type?: SherpaSttType, languages?: readonly string[], vadModel?: string): Promise<SttEngineEntry> {
  sherpaPackagePath();
  const model = resolveSherpaSttModel(dir, type, languages);
  if (model.streaming === true) {
    // A streaming model finds its own endpoints: a VAD file only drives its steps (createVoiceServer's vadModel).
    await validateSherpaModel(model);
    const online = lazyOnlinePool(model);
    let onlineEngine: SttEngine | undefined;
    return {
      configure: online.configure,
      close: async () => {
        await online.close();
        onlineEngine = undefined;
      },
      create: () => (onlineEngine ??= createSherpaOnlineSttEngine(online.pool())),
    };
  }
  const vad = vadModel === undefined ? undefined : resolveSherpaVad(vadModel);
  await Promise.all([validateSherpaModel(model), vad && validateSherpaVad(vad)]);
  const lazy = lazyPool(model);
  let vadWorker: SherpaVadWorker | undefined;
  let engine: SttEngine | undefined;
  return {
    configure: lazy.configure,
    close: async () => {
      await Promise.all([lazy.close(), vadWorker?.close()]);
      vadWorker = undefined;
      engine = undefined;
    },
    create: () => (engine ??= createSherpaSttEngine(lazy.pool(), vad === undefined ? {} : { vad: (vadWorker ??= new SherpaVadWorker(vad)) })),
  };
}

/** True when the espeak-ng package can be loaded (it is an optional peer dependency). */
function espeakInstalled(): boolean {
  try {
    createRequire(import.meta.url).resolve(ESPEAK_PACKAGE);
    return true;
  } catch {
    return false;
  }
}

/** The two installs that give real speech, as the refusal to start names them. */
export const SPEECH_INSTALLS = `\`npm install ${ESPEAK_PACKAGE}\` (WebAssembly) or \`${ESPEAK_SYSTEM_INSTALL}\` (the system library)`;

/**
 * The TTS engine a server runs (issue 23: real speech wherever the machine can speak, never tones
 * by surprise). None named, or `espeak`: `espeak-system` when the system library loads, else
 * `espeak-wasm` when its npm package is installed, else `ENGINE_UNAVAILABLE` naming both installs.
 * The system library first because it is the cheaper by far (issue 34, bench/tts-overhead.ts:
 * the npm "WebAssembly" package is espeak-ng compiled to JavaScript by Emscripten's wasm2js, ~2.8×
 * the library's CPU per second of audio, and the server spends ~2.6× the CPU per audio second with
 * it; at temp 0, where the library is loaded afresh per sentence, the library still costs less).
 * `tone` only when asked for. `espeak-wasm` or `espeak-system` named but not installed:
 * `ENGINE_UNAVAILABLE` naming what to install. Another name is returned as it is (the caller
 * reports an unknown one).
 */
export async function chooseTtsEngine(requested?: string): Promise<string> {
  if (requested !== undefined) stringArg(requested, 'chooseTtsEngine: requested');
  const wasm = espeakInstalled();
  if (requested === undefined || requested === 'espeak') {
    // The cheaper build first (see above): the system library, then the npm package.
    const why = await systemEspeakAvailable();
    if (why === undefined) return 'espeak-system';
    if (wasm) return 'espeak-wasm';
    throw new VoicewireError(
      'ENGINE_UNAVAILABLE',
      `no speech engine here: install espeak-ng with ${SPEECH_INSTALLS}, or ask for test tones with --tts tone (${why})`,
    );
  }
  if (requested === 'espeak-wasm' && !wasm) throw new VoicewireError('ENGINE_UNAVAILABLE', `--tts espeak-wasm: the WebAssembly espeak-ng is not installed: run \`npm install ${ESPEAK_PACKAGE}\``);
  if (requested === 'espeak-system') {
    const why = await systemEspeakAvailable();
    if (why !== undefined) throw new VoicewireError('ENGINE_UNAVAILABLE', `--tts espeak-system: ${why}`);
  }
  return requested;
}

/**
 * The STT engine `serve` picks when none is named: `pocketsphinx`, whose routes answer
 * ENGINE_UNAVAILABLE naming the Debian packages when it is not installed (a real recognizer or a
 * clear error, never tones read as words). TTS: {@link chooseTtsEngine}; this answers its
 * synchronous best guess (`espeak-system` once its library has loaded, else `espeak-wasm` when
 * installed, else `espeak-system`: the cheaper build first, as chooseTtsEngine).
 */
export function defaultEngineName(kind: 'tts' | 'stt'): string {
  if (kind === 'tts') return systemEspeakLoaded() || !espeakInstalled() ? 'espeak-system' : 'espeak-wasm';
  return 'pocketsphinx';
}

/** The catalog voices of a TTS engine (the seam real engines fill); tone voices when it has none. */
export function catalogVoices(ttsEngine: string): CatalogVoice[] {
  const voices = ttsEngineEntry(stringArg(ttsEngine, 'catalogVoices: ttsEngine'))?.catalogVoices() ?? [];
  return voices.length > 0 ? voices : toneCatalog();
}

export type { EngineContext, EngineDictionary, EngineVoice } from './context.js';
