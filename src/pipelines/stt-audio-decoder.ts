/**
 * The STT input pipeline: bytes of any STT `input_format` (docs/api.md §4.4) in, exact
 * 80 ms frames of 24 kHz s16 mono (1920 samples, §4.4 "STT audio frame", §8) out, the unit the
 * model steps on.
 *
 * Stages: {@link createAudioDecoder} (raw `pcm` / `pcm_N`, G.711, WAV of any variant the WAV
 * decoder reads, Ogg Opus — decoded by libopus directly at 24 kHz, no resampling) → the
 * resampler to 24 kHz (when the source rate differs) → the framer (1920 samples; the last partial
 * frame zero-padded, as the model needs whole frames). Formats the API does not name (mp3, flac…)
 * go through ffmpeg in `voicewire/node`.
 *
 * Bookkeeping: `total_duration_s` is the audio in the frames emitted so far (frames × 0.08 s),
 * the value the `step` message reports (§4.4); `inputDuration_s` is the source audio decoded.
 * Latency: the decoders add none; the resampler waits for its look-ahead (`latency.resamplerMs`);
 * the framer holds at most 1919 samples, emitting a frame the moment its last sample arrives.
 *
 * Platform-neutral.
 */
import { bytesOf, concatChunks, describe, int16View } from '../util/bytes.js';
import { VoicewireError } from '../util/errors.js';
import { objectArg, optionsArg, shown, stringArg } from '../util/args.js';
import { createAudioDecoder, type AudioDecoder, type AudioDecoderOptions, type AudioSourceInfo } from './audio-decoder.js';
import { createFramer, STT_FRAME, type Framer } from '../audio/framer.js';
import { decodeBase64 } from '../util/base64.js';
import { createInt16Resampler, type Resampler, type ResamplerQuality } from '../audio/resampler.js';
import { createPipelineStream, type PipelineStream, type PipelineWaterMarks } from './pipeline-stream.js';

/** The STT model's input rate, Hz (docs/api.md §4.4). */
export const STT_SAMPLE_RATE = 24000;
/** Samples per STT frame (80 ms at 24 kHz, docs/api.md §8). */
export const STT_FRAME_SAMPLES = STT_FRAME.frameSamples;

/** Options of {@link createSttAudioDecoder}. */
export interface SttAudioDecoderOptions {
  /** Resampler quality. Default `'high'`. */
  quality?: ResamplerQuality;
  /**
   * Transcribe what arrived of a stream cut short (a WAV shorter than its header says, an Ogg
   * stream without its EOS page) instead of failing at `end_of_stream`. Default **true**: a live
   * client that stops its recorder mid-file should still get its transcript. Corrupt input (a CRC
   * mismatch, a damaged page, a malformed header) is an error either way.
   */
  allowTruncated?: boolean;
  /** Called when the source is known (see {@link AudioDecoderOptions.onInfo}). */
  onInfo?: (info: AudioSourceInfo) => void;
  /**
   * Most Ogg Opus audio one `push` (or `pull`) decodes, samples at 24 kHz. Default 24000 (1 s):
   * 1 MB of crafted Ogg Opus holds 11 hours of audio (issue 11 §4), so a push decodes at most
   * this (plus one page) and queues the rest: call {@link SttAudioDecoder.pull} while
   * {@link SttAudioDecoder.pending} > 0, yielding to the event loop between calls.
   */
  maxSamplesPerPush?: number;
  /**
   * Most source audio this decoder decodes, seconds (all streams together): past it `push`,
   * `pull` and `flush` raise `AUDIO_LIMIT_EXCEEDED` (close code 1008), for Ogg Opus before the
   * page is decoded. A server sets it from its session-duration limit. Default Infinity.
   */
  maxDecodedSeconds?: number;
}

/** The delay each stage adds, ms. */
export interface SttAudioDecoderLatency {
  /** Resampler look-ahead (0 when the source is 24 kHz; known once the source rate is). */
  readonly resamplerMs: number;
  /** Most a sample waits for its frame to fill: 1919 samples (79.96 ms). */
  readonly framerMs: number;
  readonly totalMs: number;
}

/** The STT input decoder (see {@link createSttAudioDecoder}). */
export interface SttAudioDecoder {
  /** Decodes bytes (any chunking); returns every frame completed (Int16Array of exactly 1920 samples). */
  push(bytes: Uint8Array): Int16Array[];
  /** Decodes the base64 `audio` field of an STT `audio` message. @throws `PROTOCOL_INVALID_AUDIO` (1008) for bad base64 or undecodable audio. */
  pushBase64(audio: string): Int16Array[];
  /**
   * Decodes an STT `audio` client message, as received (a JSON text frame) or parsed.
   * @throws `PROTOCOL_INVALID_MESSAGE` (1008) when it is not an `audio` message with a string `audio`;
   *   `PROTOCOL_INVALID_AUDIO` (1008) as {@link pushBase64}.
   */
  pushMessage(message: unknown): Int16Array[];
  /**
   * Ends a segment without ending the stream (the `flush` message): the resampler's tail, then the
   * partial frame zero-padded. The container keeps its place; the next bytes continue the stream.
   */
  drain(): Int16Array[];
  /** Ends the stream: drain plus what the container decoder still holds; then ready for a new stream. */
  flush(): Int16Array[];
  /** Barge-in: drops the partial frame, the resampler's state and a partial raw sample. */
  reset(): void;
  /** Frees libopus. Idempotent. */
  destroy(): void;
  /** Decodes and frames the next piece of queued Ogg Opus audio (at most `maxSamplesPerPush`); [] when nothing is queued. */
  pull(): Int16Array[];
  /** Ogg Opus audio received but not decoded yet, samples at 24 kHz: call {@link pull} until it is 0. */
  readonly pending: number;
  /** Audio in the frames emitted so far, seconds (frames × 0.08): the `step` message's `total_duration_s`. */
  readonly total_duration_s: number;
  /** Frames emitted since creation. */
  readonly frames: number;
  /** Source audio decoded so far, seconds (at the source rate, before padding). */
  readonly inputDuration_s: number;
  /** The source, once known. */
  readonly info: AudioSourceInfo | null;
  readonly latency: SttAudioDecoderLatency;
}

/** Decode → resample to 24 kHz, chunks of any length (no framing). */
class SttPcmPipeline {
  readonly decoder: AudioDecoder;
  private resampler: Resampler<Int16Array> | null = null;
  private rate = 0; // source rate of the current stream, 0 until known
  private readonly quality: ResamplerQuality;
  resamplerMs = 0;
  inputSamples = 0;
  inputSeconds = 0; // of finished streams

  constructor(format: string | undefined, options: SttAudioDecoderOptions) {
    objectArg(options, 'createSttAudioDecoder options');
    this.quality = options.quality ?? 'high';
    const decOptions: AudioDecoderOptions = { direction: 'stt-input', opusSampleRate: 24000, maxSamplesPerPush: options.maxSamplesPerPush ?? STT_SAMPLE_RATE };
    if (options.maxDecodedSeconds !== undefined) decOptions.maxDecodedSeconds = options.maxDecodedSeconds;
    if (format !== undefined) decOptions.format = format;
    decOptions.allowTruncated = options.allowTruncated ?? true;
    if (options.onInfo !== undefined) decOptions.onInfo = options.onInfo;
    this.decoder = createAudioDecoder(decOptions);
  }

  push(bytes: Uint8Array, out: Int16Array[]): void {
    this.resample(this.decoder.push(bytes), out);
  }

  pull(out: Int16Array[]): void {
    this.resample(this.decoder.pull(), out);
  }

  private resample(parts: readonly Int16Array[], out: Int16Array[]): void {
    for (const pcm of parts) {
      if (this.rate === 0) this.open(this.decoder.info!.sampleRate);
      this.inputSamples += pcm.length;
      const r = this.resampler === null ? pcm : this.resampler.push(pcm);
      if (r.length > 0) out.push(r);
    }
  }

  private open(rate: number): void {
    this.rate = rate;
    if (rate !== STT_SAMPLE_RATE) {
      this.resampler = createInt16Resampler({ from: rate, to: STT_SAMPLE_RATE, quality: this.quality });
      this.resamplerMs = this.resampler.delaySeconds * 1000;
    } else {
      this.resampler = null;
      this.resamplerMs = 0;
    }
  }

  /** The resampler's tail (as if the input ended here); the resampler then starts afresh. */
  drain(out: Int16Array[]): void {
    if (this.resampler === null) return;
    const tail = this.resampler.flush();
    if (tail.length > 0) out.push(tail);
  }

  flush(out: Int16Array[]): void {
    try {
      this.resample(this.decoder.flush(), out);
      this.drain(out);
    } finally {
      if (this.rate > 0) this.inputSeconds += this.inputSamples / this.rate;
      this.inputSamples = 0;
      this.rate = 0;
      this.resampler = null;
    }
  }

  reset(): void {
    this.decoder.reset();
    this.resampler?.reset();
  }

  get inputDuration(): number {
    return this.inputSeconds + (this.rate > 0 ? this.inputSamples / this.rate : 0);
  }
}

function invalidAudio(err: unknown, what: string): VoicewireError {
  // The server's own failures (a full process: OPUS_CAPACITY; a libopus crash; 1011) and the
  // per-request cap keep their code: they are not the client's audio being undecodable.
  if (err instanceof VoicewireError && (err.code === 'PROTOCOL_INVALID_AUDIO' || err.code === 'INVALID_STATE' || err.code === 'AUDIO_LIMIT_EXCEEDED' || err.closeCode === 1011)) return err;
  const reason = err instanceof Error ? err.message : shown(err);
  return new VoicewireError('PROTOCOL_INVALID_AUDIO', `${what}: ${reason}`, { cause: err, details: { code: err instanceof VoicewireError ? err.code : undefined } });
}

class SttAudioDecoderImpl implements SttAudioDecoder {
  private readonly pipe: SttPcmPipeline;
  private readonly framer: Framer;
  private frameCount = 0;
  /** 24 kHz s16le input (`pcm`, `pcm_24000`): the bytes are framed as they are (no decode step). */
  private readonly direct: boolean;
  private directBytes = 0;

  constructor(format: string | undefined, options: SttAudioDecoderOptions) {
    this.pipe = new SttPcmPipeline(format, options);
    this.framer = createFramer({ frameSamples: STT_FRAME_SAMPLES, bytesPerSample: 2, partial: 'pad', sampleRate: STT_SAMPLE_RATE });
    const info = this.pipe.decoder.info;
    this.direct = info !== null && info.codec === 'pcm_s16le' && info.sampleRate === STT_SAMPLE_RATE;
  }

  get total_duration_s(): number {
    return (this.frameCount * STT_FRAME_SAMPLES) / STT_SAMPLE_RATE;
  }

  get frames(): number {
    return this.frameCount;
  }

  get inputDuration_s(): number {
    return this.pipe.inputDuration + (this.directBytes >> 1) / STT_SAMPLE_RATE;
  }

  get info(): AudioSourceInfo | null {
    return this.pipe.decoder.info;
  }

  get latency(): SttAudioDecoderLatency {
    const resamplerMs = this.pipe.resamplerMs;
    const framerMs = ((STT_FRAME_SAMPLES - 1) / STT_SAMPLE_RATE) * 1000;
    return { resamplerMs, framerMs, totalMs: resamplerMs + framerMs };
  }

  push(bytes: Uint8Array): Int16Array[] {
    if (!(bytes instanceof Uint8Array)) throw new VoicewireError('INVALID_ARGUMENT', `SttAudioDecoder.push takes a Uint8Array, got ${describe(bytes)}`);
    if (this.direct) {
      // The framer takes bytes in any split (a sample across two pushes included).
      this.directBytes += bytes.byteLength;
      const frames = this.framer.push(bytes);
      const out = new Array<Int16Array>(frames.length);
      for (let i = 0; i < frames.length; i++) out[i] = int16View(frames[i]!);
      this.frameCount += out.length;
      return out;
    }
    const pcm: Int16Array[] = [];
    this.pipe.push(bytes, pcm);
    return this.frame(pcm, false);
  }

  get pending(): number {
    return this.pipe.decoder.pending;
  }

  pull(): Int16Array[] {
    const pcm: Int16Array[] = [];
    try {
      this.pipe.pull(pcm);
    } catch (err) {
      throw invalidAudio(err, 'STT audio cannot be decoded');
    }
    return this.frame(pcm, false);
  }

  pushBase64(audio: string): Int16Array[] {
    let bytes: Uint8Array;
    try {
      bytes = decodeBase64(audio);
    } catch (err) {
      throw invalidAudio(err, 'STT audio is not valid base64');
    }
    try {
      return this.push(bytes);
    } catch (err) {
      throw invalidAudio(err, 'STT audio cannot be decoded');
    }
  }

  pushMessage(message: unknown): Int16Array[] {
    let m: unknown = message;
    if (typeof message === 'string') {
      try {
        m = JSON.parse(message);
      } catch (err) {
        throw new VoicewireError('PROTOCOL_INVALID_MESSAGE', 'an STT message is not valid JSON', { cause: err });
      }
    }
    const record = m as { type?: unknown; audio?: unknown } | null;
    if (typeof record !== 'object' || record === null || record.type !== 'audio' || typeof record.audio !== 'string') {
      throw new VoicewireError('PROTOCOL_INVALID_MESSAGE', `expected an STT audio message {"type":"audio","audio":"<base64>"}, got ${typeof record === 'object' && record !== null ? `type ${JSON.stringify(record.type)}` : describe(record)}`);
    }
    return this.pushBase64(record.audio);
  }

  drain(): Int16Array[] {
    const pcm: Int16Array[] = [];
    this.pipe.drain(pcm);
    return this.frame(pcm, true);
  }

  flush(): Int16Array[] {
    const pcm: Int16Array[] = [];
    if (this.direct) {
      this.pipe.inputSeconds += (this.directBytes >> 1) / STT_SAMPLE_RATE;
      this.directBytes = 0;
    }
    try {
      this.pipe.flush(pcm);
    } catch (err) {
      this.framer.reset();
      throw err;
    }
    return this.frame(pcm, true);
  }

  reset(): void {
    this.pipe.reset();
    this.framer.reset();
  }

  destroy(): void {
    this.pipe.decoder.destroy();
  }

  /** Frames the 24 kHz PCM; with `end`, the partial frame is zero-padded and emitted. */
  private frame(pcm: readonly Int16Array[], end: boolean): Int16Array[] {
    const frames: Int16Array[] = [];
    for (const p of pcm) for (const f of this.framer.push(bytesOf(p))) frames.push(int16View(f));
    if (end) for (const f of this.framer.flush()) frames.push(int16View(f));
    this.frameCount += frames.length;
    return frames;
  }
}

/**
 * Creates the STT input decoder for an API `input_format` (docs/api.md §4.4; `pcm` is 24 kHz
 * here). Omit the format to sniff WAV or Ogg Opus.
 *
 * Frames that lie inside one decoded chunk are views of it: for `pcm` / `pcm_24000` that is your
 * input's memory (copy a frame before reusing the buffer you pushed).
 *
 * @example
 * const dec = createSttAudioDecoder('opus');
 * ws.on('message', (text) => { for (const frame of dec.pushMessage(String(text))) model.step(frame); });
 *
 * @throws VoicewireError `FORMAT_UNKNOWN` (1008) for a name that is not an API format.
 */
export function createSttAudioDecoder(format?: string, opts?: SttAudioDecoderOptions): SttAudioDecoder {
  const options = optionsArg(opts, 'createSttAudioDecoder options');
  return new SttAudioDecoderImpl(format, options);
}

/**
 * An STT input decoder in the shape the protocol server's `createInputDecoder` option takes
 * (`SttInputDecoder` of sessions/stt-server-session.ts): `push(bytes)` → 24 kHz PCM of any length (the
 * server frames it), `drain()` on a `flush` message (the resampler's tail), `end()` at the end.
 * Ogg Opus beyond `maxSamplesPerPush` (default 1 s) per push is queued: the server calls `pull()`
 * while `pending` > 0, yielding between calls; `end()` decodes what is left (bounded by
 * `maxDecodedSeconds`, which the server sets from its session-duration limit).
 */
export function createSttInputDecoder(
  format: string,
  options?: Pick<SttAudioDecoderOptions, 'maxSamplesPerPush' | 'maxDecodedSeconds'>,
): { push(bytes: Uint8Array): Int16Array; pull(): Int16Array; readonly pending: number; drain(): Int16Array; end(): Int16Array } {
  const pipe = new SttPcmPipeline(format, optionsArg(options, 'createSttInputDecoder options'));
  const one = (parts: Int16Array[]): Int16Array => {
    if (parts.length === 1) return parts[0]!;
    return concatChunks(parts, (n) => new Int16Array(n));
  };
  return {
    push(bytes) {
      const out: Int16Array[] = [];
      pipe.push(bytes, out);
      return one(out);
    },
    pull() {
      const out: Int16Array[] = [];
      pipe.pull(out);
      return one(out);
    },
    get pending() {
      return pipe.decoder.pending;
    },
    drain() {
      const out: Int16Array[] = [];
      pipe.drain(out);
      return one(out);
    },
    end() {
      const out: Int16Array[] = [];
      pipe.flush(out);
      return one(out);
    },
  };
}

/** Options of {@link createSttDecoderStream}. */
export interface SttDecoderStreamOptions extends SttAudioDecoderOptions, PipelineWaterMarks {
  /** Bytes per core step (the pump's slice). Default: 80 ms of the named raw format, else 2048. */
  sliceBytes?: number;
}

/** Input bytes per pump slice: about one frame of a raw format, 2 KiB of a container. */
export function sttSliceBytes(format: string | undefined): number {
  if (format !== undefined) stringArg(format, 'sttSliceBytes format');
  switch (format) {
    case 'ulaw_8000':
    case 'mulaw_8000':
    case 'alaw_8000':
      return 640;
    case 'pcm':
      return 3840;
    default: {
      const m = /^pcm_(\d+)$/.exec(format ?? '');
      return m ? Math.max(2, Math.round(Number(m[1]) * 0.16)) & ~1 : 2048;
    }
  }
}

/** The STT decoder's core for stream adapters (slices written bytes; see {@link createSttDecoderStream}). */
export function sttDecoderStreamCore(format: string | undefined, opts?: SttDecoderStreamOptions) {
  const options = optionsArg(opts, 'sttDecoderStreamCore options');
  const dec = createSttAudioDecoder(format, options);
  const size = options.sliceBytes ?? sttSliceBytes(format);
  if (!Number.isInteger(size) || size < 1) throw new VoicewireError('INVALID_ARGUMENT', `sliceBytes must be a positive integer, got ${shown(size)}`);
  return {
    decoder: dec,
    slice(chunk: Uint8Array): Uint8Array[] {
      if (!(chunk instanceof Uint8Array)) throw new VoicewireError('INVALID_ARGUMENT', `the STT decoder stream takes Uint8Array chunks, got ${describe(chunk)}`);
      if (chunk.byteLength <= size) return [chunk];
      const out: Uint8Array[] = [];
      for (let i = 0; i < chunk.byteLength; i += size) out.push(chunk.subarray(i, i + size));
      return out;
    },
    push: (bytes: Uint8Array) => dec.push(bytes),
    flush: () => dec.flush(),
    reset: () => dec.reset(),
    destroy: () => dec.destroy(),
  };
}

/**
 * A web stream pair: STT input bytes in (any chunking), 1920-sample Int16Array frames out, with
 * backpressure counted in frames (high/low water marks, default 8/2). `reset()` drops queued
 * frames and buffered audio.
 *
 * @example
 * const frames = upload.pipeThrough(createSttDecoderStream('wav'));
 * for await (const frame of frames) model.step(frame);
 */
export function createSttDecoderStream(format?: string, opts?: SttDecoderStreamOptions): PipelineStream<Uint8Array, Int16Array> {
  const options = optionsArg(opts, 'createSttDecoderStream options');
  const core = sttDecoderStreamCore(format, options);
  const streamOptions: { slice: typeof core.slice; highWaterMark?: number; lowWaterMark?: number } = { slice: core.slice };
  if (options.highWaterMark !== undefined) streamOptions.highWaterMark = options.highWaterMark;
  if (options.lowWaterMark !== undefined) streamOptions.lowWaterMark = options.lowWaterMark;
  return createPipelineStream(core, streamOptions);
}
