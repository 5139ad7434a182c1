/**
 * Loads espeak-ng at run time: the WebAssembly build `@echogarden/espeak-ng-emscripten` (npm
 * alone, no system library; it reports word events with their audio position). espeak-ng is
 * GPL-3.0, so voicewire (MIT) only names it as an optional peer dependency and imports it
 * dynamically here; a server without it still starts and answers TTS with a clear error.
 *
 * Off the event loop: a synthesis is a synchronous call into the module that takes CPU (seconds
 * for a long text on a busy machine), and on the main thread it stalled every timer, so node:http
 * answered 408 to requests whose headers had arrived. The module runs in ONE worker thread
 * ({@link ESPEAK_WASM_QUEUE} syntheses waiting at most); each synthesis
 * carries the voice and parameters set when it was queued, runs whole in the thread, and posts its
 * audio back chunk by chunk. A callback answering true (a closed stream) sets a shared stop flag
 * the thread reads at its next chunk. The deterministic instance (temp 0) lives in the same
 * thread: espeak runs one synthesis at a time in either case, and one thread keeps a request's CPU
 * on one core, as on the main thread before, leaving the other to the event loop.
 *
 * Fair (issue 31: one socket's 70 requests filled the queue, and another organization waited
 * seconds or was refused): syntheses wait in a {@link FairQueue}, callers (organization, key,
 * socket: the engine config's `tenant`) served in turn, {@link ESPEAK_QUANTUM} characters a turn;
 * in a full queue the caller holding the most is the one refused (`ENGINE_BUSY` naming its share).
 * A synthesis of one organization running when another organization's arrives is interrupted
 * once (at its next ~10 ms piece) and goes back to the head of its caller's queue; its callback
 * then gets {@link ESPEAK_RESTART} (forget this synthesis's audio: it starts over). So another
 * organization's first words wait for a piece, not for a sentence of someone else's.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import type { Worker } from 'node:worker_threads';
import { evalWorker } from './eval-worker.js';
import { FairQueue, shareExceeded, tenantPath, type TenantPath } from './fair-queue.js';
import { EspeakSettings } from './espeak-settings.js';
import { VoicewireError } from '../util/errors.js';

/** The package that holds the espeak-ng WebAssembly build. */
export const ESPEAK_PACKAGE = '@echogarden/espeak-ng-emscripten';

/**
 * Syntheses that may wait for the espeak-ng thread at once, both instances together (one per
 * speaking stream). In a full queue a newcomer takes the place of the newest synthesis of the
 * caller holding the most, when that one holds at least two more; otherwise the newcomer is
 * refused: either way `ENGINE_BUSY` for the caller past its share (the queue divided among the
 * callers waiting). Each waits with one chunk of text (the engine's `maxChunkChars`, 300 by
 * default), so the queue holds at most ~20 kB of text.
 */
export const ESPEAK_WASM_QUEUE = 64;

/**
 * Characters of text a caller's turn is worth (deficit round-robin's quantum): callers of long
 * sentences get no more speech per round than callers of short ones, and a piece longer than a
 * turn waits the turns it takes, so another caller's short first words wait for one piece at most.
 */
export const ESPEAK_QUANTUM = 50;

/**
 * Passed to a synthesis callback instead of samples when the synthesis was interrupted to let
 * another organization's run first: the audio and events it delivered so far are void, it starts
 * over from its text when its turn comes again (at most once per synthesis).
 */
export const ESPEAK_RESTART: Int16Array = new Int16Array(0);

/** One event of a synthesis chunk (`audio_position` in ms from the start of the call). */
export interface EspeakEvent {
  type: string;
  /** 1-based character position in the text of the call. */
  text_position: number;
  word_length: number;
  audio_position: number;
}

/** The part of espeak-ng's worker class the engine uses. */
export interface EspeakWorker {
  set_voice(name: string): number;
  set_rate(wpm: number): void;
  set_pitch(pitch: number): void;
  set_range(range: number): void;
  get_samplerate(): number;
  /**
   * Synchronous, or a promise (both builds here: off the event loop); the callback's true stops it.
   * `tenant` (the engine config's, see src/sessions/engine.ts) is whose turn it waits for in a shared queue.
   */
  synthesize(text: string, callback: (samples: Int16Array, events: EspeakEvent[]) => boolean, tenant?: string): void | Promise<void>;
}

/**
 * A worker whose synthesis completes later, off the event loop. Voice and parameters are read
 * when a synthesis is queued, so streams sharing the worker never mix theirs.
 */
export interface EspeakAsyncWorker extends EspeakWorker {
  synthesize(text: string, callback: (samples: Int16Array, events: EspeakEvent[]) => boolean, tenant?: string): Promise<void>;
  /** Syntheses waiting or running. */
  readonly queued: number;
}

/** A worker whose syntheses can each start from the same saved state (temp 0, §2.8: deterministic). */
export interface EspeakDeterministicWorker extends EspeakAsyncWorker {
  /**
   * Makes the next synthesis queued start from the state saved once the instance was loaded.
   * espeak keeps state from one call to the next (its random generator, the flutter phase, the
   * echo buffer): after `restore()` the same calls give the same bytes, as two runs of the
   * espeak-ng command do.
   */
  restore(): void;
}

/** The voices loaded once at start, so the first sentence of a language does not pay its dictionary. */
const WARM_VOICES = ['en-us', 'fr', 'de', 'es', 'pt-br'];

/**
 * Samples per message from the thread, at least (~90 ms at 22.05 kHz): one message per espeak
 * piece (~10 ms) cost more than the synthesis for short sentences on a busy machine.
 */
const BATCH_SAMPLES = 2048;

type Kind = 'plain' | 'deterministic';

/**
 * The thread's code (CommonJS, evaluated: the package stays one bundle; the espeak package is
 * ESM, imported by URL). Messages are handled one after another. The deterministic instance saves
 * its heap (~17 MB) once loaded and copies it back before a job marked `restore` (a few ms);
 * its strings are written into the heap after the restore (never through the binding's string
 * cache, whose JavaScript-side state a restore would not rewind).
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const stop = new Int32Array(workerData.stop);
const instances = {};
async function load(kind) {
  const factory = (await import(workerData.url)).default;
  const module = await factory();
  const worker = new module.eSpeakNGWorker();
  // The first sentence of a language loads its dictionary (~200 ms): paid here, not by a request.
  for (const v of workerData.warm) { worker.set_voice(v); worker.synthesize('a.', () => false); }
  const inst = { module, worker, voice: undefined };
  if (kind === 'deterministic') {
    inst.saved = module.HEAPU8.slice();
    const encoder = new TextEncoder();
    inst.str = (s) => {
      const bytes = encoder.encode(s + '\\0');
      const ptr = module._malloc(bytes.length);
      module.HEAPU8.set(bytes, ptr);
      return { ptr };
    };
  } else inst.str = (s) => s;
  instances[kind] = inst;
  return worker.get_samplerate();
}
function run(m) {
  const inst = instances[m.kind];
  if (m.restore && inst.saved) {
    const heap = inst.module.HEAPU8; // a new view when the memory grew
    heap.set(inst.saved);
    // Memory grown since is handed out again by sbrk: as fresh memory, zeros.
    if (heap.length > inst.saved.length) heap.fill(0, inst.saved.length);
    inst.voice = undefined;
  }
  const w = inst.worker;
  // Loading a voice reads its files: only when it changes. An unknown one keeps the voice before.
  if (inst.voice !== m.voice) { w.set_voice(inst.str(m.voice)); inst.voice = m.voice; }
  w.set_rate(m.rate);
  w.set_pitch(m.pitch);
  w.set_range(m.range);
  // espeak's pieces are ~10 ms of audio: posted in batches of at least BATCH samples (one message
  // each, transferred), while the stop flag is read at every piece.
  let parts = [], events = [], n = 0;
  const post = () => {
    const samples = new Int16Array(n);
    let o = 0;
    for (const p of parts) { samples.set(p, o); o += p.length; }
    parentPort.postMessage({ type: 'chunk', id: m.id, samples, events }, [samples.buffer]);
    parts = []; events = []; n = 0;
  };
  let stopped = false;
  w.synthesize(inst.str(m.text), (samples, evs) => {
    parts.push(samples);
    for (const e of evs) events.push(e);
    n += samples.length;
    if (n >= workerData.batch) post();
    stopped = Atomics.load(stop, 0) === m.id;
    return stopped;
  });
  if (n > 0 || events.length > 0) post();
  return stopped;
}
let chain = Promise.resolve();
parentPort.on('message', (m) => {
  chain = chain.then(async () => {
    try {
      if (m.op === 'load') parentPort.postMessage({ type: 'loaded', kind: m.kind, sampleRate: await load(m.kind) });
      else { const stopped = run(m); parentPort.postMessage({ type: 'done', id: m.id, stopped }); }
    } catch (e) {
      parentPort.postMessage({ type: 'error', id: m.id, kind: m.kind, op: m.op, message: String((e && e.message) || e) });
    }
  });
});
`;

interface Job {
  id: number;
  kind: Kind;
  voice: string;
  rate: number;
  pitch: number;
  range: number;
  text: string;
  restore: boolean;
  callback: (samples: Int16Array, events: EspeakEvent[]) => boolean;
  /** The callback answered true (or threw): later chunks are dropped. */
  stopped: boolean;
  /** Its caller, for its turn and for interrupting it. */
  tenant: TenantPath;
  /** Interrupted once for another organization: never again. */
  interrupted: boolean;
  settled: boolean;
  resolve(): void;
  reject(err: unknown): void;
}

/** Where the package's ESM entry is, as a URL the thread imports. */
function packageUrl(): string {
  try {
    return pathToFileURL(createRequire(import.meta.url).resolve(ESPEAK_PACKAGE)).href;
  } catch (err) {
    throw new VoicewireError('ENGINE_UNAVAILABLE', `espeak-ng is not installed: run \`npm install ${ESPEAK_PACKAGE}\` (GPL-3.0, an optional peer dependency of voicewire)`, { cause: err });
  }
}

/** The one thread hosting the module: a fair queue of syntheses, one posted at a time. */
class EspeakThread {
  private readonly worker: Worker;
  private readonly stop = new Int32Array(new SharedArrayBuffer(4));
  // The synthesis running counts as one of the queue's places, as it always did.
  private readonly jobs = new FairQueue<Job>({ capacity: ESPEAK_WASM_QUEUE - 1, quantum: ESPEAK_QUANTUM });
  /** Instances whose next synthesis must restore (a skipped job's restore is carried by the next one run). */
  private readonly restorePending = new Set<Kind>();
  private running: Job | undefined;
  private nextId = 1;
  private readonly loads = new Map<Kind, { resolve(rate: number): void; reject(err: unknown): void }>();
  dead: VoicewireError | undefined;

  constructor(
    url: string,
    private readonly onDeath: (t: EspeakThread) => void,
  ) {
    this.worker = evalWorker(WORKER_SOURCE, { workerData: { url, warm: WARM_VOICES, stop: this.stop.buffer, batch: BATCH_SAMPLES } });
    this.worker.on('message', (m: { type: string; id?: number; kind?: Kind; op?: string; sampleRate?: number; samples?: Int16Array; events?: EspeakEvent[]; message?: string }) => this.onMessage(m));
    this.worker.on('error', (err) => this.die(err));
    this.worker.on('exit', () => this.die(undefined));
    this.updateRef();
  }

  get queued(): number {
    return this.jobs.size + (this.running ? 1 : 0);
  }

  /** Instantiates one module in the thread (and warms its voices); resolves with its sample rate. */
  load(kind: Kind): Promise<number> {
    if (this.dead) return Promise.reject(this.dead);
    return new Promise((resolve, reject) => {
      this.loads.set(kind, { resolve, reject });
      this.updateRef();
      this.worker.postMessage({ op: 'load', kind });
    });
  }

  enqueue(kind: Kind, settings: { voice: string; rate: number; pitch: number; range: number }, restore: boolean, text: string, callback: Job['callback'], tenant: TenantPath): Promise<void> {
    if (this.dead) return Promise.reject(this.dead);
    return new Promise<void>((resolve, reject) => {
      const job: Job = { id: 0, kind, ...settings, restore, text, callback, stopped: false, settled: false, resolve, reject, tenant, interrupted: false };
      // A caller past its share loses a place: this job, or its own newest one waiting.
      const lost = this.jobs.push(tenant, job, Math.max(1, text.length));
      if (lost !== undefined) this.settle(lost.item, shareExceeded('espeak-ng (WebAssembly)', 'syntheses', ESPEAK_WASM_QUEUE, lost));
      if (lost?.item !== job) this.interruptFor(tenant);
      this.pump();
    });
  }

  private pump(): void {
    while (this.running === undefined && !this.dead) {
      const job = this.jobs.shift();
      if (job === undefined) break;
      // A stream closed while its synthesis waited answers true to an empty piece: skipped (a
      // pending restore is then carried by the next job of the instance, if any).
      let skip: boolean;
      try {
        skip = job.callback(new Int16Array(0), []);
      } catch (err) {
        this.settle(job, err);
        continue;
      }
      if (skip) {
        if (job.restore) this.restorePending.add(job.kind);
        this.settle(job);
        continue;
      }
      job.id = this.nextId++;
      this.running = job;
      const restore = this.restorePending.delete(job.kind) || job.restore;
      // Remembered: a synthesis run again after an interruption restores again.
      job.restore = restore;
      const { id, kind, voice, rate, pitch, range, text } = job;
      this.worker.postMessage({ op: 'job', id, kind, voice, rate, pitch, range, text, restore });
    }
    this.updateRef();
  }

  /**
   * Another organization's synthesis arrived: the running one of a different organization stops at
   * its next piece and waits again at the head of its caller's queue (once per synthesis, so a
   * long one is interrupted at most once, whoever keeps arriving).
   */
  private interruptFor(tenant: TenantPath): void {
    const job = this.running;
    if (job === undefined || job.interrupted || job.stopped || job.tenant.length === 0 || tenant.length === 0 || job.tenant[0] === tenant[0]) return;
    job.interrupted = true;
    Atomics.store(this.stop, 0, job.id);
  }

  private settle(job: Job, err?: unknown): void {
    if (job.settled) return;
    job.settled = true;
    if (err === undefined) job.resolve();
    else job.reject(err);
  }

  private onMessage(m: { type: string; id?: number; kind?: Kind; op?: string; sampleRate?: number; samples?: Int16Array; events?: EspeakEvent[]; message?: string; stopped?: boolean }): void {
    if (m.type === 'loaded' || (m.type === 'error' && m.op === 'load')) {
      const l = this.loads.get(m.kind!);
      this.loads.delete(m.kind!);
      if (m.type === 'loaded') l?.resolve(m.sampleRate!);
      else l?.reject(new VoicewireError('ENGINE_UNAVAILABLE', `espeak-ng (WebAssembly) could not be loaded: ${m.message ?? ''}`));
      this.updateRef();
      return;
    }
    const job = this.running;
    if (job === undefined || m.id !== job.id) return;
    if (m.type === 'chunk') {
      if (job.stopped) return;
      let stop: boolean;
      try {
        stop = job.callback(m.samples!, m.events!);
      } catch (err) {
        stop = true;
        this.settle(job, err);
      }
      if (stop) {
        job.stopped = true;
        Atomics.store(this.stop, 0, job.id);
      }
      return;
    }
    this.running = undefined;
    if (m.type === 'done' && m.stopped === true && job.interrupted && !job.stopped) {
      // Interrupted for another organization: its audio so far is void, and it runs again first
      // among its caller's (the heap restored again when it was).
      let stop: boolean;
      try {
        stop = job.callback(ESPEAK_RESTART, []);
      } catch (err) {
        this.settle(job, err);
        this.pump();
        return;
      }
      if (stop) this.settle(job);
      else this.jobs.pushFront(job.tenant, job, Math.max(1, job.text.length));
      this.pump();
      return;
    }
    if (m.type === 'done') {
      this.settle(job);
      this.pump();
      return;
    }
    this.settle(job, new VoicewireError('PROTOCOL_INTERNAL', `espeak-ng (WebAssembly) failed to synthesize: ${m.message ?? ''}`));
    // After a trap the module's state is unknown: a new thread serves the next request.
    void this.terminate();
  }

  /** Referenced only while it loads or has syntheses: an idle thread never keeps the process alive. */
  private updateRef(): void {
    if (this.dead) return;
    if (this.loads.size > 0 || this.queued > 0) this.worker.ref();
    else this.worker.unref();
  }

  /** The thread ended: every load and synthesis waiting fails, and the next load starts a new thread. */
  private die(err: Error | undefined): void {
    if (this.dead) return;
    this.dead = new VoicewireError('PROTOCOL_INTERNAL', `espeak-ng (WebAssembly): its thread stopped${err ? `: ${err.message}` : ''}`, err ? { cause: err } : undefined);
    for (const l of this.loads.values()) l.reject(this.dead);
    this.loads.clear();
    const jobs = [...(this.running ? [this.running] : []), ...this.jobs.clear()];
    this.running = undefined;
    for (const j of jobs) this.settle(j, this.dead);
    this.onDeath(this);
  }

  /** Stops the thread; waiting and running syntheses fail. */
  async terminate(): Promise<void> {
    this.die(undefined);
    await this.worker.terminate();
  }
}

/** A handle on one of the thread's module instances; the settings travel with each queued job. */
class WasmEspeak extends EspeakSettings implements EspeakAsyncWorker {
  protected restoreNext = false;

  constructor(
    private readonly thread: EspeakThread,
    private readonly kind: Kind,
    private readonly sampleRate: number,
  ) {
    super();
  }

  get queued(): number {
    return this.thread.queued;
  }

  get_samplerate(): number {
    return this.sampleRate;
  }

  synthesize(text: string, callback: (samples: Int16Array, events: EspeakEvent[]) => boolean, tenant?: string): Promise<void> {
    const restore = this.restoreNext;
    this.restoreNext = false;
    return this.thread.enqueue(this.kind, { ...this.settings }, restore, text, callback, tenantPath(tenant));
  }
}

/** The temp-0 instance's handle: only it can be restored (the engine tests for `restore`). */
class DeterministicWasmEspeak extends WasmEspeak implements EspeakDeterministicWorker {
  restore(): void {
    this.restoreNext = true;
  }
}

let thread: EspeakThread | undefined;
let loading: Promise<EspeakAsyncWorker> | undefined;
let loadingDeterministic: Promise<EspeakDeterministicWorker> | undefined;

function currentThread(): EspeakThread {
  thread ??= new EspeakThread(packageUrl(), (t) => {
    // A dead thread's instances go with it: the next load starts afresh.
    if (thread !== t) return;
    thread = undefined;
    loading = undefined;
    loadingDeterministic = undefined;
  });
  return thread;
}

async function loadPlain(): Promise<WasmEspeak> {
  const t = currentThread();
  return new WasmEspeak(t, 'plain', await t.load('plain'));
}

async function loadRestorable(): Promise<DeterministicWasmEspeak> {
  const t = currentThread();
  return new DeterministicWasmEspeak(t, 'deterministic', await t.load('deterministic'));
}

/**
 * The shared espeak-ng instance (on the espeak-ng thread), loaded on first use: its syntheses run
 * off the event loop, callers in turn, {@link ESPEAK_WASM_QUEUE} waiting at most. Rejects with
 * `ENGINE_UNAVAILABLE` when the package is missing.
 */
export function loadEspeak(): Promise<EspeakAsyncWorker> {
  const p = (loading ??= loadPlain());
  p.catch(() => {
    if (loading === p) loading = undefined;
  });
  return p;
}

/**
 * A second espeak-ng instance in the same thread, loaded on first use, for deterministic
 * synthesis: `restore()` makes the next synthesis start from the heap saved once loaded. It costs
 * about 17 MB of heap, its copy, and the 24 MB of voice data; it shares the queue of
 * {@link loadEspeak}.
 */
export function loadDeterministicEspeak(): Promise<EspeakDeterministicWorker> {
  const p = (loadingDeterministic ??= loadRestorable());
  p.catch(() => {
    if (loadingDeterministic === p) loadingDeterministic = undefined;
  });
  return p;
}

/**
 * Stops the espeak-ng thread (tests, shutdown); its syntheses fail with `PROTOCOL_INTERNAL`, and
 * the next load starts a new one. An idle thread never keeps the process alive, so this is optional.
 */
export async function closeEspeakThread(): Promise<void> {
  const t = thread;
  if (t) await t.terminate();
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
