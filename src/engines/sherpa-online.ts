/**
 * The worker threads that run one streaming (online) sherpa-onnx model (issue 24): each request's
 * stream lives on ONE worker for its whole life, because sherpa-onnx keeps the stream's state
 * (features, encoder caches, the decoder's result) inside that worker's recognizer.
 *
 * A stream is opened on the worker holding the fewest streams; a worker holds at most
 * `streamsPerWorker` (`limits.sherpaStreams`), so the pool serves `workers × streamsPerWorker`
 * requests at once and one more is refused at open with `ENGINE_BUSY` (1011 / 503: the server is
 * busy). Audio goes to the worker as it arrives; the worker accepts it, decodes every chunk that
 * is ready, and posts the partial result back when it changed (and at an endpoint, after which the
 * stream starts a new segment).
 *
 * sherpa-onnx-node 1.13.8 has no async API for streaming models: `new OnlineRecognizer` and
 * `decode` are synchronous, so they run on the worker's own thread (never the event loop), one
 * message at a time: a worker's streams share its CPU. Memory: one model copy per worker; a
 * stream's native state (features and caches: a few MB for a real model) is dropped when its
 * request ends (closed or finished) and freed by the worker's garbage collector.
 *
 * A worker keeps the process alive only while it loads the model or holds a stream.
 */
import type { Worker } from 'node:worker_threads';
import { describeValue, functionArg, optionsArg } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';
import { evalWorker } from './eval-worker.js';
import { defaultSherpaWorkers } from './sherpa-pool.js';
import { sherpaModelArg, sherpaPackagePath, type SherpaModel } from './sherpa-model.js';

/** Default streams one worker decodes at once (`limits.sherpaStreams`). */
export const DEFAULT_SHERPA_STREAMS = 4;

/** A partial or final result of a stream (sherpa-onnx's, trimmed), within its current segment. */
export interface OnlineResult {
  text: string;
  tokens: string[];
  /** Each token's time, seconds from the segment's start. */
  timestamps: number[];
  /** The segment's start, seconds into the stream. */
  startTime: number;
  /** sherpa-onnx found an endpoint: this segment is over, the next result starts another. */
  endpoint: boolean;
  /** The last result: the stream ended. */
  final: boolean;
}

/**
 * The worker's code (CommonJS, evaluated). It loads the model, says `ready` (or `failed`), then
 * serves its streams' messages in order: `open`, `audio`, `end`, `close`.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const sherpa = require(workerData.pkg);
(() => {
let rec;
try {
  rec = new sherpa.OnlineRecognizer(workerData.config);
} catch (e) {
  parentPort.postMessage({ type: 'failed', message: String((e && e.message) || e) });
  return;
}
const streams = new Map();
// Zeros after the last audio, so the last partial chunk is decoded (the model decodes whole chunks only).
const TAIL = new Float32Array(Math.round(0.4 * 16000));
parentPort.on('message', (m) => {
  if (m.op === 'open') {
    streams.set(m.sid, { s: rec.createStream(), text: '' });
    return;
  }
  const st = streams.get(m.sid);
  if (st === undefined) return;
  if (m.op === 'close') {
    streams.delete(m.sid);
    parentPort.postMessage({ type: 'closed', sid: m.sid });
    return;
  }
  try {
    const final = m.op === 'end';
    if (final) {
      st.s.acceptWaveform({ samples: TAIL, sampleRate: 16000 });
      st.s.inputFinished();
    } else {
      st.s.acceptWaveform({ samples: m.samples, sampleRate: 16000 });
    }
    while (rec.isReady(st.s)) rec.decode(st.s);
    const endpoint = !final && rec.isEndpoint(st.s);
    const r = rec.getResult(st.s);
    const text = r.text || '';
    if (final || endpoint || text !== st.text) {
      parentPort.postMessage({ type: 'result', sid: m.sid, result: { text, tokens: r.tokens || [], timestamps: r.timestamps || [], startTime: r.start_time || 0, endpoint, final } });
    }
    st.text = text;
    if (endpoint) {
      rec.reset(st.s);
      st.text = '';
    }
    if (final) {
      streams.delete(m.sid);
      parentPort.postMessage({ type: 'closed', sid: m.sid });
    }
  } catch (e) {
    streams.delete(m.sid);
    parentPort.postMessage({ type: 'error', sid: m.sid, message: String((e && e.message) || e) });
    parentPort.postMessage({ type: 'closed', sid: m.sid });
  }
});
parentPort.postMessage({ type: 'ready' });
})();
`;

interface Slot {
  worker: Worker;
  ready: boolean;
  /** Streams opened here and not yet closed by the worker. */
  streams: Map<number, StreamState>;
}

interface StreamState {
  onResult: (r: OnlineResult) => void;
  onError: (err: unknown) => void;
  ended: boolean;
  settleEnd?: { resolve: () => void; reject: (e: unknown) => void } | undefined;
}

/** One request's stream on its worker. */
export interface SherpaOnlineStream {
  /** 16 kHz mono float audio, as it arrives. */
  push(samples: Float32Array): void;
  /** No more audio: resolves after the final result was delivered. */
  end(): Promise<void>;
  /** Drops the stream (its worker frees it); no result is delivered after. */
  close(): void;
}

/** Options of {@link SherpaOnlinePool}. */
export interface SherpaOnlinePoolOptions {
  /** Worker threads, each with its own copy of the model. Default {@link defaultSherpaWorkers}. */
  workers?: number;
  /** Streams one worker holds at once; one more than the pool holds is `ENGINE_BUSY`. Default {@link DEFAULT_SHERPA_STREAMS}. */
  streamsPerWorker?: number;
}

/** Worker threads running one streaming model; see the module comment. */
export class SherpaOnlinePool {
  private readonly slots: Slot[] = [];
  private nextSid = 0;
  private closed = false;
  private failure: VoicewireError | undefined;
  private size: number;
  private perWorker: number;
  private readonly pkg: string;
  /** Resolves once every worker has loaded the model (rejects when one could not). */
  readonly ready: Promise<void>;
  private settleReady!: { resolve: () => void; reject: (e: unknown) => void };
  private readyCount = 0;

  constructor(
    readonly model: SherpaModel,
    options: SherpaOnlinePoolOptions = {},
  ) {
    sherpaModelArg(model, 'SherpaOnlinePool: model');
    if (model.streaming !== true) throw new VoicewireError('INVALID_ARGUMENT', `SherpaOnlinePool: model ${model.dir} is not a streaming model (${model.type}): use SherpaPool`);
    options = optionsArg(options, 'SherpaOnlinePool: options');
    this.size = options.workers ?? defaultSherpaWorkers();
    this.perWorker = options.streamsPerWorker ?? DEFAULT_SHERPA_STREAMS;
    for (const [name, v] of [['workers', this.size], ['streamsPerWorker', this.perWorker]] as const) {
      if (!Number.isInteger(v) || v < 1 || v > 256) throw new VoicewireError('INVALID_ARGUMENT', `SherpaOnlinePool: ${name} must be an integer in [1, 256], got ${describeValue(v)}`);
    }
    this.pkg = sherpaPackagePath();
    this.ready = new Promise((resolve, reject) => (this.settleReady = { resolve, reject }));
    this.ready.catch(() => undefined);
    for (let i = 0; i < this.size; i++) this.spawn();
  }

  /** Streams open now (counted until their worker has dropped them), and workers. */
  get load(): { streams: number; workers: number } {
    return { streams: this.slots.reduce((n, s) => n + s.streams.size, 0), workers: this.slots.length };
  }

  /** Changes the streams per worker (the server's `limits.sherpaStreams`); open streams stay. */
  setStreamsPerWorker(n: number): void {
    this.perWorker = n;
  }

  /** Grows the pool to `n` workers, or shrinks it by retiring workers that hold no stream. */
  setWorkers(n: number): void {
    this.size = n;
    while (this.slots.length < n) this.spawn();
    for (const s of [...this.slots]) {
      if (this.slots.length <= n) break;
      if (s.streams.size === 0) this.retire(s);
    }
  }

  private spawn(): void {
    const worker = evalWorker(WORKER_SOURCE, { workerData: { pkg: this.pkg, config: this.model.config } });
    const slot: Slot = { worker, ready: false, streams: new Map() };
    this.slots.push(slot);
    worker.on('message', (m: { type: string; sid?: number; result?: OnlineResult; message?: string }) => {
      if (m.type === 'ready') {
        slot.ready = true;
        if (++this.readyCount === this.size) this.settleReady.resolve();
        this.refresh(slot);
        return;
      }
      if (m.type === 'failed') {
        this.fail(new VoicewireError('MODEL_INVALID', `model folder ${this.model.dir}: a worker could not load it: ${m.message ?? ''}`));
        return;
      }
      const st = m.sid === undefined ? undefined : slot.streams.get(m.sid);
      if (m.type === 'closed') {
        slot.streams.delete(m.sid!);
        this.refresh(slot);
        if (st?.settleEnd !== undefined) st.settleEnd.resolve();
        if (this.slots.length > this.size && slot.streams.size === 0) this.retire(slot);
        return;
      }
      if (st === undefined) return;
      if (m.type === 'result' && m.result !== undefined) {
        try {
          st.onResult(m.result);
        } catch (err) {
          st.onError(err);
        }
      } else if (m.type === 'error') {
        const err = new VoicewireError('PROTOCOL_INTERNAL', `sherpa-onnx (${this.model.name}): ${m.message ?? 'failed'}`);
        st.onError(err);
        st.settleEnd?.reject(err);
        st.settleEnd = undefined;
      }
    });
    worker.on('error', (err) => this.lost(slot, err));
    worker.on('exit', () => this.lost(slot, undefined));
    worker.ref();
  }

  /** A worker is referenced while it loads or holds a stream: an idle pool never keeps the process alive. */
  private refresh(slot: Slot): void {
    if (!slot.ready || slot.streams.size > 0) slot.worker.ref();
    else slot.worker.unref();
  }

  private retire(slot: Slot): void {
    const i = this.slots.indexOf(slot);
    if (i >= 0) this.slots.splice(i, 1);
    void slot.worker.terminate();
  }

  /** A worker ended: its streams fail, and a new worker takes its place while the pool is open. */
  private lost(slot: Slot, err: Error | undefined): void {
    const i = this.slots.indexOf(slot);
    if (i < 0) return;
    this.slots.splice(i, 1);
    const e = new VoicewireError('PROTOCOL_INTERNAL', `sherpa-onnx (${this.model.name}): its worker stopped${err ? `: ${err.message}` : ''}`, err ? { cause: err } : undefined);
    for (const st of slot.streams.values()) {
      st.onError(e);
      st.settleEnd?.reject(e);
    }
    slot.streams.clear();
    if (!this.closed && this.failure === undefined && this.slots.length < this.size) {
      if (!slot.ready) this.fail(new VoicewireError('MODEL_INVALID', `model folder ${this.model.dir}: a worker stopped while loading it${err ? `: ${err.message}` : ''}`));
      else this.spawn();
    }
  }

  private fail(err: VoicewireError): void {
    this.failure ??= err;
    this.settleReady.reject(err);
    for (const slot of this.slots) {
      for (const st of slot.streams.values()) {
        st.onError(err);
        st.settleEnd?.reject(err);
      }
      slot.streams.clear();
    }
  }

  /**
   * Opens a stream on the worker holding the fewest; `onResult` gets each partial result that
   * changed, each endpoint's and the final one; `onError` a failure of the stream or its worker.
   * @throws VoicewireError `ENGINE_BUSY` when every worker holds `streamsPerWorker` streams;
   * `INVALID_STATE` after close; the pool's `MODEL_INVALID` when its workers could not load the model.
   */
  open(onResult: (r: OnlineResult) => void, onError: (err: unknown) => void): SherpaOnlineStream {
    functionArg(onResult, 'SherpaOnlinePool.open: onResult');
    functionArg(onError, 'SherpaOnlinePool.open: onError');
    if (this.closed) throw new VoicewireError('INVALID_STATE', 'the sherpa-onnx streaming pool is closed');
    if (this.failure !== undefined) throw this.failure;
    let slot: Slot | undefined;
    for (const s of this.slots) if (this.slots.indexOf(s) < this.size && s.streams.size < this.perWorker && (slot === undefined || s.streams.size < slot.streams.size)) slot = s;
    if (slot === undefined) {
      throw new VoicewireError('ENGINE_BUSY', `the server holds its limit of ${this.perWorker} streams on each of its ${Math.min(this.size, this.slots.length)} ${this.model.name} workers (limits.sherpaStreams × limits.sherpaWorkers): try again later`);
    }
    const sid = this.nextSid++;
    const st: StreamState = { onResult, onError, ended: false };
    const home = slot;
    home.streams.set(sid, st);
    this.refresh(home);
    home.worker.postMessage({ op: 'open', sid });
    let done = false;
    return {
      push: (samples) => {
        if (done || st.ended || samples.length === 0) return;
        home.worker.postMessage({ op: 'audio', sid, samples }, [samples.buffer as ArrayBuffer]);
      },
      end: () => {
        if (done) return Promise.reject(new VoicewireError('INVALID_STATE', 'the stream is closed'));
        if (st.ended) return Promise.reject(new VoicewireError('INVALID_STATE', 'the stream has ended'));
        st.ended = true;
        if (!home.streams.has(sid)) return Promise.reject(this.failure ?? new VoicewireError('PROTOCOL_INTERNAL', `sherpa-onnx (${this.model.name}): the stream was lost`));
        return new Promise<void>((resolve, reject) => {
          st.settleEnd = { resolve, reject };
          home.worker.postMessage({ op: 'end', sid });
        });
      },
      close: () => {
        if (done) return;
        done = true;
        // No more results reach the request; the worker frees the stream and says `closed`.
        st.onResult = () => undefined;
        st.onError = () => undefined;
        if (home.streams.has(sid)) home.worker.postMessage({ op: 'close', sid });
      },
    };
  }

  /** Stops every worker; open streams fail with `INVALID_STATE`. */
  async close(): Promise<void> {
    this.closed = true;
    const err = new VoicewireError('INVALID_STATE', 'the sherpa-onnx streaming pool closed');
    const slots = this.slots.splice(0);
    for (const s of slots) {
      for (const st of s.streams.values()) {
        st.onError(err);
        st.settleEnd?.reject(err);
      }
      s.streams.clear();
    }
    await Promise.all(slots.map((s) => s.worker.terminate()));
  }
}
