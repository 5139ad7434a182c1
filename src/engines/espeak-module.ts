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
  synthesize(text: string, callback: (samples: Int16Array, events: EspeakEvent[]) => boolean): void;
}

let loading: Promise<EspeakWorker> | undefined;

/** The shared espeak-ng worker, loaded on first use. Rejects with `ENGINE_UNAVAILABLE` when the package is missing. */
export function loadEspeak(): Promise<EspeakWorker> {
  loading ??= (async () => {
    let factory: () => Promise<{ eSpeakNGWorker: new () => EspeakWorker }>;
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
    for (const voice of ['en-us', 'fr-fr', 'de', 'es', 'pt-br']) {
      worker.set_voice(voice);
      worker.synthesize('a.', () => false);
    }
    return worker;
  })();
  loading.catch(() => {
    loading = undefined;
  });
  return loading;
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
