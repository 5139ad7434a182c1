/**
 * The worker threads that run one sherpa-onnx model (issue 24): synthesis and recognition never
 * run on the event loop, so `/healthz` and every other session answer while a model works.
 *
 * Each worker loads its own copy of the model (with the async API) and runs one job at a time: a
 * TTS job is one sentence (sherpa-onnx's progress callback cannot stop a generation, so the text
 * per call is bounded by the engine), an STT job one VAD segment. Jobs wait in a fair queue of at
 * most `maxQueued` (issue 31): callers (the engine config's `tenant`: organization, key, socket)
 * served in turn, {@link SHERPA_QUANTUM} units of work a turn (characters of a sentence, tenths of
 * a second of a segment); in a full queue the caller past its share is refused with `ENGINE_BUSY`
 * (1011 / 503), never another.
 * A job whose request has gone (`isCancelled()`) is dropped when it reaches the front.
 *
 * sherpa-onnx's async calls run on libuv's thread pool (4 threads unless `UV_THREADPOOL_SIZE` says
 * otherwise, shared with file I/O), so the default pool ({@link defaultSherpaWorkers}) leaves at
 * least one of them free. Memory: one model copy per worker (a Piper voice ~60–120 MB, Whisper
 * small ~0.5 GB); size the pool with `limits.sherpaWorkers`.
 *
 * A worker keeps the process alive only while it loads the model or runs a job: an idle pool never does.
 */
import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import { evalWorker } from './eval-worker.js';
import { describeValue, optionsArg } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';
import { sherpaModelArg, sherpaPackagePath, type SherpaModel } from './sherpa-model.js';
import { FairQueue, shareExceeded, tenantPath } from './fair-queue.js';

/** Default workers: the machine's cores, at most 3 (libuv's default pool of 4 keeps one for I/O), at least 1. */
export function defaultSherpaWorkers(cores: number = availableParallelism()): number {
  if (!Number.isInteger(cores) || cores < 1) throw new VoicewireError('INVALID_ARGUMENT', `defaultSherpaWorkers: cores must be an integer ≥ 1, got ${describeValue(cores)}`);
  return Math.max(1, Math.min(3, cores));
}

/** Default bound of the job queue (sentences or segments waiting for a worker). */
export const DEFAULT_SHERPA_QUEUE = 64;

/** Work a caller's turn is worth: 50 characters of TTS text, or 5 s of STT audio (in tenths of a second). */
export const SHERPA_QUANTUM = 50;

/** A job's cost in the fair queue: characters of a sentence, tenths of a second of a segment (at least 1). */
function jobCost(job: TtsJob | SttJob): number {
  return Math.max(1, job.op === 'tts' ? job.text.length : Math.ceil((job.samples.length / job.sampleRate) * 10));
}

/** A TTS job: one sentence. */
export interface TtsJob {
  op: 'tts';
  text: string;
  sid: number;
  speed: number;
}
/** What a TTS job gives back: the sentence's audio at the model's rate. */
export interface TtsJobResult {
  samples: Float32Array;
  sampleRate: number;
}
/** An STT job: one segment of 16 kHz mono float audio. */
export interface SttJob {
  op: 'stt';
  samples: Float32Array;
  sampleRate: number;
  /**
   * The segment's language, for a model whose language is set per request
   * ({@link SherpaModel.perRequestLanguage}: a multilingual Whisper); ignored by others.
   */
  language?: string;
}
/** What an STT job gives back (sherpa-onnx's result, trimmed). */
export interface SttJobResult {
  text: string;
  tokens: string[];
  timestamps: number[];
}

/**
 * The worker's code (CommonJS, evaluated: the package stays one bundle). It loads the model, says
 * `ready` (or `failed`), then runs jobs one at a time with the async APIs only.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const sherpa = require(workerData.pkg);
(async () => {
  let engine;
  let language = workerData.kind === 'stt' && workerData.config.modelConfig && workerData.config.modelConfig.whisper ? workerData.config.modelConfig.whisper.language : undefined;
  try {
    engine = workerData.kind === 'tts'
      ? await sherpa.OfflineTts.createAsync(workerData.config)
      : await sherpa.OfflineRecognizer.createAsync(workerData.config);
  } catch (e) {
    parentPort.postMessage({ type: 'failed', message: String((e && e.message) || e) });
    return;
  }
  parentPort.on('message', async (m) => {
    try {
      if (m.op === 'tts') {
        const a = await engine.generateAsync({ text: m.text, sid: m.sid, speed: m.speed });
        const samples = new Float32Array(a.samples);
        parentPort.postMessage({ type: 'done', id: m.id, result: { samples, sampleRate: a.sampleRate } }, [samples.buffer]);
      } else {
        // A multilingual Whisper's language: setConfig copies the whisper config (microseconds, no
        // reload), so one recognizer serves every language; only when it changes.
        if (workerData.perRequestLanguage && typeof m.language === 'string' && m.language !== language) {
          const c = JSON.parse(JSON.stringify(workerData.config));
          c.modelConfig.whisper.language = m.language;
          engine.setConfig(c);
          language = m.language;
        }
        const s = engine.createStream();
        s.acceptWaveform({ samples: m.samples, sampleRate: m.sampleRate });
        const r = await engine.decodeAsync(s);
        parentPort.postMessage({ type: 'done', id: m.id, result: { text: r.text || '', tokens: r.tokens || [], timestamps: r.timestamps || [] } });
      }
    } catch (e) {
      parentPort.postMessage({ type: 'error', id: m.id, message: String((e && e.message) || e) });
    }
  });
  parentPort.postMessage({ type: 'ready', numSpeakers: engine.numSpeakers, sampleRate: engine.sampleRate });
})();
`;

interface Pending {
  id: number;
  job: TtsJob | SttJob;
  isCancelled: () => boolean;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

interface Slot {
  worker: Worker;
  ready: boolean;
  job: Pending | undefined;
}

/** Options of {@link SherpaPool}. */
export interface SherpaPoolOptions {
  /** Worker threads, each with its own copy of the model. Default {@link defaultSherpaWorkers}. */
  workers?: number;
  /** Jobs that may wait for a worker; one more is `ENGINE_BUSY`. Default {@link DEFAULT_SHERPA_QUEUE}. */
  maxQueued?: number;
}

/** Worker threads running one model; see the module comment. */
export class SherpaPool {
  private readonly slots: Slot[] = [];
  private readonly queue: FairQueue<Pending>;
  private nextId = 0;
  private closed = false;
  private failure: VoicewireError | undefined;
  private size: number;
  private maxQueued: number;
  private readonly pkg: string;
  /** Resolves once every worker has loaded the model (rejects when one could not). */
  readonly ready: Promise<void>;
  private settleReady!: { resolve: () => void; reject: (e: unknown) => void };
  private readyCount = 0;

  constructor(
    readonly model: SherpaModel,
    options: SherpaPoolOptions = {},
  ) {
    // Checked before any worker starts (each loads a model: seconds of CPU).
    sherpaModelArg(model, 'SherpaPool: model');
    options = optionsArg(options, 'SherpaPool: options');
    this.size = options.workers ?? defaultSherpaWorkers();
    this.maxQueued = options.maxQueued ?? DEFAULT_SHERPA_QUEUE;
    for (const [name, v] of [['workers', this.size], ['maxQueued', this.maxQueued]] as const) {
      if (!Number.isInteger(v) || v < 1 || v > 256) throw new VoicewireError('INVALID_ARGUMENT', `SherpaPool: ${name} must be an integer in [1, 256], got ${describeValue(v)}`);
    }
    this.queue = new FairQueue<Pending>({ capacity: this.maxQueued, quantum: SHERPA_QUANTUM });
    this.pkg = sherpaPackagePath();
    this.ready = new Promise((resolve, reject) => (this.settleReady = { resolve, reject }));
    this.ready.catch(() => undefined);
    for (let i = 0; i < this.size; i++) this.spawn();
  }

  /** Jobs waiting and jobs running now. */
  get load(): { queued: number; running: number; workers: number } {
    return { queued: this.queue.size, running: this.slots.filter((s) => s.job !== undefined).length, workers: this.slots.length };
  }

  /** Changes the queue bound (the server's `limits.sherpaQueue`). */
  setMaxQueued(n: number): void {
    this.queue.setLimit(n);
    this.maxQueued = n;
  }

  /** Grows or shrinks the pool to `n` workers (idle ones leave first; busy ones after their job). */
  setWorkers(n: number): void {
    this.size = n;
    while (this.slots.length < n) this.spawn();
    for (const s of [...this.slots]) {
      if (this.slots.length <= n) break;
      if (s.job === undefined) this.retire(s);
    }
  }

  private spawn(): void {
    const worker = evalWorker(WORKER_SOURCE, { workerData: { pkg: this.pkg, kind: this.model.kind, config: this.model.config, perRequestLanguage: this.model.perRequestLanguage === true } });
    const slot: Slot = { worker, ready: false, job: undefined };
    this.slots.push(slot);
    worker.on('message', (m: { type: string; id?: number; result?: unknown; message?: string }) => {
      if (m.type === 'ready') {
        slot.ready = true;
        worker.unref();
        if (++this.readyCount === this.size) this.settleReady.resolve();
        this.dispatch();
      } else if (m.type === 'failed') {
        this.fail(new VoicewireError('MODEL_INVALID', `model folder ${this.model.dir}: a worker could not load it: ${m.message ?? ''}`));
      } else if (slot.job !== undefined && m.id === slot.job.id) {
        const job = slot.job;
        slot.job = undefined;
        worker.unref();
        if (m.type === 'done') job.resolve(m.result);
        else job.reject(new VoicewireError('PROTOCOL_INTERNAL', `sherpa-onnx (${this.model.name}): ${m.message ?? 'failed'}`));
        if (this.slots.length > this.size) this.retire(slot);
        this.dispatch();
      }
    });
    worker.on('error', (err) => this.lost(slot, err));
    worker.on('exit', () => this.lost(slot, undefined));
    // Referenced only while it loads or runs a job: an idle pool never keeps the process alive.
    // (After the listeners: adding a 'message' listener refs the worker's port again.)
    worker.ref();
  }

  private retire(slot: Slot): void {
    this.slots.splice(this.slots.indexOf(slot), 1);
    void slot.worker.terminate();
  }

  /** A worker ended: its job fails, and a new worker takes its place while the pool is open. */
  private lost(slot: Slot, err: Error | undefined): void {
    const i = this.slots.indexOf(slot);
    if (i < 0) return;
    this.slots.splice(i, 1);
    slot.job?.reject(new VoicewireError('PROTOCOL_INTERNAL', `sherpa-onnx (${this.model.name}): its worker stopped${err ? `: ${err.message}` : ''}`, err ? { cause: err } : undefined));
    if (!this.closed && this.failure === undefined && this.slots.length < this.size) {
      if (!slot.ready) this.fail(new VoicewireError('MODEL_INVALID', `model folder ${this.model.dir}: a worker stopped while loading it${err ? `: ${err.message}` : ''}`));
      else this.spawn();
    }
  }

  private fail(err: VoicewireError): void {
    this.failure ??= err;
    this.settleReady.reject(err);
    for (const p of this.queue.clear()) p.reject(err);
  }

  /**
   * Runs `job` on a worker when one is free and `tenant`'s turn comes (the engine config's
   * `tenant`; default: anonymous).
   * @throws VoicewireError `ENGINE_BUSY` when `maxQueued` jobs wait already and this caller holds
   *   the most (or one of its own jobs waiting is pushed out); `INVALID_STATE` after close.
   */
  run(job: TtsJob, isCancelled?: () => boolean, tenant?: string): Promise<TtsJobResult>;
  run(job: SttJob, isCancelled?: () => boolean, tenant?: string): Promise<SttJobResult>;
  run(job: TtsJob | SttJob, isCancelled: () => boolean = () => false, tenant?: string): Promise<unknown> {
    if (this.closed) return Promise.reject(new VoicewireError('INVALID_STATE', 'the sherpa-onnx worker pool is closed'));
    if (this.failure !== undefined) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      const lost = this.queue.push(tenantPath(tenant), { id: this.nextId++, job, isCancelled, resolve, reject }, jobCost(job));
      if (lost !== undefined) lost.item.reject(shareExceeded(`sherpa-onnx (${this.model.name}, limits.sherpaQueue)`, `${this.model.kind.toUpperCase()} jobs`, this.maxQueued, lost));
      this.dispatch();
    });
  }

  private dispatch(): void {
    for (const slot of this.slots) {
      if (!slot.ready || slot.job !== undefined) continue;
      let next = this.queue.shift();
      while (next !== undefined && next.isCancelled()) {
        next.reject(new VoicewireError('INVALID_STATE', 'the request ended before its job ran'));
        next = this.queue.shift();
      }
      if (next === undefined) return;
      slot.job = next;
      slot.worker.ref();
      const transfer = next.job.op === 'stt' ? [next.job.samples.buffer as ArrayBuffer] : [];
      slot.worker.postMessage({ ...next.job, id: next.id }, transfer);
    }
  }

  /** Stops every worker; waiting and running jobs fail with `INVALID_STATE`. */
  async close(): Promise<void> {
    this.closed = true;
    const err = new VoicewireError('INVALID_STATE', 'the sherpa-onnx worker pool closed');
    for (const p of this.queue.clear()) p.reject(err);
    const slots = this.slots.splice(0);
    for (const s of slots) s.job?.reject(err);
    await Promise.all(slots.map((s) => s.worker.terminate()));
  }
}
