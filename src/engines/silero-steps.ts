/**
 * Silero VAD for the STT `step` messages (issue 33 item 2, docs/api.md §4.4): with
 * `serve --vad-model FILE`, every STT engine's steps (pocketsphinx, tone, sherpa-onnx, a module)
 * carry inactivity probabilities from the Silero model instead of the WebRTC VAD's (vad.ts), and
 * so do every end-of-turn read from them (the SDK's turn-taking, the LiveKit plugin,
 * `/v1/realtime`'s `server_vad`).
 *
 * {@link withSileroSteps} wraps any {@link SttEngine}: each pushed frame also goes to the Silero
 * worker, and each `step` the engine emits has its `vad` replaced by Silero's for the same frame
 * (the k-th step is the k-th frame's, §4.4's "one step per frame"). Events the engine emits after a
 * step that waits for Silero wait behind it, so the order of events is the engine's. The engines
 * stay untouched.
 *
 * The model runs in sherpa-onnx (as sherpa-vad.ts does), on one worker thread
 * ({@link SileroStepsWorker}), never on the event loop: each stream has its own `Vad`, fed 32 ms
 * windows (512 samples at 16 kHz); after each window its `isDetected()` is Silero's decision
 * (probability above `threshold`, kept while above `threshold − 0.15`, sherpa-onnx's hysteresis).
 * sherpa-onnx-node gives the decision, not the raw probability, so a frame's speech fraction is
 * the share of its windows Silero calls speech; the horizons then follow the same pause-length
 * model as the WebRTC VAD's (vad.ts {@link inactivityFromPause}, same {@link VAD_HORIZONS}), so the
 * two differ only by which model hears speech.
 *
 * Budget: one worker thread per process (beside sherpa-vad.ts's, with `--stt sherpa-onnx`), one
 * `Vad` (an ONNX session, ~2–5 MB, and a ring buffer) per live STT stream, reset and reused, at most
 * {@link KEEP_IDLE} kept idle; at most {@link MAX_IN_FLIGHT} frames per stream wait for the worker
 * (a push waits beyond that), so memory grows with the streams the server's STT limits allow.
 */
import { WORKER_RELEASE } from './stream-worker.js';
import type { SttEngine, SttEngineConfig, SttEngineEvent, SttEngineStream } from '../sessions/engine.js';
import type { VadPrediction } from '../protocol/messages.js';
import { createInt16Resampler, type Resampler } from '../audio/resampler.js';
import { describeValue, functionArg, objectArg } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';
import { evalWorker } from './eval-worker.js';
import { StreamWorker } from './stream-worker.js';
import { inactivityFromPause, PAUSE_MODEL } from './vad.js';
import { resolveSherpaVad, validateSherpaVad, type SherpaVadModel } from './sherpa-vad.js';
import { sherpaPackagePath } from './sherpa-model.js';

/** Idle `Vad`s the worker keeps for the next streams. */
export const KEEP_IDLE = 16;

/** Frames of one stream the worker may still owe; a push waits beyond (320 ms of audio). */
export const MAX_IN_FLIGHT = 4;

/** Continuous speech after which the worker flushes its `Vad` (its ring buffer holds the segment), seconds. */
const MAX_RUN_SECONDS = 20;

/**
 * Silero's decision settings for steps: speech is heard from the second window above the
 * threshold, a pause from the second window below it (sherpa-onnx's minimum; sherpa-vad.ts cuts
 * segments with 0.25 s and 0.5 s): steps follow the audio closely, the pause model does the waiting.
 */
const STEP_VAD_OPTIONS = { threshold: 0.5, minSpeechSeconds: 0.01, minSilenceSeconds: 0.01, maxSegmentSeconds: MAX_RUN_SECONDS };

/**
 * The worker's code (CommonJS, evaluated). Messages: `open` (a stream gets a `Vad`), `frame`
 * (16 kHz float samples: answered with the windows it completed and how many Silero called
 * speech), `close` (the `Vad` is reset and kept for the next stream).
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const sherpa = require(workerData.pkg);
const W = 512;
const streams = new Map();
const idle = [];
${WORKER_RELEASE}
const clear = (vad) => { while (!vad.isEmpty()) vad.pop(); };
parentPort.on('message', (m) => {
  try {
    if (m.op === 'open') {
      streams.set(m.id, { vad: idle.pop() || new sherpa.Vad(workerData.config, workerData.bufferSeconds), rest: new Float32Array(W), fill: 0, run: 0 });
      return;
    }
    if (m.op === 'close') return release(m.id);
    const s = streams.get(m.id);
    if (s === undefined) return;
    let speech = 0, total = 0;
    for (let i = 0; i < m.samples.length; ) {
      const n = Math.min(W - s.fill, m.samples.length - i);
      s.rest.set(m.samples.subarray(i, i + n), s.fill);
      s.fill += n;
      i += n;
      if (s.fill < W) break;
      s.fill = 0;
      s.vad.acceptWaveform(s.rest.slice());
      const d = s.vad.isDetected();
      total++;
      if (d) speech++;
      // Segments are not wanted here: dropped as they close, and a long one is cut (its audio is held).
      clear(s.vad);
      s.run = d ? s.run + W : 0;
      if (s.run >= workerData.maxRun) {
        s.vad.flush();
        clear(s.vad);
        s.run = 0;
      }
    }
    parentPort.postMessage({ type: 'frame', id: m.id, speech, total });
  } catch (e) {
    release(m.id);
    parentPort.postMessage({ type: 'error', id: m.id, message: String((e && e.message) || e) });
  }
});
`;

/** One frame's answer: windows completed in it, and how many Silero called speech. */
export interface SileroFrame {
  speech: number;
  total: number;
}

/** One stream's side of the worker. */
export interface SileroStepsStream {
  /** The next 16 kHz samples (float, −1…1, transferred); resolves with that frame's windows. */
  frame(samples: Float32Array): Promise<SileroFrame>;
  /** Drops the stream (its `Vad` goes back to the worker's idle ones); pending frames reject. */
  close(): void;
}

interface OpenStream {
  waiting: Array<{ resolve: (f: SileroFrame) => void; reject: (e: unknown) => void }>;
}

/**
 * The worker thread that runs one Silero VAD for the steps of every STT stream of a process (see
 * the module comment). Started by the first stream; it keeps the process alive only while a stream
 * is open.
 */
export class SileroStepsWorker {
  private readonly host: StreamWorker<OpenStream, { type: string; id: number; speech?: number; total?: number; message?: string }>;
  private readonly model: SherpaVadModel;

  /** `file`: a Silero VAD (v4 or v5), as `--vad-model` takes it; checked by {@link resolveSherpaVad}. */
  constructor(file: string) {
    const pkg = sherpaPackagePath();
    const model = resolveSherpaVad(file, STEP_VAD_OPTIONS);
    this.model = model;
    this.host = new StreamWorker({
      name: `Silero VAD (${model.file})`,
      spawn: () =>
        evalWorker(WORKER_SOURCE, {
          workerData: { pkg, config: model.config, bufferSeconds: MAX_RUN_SECONDS + 5, maxRun: MAX_RUN_SECONDS * 16000, keepIdle: KEEP_IDLE },
        }),
      onMessage: (m, s) => {
        if (m.type === 'frame') s.waiting.shift()?.resolve({ speech: m.speech ?? 0, total: m.total ?? 0 });
        else if (m.type === 'error') this.drop(m.id, new VoicewireError('PROTOCOL_INTERNAL', `Silero VAD (${model.file}): ${m.message ?? 'failed'}`));
      },
      fail: (s, err) => {
        for (const w of s.waiting.splice(0)) w.reject(err);
      },
    });
  }

  /** The model file. */
  get file(): string {
    return this.model.file;
  }

  /** Streams open now. */
  get open(): number {
    return this.host.open;
  }

  /** True while the worker thread runs. */
  get running(): boolean {
    return this.host.running;
  }

  /** Loads and runs the file in a child process first (sherpa-onnx ends the process on a file it cannot run). */
  validate(timeoutMs?: number): Promise<void> {
    return validateSherpaVad(this.model, timeoutMs);
  }

  openStream(): SileroStepsStream {
    const entry: OpenStream = { waiting: [] };
    const id = this.host.add(entry);
    this.host.post({ op: 'open', id });
    return {
      frame: (samples) => {
        if (!(samples instanceof Float32Array)) return Promise.reject(new VoicewireError('INVALID_ARGUMENT', `SileroStepsStream.frame: samples must be a Float32Array, got ${describeValue(samples)}`));
        if (this.host.get(id) === undefined || !this.host.running) return Promise.reject(new VoicewireError('INVALID_STATE', 'SileroStepsStream.frame after close()'));
        return new Promise<SileroFrame>((resolve, reject) => {
          entry.waiting.push({ resolve, reject });
          this.host.post({ op: 'frame', id, samples }, [samples.buffer as ArrayBuffer]);
        });
      },
      close: () => {
        if (!this.drop(id, new VoicewireError('INVALID_STATE', 'the stream closed'))) return;
        this.host.post({ op: 'close', id });
      },
    };
  }

  /** Forgets stream `id`, rejecting what it waits for; false when it was gone. */
  private drop(id: number, err: VoicewireError): boolean {
    const s = this.host.remove(id);
    if (s === undefined) return false;
    for (const w of s.waiting.splice(0)) w.reject(err);
    return true;
  }

  /** Stops the worker; open streams' pending frames fail with `INVALID_STATE`. */
  close(): Promise<void> {
    return this.host.close();
  }
}

/**
 * A worker for `file` (`--vad-model`), loaded and run once in a child process first.
 * @throws VoicewireError `MODEL_INVALID` naming the file and the cause; `ENGINE_UNAVAILABLE` without sherpa-onnx.
 */
export async function startSileroSteps(file: string): Promise<SileroStepsWorker> {
  const worker = new SileroStepsWorker(file);
  await worker.validate();
  return worker;
}

/** `engine` with its steps' `vad` from `silero` (see the module comment). */
export function withSileroSteps(engine: SttEngine, silero: SileroStepsWorker): SttEngine {
  objectArg(engine, 'withSileroSteps: engine');
  functionArg(engine.open, 'withSileroSteps: engine.open');
  if (!(silero instanceof SileroStepsWorker)) throw new VoicewireError('INVALID_ARGUMENT', `withSileroSteps: silero must be a SileroStepsWorker, got ${describeValue(silero)}`);
  return {
    async open(config: SttEngineConfig, emit: (event: SttEngineEvent) => void): Promise<SttEngineStream> {
      const stream = new SileroStepsStreamWrapper(emit);
      stream.inner = await engine.open(config, (e) => stream.fromEngine(e));
      try {
        stream.start(silero.openStream());
      } catch (err) {
        stream.inner.close();
        throw err;
      }
      return stream;
    },
  };
}

/** One wrapped stream: the engine's events, with its steps held until Silero's answer for the frame. */
class SileroStepsStreamWrapper implements SttEngineStream {
  inner!: SttEngineStream;
  private silero!: SileroStepsStream;
  private resampler!: Resampler<Int16Array>;
  private sampleRate = 24000;
  /** Silero's horizons for frames whose step the engine has not emitted yet. */
  private readonly ready: VadPrediction[][] = [];
  /** The engine's events from the first step still waiting for Silero on. */
  private readonly held: SttEngineEvent[] = [];
  private readonly inFlight: Array<Promise<void>> = [];
  private failure: unknown;
  private closed = false;
  private x = 0;
  private silence = 0;
  private fraction = 0;

  constructor(private readonly emit: (event: SttEngineEvent) => void) {}

  get info() {
    return this.inner.info;
  }

  start(silero: SileroStepsStream): void {
    this.silero = silero;
    this.sampleRate = this.inner.info.sampleRate ?? 24000;
    this.resampler = createInt16Resampler({ from: this.sampleRate, to: 16000 });
  }

  fromEngine(e: SttEngineEvent): void {
    if (this.closed) return;
    if (e.type !== 'step' && this.held.length === 0) return this.emit(e);
    this.held.push(e);
    this.pump();
  }

  async push(frame: Int16Array, audioSamples?: number): Promise<void> {
    this.check();
    const pcm = this.resampler.push(frame);
    const samples = new Float32Array(pcm.length);
    for (let i = 0; i < pcm.length; i++) samples[i] = pcm[i]! / 32768;
    const seconds = frame.length / this.sampleRate;
    const done = this.silero.frame(samples).then(
      (f) => this.heard(f, seconds),
      (err: unknown) => {
        this.failure ??= err;
      },
    );
    this.inFlight.push(done);
    void done.then(() => this.inFlight.splice(this.inFlight.indexOf(done), 1));
    await this.inner.push(frame, audioSamples);
    // Bounded: at most MAX_IN_FLIGHT frames wait for the worker.
    while (this.inFlight.length >= MAX_IN_FLIGHT) await this.inFlight[0];
    // A close that overtook this push ends it quietly (its events are dropped, §engine.ts).
    if (!this.closed) this.check();
  }

  async end(): Promise<void> {
    this.check();
    await this.inner.end?.();
    await Promise.all(this.inFlight);
    if (this.closed) return;
    this.check();
    this.pump();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.held.length = 0;
    this.silero.close();
    this.inner.close();
  }

  /** A frame's answer: the same pause model as the WebRTC VAD's (vad.ts), on Silero's speech fraction. */
  private heard(f: SileroFrame, seconds: number): void {
    if (f.total > 0) this.fraction = f.speech / f.total;
    this.x = PAUSE_MODEL.smoothing * this.fraction + (1 - PAUSE_MODEL.smoothing) * this.x;
    // One window Silero calls speech is ≥ 64 ms of it (its decision needs two windows above the
    // threshold): it ends the silence, where the WebRTC VAD's 20 ms calls need half the frame.
    this.silence = f.speech > 0 ? 0 : this.silence + seconds;
    this.ready.push(inactivityFromPause(Math.min(1, Math.max(0, this.x)), this.silence));
    this.pump();
  }

  /** Emits held events in order, each step with the next frame's Silero horizons. */
  private pump(): void {
    while (!this.closed && this.held.length > 0) {
      const e = this.held[0]!;
      if (e.type === 'step') {
        const vad = this.ready.shift();
        if (vad === undefined) return;
        this.held.shift();
        this.emit({ ...e, vad });
      } else {
        this.held.shift();
        this.emit(e);
      }
    }
  }

  private check(): void {
    if (this.failure !== undefined) throw this.failure;
    if (this.closed) throw new VoicewireError('INVALID_STATE', 'the STT stream is closed');
  }
}
