/**
 * The TTS output pipeline: the engine's 48 kHz s16 mono model frames (80 ms, 3840 samples,
 * docs/api.md §4.2 "The chunk size is 3840 samples") in, bytes of the requested
 * `output_format` out, exactly one chunk per frame, each with its place in the output timeline.
 *
 * It is {@link createAudioEncoder} with the TTS preset (input 48 kHz, one Ogg page per frame)
 * plus timing. Per format:
 * - `pcm`, `pcm_48000`: the frame's bytes as they are (zero copy).
 * - `pcm_8000` … `pcm_44100`: resampled; the concatenated chunks are bit-identical to
 *   `resampleInt16(wholeInput, 48000, N)` (no clicks at frame seams: the filter runs across them).
 * - `ulaw_8000` / `mulaw_8000` / `alaw_8000`: resampled to 8 kHz, then G.711 (G.191 tables).
 * - `wav`: the first chunk starts with the 44-byte streaming header (sizes 0xFFFFFFFF), then PCM.
 * - `opus`: the first chunk holds the OpusHead and OpusTags pages and the frame's page; every
 *   80 ms frame is four 20 ms packets, written as one page at once, so no chunk is ever empty;
 *   {@link TtsAudioEncoder.end} returns the EOS page (granule = input + pre-skip, RFC 7845 §4.4).
 *
 * Timing. Chunk `i` carries `start_s` / `stop_s`: the span of decoded output audio its bytes add,
 * on the output timeline (from the start of the stream). The resampler has zero lag but emits
 * output only once its look-ahead has arrived, and Opus trails by its 6.5 ms look-ahead (pre-skip),
 * so `stop_s` of frame `i` is a little under `(i+1)·0.08`; {@link TtsAudioEncoder.end} brings the
 * timeline to the exact input length. Word timestamps of the engine (on the 48 kHz frame grid)
 * keep their value on that timeline (both delays are compensated: the resampler is centred and
 * decoders drop the pre-skip); {@link TtsAudioEncoder.mapTime} gives the sample, granule and the
 * chunk that completes the audio up to a time, so a server can send a word's timestamp with the
 * audio that contains it and never before.
 */
import { VoicewireError } from '../util/errors.js';
import { optionsArg, shown } from '../util/args.js';
import { describe, toBytes } from '../util/bytes.js';
import { createAudioEncoder, joinAudioBytes, type AudioEncoder, type AudioEncoderInput, type AudioEncoderLatency, type AudioEncoderOpusOptions } from './audio-encoder.js';
import type { AudioFormat } from '../audio/format.js';
import { createFramer, type Framer } from '../audio/framer.js';
import type { ResamplerQuality } from '../audio/resampler.js';
import { createPipelineStream, type PipelineStream, type PipelineWaterMarks } from './pipeline-stream.js';

/** One encoded output chunk and its span on the output timeline (seconds from the stream start). */
export interface TtsAudioChunk {
  /** Bytes of the output format (may be empty only for a pushed empty frame). */
  readonly bytes: Uint8Array;
  /** Output time where the audio these bytes add begins (the previous chunk's `stop_s`). */
  readonly start_s: number;
  /** Output time up to which the bytes emitted so far carry decoded audio. */
  readonly stop_s: number;
}

/** Options of {@link createTtsAudioEncoder}. */
export interface TtsAudioEncoderOptions {
  /** Rate of the engine's frames, Hz (the `sample_rate` of `ready`). Default 48000. */
  sampleRate?: number;
  /** Samples per engine frame, for {@link TtsAudioEncoder.mapTime}'s chunk index. Default 80 ms at `sampleRate` (3840). */
  frameSamples?: number;
  /** Resampler quality. Default `'high'`. */
  quality?: ResamplerQuality;
  /** Opus settings (format `opus`). Default: libopus defaults, random serial. */
  opus?: Omit<AudioEncoderOpusOptions, 'pageDuration'>;
}

/** Where an engine time lands in the output. */
export interface TtsTimePoint {
  /** Output-timeline seconds (the segment's origin plus the engine time). */
  readonly time_s: number;
  /** Output sample index at the output rate (`round(time_s · rate)`). */
  readonly sample: number;
  /** Ogg granule position of that instant (48 kHz samples plus pre-skip), `opus` only; else null. */
  readonly granule: number | null;
  /**
   * Index of the chunk (counting from the stream start) whose bytes complete the audio up to
   * this time, assuming frames of `frameSamples`: send a word's timestamp with that chunk or
   * later. A time past the input's end is completed by {@link TtsAudioEncoder.end}.
   */
  readonly chunk: number;
}

/** The TTS output encoder (see {@link createTtsAudioEncoder}). */
export interface TtsAudioEncoder {
  /** Encodes one engine frame (Int16Array, Float32Array ±1.0, or s16le bytes): exactly one chunk. */
  encode(frame: AudioEncoderInput): TtsAudioChunk;
  /** {@link encode} as an {@link Incremental} step: `[encode(frame)]`. */
  push(frame: AudioEncoderInput): TtsAudioChunk[];
  /** Ends the stream: the resampler's tail or the last Opus packet and EOS page, as one chunk. The encoder then takes a new stream. */
  end(): TtsAudioChunk;
  /** {@link end} as an {@link Incremental} step (no chunk when it holds no bytes). */
  flush(): TtsAudioChunk[];
  /**
   * Barge-in: drops buffered audio (resampler look-ahead, a partial Opus packet). The byte
   * stream goes on without a new header; engine time 0 of the next frames maps to the output
   * time where the dropped audio would have been.
   */
  reset(): void;
  /** Frees libopus (format `opus`) without ending the stream. */
  destroy(): void;
  /** Maps an engine time (seconds from the current segment's start) to the output (see {@link TtsTimePoint}). */
  mapTime(t_s: number): TtsTimePoint;
  /** Maps a word timestamp: `start_s`/`stop_s` onto the output timeline, plus the chunk completing it. */
  mapWord<W extends { start_s: number; stop_s: number }>(word: W): W & { chunk: number };
  readonly format: AudioFormat;
  /** Rate of the encoded audio (48000 for `opus`). */
  readonly outputRate: number;
  /** Opus pre-skip, 48 kHz samples (312); 0 otherwise. */
  readonly preSkip: number;
  /** Delay each stage adds, ms. With 80 ms frames at 48 kHz, Opus packets and pages add none. */
  readonly latency: AudioEncoderLatency;
  /** Chunks returned since the stream started. */
  readonly chunks: number;
}

const EMPTY = new Uint8Array(0);

function positiveInteger(name: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) {
    throw new VoicewireError('INVALID_ARGUMENT', `createTtsAudioEncoder: ${name} must be a positive integer, got ${typeof v === 'number' ? v : describe(v)}`);
  }
  return v;
}

/** `ceil(x)`, except that a float a hair above an integer (0.08·16000) counts as that integer. */
function ceilSamples(x: number): number {
  const r = Math.round(x);
  return Math.abs(x - r) < 1e-6 ? r : Math.ceil(x);
}

class TtsAudioEncoderImpl implements TtsAudioEncoder {
  readonly format: AudioFormat;
  readonly outputRate: number;
  readonly latency: AudioEncoderLatency;
  private readonly enc: AudioEncoder;
  private readonly inputRate: number;
  private readonly frameSamples: number;
  private readonly opus: boolean;
  /** Resampler look-ahead in input samples (the kernel's half-length), 0 without a resampler. */
  private readonly half: number;
  private stop = 0;
  private count = 0;
  private segChunk = 0;

  constructor(format: string, options: TtsAudioEncoderOptions) {
    this.inputRate = positiveInteger('sampleRate', options.sampleRate ?? 48000);
    this.frameSamples = positiveInteger('frameSamples', options.frameSamples ?? Math.round(this.inputRate * 0.08));
    const encOptions: Parameters<typeof createAudioEncoder>[0] = { format, inputRate: this.inputRate, opusPagePerPush: true };
    if (options.quality !== undefined) encOptions.quality = options.quality;
    if (options.opus !== undefined) encOptions.opus = options.opus;
    this.enc = createAudioEncoder(encOptions);
    this.format = this.enc.format;
    this.outputRate = this.enc.outputRate;
    this.opus = this.format.codec === 'opus';
    const l = this.enc.latency;
    this.half = Math.round((l.resamplerMs / 1000) * this.inputRate);
    // Frames that are whole 20 ms packets at 48 kHz never wait for a packet to fill.
    const aligned = this.inputRate === 48000 && this.frameSamples % 960 === 0;
    const packetMs = this.opus && !aligned ? l.packetMs : 0;
    this.latency = Object.freeze({ ...l, packetMs, totalMs: l.resamplerMs + l.codecMs + packetMs + l.pageMs });
  }

  get preSkip(): number {
    return this.enc.preSkip;
  }

  get chunks(): number {
    return this.count;
  }

  encode(frame: AudioEncoderInput): TtsAudioChunk {
    const parts = this.enc.push(frame);
    const bytes = parts.length === 0 ? EMPTY : joinAudioBytes(parts);
    const stop = this.enc.outputSamples / this.outputRate;
    const chunk: TtsAudioChunk = { bytes, start_s: this.stop, stop_s: stop };
    this.stop = stop;
    this.count++;
    return chunk;
  }

  push(frame: AudioEncoderInput): TtsAudioChunk[] {
    return [this.encode(frame)];
  }

  end(): TtsAudioChunk {
    const start = this.stop;
    let parts: Uint8Array[];
    try {
      parts = this.enc.flush();
    } finally {
      this.stop = 0;
      this.count = 0;
      this.segChunk = 0;
    }
    return { bytes: parts.length === 0 ? EMPTY : joinAudioBytes(parts), start_s: start, stop_s: this.enc.flushedSamples / this.outputRate };
  }

  flush(): TtsAudioChunk[] {
    const last = this.end();
    return last.bytes.byteLength > 0 ? [last] : [];
  }

  reset(): void {
    this.enc.reset();
    this.segChunk = this.count;
  }

  destroy(): void {
    this.enc.destroy();
  }

  mapTime(t_s: number): TtsTimePoint {
    if (typeof t_s !== 'number' || !Number.isFinite(t_s) || t_s < 0) {
      throw new VoicewireError('INVALID_ARGUMENT', `TtsAudioEncoder.mapTime: a time must be a finite number ≥ 0 (seconds), got ${shown(t_s)}`);
    }
    const rate = this.outputRate;
    const origin = this.enc.segmentStart; // output samples
    const time_s = origin / rate + t_s;
    const sample = Math.round(time_s * rate);
    const granule = this.opus ? sample + this.enc.preSkip : null;
    // Output samples of the segment needed to carry the audio up to t...
    let need = ceilSamples(t_s * rate);
    // ...for Opus, the 20 ms packets whose decoding yields them once the pre-skip is dropped...
    if (this.opus && need > 0) need = Math.ceil((need + this.enc.preSkip) / 960) * 960;
    // ...and the input the resampler must have seen to emit that many: output k is ready once
    // input ⌊k·from/to⌋ + half has arrived (resampler.ts), so R outputs need ⌊(R−1)·from/to⌋ + half + 1.
    let input = need;
    if (this.half > 0) {
      const to = this.opus ? 48000 : rate;
      input = need === 0 ? 0 : Math.floor(((need - 1) * this.inputRate) / to) + this.half + 1;
    }
    const chunk = this.segChunk + Math.max(0, Math.ceil(input / this.frameSamples) - 1);
    return { time_s, sample, granule, chunk };
  }

  mapWord<W extends { start_s: number; stop_s: number }>(word: W): W & { chunk: number } {
    const start = this.mapTime(word.start_s);
    const stop = this.mapTime(word.stop_s);
    return { ...word, start_s: start.time_s, stop_s: stop.time_s, chunk: stop.chunk };
  }
}

/**
 * Creates the TTS output encoder for an API `output_format` (docs/api.md §4.2, §4.5).
 *
 * @example
 * const enc = createTtsAudioEncoder('ulaw_8000');
 * for (const frame of engineFrames) {           // Int16Array(3840) at 48 kHz
 *   const { bytes, start_s, stop_s } = enc.encode(frame);
 *   send({ type: 'audio', audio: encodeBase64(bytes), start_s, stop_s });
 * }
 * send({ type: 'audio', audio: encodeBase64(enc.end().bytes) });
 *
 * @param format - an API output format name; `mulaw_8000` is `ulaw_8000`.
 * @param options - engine `sampleRate` (default 48000), `frameSamples` (default 80 ms),
 *   resampler `quality` (default `'high'`), `opus` settings.
 * @throws VoicewireError `FORMAT_UNKNOWN` (1008) for an unknown name; `INVALID_ARGUMENT`.
 */
export function createTtsAudioEncoder(format: string, opts?: TtsAudioEncoderOptions): TtsAudioEncoder {
  const options = optionsArg(opts, 'createTtsAudioEncoder options');
  return new TtsAudioEncoderImpl(format, options);
}

/**
 * A TTS output encoder in the shape the protocol server's `createOutputEncoder` option takes
 * (`TtsOutputEncoder` of sessions/tts-server-session.ts): `push(frame)` → the frame's chunk
 * `{ bytes, start_s, stop_s }`, `end()` → the tail chunk, both with the real span of decoded
 * output audio the bytes add (after resampling and Opus pre-skip, see {@link TtsAudioChunk}), so
 * the server stamps `audio` messages with it and holds each word until the audio reaching its
 * `stop_s` has been sent. Pass `createTtsOutputEncoder` itself as that option.
 *
 * @param format - an API output format name.
 * @param sampleRate - rate of the engine's frames, Hz. Default 48000.
 */
export function createTtsOutputEncoder(format: string, sampleRate = 48000): { push(pcm: Int16Array): TtsAudioChunk; end(): TtsAudioChunk } {
  const enc = createTtsAudioEncoder(format, { sampleRate });
  return {
    push: (pcm) => enc.encode(pcm),
    end: () => enc.end(),
  };
}

/** Options of {@link createTtsEncoderStream}. */
export interface TtsEncoderStreamOptions extends TtsAudioEncoderOptions, PipelineWaterMarks {
  /** `'bytes'` (default): the chunks' bytes out (empty ones skipped); `'chunks'`: {@link TtsAudioChunk} objects with their timing. */
  output?: 'chunks' | 'bytes';
}

/**
 * The TTS encoder's core for stream adapters: typed-array input is cut into frames of
 * `frameSamples`, byte input is framed (the last partial frame is encoded short at the end), so
 * every output chunk is one frame whatever the writes. Used by {@link createTtsEncoderStream} and
 * the Node Transform.
 */
export function ttsEncoderStreamCore(format: string, opts?: TtsEncoderStreamOptions) {
  const options = optionsArg(opts, 'ttsEncoderStreamCore options');
  const enc = createTtsAudioEncoder(format, options);
  const frameSamples = options.frameSamples ?? Math.round((options.sampleRate ?? 48000) * 0.08);
  const framer: Framer = createFramer({ frameSamples, bytesPerSample: 2, partial: 'short' });
  const bytesOut = options.output !== 'chunks';
  const emit = (chunk: TtsAudioChunk): (TtsAudioChunk | Uint8Array)[] => (bytesOut ? (chunk.bytes.byteLength > 0 ? [chunk.bytes] : []) : [chunk]);
  return {
    encoder: enc,
    slice(chunk: AudioEncoderInput): AudioEncoderInput[] {
      if (chunk instanceof Int16Array || chunk instanceof Float32Array) {
        if (chunk.length <= frameSamples) return [chunk];
        const out: AudioEncoderInput[] = [];
        for (let i = 0; i < chunk.length; i += frameSamples) out.push(chunk.subarray(i, i + frameSamples));
        return out;
      }
      return framer.push(toBytes(chunk, 'TTS encoder stream chunk'));
    },
    push: (frame: AudioEncoderInput) => emit(enc.encode(frame)),
    flush(): (TtsAudioChunk | Uint8Array)[] {
      const out: (TtsAudioChunk | Uint8Array)[] = [];
      for (const f of framer.flush()) out.push(...emit(enc.encode(f)));
      const last = enc.end();
      if (last.bytes.byteLength > 0) out.push(...emit(last));
      return out;
    },
    reset(): void {
      framer.reset();
      enc.reset();
    },
    destroy: () => enc.destroy(),
  };
}

/**
 * A web stream pair: engine frames in (Int16Array / Float32Array frames, or s16le bytes in any
 * chunking), the bytes of one chunk per 80 ms frame out (or {@link TtsAudioChunk} objects with
 * `output: 'chunks'`), with backpressure
 * counted in frames (high/low water marks, default 8/2). `reset()` drops queued chunks (barge-in).
 *
 * @example
 * await engineFrames.pipeThrough(createTtsEncoderStream('opus')).pipeTo(sink); // Ogg pages
 */
export function createTtsEncoderStream(format: string, opts?: TtsEncoderStreamOptions): PipelineStream<AudioEncoderInput, TtsAudioChunk | Uint8Array> {
  const options = optionsArg(opts, 'createTtsEncoderStream options');
  const core = ttsEncoderStreamCore(format, options);
  const streamOptions: { slice: typeof core.slice; highWaterMark?: number; lowWaterMark?: number } = { slice: core.slice };
  if (options.highWaterMark !== undefined) streamOptions.highWaterMark = options.highWaterMark;
  if (options.lowWaterMark !== undefined) streamOptions.lowWaterMark = options.lowWaterMark;
  return createPipelineStream(core, streamOptions);
}
