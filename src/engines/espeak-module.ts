/**
 * Loads espeak-ng at run time: the WebAssembly build `@echogarden/espeak-ng-emscripten` (npm
 * alone, no system library; it reports word events with their audio position). espeak-ng is
 * GPL-3.0, so voicewire (MIT) only names it as an optional peer dependency and imports it
 * dynamically here; a server without it still starts and answers TTS with a clear error.
 *
 * One instance serves every stream: synthesis is a synchronous call into the module, so two
 * streams never interleave inside it, and each call sets its voice and parameters first.
 */
import { VoicewireError } from '../util/errors.js';

/** The package that holds the espeak-ng WebAssembly build. */
export const ESPEAK_PACKAGE = '@echogarden/espeak-ng-emscripten';

/** One event of a synthesis chunk (`audio_position` in ms from the start of the call). */
export interface EspeakEvent {
  type: string;
  /** 1-based character position in the text of the call. */
  text_position: number;
  word_length: number;
  audio_position: number;
}

/** The part of the module's worker class the engine uses. */
export interface EspeakWorker {
  set_voice(name: string): number;
  set_rate(wpm: number): void;
  set_pitch(pitch: number): void;
  set_range(range: number): void;
  get_samplerate(): number;
  /** Synchronous (the WebAssembly build) or a promise (the system library, off the event loop); the callback's true stops it. */
  synthesize(text: string, callback: (samples: Int16Array, events: EspeakEvent[]) => boolean): void | Promise<void>;
}

/** The module object of the emscripten build: its worker class, and its heap (for {@link loadDeterministicEspeak}). */
interface EspeakModule {
  eSpeakNGWorker: new () => EspeakWorker & { set_voice(name: string | { ptr: number }): number; synthesize(text: string | { ptr: number }, callback: (samples: Int16Array, events: EspeakEvent[]) => boolean): void };
  HEAPU8: Uint8Array;
  _malloc(bytes: number): number;
}

/** The voices loaded once at start, so the first sentence of a language does not pay its dictionary. */
const WARM_VOICES = ['en-us', 'fr', 'de', 'es', 'pt-br'];

async function instantiate(): Promise<{ module: EspeakModule; worker: InstanceType<EspeakModule['eSpeakNGWorker']> }> {
  let factory: () => Promise<EspeakModule>;
  try {
    const mod = (await import(/* @vite-ignore */ ESPEAK_PACKAGE)) as { default: typeof factory };
    factory = mod.default;
  } catch (err) {
    throw new VoicewireError('ENGINE_UNAVAILABLE', `espeak-ng is not installed: run \`npm install ${ESPEAK_PACKAGE}\` (GPL-3.0, an optional peer dependency of voicewire)`, { cause: err });
  }
  const module = await factory();
  const worker = new module.eSpeakNGWorker();
  // The first sentence of a language loads its dictionary (~200 ms): pay it here, not in the
  // first request's time to first audio.
  for (const voice of WARM_VOICES) {
    worker.set_voice(voice);
    worker.synthesize('a.', () => false);
  }
  return { module, worker };
}

let loading: Promise<EspeakWorker> | undefined;

/** The shared espeak-ng worker, loaded on first use. Rejects with `ENGINE_UNAVAILABLE` when the package is missing. */
export function loadEspeak(): Promise<EspeakWorker> {
  loading ??= instantiate().then(({ worker }) => worker);
  loading.catch(() => {
    loading = undefined;
  });
  return loading;
}

/** A worker whose syntheses can each start from the same saved state (temp 0, §2.8: deterministic). */
export interface EspeakDeterministicWorker extends EspeakWorker {
  /**
   * Puts the whole module back in the state saved once it was loaded. espeak keeps state from one
   * call to the next (its random generator, the flutter phase, the echo buffer): after `restore()`
   * the same calls give the same bytes, as two runs of the espeak-ng command do.
   */
  restore(): void;
}

let loadingDeterministic: Promise<EspeakDeterministicWorker> | undefined;

/**
 * A second espeak-ng instance, loaded on first use, for deterministic synthesis. Its heap
 * (~17 MB) is saved once after loading and copied back by `restore()` (a few ms per sentence);
 * the instance costs about 17 MB of heap, its copy, and the 24 MB of voice data. Strings are
 * written into the heap after each restore (never through the binding's string cache, whose
 * JavaScript-side state a restore would not rewind).
 */
export function loadDeterministicEspeak(): Promise<EspeakDeterministicWorker> {
  loadingDeterministic ??= instantiate().then(({ module, worker }) => {
    const saved = module.HEAPU8.slice();
    const encoder = new TextEncoder();
    const cString = (s: string): { ptr: number } => {
      const bytes = encoder.encode(`${s}\0`);
      const ptr = module._malloc(bytes.length);
      module.HEAPU8.set(bytes, ptr);
      return { ptr };
    };
    return {
      restore() {
        const heap = module.HEAPU8; // a new view when the memory grew
        heap.set(saved);
        // Memory grown since is handed out again by sbrk: as fresh memory, zeros.
        if (heap.length > saved.length) heap.fill(0, saved.length);
      },
      set_voice: (name) => worker.set_voice(cString(name)),
      set_rate: (wpm) => worker.set_rate(wpm),
      set_pitch: (pitch) => worker.set_pitch(pitch),
      set_range: (range) => worker.set_range(range),
      get_samplerate: () => worker.get_samplerate(),
      synthesize: (text, callback) => worker.synthesize(cString(text), callback),
    };
  });
  loadingDeterministic.catch(() => {
    loadingDeterministic = undefined;
  });
  return loadingDeterministic;
}

/** Undefined when espeak-ng can speak here, else the reason (what to install). */
export async function espeakAvailable(): Promise<string | undefined> {
  try {
    await loadEspeak();
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}
