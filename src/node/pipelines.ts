/**
 * Node streams for the audio pipelines: the TTS output encoder and the STT input decoder as
 * Duplex streams with bounded buffering (high/low water marks counted in frames, see
 * `../pipeline-stream.ts`), `reset()` for barge-in, and ffmpeg for STT input the API does not
 * name (mp3, flac, m4a…), through the prism-media bridge in `./ffmpeg.ts`.
 *
 * Memory stays bounded with a slow consumer: a written chunk runs through the core one slice
 * (about one frame) at a time, at most `highWaterMark` frames wait in the pump and one in Node's
 * readable buffer, and the write's callback waits until the chunk has run, so a writer that
 * honours `write()`'s return value (as `pipe`/`pipeline` do) is held back.
 */
import type { ChildProcess } from 'node:child_process';
import { Duplex } from 'node:stream';
import { createAudioDecoder, type AudioDecoderOptions, type AudioSourceInfo } from '../pipelines/audio-decoder.js';
import { createAudioEncoder, type AudioEncoderInput, type AudioEncoderOptions } from '../pipelines/audio-encoder.js';
import { VoicewireError } from '../util/errors.js';
import { isAudioFormatName } from '../audio/format.js';
import { checkWaterMarks, FramePump, type PipelineCore, type PipelineWaterMarks } from '../pipelines/pipeline-stream.js';
import { sttDecoderStreamCore, sttSliceBytes, STT_SAMPLE_RATE, type SttDecoderStreamOptions } from '../pipelines/stt-audio-decoder.js';
import { ttsEncoderStreamCore, type TtsEncoderStreamOptions } from '../pipelines/tts-audio-encoder.js';
import { createFfmpegDecoderStream } from './ffmpeg.js';
import { bytesArg, optionsArg } from '../util/args.js';

/** Bytes of a typed array as a Buffer, without copying (Node's byte-mode readables take Uint8Array only). */
function asBuffer(view: ArrayBufferView): Buffer {
  return Buffer.from(view.buffer, view.byteOffset, view.byteLength);
}

/** Options of {@link PipelineDuplex}. */
export interface PipelineDuplexOptions<In> extends PipelineWaterMarks {
  /** Cuts a written chunk into core steps (see `FramePump`). */
  slice?: (chunk: In) => readonly In[];
  /** Emit objects (typed arrays, chunk objects) instead of bytes. Default false. */
  readableObjectMode?: boolean;
  /** Accept objects (Int16Array frames) instead of bytes. Default false. */
  writableObjectMode?: boolean;
}

/**
 * A Node Duplex over a synchronous pipeline core with bounded buffering. In byte mode typed-array
 * outputs are pushed as their bytes (no copy), objects with a `bytes` field as those bytes.
 */
export class PipelineDuplex<In, Out> extends Duplex {
  private readonly pump: FramePump<In, Out>;
  private readonly objectsOut: boolean;

  constructor(core: PipelineCore<In, Out>, opts?: PipelineDuplexOptions<In>) {
    const options = optionsArg(opts, 'PipelineDuplex options');
    const { high } = checkWaterMarks(options);
    const objectsOut = options.readableObjectMode ?? false;
    const objectsIn = options.writableObjectMode ?? false;
    super({
      readableObjectMode: objectsOut,
      writableObjectMode: objectsIn,
      // Node's own readable queue holds one chunk; the rest wait in the pump, where reset() reaches them.
      readableHighWaterMark: 1,
      ...(objectsIn ? { writableHighWaterMark: high } : {}),
    });
    this.objectsOut = objectsOut;
    const pumpOptions: ConstructorParameters<typeof FramePump<In, Out>>[1] = {
      sink: (out) => this.push(this.toChunk(out)),
      onEnd: () => this.push(null),
      onError: () => undefined, // the write's callback carries the error
    };
    if (options.highWaterMark !== undefined) pumpOptions.highWaterMark = options.highWaterMark;
    if (options.lowWaterMark !== undefined) pumpOptions.lowWaterMark = options.lowWaterMark;
    if (options.slice !== undefined) pumpOptions.slice = options.slice;
    this.pump = new FramePump(core, pumpOptions);
  }

  private toChunk(out: Out): unknown {
    if (this.objectsOut) return out;
    if (ArrayBuffer.isView(out)) return asBuffer(out);
    return asBuffer((out as { bytes: Uint8Array }).bytes);
  }

  /** Frames produced and not yet read (the pump's queue plus Node's readable buffer, at most one). */
  get bufferedFrames(): number {
    return this.pump.buffered + (this.readableLength > 0 ? (this.objectsOut ? this.readableLength : 1) : 0);
  }

  /** Barge-in: drops queued frames, the pending write's unprocessed rest and the core's buffered audio. */
  reset(): void {
    this.pump.reset();
  }

  override _write(chunk: In, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.pump.write(chunk, (err) => callback(err as Error | undefined));
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.pump.end((err) => callback(err as Error | undefined));
  }

  override _read(): void {
    this.pump.pull();
  }

  override _destroy(err: Error | null, callback: (error?: Error | null) => void): void {
    this.pump.abort();
    callback(err);
  }
}

/** Options of {@link createTtsEncodeTransform}. */
export type TtsEncodeTransformOptions = TtsEncoderStreamOptions;

/**
 * The TTS output encoder as a Node Duplex: engine frames in (Int16Array / Float32Array objects,
 * or s16le Buffers in any chunking, framed to 80 ms), the format's bytes out, one chunk per frame
 * (or `TtsAudioChunk` objects with `output: 'chunks'`). High/low water marks in frames (default
 * 8/2); `reset()` drops queued audio (barge-in).
 *
 * @example
 * pipeline(engineFrames, createTtsEncodeTransform('ulaw_8000'), socketStream, cb);
 */
export function createTtsEncodeTransform(format: string, options: TtsEncodeTransformOptions = {}): PipelineDuplex<AudioEncoderInput, unknown> {
  const core = ttsEncoderStreamCore(format, options);
  const d: PipelineDuplexOptions<AudioEncoderInput> = { slice: core.slice, readableObjectMode: options.output === 'chunks', writableObjectMode: true };
  if (options.highWaterMark !== undefined) d.highWaterMark = options.highWaterMark;
  if (options.lowWaterMark !== undefined) d.lowWaterMark = options.lowWaterMark;
  return new PipelineDuplex<AudioEncoderInput, unknown>(core, d);
}

/** Options of {@link createSttDecodeTransform}. */
export interface SttDecodeTransformOptions extends SttDecoderStreamOptions {
  /** `'bytes'` (default): each frame as 3840 bytes of s16le; `'frames'`: Int16Array objects. */
  output?: 'bytes' | 'frames';
  /** ffmpeg's `-f` for input ffmpeg decodes, when it has no recognisable header. Default: ffmpeg probes. */
  ffmpegInputFormat?: string;
}

const M_SNIFF = 0;
const M_CORE = 1;
const M_FFMPEG = 2;

/**
 * The STT input decoder as a Node Duplex (see {@link createSttDecodeTransform}). Emits `'info'`
 * with the {@link AudioSourceInfo} once known (not for input decoded by ffmpeg).
 */
export class SttDecodeDuplex extends Duplex {
  private mode = M_SNIFF;
  private pump: FramePump<Uint8Array, Int16Array> | null = null;
  private held: Uint8Array[] = [];
  private heldLength = 0;
  private child: ChildProcess | null = null;
  private stdoutEnded = false;
  private exitCode: number | null | undefined = undefined;
  private backlog: Uint8Array[] = [];
  private writing = false;
  private ffmpegEnded = false;
  private readonly objectsOut: boolean;

  constructor(
    private readonly format: string | undefined,
    private readonly options: SttDecodeTransformOptions = {},
  ) {
    checkWaterMarks(options);
    const objectsOut = options.output === 'frames';
    super({ readableObjectMode: objectsOut, readableHighWaterMark: 1 });
    this.objectsOut = objectsOut;
    if (format === undefined) this.mode = M_SNIFF;
    else if (isAudioFormatName(format)) this.openCore(format);
    else this.openFfmpeg(); // throws FFMPEG_NOT_FOUND at once when ffmpeg is missing
  }

  /** Frames produced and not yet read. */
  get bufferedFrames(): number {
    return (this.pump?.buffered ?? 0) + (this.readableLength > 0 ? (this.objectsOut ? this.readableLength : 1) : 0);
  }

  /** `'core'` (voicewire's decoders), `'ffmpeg'`, or `'sniff'` before the first 4 bytes. */
  get decoder(): 'sniff' | 'core' | 'ffmpeg' {
    return this.mode === M_CORE ? 'core' : this.mode === M_FFMPEG ? 'ffmpeg' : 'sniff';
  }

  /** Barge-in: drops queued frames and buffered audio (ffmpeg's own buffers are out of reach). */
  reset(): void {
    this.pump?.reset();
  }

  private newPump(core: PipelineCore<Uint8Array, Int16Array>, slice: ((c: Uint8Array) => readonly Uint8Array[]) | undefined): FramePump<Uint8Array, Int16Array> {
    const o: ConstructorParameters<typeof FramePump<Uint8Array, Int16Array>>[1] = {
      sink: (frame) => this.push(this.objectsOut ? frame : asBuffer(frame)),
      onEnd: () => this.push(null),
      onError: () => undefined,
    };
    if (this.options.highWaterMark !== undefined) o.highWaterMark = this.options.highWaterMark;
    if (this.options.lowWaterMark !== undefined) o.lowWaterMark = this.options.lowWaterMark;
    if (slice !== undefined) o.slice = slice;
    return new FramePump(core, o);
  }

  private openCore(format: string | undefined): void {
    this.mode = M_CORE;
    const core = sttDecoderStreamCore(format, { ...this.options, onInfo: (info: AudioSourceInfo) => this.emit('info', info) });
    this.pump = this.newPump(core, core.slice);
  }

  private openFfmpeg(): void {
    this.mode = M_FFMPEG;
    const ffOptions: { sampleRate: number; channels: number; inputFormat?: string } = { sampleRate: STT_SAMPLE_RATE, channels: 1 };
    if (this.options.ffmpegInputFormat !== undefined) ffOptions.inputFormat = this.options.ffmpegInputFormat;
    const ff = createFfmpegDecoderStream(ffOptions);
    const child = (ff as unknown as { process: ChildProcess }).process;
    this.child = child;
    // ffmpeg writes s16le mono at 24 kHz: frame it like pcm_24000 (the last frame zero-padded).
    const core = sttDecoderStreamCore('pcm_24000', { ...this.options, sliceBytes: sttSliceBytes('pcm_24000') });
    const pump = this.newPump(core, core.slice);
    this.pump = pump;
    const stdout = child.stdout!;
    // The bridge's Duplex shares its state with the child's pipes, so backpressure is applied to
    // stdout directly: paused while the pump is full. Pausing is only a hint (Node resumes a
    // child's paused stdio when the child exits), so chunks that still arrive wait in `backlog`
    // (bounded by the pipe's buffer once ffmpeg is paused or gone).
    stdout.on('data', (b: Buffer) => {
      if (this.destroyed) return;
      this.backlog.push(new Uint8Array(b.buffer, b.byteOffset, b.byteLength));
      if (this.writing) stdout.pause();
      this.nextFfmpegChunk();
    });
    stdout.on('end', () => {
      this.stdoutEnded = true;
      this.ffmpegDone();
    });
    child.on('close', (code) => {
      this.exitCode = code;
      this.ffmpegDone();
    });
    ff.on('error', (err: Error) => this.destroy(err));
  }

  private nextFfmpegChunk(): void {
    if (this.writing || this.destroyed) return;
    const chunk = this.backlog.shift();
    if (chunk === undefined) {
      const stdout = this.child!.stdout!;
      if (stdout.isPaused()) stdout.resume();
      this.ffmpegDone();
      return;
    }
    this.writing = true;
    this.pump!.write(chunk, (err) => {
      this.writing = false;
      if (err) this.destroy(err as Error);
      else this.nextFfmpegChunk();
    });
  }

  private ffmpegDone(): void {
    if (!this.stdoutEnded || this.exitCode === undefined || this.destroyed || this.writing || this.backlog.length > 0 || this.ffmpegEnded) return;
    this.ffmpegEnded = true;
    if (this.exitCode !== 0) {
      this.destroy(new VoicewireError('FFMPEG_FAILED', `ffmpeg ended with ${this.exitCode === null ? 'a signal' : `exit code ${this.exitCode}`}`));
      return;
    }
    this.pump!.end((err) => {
      if (err) this.destroy(err as Error);
    });
  }

  override _write(chunk: Uint8Array, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (this.mode === M_SNIFF) {
      this.held.push(chunk);
      this.heldLength += chunk.byteLength;
      if (this.heldLength < 4) {
        callback();
        return;
      }
      const all = Buffer.concat(this.held);
      this.held = [];
      this.heldLength = 0;
      const magic = all.toString('latin1', 0, 4);
      try {
        if (magic === 'RIFF' || magic === 'RF64' || magic === 'BW64' || magic === 'OggS') this.openCore(undefined);
        else this.openFfmpeg();
      } catch (err) {
        callback(err as Error);
        return;
      }
      chunk = all;
    }
    if (this.mode === M_CORE) {
      this.pump!.write(chunk, (err) => callback(err as Error | undefined));
      return;
    }
    const stdin = this.child!.stdin!;
    if (stdin.write(chunk)) callback();
    else stdin.once('drain', () => callback());
  }

  override _final(callback: (error?: Error | null) => void): void {
    if (this.mode === M_SNIFF) {
      if (this.heldLength === 0) {
        this.push(null);
        callback();
        return;
      }
      // Fewer than 4 bytes in all: voicewire's decoder reports AUDIO_FORMAT_UNDETECTED.
      const all = Buffer.concat(this.held);
      this.held = [];
      this.openCore(undefined);
      this.pump!.write(all, (err) => {
        if (err) callback(err as Error);
        else this.pump!.end((e) => callback(e as Error | undefined));
      });
      return;
    }
    if (this.mode === M_CORE) {
      this.pump!.end((err) => callback(err as Error | undefined));
      return;
    }
    this.child!.stdin!.end();
    callback();
  }

  override _read(): void {
    this.pump?.pull();
  }

  override _destroy(err: Error | null, callback: (error?: Error | null) => void): void {
    this.pump?.abort();
    if (this.child !== null && this.child.exitCode === null) this.child.kill('SIGKILL');
    callback(err);
  }
}

/**
 * The STT input decoder as a Node Duplex: bytes of an STT `input_format` in (any chunking),
 * 80 ms frames of 24 kHz s16 mono out (3840-byte Buffers, or Int16Array with
 * `output: 'frames'`). High/low water marks in frames (default 8/2); `reset()` for barge-in.
 *
 * Formats: every API input format through voicewire's decoders; a name the API does not use
 * (`'mp3'`, `'flac'`, …) through ffmpeg; no format: WAV and Ogg Opus are sniffed, anything else
 * goes to ffmpeg.
 *
 * @throws VoicewireError `FFMPEG_NOT_FOUND` (at once for a non-API name; as a stream error for
 *   sniffed input) when the input needs ffmpeg and it is not installed; `FFMPEG_FAILED` (stream
 *   error) when ffmpeg cannot decode it; the decoders' errors otherwise.
 */
export function createSttDecodeTransform(format?: string, options: SttDecodeTransformOptions = {}): SttDecodeDuplex {
  return new SttDecodeDuplex(format, options);
}

/** The result of {@link decodeSttAudio}. */
export interface DecodedSttAudio {
  /** 1920-sample frames of 24 kHz s16 mono, the last one zero-padded. */
  readonly frames: Int16Array[];
  /** `frames.length × 0.08`. */
  readonly total_duration_s: number;
  /** The source, when voicewire's decoders read it (null through ffmpeg). */
  readonly info: AudioSourceInfo | null;
  /** `'core'` or `'ffmpeg'`. */
  readonly decoder: 'core' | 'ffmpeg' | 'sniff';
}

/** Decodes a whole input into STT frames (through ffmpeg when needed; see {@link createSttDecodeTransform}). */
export function decodeSttAudio(input: Uint8Array, format?: string, options: Omit<SttDecodeTransformOptions, 'output'> = {}): Promise<DecodedSttAudio> {
  return new Promise((resolve, reject) => {
    let stream: SttDecodeDuplex;
    try {
      bytesArg(input, 'decodeSttAudio input');
      stream = createSttDecodeTransform(format, { ...optionsArg(options, 'decodeSttAudio options'), output: 'frames' });
    } catch (err) {
      reject(err);
      return;
    }
    const frames: Int16Array[] = [];
    let info: AudioSourceInfo | null = null;
    stream.on('info', (i: AudioSourceInfo) => (info = i));
    stream.on('data', (f: Int16Array) => frames.push(f));
    stream.on('error', reject);
    stream.on('end', () => resolve({ frames, total_duration_s: frames.length * 0.08, info, decoder: stream.decoder }));
    stream.end(input);
  });
}

/** Options of {@link createAudioEncodeTransform}. */
export interface AudioEncodeTransformOptions extends AudioEncoderOptions, PipelineWaterMarks {}

/**
 * The general encoder ({@link createAudioEncoder}) as a Node Duplex: s16le Buffers (or
 * Int16Array / Float32Array objects) at `inputRate` in, the format's bytes out. Bounded buffering
 * counts output chunks (about one per 80 ms of input).
 */
export function createAudioEncodeTransform(options: AudioEncodeTransformOptions): PipelineDuplex<AudioEncoderInput, Uint8Array> {
  const enc = createAudioEncoder(options);
  const step = Math.max(1, Math.round(options.inputRate * 0.08));
  const core: PipelineCore<AudioEncoderInput, Uint8Array> = {
    push: (c) => enc.push(c),
    flush: () => enc.flush(),
    reset: () => enc.reset(),
    destroy: () => enc.destroy(),
  };
  const slice = (c: AudioEncoderInput): AudioEncoderInput[] => {
    const n = c instanceof Uint8Array ? step * 2 : step;
    if (c.length <= n) return [c];
    const out: AudioEncoderInput[] = [];
    for (let i = 0; i < c.length; i += n) out.push(c.subarray(i, i + n));
    return out;
  };
  const d: PipelineDuplexOptions<AudioEncoderInput> = { slice, writableObjectMode: true };
  if (options.highWaterMark !== undefined) d.highWaterMark = options.highWaterMark;
  if (options.lowWaterMark !== undefined) d.lowWaterMark = options.lowWaterMark;
  return new PipelineDuplex(core, d);
}

/** Options of {@link createAudioDecodeTransform}. */
export interface AudioDecodeTransformOptions extends AudioDecoderOptions, PipelineWaterMarks {
  /** Int16Array objects out instead of s16le bytes. Default false. */
  objectMode?: boolean;
}

/**
 * The general decoder ({@link createAudioDecoder}) as a Node Duplex: bytes of an API format (or
 * sniffed WAV / Ogg Opus) in, mono s16le at the source rate out; emits `'info'` once known.
 */
export function createAudioDecodeTransform(options?: AudioDecodeTransformOptions): PipelineDuplex<Uint8Array, Int16Array> {
  let duplex: PipelineDuplex<Uint8Array, Int16Array> | undefined;
  const pending: AudioSourceInfo[] = [];
  const { objectMode, highWaterMark, lowWaterMark, onInfo, ...decOptions } = optionsArg(options, 'createAudioDecodeTransform options');
  const dec = createAudioDecoder({
    ...decOptions,
    onInfo: (info) => {
      onInfo?.(info);
      if (duplex) duplex.emit('info', info);
      else pending.push(info);
    },
  });
  const size = 2048;
  const core: PipelineCore<Uint8Array, Int16Array> = {
    push: (c) => dec.push(c),
    flush: () => dec.flush(),
    reset: () => dec.reset(),
    destroy: () => dec.destroy(),
  };
  const d: PipelineDuplexOptions<Uint8Array> = {
    slice: (c) => {
      if (c.byteLength <= size) return [c];
      const out: Uint8Array[] = [];
      for (let i = 0; i < c.byteLength; i += size) out.push(c.subarray(i, i + size));
      return out;
    },
    readableObjectMode: objectMode ?? false,
  };
  if (highWaterMark !== undefined) d.highWaterMark = highWaterMark;
  if (lowWaterMark !== undefined) d.lowWaterMark = lowWaterMark;
  duplex = new PipelineDuplex(core, d);
  const created = duplex;
  if (pending.length > 0) queueMicrotask(() => pending.forEach((i) => created.emit('info', i)));
  return created;
}

