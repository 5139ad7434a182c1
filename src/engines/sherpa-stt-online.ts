/**
 * Speech-to-text with a streaming (online) sherpa-onnx model (issue 24: a streaming NeMo CTC),
 * on the worker threads of sherpa-online.ts: the words come out while the audio still streams.
 *
 * Each 80 ms frame (24 kHz) is resampled to 16 kHz and sent, as floats, to the stream's worker,
 * which decodes every whole chunk and posts the partial result when it grows. Words are never
 * taken back: a word goes out as `text` once another word follows it (the last word of a partial
 * result may still grow), the rest at an endpoint (sherpa-onnx's rules: 0.8 s of silence after a
 * word, 2.4 s before any, 20 s of speech) or at the end of the stream; each word's `end_text` is
 * the next word's start (the last one's: the endpoint's or the stream's end). `start_s` is the
 * model's token time on the stream's timeline. The `step` horizons come from the WebRTC VAD of
 * vad.ts on every frame, as with the offline models.
 *
 * `language` (default `en`) must be one the model serves ({@link SherpaModel.languages}), else
 * `STT_LANGUAGE_UNSUPPORTED` (1008) at setup; a request past the pool's streams is `ENGINE_BUSY`.
 */
import { createInt16Resampler, type Resampler } from '../audio/resampler.js';
import type { SttEngine, SttEngineEvent, SttEngineStream } from '../sessions/engine.js';
import { describeValue, functionArg, objectArg, optionsArg } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';
import { SherpaOnlinePool, type OnlineResult, type SherpaOnlineStream } from './sherpa-online.js';
import { sherpaSttLanguage, wordsOf } from './sherpa-stt.js';
import { loadVad, VoiceActivity } from './vad.js';

const RATE = 16000;

/** The streaming sherpa-onnx STT engine over `pool` (one per process: it serves every request). */
export function createSherpaOnlineSttEngine(pool: SherpaOnlinePool): SttEngine {
  if (!(pool instanceof SherpaOnlinePool)) throw new VoicewireError('INVALID_ARGUMENT', `createSherpaOnlineSttEngine: pool must be a SherpaOnlinePool, got ${describeValue(pool)}`);
  return {
    async open(config, emit) {
      sherpaSttLanguage(config, emit, pool.model);
      const vad = new VoiceActivity(await loadVad());
      try {
        return new OnlineSttStream(pool, vad, emit, config.modelName === 'default' ? pool.model.name : config.modelName);
      } catch (err) {
        vad.free();
        throw err;
      }
    },
  };
}

class OnlineSttStream implements SttEngineStream {
  readonly info;
  private readonly resampler: Resampler<Int16Array> = createInt16Resampler({ from: 24000, to: RATE });
  private readonly stream: SherpaOnlineStream;
  /** 16 kHz samples sent so far. */
  private samples = 0;
  /** Words of the current segment already sent. */
  private sent = 0;
  /** The last word sent whose `end_text` waits for the next word's start. */
  private open: number | undefined;
  private failure: unknown;
  private closed = false;

  constructor(
    pool: SherpaOnlinePool,
    private readonly vad: VoiceActivity,
    private readonly emit: (e: SttEngineEvent) => void,
    modelName: string,
  ) {
    // A word's text comes a chunk or two (80 ms each) after its audio: once the next word starts.
    this.info = { modelName, sampleRate: 24000, frameSize: 1920, delayInFrames: 2 };
    this.stream = pool.open(
      (r) => this.result(r),
      (err) => (this.failure ??= err),
    );
  }

  push(frame: Int16Array): void {
    if (this.failure !== undefined) throw this.failure;
    const pcm = this.resampler.push(frame);
    const horizons = this.vad.frame(pcm);
    this.send(pcm);
    this.emit({ type: 'step', vad: horizons });
  }

  async end(): Promise<void> {
    if (this.failure !== undefined) throw this.failure;
    this.send(this.resampler.flush());
    await this.stream.end();
    if (this.failure !== undefined) throw this.failure;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.stream.close();
    this.vad.free();
  }

  private send(pcm: Int16Array): void {
    if (pcm.length === 0) return;
    const f = new Float32Array(pcm.length);
    for (let i = 0; i < pcm.length; i++) f[i] = pcm[i]! / 32768;
    this.samples += pcm.length;
    this.stream.push(f);
  }

  /** A partial, endpoint or final result: sends the words now stable, once each. */
  private result(r: OnlineResult): void {
    if (this.closed) return;
    const words = wordsOf(r, 0);
    const all = r.endpoint || r.final;
    const stable = all ? words.length : Math.max(0, words.length - 1);
    const now = round(this.samples / RATE);
    for (let i = this.sent; i < stable; i++) {
      const start = Math.min(round(r.startTime + words[i]!.at), now);
      this.closeWord(start);
      this.emit({ type: 'text', text: words[i]!.text, start_s: start });
      this.open = start;
    }
    this.sent = Math.max(this.sent, stable);
    if (all) {
      // The segment is over: its last word ends at the endpoint (the stream's end).
      this.closeWord(now);
      this.sent = 0;
    }
  }

  /** The `end_text` of the word sent last, at `stop`. */
  private closeWord(stop: number): void {
    if (this.open === undefined) return;
    this.emit({ type: 'end_text', stop_s: Math.max(this.open, stop) });
    this.open = undefined;
  }
}

function round(t: number): number {
  return Math.round(t * 1000) / 1000;
}
