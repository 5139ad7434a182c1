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
 * `temp` 0 is deterministic here too (§2.8, issue 35): espeak keeps state from one call to the next
 * (the flutter phase and gain control, static variables of its wave generator; the echo buffer;
 * libc `rand()`), which no call of its API resets. A temp-0 sentence
 * ({@link loadDeterministicSystemEspeak}) runs on a private copy of the library file, loaded fresh
 * (its static data as in the file) with `srand(1)`, then unloaded: the same text gives the same bytes
 * whatever ran before. It costs a load, `espeak_Initialize` and the voice per sentence (40–60 ms
 * measured on a 2-core machine); every synthesis, fresh or not, still runs one at a time from the
 * one queue.
 *
 * Install on Debian/Ubuntu: `apt-get install libespeak-ng1` (and the npm package koffi).
 */
import { createRequire } from 'node:module';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { VoicewireError } from '../util/errors.js';
import { ESPEAK_QUANTUM, type EspeakAsyncWorker, type EspeakDeterministicWorker, type EspeakEvent } from './espeak-module.js';
import { FairQueue, shareExceeded, tenantPath } from './fair-queue.js';
import { EspeakSettings } from './espeak-settings.js';

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

/** A library koffi loaded. */
interface KoffiLib {
  func(signature: string): Fn;
  func(name: string, result: string, args: unknown[]): Fn;
  unload(): void;
}

/** The part of koffi this file uses. */
interface Koffi {
  load(path: string): KoffiLib;
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
/** espeak_ng_OUTPUT_MODE (espeak-ng/espeak_ng.h): synchronous, what AUDIO_OUTPUT_SYNCHRONOUS maps to. */
const ENOUTPUT_MODE_SYNCHRONOUS = 1;

/**
 * Audio per callback, in ms (the library's output buffer, `espeak_ng_InitializeOutput`), where it
 * changes nothing: each callback is a hop from the synthesis thread to the main thread and back,
 * so fewer are cheaper (issue 34: ~10 hops per audio second at 100 ms were most of the glue).
 * Only where {@link bufferNeutral} holds: there 1000 ms gives the same samples and word events as
 * 100 ms (checked bit for bit and event by event at 175–250 wpm, the five languages' voices, 39
 * utterances each); from 2000 ms some samples differ, so not more.
 */
export const ESPEAK_BUFFER_MS = 1000;

/**
 * Fastest rate given the long buffer. Faster, espeak may speed its output up with libsonic
 * (setlengths.c `SetSpeed`), which works buffer by buffer: samples and word events then depend on
 * the buffer length (en-us at 385–450 wpm: events moved up to 0.9 s; French and Spanish from 300
 * wpm). Measured the same at 250 in all five languages.
 */
export const ESPEAK_LONG_BUFFER_MAX_RATE = 250;

/** The buffer every synthesis had before issue 34, and still has where a longer one would change the output. */
const SHORT_BUFFER_MS = 100;
const EVENT_TYPES: Record<number, string> = { 1: 'word', 2: 'sentence', 3: 'mark', 4: 'play', 5: 'end', 6: 'msg_terminated', 7: 'phoneme', 8: 'samplerate' };

interface RawEvent {
  type: number;
  text_position: number;
  length: number;
  audio_position: number;
}

interface Job {
  /** Temp 0: run on the private copy of the library ({@link FreshCopy}). */
  deterministic: boolean;
  /** Load that copy afresh first, and seed `rand()` with 1 (the first synthesis after `restore()`). */
  fresh: boolean;
  voice: string;
  rate: number;
  pitch: number;
  range: number;
  text: string;
  callback: (samples: Int16Array, events: EspeakEvent[]) => boolean;
  resolve(): void;
  reject(err: unknown): void;
}

/** The calls a synthesis makes, on one loaded copy of the library. */
interface Calls {
  setVoice: Fn;
  setParameter: Fn;
  synth: Fn;
  /** Resizes the output buffer (ms per callback); undefined in a library without it (all of 1.49–1.52 have it). */
  initializeOutput: Fn | undefined;
  /** The buffer length the copy has now, in ms. */
  bufferMs: number;
}

interface Lib extends Calls {
  koffi: Koffi;
  event: unknown;
  sampleRate: number;
  /** The registered synthesis callback and its type (a fresh copy registers the same one). */
  callback: unknown;
  callbackType: unknown;
  /** The file the library was loaded from (a fresh copy copies it), when the process maps show it. */
  file: string | undefined;
  /** The library's data folder (`espeak_Info`), where its voice variants are read. */
  data: string | undefined;
}

const SIGNATURES = {
  initialize: 'int espeak_Initialize(int output, int buflength, const char *path, int options)',
  terminate: 'int espeak_Terminate(void)',
  setVoice: 'int espeak_SetVoiceByName(const char *name)',
  setParameter: 'int espeak_SetParameter(int parameter, int value, int relative)',
  initializeOutput: 'int espeak_ng_InitializeOutput(int output_mode, int buffer_length, const char *device)',
  synth: 'int espeak_Synth(const char *text, size_t size, unsigned int position, int position_type, unsigned int end_position, unsigned int flags, void *unique_identifier, void *user_data)',
} as const;

function calls(so: KoffiLib, bufferMs: number): Calls {
  let initializeOutput: Fn | undefined;
  try {
    initializeOutput = so.func(SIGNATURES.initializeOutput);
  } catch {
    // Not exported: every synthesis keeps the buffer espeak_Initialize gave.
  }
  return { setVoice: so.func(SIGNATURES.setVoice), setParameter: so.func(SIGNATURES.setParameter), synth: so.func(SIGNATURES.synth), initializeOutput, bufferMs };
}

/**
 * Variant lines after which the output depends on the buffer length: an echo (wavegen.c plays
 * the echo's tail as silence after the last clause only up to the end of the buffer it ends in, so
 * a longer buffer gives a longer tail: the default English voice, `+f2`, 4.3 ms more sound and 127
 * ms more silence per sentence at 1000 ms), and the Klatt synthesizer (its voices differ too).
 */
const BUFFER_SENSITIVE = /^\s*(echo\s+[1-9]\d*\s+[1-9]|klatt\s+[1-9])/m;

const neutralVariants = new Map<string, boolean>();

/**
 * True when `voice` (`name` or `name+variant`) speaks the same with any buffer up to {@link
 * ESPEAK_BUFFER_MS}: no variant, or one whose file in the data folder `data` (`voices/!v/`) sets no
 * echo and no Klatt; false when the file cannot be read (the output must not change).
 */
export function bufferNeutral(voice: string, data: string | undefined): boolean {
  const plus = voice.indexOf('+');
  if (plus < 0) return true;
  const variant = voice.slice(plus + 1);
  const key = `${data}\0${variant}`;
  let neutral = neutralVariants.get(key);
  if (neutral === undefined) {
    try {
      neutral = data !== undefined && /^[\w-]+$/.test(variant) && !BUFFER_SENSITIVE.test(readFileSync(join(data, 'voices', '!v', variant), 'utf8'));
    } catch {
      neutral = false;
    }
    neutralVariants.set(key, neutral);
  }
  return neutral;
}

/** Sets `c`'s output buffer for a synthesis of `voice` at `rate` wpm ({@link ESPEAK_BUFFER_MS}). */
function bufferFor(c: Calls, voice: string, rate: number, data: string | undefined): void {
  const ms = rate <= ESPEAK_LONG_BUFFER_MAX_RATE && bufferNeutral(voice, data) ? ESPEAK_BUFFER_MS : SHORT_BUFFER_MS;
  if (c.bufferMs === ms || c.initializeOutput === undefined) return;
  // Only a realloc of the buffer and the event list (speech.c): no other state is touched.
  if ((c.initializeOutput(ENOUTPUT_MODE_SYNCHRONOUS, ms, null) as number) === 0) c.bufferMs = ms;
}

/** The path of the loaded library whose file name starts with `soname`'s stem, from /proc/self/maps (Linux). */
function mappedFile(soname: string): string | undefined {
  try {
    const stem = basename(soname).replace(/\.so.*$|\.dylib$/, '');
    for (const line of readFileSync('/proc/self/maps', 'utf8').split('\n')) {
      const at = line.indexOf('/');
      if (at >= 0 && basename(line.slice(at)).startsWith(stem)) return line.slice(at).trim();
    }
  } catch {
    // No /proc (macOS): no fresh copies, temp 0 is then not byte-identical (docs/engines.md).
  }
  return undefined;
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
    const initialize = so.func(SIGNATURES.initialize);
    const setCallback = so.func('espeak_SetSynthCallback', 'void', [callback]);
    const l: Lib = { koffi, event, sampleRate: 0, callback: undefined, callbackType: callback, file: undefined, data: undefined, ...calls(so, SHORT_BUFFER_MS) };
    // 100 ms of audio per callback until a synthesis sets its own (bufferFor); the data folder is
    // the library's own (ESPEAK_DATA_PATH overrides it).
    const rate = initialize(AUDIO_OUTPUT_SYNCHRONOUS, SHORT_BUFFER_MS, null, INITIALIZE_DONT_EXIT) as number;
    if (!(rate > 0)) throw new Error(`espeak_Initialize failed (${rate}): is the voice data (espeak-ng-data) installed?`);
    l.sampleRate = rate;
    try {
      const path: (string | null)[] = [null];
      so.func('const char *espeak_Info(_Out_ const char **path_data)')(path);
      l.data = path[0] ?? undefined;
    } catch {
      // No data folder known: every synthesis keeps the short buffer (bufferNeutral).
    }
    // One callback for the process, kept registered: koffi runs it on the main thread while the
    // synthesis waits on its libuv thread.
    l.callback = koffi.register(onCallback as (...args: never[]) => unknown, callback);
    setCallback(l.callback);
    l.file = mappedFile(process.env['VOICEWIRE_ESPEAK_LIBRARY'] || ESPEAK_SYSTEM_LIBRARY);
    lib = l;
    return l;
  } catch (err) {
    libError = `espeak-ng is not installed on this system: run \`${ESPEAK_SYSTEM_INSTALL}\` (and the npm package koffi): ${err instanceof Error ? err.message : String(err)}`;
    throw new VoicewireError('ENGINE_UNAVAILABLE', libError, { cause: err });
  }
}

/**
 * A private copy of the library for temp 0 (see the module comment): another file, so the dynamic
 * loader maps new static data instead of handing back the shared instance. `renew` unloads the copy
 * in use and loads a new one (copied into a temporary folder, removed once mapped); only the
 * queue's one running synthesis uses it.
 */
class FreshCopy {
  private so: KoffiLib | undefined;
  private current: Calls | undefined;
  private srand: Fn | null | undefined;
  /** The voice loaded in the copy in use. */
  voice: string | undefined;

  constructor(private readonly lib: Lib) {}

  /** Why a copy could not be loaded (a temporary folder mounted `noexec`, no space), once it failed. */
  failure: string | undefined;

  /** False where the library's file is not known (no /proc) or a copy failed to load: temp 0 then runs on the shared instance. */
  get available(): boolean {
    return this.lib.file !== undefined && this.failure === undefined;
  }

  /** The copy in use, or a fresh one when none is loaded. */
  async calls(): Promise<Calls> {
    return this.current ?? this.renew();
  }

  /** Unloads the copy in use, loads a fresh one (its initialization off the event loop), seeds libc's `rand()` with 1. */
  async renew(): Promise<Calls> {
    this.close();
    const { koffi } = this.lib;
    // A new file each time, removed as soon as it is mapped: nothing stays on disk, however the
    // process ends (a killed worker runs no exit handler).
    const dir = mkdtempSync(join(tmpdir(), 'voicewire-espeak-'));
    let so: KoffiLib;
    try {
      copyFileSync(this.lib.file!, join(dir, 'libespeak-ng.so'));
      so = koffi.load(join(dir, 'libespeak-ng.so'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    this.so = so;
    const initialize = so.func(SIGNATURES.initialize);
    const rate = await new Promise<number>((resolve, reject) =>
      initialize.async(AUDIO_OUTPUT_SYNCHRONOUS, SHORT_BUFFER_MS, null, INITIALIZE_DONT_EXIT, (err: unknown, r: number) => (err ? reject(err) : resolve(r))),
    );
    if (rate !== this.lib.sampleRate) throw new VoicewireError('ENGINE_UNAVAILABLE', `espeak-ng (system library): a fresh copy initialized at ${rate} Hz, not ${this.lib.sampleRate}`);
    so.func('espeak_SetSynthCallback', 'void', [this.lib.callbackType])(this.lib.callback);
    if (this.srand === undefined) {
      try {
        this.srand = koffi.load('libc.so.6').func('void srand(unsigned int seed)');
      } catch {
        this.srand = null;
      }
    }
    this.srand?.(1);
    this.current = calls(so, SHORT_BUFFER_MS);
    this.voice = undefined;
    return this.current;
  }

  /** Terminates and unloads the copy in use, if any. */
  close(): void {
    const so = this.so;
    this.so = undefined;
    this.current = undefined;
    if (so === undefined) return;
    try {
      so.func(SIGNATURES.terminate)();
    } finally {
      so.unload();
    }
  }
}

/** The one worker over the system library: a queue of syntheses, each run off the event loop. */
class SystemEspeak extends EspeakSettings implements EspeakAsyncWorker {
  private loadedVoice: string | undefined;
  private readonly jobs: FairQueue<Job>;
  private running: Job | undefined;
  private readonly fresh: FreshCopy;

  constructor(
    private readonly lib: Lib,
    private readonly maxQueue: number,
  ) {
    super();
    this.fresh = new FreshCopy(lib);
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

  get_samplerate(): number {
    return this.lib.sampleRate;
  }

  synthesize(text: string, callback: (samples: Int16Array, events: EspeakEvent[]) => boolean, tenant?: string): Promise<void> {
    return this.enqueue({ ...this.settings, deterministic: false, fresh: false }, text, callback, tenant);
  }

  /** Queues a synthesis with `settings` (a temp-0 one is `deterministic`, {@link FreshCopy}) in `tenant`'s turn. */
  enqueue(settings: Omit<Job, 'text' | 'callback' | 'resolve' | 'reject'>, text: string, callback: Job['callback'], tenant?: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const lost = this.jobs.push(tenantPath(tenant), { ...settings, text, callback, resolve, reject }, Math.max(1, text.length));
      if (lost !== undefined) lost.item.reject(shareExceeded('espeak-ng (system library)', 'syntheses', this.maxQueue, lost));
      if (this.running === undefined) void this.pump();
    });
  }

  /** True when temp-0 syntheses can start from a fresh copy here. */
  get freshAvailable(): boolean {
    return this.fresh.available;
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
    let fresh = job.deterministic && this.fresh.available;
    let c: Calls = this.lib;
    if (fresh) {
      try {
        c = job.fresh ? await this.fresh.renew() : await this.fresh.calls();
      } catch (err) {
        // A copy that cannot load (a noexec temporary folder) must not fail the request: from now
        // on temp 0 runs on the shared instance, as where no /proc shows the library's file.
        this.fresh.failure = err instanceof Error ? err.message : String(err);
        try {
          this.fresh.close();
        } catch {
          // A half-loaded copy: nothing more to release.
        }
        fresh = false;
      }
    }
    if ((fresh ? this.fresh.voice : this.loadedVoice) !== job.voice) {
      // A voice the data lacks (a variant another espeak-ng version does not ship) keeps its
      // language; an unknown one keeps the voice loaded before, as the WebAssembly build does.
      if ((c.setVoice(job.voice) as number) !== 0) c.setVoice(job.voice.split('+')[0]!);
      if (fresh) this.fresh.voice = job.voice;
      else this.loadedVoice = job.voice;
    }
    c.setParameter(PARAM.rate, job.rate, 0);
    c.setParameter(PARAM.pitch, job.pitch, 0);
    c.setParameter(PARAM.range, job.range, 0);
    bufferFor(c, job.voice, job.rate, this.lib.data);
    // The library reads a C string: a NUL inside would end the text early, nothing worse.
    const text = job.text.replace(/\0/g, ' ');
    const rc = await new Promise<number>((resolve, reject) => {
      c.synth.async(text, Buffer.byteLength(text) + 1, 0, POS_CHARACTER, 0, CHARS_UTF8, null, null, (err: unknown, result: number) => (err ? reject(err) : resolve(result)));
    });
    // EE_OK 0; EE_INTERNAL_ERROR -1; EE_BUFFER_FULL 1 (not in synchronous mode).
    if (rc !== 0 && rc !== 1) throw new VoicewireError('ENGINE_UNAVAILABLE', `espeak-ng (system library) failed to synthesize (error ${rc})`);
  }
}

/**
 * The temp-0 face of the system worker (§2.8: deterministic): the same queue, and each sentence
 * after `restore()` synthesized by a fresh copy of the library from `srand(1)` ({@link FreshCopy}).
 */
class DeterministicSystemEspeak extends EspeakSettings implements EspeakDeterministicWorker {
  private fresh = true;

  constructor(private readonly core: SystemEspeak) {
    super();
  }

  get queued(): number {
    return this.core.queued;
  }

  get_samplerate(): number {
    return this.core.get_samplerate();
  }

  restore(): void {
    this.fresh = true;
  }

  synthesize(text: string, callback: (samples: Int16Array, events: EspeakEvent[]) => boolean, tenant?: string): Promise<void> {
    const fresh = this.fresh;
    this.fresh = false;
    return this.core.enqueue({ ...this.settings, deterministic: true, fresh }, text, callback, tenant);
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

/**
 * The temp-0 worker over the system espeak-ng (§2.8: identical requests give identical bytes):
 * the process's queue, each sentence from a fresh copy of the library (see the module comment).
 * Where the library's file cannot be found (no /proc), the plain worker: the same voice and
 * timing, not the same bytes. Rejects as {@link loadSystemEspeak}.
 */
export async function loadDeterministicSystemEspeak(): Promise<EspeakAsyncWorker> {
  const w = (await loadSystemEspeak()) as SystemEspeak;
  return w.freshAvailable ? new DeterministicSystemEspeak(w) : w;
}

/** True once the process's worker over the system library has loaded (synchronous: no load is tried). */
export function systemEspeakLoaded(): boolean {
  return (globalThis as { [SHARED]?: SystemEspeak })[SHARED] !== undefined;
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
