/**
 * espeak-ng from the system: Debian's `libespeak-ng1` (`libespeak-ng.so.1`, its voices in
 * `espeak-ng-data`) through koffi, for machines without the WebAssembly build (issue 23). It
 * speaks the same voices as the WebAssembly build and reports the same word events, so
 * {@link createEspeakTtsEngine} drives it unchanged.
 *
 * libespeak-ng has one global state and is not thread-safe, and a synthesis takes CPU: every
 * synthesis runs as a koffi async call (a libuv thread), one at a time from one queue, so the
 * event loop stays free (`/healthz` answers during a long synthesis). Voice and parameters are set
 * between two calls, never during one. Budget: {@link ESPEAK_SYSTEM_QUEUE} syntheses waiting, callers
 * (the engine config's `tenant`) served in turn as on the WebAssembly thread (espeak-module.ts:
 * a full queue refuses the caller past its share with `ENGINE_BUSY`). Each waits with one chunk of
 * text (the engine's `maxChunkChars`, 300 by default), and each stream has at most one waiting, so
 * the queue holds at most ~20 kB of text.
 *
 * Not deterministic: espeak keeps state from one call to the next (its flutter phase, echo buffer,
 * libc `rand()`), and the system library cannot be rewound as the WebAssembly heap is, so `temp` 0
 * gives the same voice and timing but not the same bytes.
 *
 * Install on Debian/Ubuntu: `apt-get install libespeak-ng1` (and the npm package koffi).
 */
import { createRequire } from 'node:module';
import { VoicewireError } from '../util/errors.js';
import { ESPEAK_QUANTUM, type EspeakAsyncWorker, type EspeakEvent } from './espeak-module.js';
import { FairQueue, shareExceeded, tenantPath } from './fair-queue.js';

/** The Debian package that holds the system library and its voice data. */
export const ESPEAK_SYSTEM_PACKAGE = 'libespeak-ng1';

/**
 * The shared object loaded: its soname, so the `-dev` package is not needed. The environment
 * variable `VOICEWIRE_ESPEAK_LIBRARY` names another (a path, or `libespeak-ng.dylib` on macOS).
 */
export const ESPEAK_SYSTEM_LIBRARY = 'libespeak-ng.so.1';

/** Syntheses that may wait for the library at once (one per speaking stream); past it the caller past its share gets `ENGINE_BUSY`. */
export const ESPEAK_SYSTEM_QUEUE = 64;

export type { EspeakAsyncWorker };

type Fn = ((...args: unknown[]) => unknown) & { async(...args: unknown[]): void };

/** The part of koffi this file uses. */
interface Koffi {
  load(path: string): { func(signature: string): Fn; func(name: string, result: string, args: unknown[]): Fn };
  struct(def: Record<string, string>): unknown;
  proto(result: string, args: unknown[]): unknown;
  pointer(type: unknown): unknown;
  register(callback: (...args: never[]) => unknown, type: unknown): unknown;
  decode(ptr: unknown, offset: number, type: unknown): unknown;
  view(ptr: unknown, len: number): ArrayBuffer;
  sizeof(type: unknown): number;
}

// speak_lib.h (espeak-ng 1.49 to 1.52: the API is stable).
const AUDIO_OUTPUT_SYNCHRONOUS = 2;
/** Report a missing data folder as an error instead of calling exit(): no input may end the process. */
const INITIALIZE_DONT_EXIT = 0x8000;
const POS_CHARACTER = 1;
const CHARS_UTF8 = 1;
const PARAM = { rate: 1, pitch: 3, range: 4 } as const;
const EVENT_TYPES: Record<number, string> = { 1: 'word', 2: 'sentence', 3: 'mark', 4: 'play', 5: 'end', 6: 'msg_terminated', 7: 'phoneme', 8: 'samplerate' };

interface RawEvent {
  type: number;
  text_position: number;
  length: number;
  audio_position: number;
}

interface Job {
  voice: string;
  rate: number;
  pitch: number;
  range: number;
  text: string;
  callback: (samples: Int16Array, events: EspeakEvent[]) => boolean;
  resolve(): void;
  reject(err: unknown): void;
}

interface Lib {
  koffi: Koffi;
  event: unknown;
  sampleRate: number;
  setVoice: Fn;
  setParameter: Fn;
  synth: Fn;
}

let lib: Lib | undefined;
let libError: string | undefined;

/** What to install, in one sentence (the refusal of `serve` and `ENGINE_UNAVAILABLE` name it). */
export const ESPEAK_SYSTEM_INSTALL = `apt-get install ${ESPEAK_SYSTEM_PACKAGE}`;

function load(onCallback: (wav: unknown, n: number, events: unknown) => number): Lib {
  if (lib) return lib;
  if (libError) throw new VoicewireError('ENGINE_UNAVAILABLE', libError);
  try {
    const koffi = createRequire(import.meta.url)('koffi') as Koffi;
    const so = koffi.load(process.env['VOICEWIRE_ESPEAK_LIBRARY'] || ESPEAK_SYSTEM_LIBRARY);
    // Anonymous types: koffi's names are process-wide, and a second copy of this module (the ESM
    // and CommonJS builds in one process) would fail on a name taken.
    const event = koffi.struct({ type: 'int', unique_identifier: 'uint', text_position: 'int', length: 'int', audio_position: 'int', sample: 'int', user_data: 'void *', id: 'int64_t' });
    const callback = koffi.pointer(koffi.proto('int', ['int16_t *', 'int', koffi.pointer(event)]));
    const initialize = so.func('int espeak_Initialize(int output, int buflength, const char *path, int options)');
    const setCallback = so.func('espeak_SetSynthCallback', 'void', [callback]);
    const l: Lib = {
      koffi,
      event,
      sampleRate: 0,
      setVoice: so.func('int espeak_SetVoiceByName(const char *name)'),
      setParameter: so.func('int espeak_SetParameter(int parameter, int value, int relative)'),
      synth: so.func('int espeak_Synth(const char *text, size_t size, unsigned int position, int position_type, unsigned int end_position, unsigned int flags, void *unique_identifier, void *user_data)'),
    };
    // 100 ms of audio per callback; the data folder is the library's own (ESPEAK_DATA_PATH overrides it).
    const rate = initialize(AUDIO_OUTPUT_SYNCHRONOUS, 100, null, INITIALIZE_DONT_EXIT) as number;
    if (!(rate > 0)) throw new Error(`espeak_Initialize failed (${rate}): is the voice data (espeak-ng-data) installed?`);
    l.sampleRate = rate;
    // One callback for the process, kept registered: koffi runs it on the main thread while the
    // synthesis waits on its libuv thread.
    setCallback(koffi.register(onCallback as (...args: never[]) => unknown, callback));
    lib = l;
    return l;
  } catch (err) {
    libError = `espeak-ng is not installed on this system: run \`${ESPEAK_SYSTEM_INSTALL}\` (and the npm package koffi): ${err instanceof Error ? err.message : String(err)}`;
    throw new VoicewireError('ENGINE_UNAVAILABLE', libError, { cause: err });
  }
}

/** The one worker over the system library: a queue of syntheses, each run off the event loop. */
class SystemEspeak implements EspeakAsyncWorker {
  private settings = { voice: 'en-us', rate: 175, pitch: 50, range: 50 };
  private loadedVoice: string | undefined;
  private readonly jobs: FairQueue<Job>;
  private running: Job | undefined;

  constructor(
    private readonly lib: Lib,
    private readonly maxQueue: number,
  ) {
    // The synthesis running counts as one of the queue's places.
    this.jobs = new FairQueue<Job>({ capacity: Math.max(1, maxQueue - 1), quantum: ESPEAK_QUANTUM });
  }

  get queued(): number {
    return this.jobs.size + (this.running ? 1 : 0);
  }

  /** Called by the library (through koffi, on the main thread) with each piece of audio. */
  onAudio(wav: unknown, n: number, eventsPtr: unknown): number {
    const job = this.running;
    if (job === undefined) return 1;
    const samples = n > 0 && wav ? new Int16Array(this.lib.koffi.view(wav, n * 2).slice(0)) : new Int16Array(0);
    const events: EspeakEvent[] = [];
    const size = this.lib.koffi.sizeof(this.lib.event);
    for (let i = 0; eventsPtr && i < 4096; i++) {
      const e = this.lib.koffi.decode(eventsPtr, i * size, this.lib.event) as RawEvent;
      if (e.type === 0) break; // espeakEVENT_LIST_TERMINATED
      events.push({ type: EVENT_TYPES[e.type] ?? String(e.type), text_position: e.text_position, word_length: e.length, audio_position: e.audio_position });
    }
    try {
      // Non-zero stops the synthesis (the stream was closed).
      return job.callback(samples, events) ? 1 : 0;
    } catch (err) {
      job.reject(err);
      return 1;
    }
  }

  // The engine sets the voice and parameters, then synthesizes, in one synchronous run: the values
  // are read when the synthesis is queued, so streams sharing this worker never mix theirs.
  set_voice(name: string): number {
    this.settings.voice = name;
    return 0;
  }
  set_rate(wpm: number): void {
    this.settings.rate = wpm;
  }
  set_pitch(pitch: number): void {
    this.settings.pitch = pitch;
  }
  set_range(range: number): void {
    this.settings.range = range;
  }
  get_samplerate(): number {
    return this.lib.sampleRate;
  }

  synthesize(text: string, callback: (samples: Int16Array, events: EspeakEvent[]) => boolean, tenant?: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const lost = this.jobs.push(tenantPath(tenant), { ...this.settings, text, callback, resolve, reject }, Math.max(1, text.length));
      if (lost !== undefined) lost.item.reject(shareExceeded('espeak-ng (system library)', 'syntheses', this.maxQueue, lost));
      if (this.running === undefined) void this.pump();
    });
  }

  private async pump(): Promise<void> {
    for (let job = this.jobs.shift(); job !== undefined; job = this.jobs.shift()) {
      this.running = job;
      try {
        await this.run(job);
        job.resolve();
      } catch (err) {
        job.reject(err);
      }
    }
    this.running = undefined;
  }

  private async run(job: Job): Promise<void> {
    // A stream closed while its synthesis waited answers true to an empty piece: skipped.
    if (job.callback(new Int16Array(0), [])) return;
    if (this.loadedVoice !== job.voice) {
      // A voice the data lacks (a variant another espeak-ng version does not ship) keeps its
      // language; an unknown one keeps the voice loaded before, as the WebAssembly build does.
      if ((this.lib.setVoice(job.voice) as number) !== 0) this.lib.setVoice(job.voice.split('+')[0]!);
      this.loadedVoice = job.voice;
    }
    this.lib.setParameter(PARAM.rate, job.rate, 0);
    this.lib.setParameter(PARAM.pitch, job.pitch, 0);
    this.lib.setParameter(PARAM.range, job.range, 0);
    // The library reads a C string: a NUL inside would end the text early, nothing worse.
    const text = job.text.replace(/\0/g, ' ');
    const rc = await new Promise<number>((resolve, reject) => {
      this.lib.synth.async(text, Buffer.byteLength(text) + 1, 0, POS_CHARACTER, 0, CHARS_UTF8, null, null, (err: unknown, result: number) => (err ? reject(err) : resolve(result)));
    });
    // EE_OK 0; EE_INTERNAL_ERROR -1; EE_BUFFER_FULL 1 (not in synchronous mode).
    if (rc !== 0 && rc !== 1) throw new VoicewireError('ENGINE_UNAVAILABLE', `espeak-ng (system library) failed to synthesize (error ${rc})`);
  }
}

/**
 * The library has one state per process: its worker is kept on `globalThis`, shared by every copy
 * of this module (the ESM and CommonJS builds, a test's fresh module graph).
 */
const SHARED = Symbol.for('voicewire.espeak-system.worker');

/**
 * The process's worker over the system espeak-ng, loaded on first call. Rejects with
 * `ENGINE_UNAVAILABLE` naming `apt-get install libespeak-ng1` when the library or koffi is missing.
 */
export async function loadSystemEspeak(): Promise<EspeakAsyncWorker> {
  const shared = globalThis as { [SHARED]?: SystemEspeak };
  if (shared[SHARED]) return shared[SHARED];
  let w: SystemEspeak | undefined;
  const l = load((wav, n, events) => (w ? w.onAudio(wav, n, events) : 1));
  w = new SystemEspeak(l, ESPEAK_SYSTEM_QUEUE);
  shared[SHARED] = w;
  return w;
}

/** Undefined when the system espeak-ng can speak here, else the reason (what to install). */
export async function systemEspeakAvailable(): Promise<string | undefined> {
  try {
    await loadSystemEspeak();
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}
