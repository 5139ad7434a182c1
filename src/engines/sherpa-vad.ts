/**
 * Silero VAD through sherpa-onnx (`serve --vad-model FILE`, issue 24): the speech segments an
 * offline sherpa-onnx STT model decodes, instead of the WebRTC VAD's (vad.ts).
 *
 * sherpa-onnx's `Vad` is synchronous (each 32 ms window is an ONNX Runtime run, ~0.1–1 ms for the
 * released Silero model, more under load), so it never runs on the event loop: one worker thread
 * per model ({@link SherpaVadWorker}) holds a `Vad` per open stream, takes each stream's 16 kHz
 * audio as it comes and posts back the segments sherpa-onnx closes. Streams are independent; a
 * `Vad` is reused by the next stream after a `reset()` (loading one is an ONNX session: not per
 * request, and not left to the garbage collector).
 *
 * Segments, from sherpa-onnx's voice-activity-detector.cc: a segment opens after
 * `minSpeechDuration` (0.25 s) of windows whose probability passes `threshold` (0.5), starting
 * that long plus two windows (~0.32 s) before; it closes after `minSilenceDuration` (0.5 s) below
 * it, ending that long after its last speech window, and at the end of the stream (`flush`).
 * sherpa-onnx does not cut a long segment itself (past `maxSpeechDuration` it only raises the
 * threshold to 0.9), so the worker flushes a segment that has been open for
 * `maxSegmentSeconds` (a segment is then at most that plus ~0.4 s).
 *
 * A file sherpa-onnx would die on (not ONNX, another signature, a state of the wrong shape) is
 * refused before the server starts: its signature is read here ({@link resolveSherpaVad}), then
 * it is loaded and run on two seconds of audio in a child process ({@link validateSherpaVad}).
 */
import { WORKER_RELEASE } from './stream-worker.js';
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { evalWorker } from './eval-worker.js';
import { StreamWorker } from './stream-worker.js';
import { describeValue, functionArg, optionsArg, stringArg } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';
import { readOnnxInfo } from './onnx-info.js';
import { checkInChild, MODEL_CHECK_TIMEOUT_MS, sherpaPackagePath } from './sherpa-model.js';

/** A Silero VAD file, resolved: what sherpa-onnx's `Vad` is given. */
export interface SherpaVadModel {
  file: string;
  /** Silero v4 (`h`, `c` states) or v5 (`state`, a 64-sample context before each window). */
  version: 4 | 5;
  /** The `VadConfig` sherpa-onnx-node's `Vad` takes (plain JSON). */
  config: Record<string, unknown>;
  /** Longest segment, seconds. */
  maxSegmentSeconds: number;
}

/** Options of {@link resolveSherpaVad}. */
export interface SherpaVadOptions {
  /** Speech probability above which a window is speech. Default 0.5 (Silero's own). */
  threshold?: number;
  /** Silence that closes a segment, seconds. Default 0.5 (the WebRTC path closes after ~0.45 s). */
  minSilenceSeconds?: number;
  /** Speech that opens a segment, seconds. Default 0.25. */
  minSpeechSeconds?: number;
  /** Longest segment, seconds (cut there). Default 20, as the STT engine's `maxSegmentSeconds`. */
  maxSegmentSeconds?: number;
}

/** The signatures silero-vad-model.cc accepts (names in order; a wrong one ends the process). */
const SIGNATURES = [
  { version: 5, inputs: ['input', 'state', 'sr'], outputs: ['output', 'stateN'] },
  { version: 4, inputs: ['input', 'sr', 'h', 'c'], outputs: ['output', 'hn', 'cn'] },
] as const;

function invalid(file: string, cause: string): never {
  throw new VoicewireError('MODEL_INVALID', `VAD model ${file}: ${cause}`);
}

function rangeArg(value: number, what: string, lo: number, hi: number): number {
  if (typeof value !== 'number' || !(value > lo && value <= hi)) throw new VoicewireError('INVALID_ARGUMENT', `resolveSherpaVad: ${what} must be a number in (${lo}, ${hi}], got ${describeValue(value)}`);
  return value;
}

/**
 * The Silero VAD in `file` (sherpa-onnx's `silero_vad.onnx`, v4 or v5).
 * @throws VoicewireError `MODEL_INVALID` naming the file and what is wrong.
 */
export function resolveSherpaVad(file: string, options: SherpaVadOptions = {}): SherpaVadModel {
  file = resolve(stringArg(file, 'resolveSherpaVad: file'));
  options = optionsArg(options, 'resolveSherpaVad: options');
  const threshold = rangeArg(options.threshold ?? 0.5, 'threshold', 0, 1);
  const minSilence = rangeArg(options.minSilenceSeconds ?? 0.5, 'minSilenceSeconds', 0, 10);
  const minSpeech = rangeArg(options.minSpeechSeconds ?? 0.25, 'minSpeechSeconds', 0, 10);
  const maxSegment = rangeArg(options.maxSegmentSeconds ?? 20, 'maxSegmentSeconds', 0, 600);
  const st = statSync(file, { throwIfNoEntry: false });
  if (st === undefined) invalid(file, 'does not exist');
  if (!st.isFile()) invalid(file, 'is not a file (a Silero VAD is one .onnx file, such as silero_vad.onnx)');
  let info;
  try {
    info = readOnnxInfo(file);
  } catch (err) {
    return invalid(file, (err as Error).message.replace(file, 'the file'));
  }
  const same = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((x, i) => x === b[i]);
  const sig = SIGNATURES.find((s) => same(s.inputs, info.inputs) && same(s.outputs, info.outputs));
  if (sig === undefined) {
    invalid(file, `is not a Silero VAD as sherpa-onnx loads it (v5: inputs input, state, sr and outputs output, stateN; v4: input, sr, h, c and output, hn, cn); it has inputs ${info.inputs.join(', ') || 'none'} and outputs ${info.outputs.join(', ') || 'none'}`);
  }
  return {
    file,
    version: sig.version,
    maxSegmentSeconds: maxSegment,
    // v5 needs window 512 at 16 kHz (silero-vad-model.cc exits on another); v4 takes 512 too.
    config: { sileroVad: { model: file, threshold, minSilenceDuration: minSilence, minSpeechDuration: minSpeech, windowSize: 512, maxSpeechDuration: maxSegment }, sampleRate: 16000, numThreads: 1, debug: 0 },
  };
}

/**
 * Loads `vad` in a child process and runs it on two seconds of audio, or rejects with
 * `MODEL_INVALID` naming the file and sherpa-onnx's last words (it ends the process on a model it
 * cannot run: this is the only process that may die of it).
 */
export async function validateSherpaVad(vad: SherpaVadModel, timeoutMs: number = MODEL_CHECK_TIMEOUT_MS): Promise<void> {
  sherpaVadArg(vad, 'validateSherpaVad: vad');
  await checkInChild('vad', vad.config, `VAD model ${vad.file}`, '', timeoutMs, 'validateSherpaVad');
}

function sherpaVadArg(vad: SherpaVadModel, what: string): SherpaVadModel {
  const ok = vad !== null && typeof vad === 'object' && typeof vad.file === 'string' && typeof vad.maxSegmentSeconds === 'number' && vad.config !== null && typeof vad.config === 'object';
  if (!ok) throw new VoicewireError('INVALID_ARGUMENT', `${what} must be a VAD resolved by resolveSherpaVad, got ${describeValue(vad)}`);
  return vad;
}

/**
 * The worker's code (CommonJS, evaluated). Messages: `open` (a stream gets a `Vad`), `audio`
 * (16 kHz float samples; closed segments are posted back), `end` (flush: the last segment, then
 * `ended`), `close` (the stream's `Vad` is reset and kept for the next stream).
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const sherpa = require(workerData.pkg);
const streams = new Map();
const idle = [];
const drain = (s) => {
  const out = [];
  while (!s.vad.isEmpty()) {
    const seg = s.vad.front(false);
    out.push({ start: seg.start, samples: new Float32Array(seg.samples) });
    s.vad.pop();
  }
  return out;
};
const post = (type, id, segments) => parentPort.postMessage({ type, id, segments }, segments.map((g) => g.samples.buffer));
${WORKER_RELEASE}
parentPort.on('message', (m) => {
  try {
    if (m.op === 'open') {
      streams.set(m.id, { vad: idle.pop() || new sherpa.Vad(workerData.config, workerData.bufferSeconds), fed: 0, since: -1 });
      return;
    }
    const s = streams.get(m.id);
    if (s === undefined) return;
    if (m.op === 'audio') {
      s.vad.acceptWaveform(m.samples);
      s.fed += m.samples.length;
      if (!s.vad.isDetected()) s.since = -1;
      else if (s.since < 0) s.since = s.fed;
      else if (s.fed - s.since >= workerData.maxSegment) {
        // sherpa-onnx would let it grow: cut it here (the next speech window opens the next one).
        s.vad.flush();
        s.since = -1;
      }
      const segments = drain(s);
      if (segments.length > 0) post('segments', m.id, segments);
    } else if (m.op === 'end') {
      s.vad.flush();
      post('ended', m.id, drain(s));
      release(m.id);
    } else if (m.op === 'close') {
      release(m.id);
    }
  } catch (e) {
    release(m.id);
    parentPort.postMessage({ type: 'error', id: m.id, message: String((e && e.message) || e) });
  }
});
`;

/** One stream's side of the VAD worker. */
export interface SherpaVadStream {
  /** Gives the next 16 kHz samples (float, −1…1); the array is handed to the worker (transferred). */
  push(samples: Float32Array): void;
  /** Flushes: resolves once every segment, the last included, has been given to `onSegment`. */
  end(): Promise<void>;
  /** Drops the stream (its `Vad` goes back to the worker's idle ones). */
  close(): void;
}

interface OpenStream {
  onSegment: (start: number, samples: Float32Array) => void;
  onError: (err: VoicewireError) => void;
  ended?: { resolve: () => void; reject: (e: unknown) => void };
}

/** Idle `Vad`s the worker keeps for the next streams (each an ONNX session: ~2–5 MB with the released model). */
const KEEP_IDLE = 16;

/**
 * The worker thread that runs one Silero VAD for every stream of an STT engine; see the module
 * comment. Started by the first stream; it keeps the process alive only while a stream is open.
 * Memory: one `Vad` per open stream (an ONNX session and a ring buffer of `maxSegmentSeconds` + 5 s
 * of audio) and up to 16 idle ones. Audio waiting for the worker is the streams' own (bounded by
 * the server's request limits).
 */
export class SherpaVadWorker {
  private readonly host: StreamWorker<OpenStream, { type: string; id: number; segments?: Array<{ start: number; samples: Float32Array }>; message?: string }>;

  constructor(readonly vad: SherpaVadModel) {
    sherpaVadArg(vad, 'SherpaVadWorker: vad');
    const pkg = sherpaPackagePath();
    const maxSegment = Math.round(vad.maxSegmentSeconds * 16000);
    this.host = new StreamWorker({
      name: `Silero VAD (${vad.file})`,
      spawn: () => evalWorker(WORKER_SOURCE, { workerData: { pkg, config: vad.config, maxSegment, bufferSeconds: vad.maxSegmentSeconds + 5, keepIdle: KEEP_IDLE } }),
      onMessage: (m, s) => {
        for (const g of m.segments ?? []) s.onSegment(g.start, g.samples);
        if (m.type === 'ended') {
          this.host.remove(m.id);
          s.ended?.resolve();
        } else if (m.type === 'error') {
          this.host.remove(m.id);
          const err = new VoicewireError('PROTOCOL_INTERNAL', `Silero VAD (${vad.file}): ${m.message ?? 'failed'}`);
          s.onError(err);
          s.ended?.reject(err);
        }
      },
      fail: (s, err, why) => {
        // A lost worker is the stream's error; a closed one only ends what waits for the end.
        if (why === 'lost') s.onError(err);
        s.ended?.reject(err);
      },
    });
  }

  /** Streams open now. */
  get open(): number {
    return this.host.open;
  }

  /**
   * A stream: `onSegment(start, samples)` gets each closed segment (`start` in samples from the
   * stream's first one, 16 kHz), in order; `onError` a failure of the worker.
   */
  openStream(onSegment: (start: number, samples: Float32Array) => void, onError: (err: VoicewireError) => void): SherpaVadStream {
    functionArg(onSegment, 'SherpaVadWorker.openStream: onSegment');
    functionArg(onError, 'SherpaVadWorker.openStream: onError');
    const entry: OpenStream = { onSegment, onError };
    const id = this.host.add(entry);
    this.host.post({ op: 'open', id });
    let done = false;
    return {
      push: (samples) => {
        if (done || samples.length === 0 || this.host.get(id) === undefined) return;
        this.host.post({ op: 'audio', id, samples }, [samples.buffer as ArrayBuffer]);
      },
      end: () => {
        if (done || this.host.get(id) === undefined) return Promise.resolve();
        done = true;
        return new Promise<void>((resolveEnd, rejectEnd) => {
          entry.ended = { resolve: resolveEnd, reject: rejectEnd };
          this.host.post({ op: 'end', id });
        });
      },
      close: () => {
        if (this.host.get(id) === undefined) return;
        done = true;
        entry.ended?.reject(new VoicewireError('INVALID_STATE', 'the stream closed'));
        this.host.remove(id);
        this.host.post({ op: 'close', id });
      },
    };
  }

  /** Stops the worker; open streams fail with `INVALID_STATE`. */
  close(): Promise<void> {
    return this.host.close();
  }
}
