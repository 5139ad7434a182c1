/**
 * The general audio encoder: mono PCM at any input rate in, bytes of any API output format out
 * (docs/api.md §4.2 `output_format`). One incremental core composes the audio modules:
 *
 * | format                       | stages                                                          |
 * |------------------------------|-----------------------------------------------------------------|
 * | `pcm`, `pcm_N`               | resampler (input rate → format rate, skipped when equal) → s16le |
 * | `ulaw_8000`, `mulaw_8000`, `alaw_8000` | resampler → 8 kHz → G.711 (G.191 tables)              |
 * | `wav`                        | 44-byte streaming header (sizes 0xFFFFFFFF) → resampler → s16le  |
 * | `opus`                       | resampler → 48 kHz → 20 ms packets → Ogg pages (RFC 7845)        |
 *
 * Streaming equals one-shot: the resampler is chunk-exact (`resampleInt16` of the whole input),
 * G.711 and s16le are per-sample, and the Opus stage cuts packets at the same 960-sample grid
 * whatever the chunking, so any split of the input gives byte-identical output.
 *
 * Timeline: every stage is aligned to the input. The resampler has zero lag (output `k` stands
 * for time `k / rate`; its look-ahead is a delay in *emission*, not in the signal) and Opus's
 * look-ahead is written as the stream's pre-skip, which decoders remove (RFC 7845 §4.2). So input
 * time `t` is output time `t`; {@link AudioEncoder.outputSamples} says how much of that timeline
 * the bytes emitted so far carry.
 *
 * Platform-neutral: typed arrays in and out. Opus needs the libopus wasm module: loaded on first
 * use in Node; in a browser's main thread `await initOpus({ wasm })` first.
 */
import { bytesOf, concatChunks, describe, int16View } from '../util/bytes.js';
import { VoicewireError } from '../util/errors.js';
import { arrayArg, bytesArg } from '../util/args.js';
import { parseAudioFormat, type AudioFormat } from '../audio/format.js';
import { encodeAlaw, encodeMulaw } from '../audio/g711.js';
import { OggOpusEncoder, type OggOpusEncoderOptions } from '../audio/ogg-opus.js';
import { float32ToInt16 } from '../audio/pcm.js';
import { createInt16Resampler, type Resampler, type ResamplerQuality } from '../audio/resampler.js';
import type { Incremental } from '../util/stream-core.js';
import { wavStreamHeader } from '../audio/wav.js';

/** PCM the encoders take: Int16 samples, Float32 samples (±1.0), or s16le bytes. Always mono. */
export type AudioEncoderInput = Int16Array | Float32Array | Uint8Array;

/** Opus settings an {@link AudioEncoder} passes to its {@link OggOpusEncoder}. */
export type AudioEncoderOpusOptions = Pick<OggOpusEncoderOptions, 'application' | 'bitrate' | 'complexity' | 'pageDuration' | 'serial' | 'vendor' | 'comments' | 'outputGain'>;

/** Options of {@link createAudioEncoder}. */
export interface AudioEncoderOptions {
  /** An API output format name (docs/api.md §4.2), read in the `'tts-output'` direction. */
  format: string;
  /** Sample rate of the input PCM, Hz (a positive integer). */
  inputRate: number;
  /** Resampler quality (see RESAMPLER_QUALITIES). Default `'high'`: flat to 0.9× Nyquist, ≥ 120 dB stopband from 1.1×. */
  quality?: ResamplerQuality;
  /** Rate of the PCM in a `wav` stream. Default the format's (48000, §4.2); ignored by other formats, whose names fix the rate. */
  wavSampleRate?: number;
  /** Opus settings (format `opus` only). Default: libopus defaults, 80 ms pages, random serial. */
  opus?: AudioEncoderOpusOptions;
  /**
   * Write the Opus packets completed by each push as a page at the end of that push, instead of
   * grouping `pageDuration` of audio per page. Default `false`. The TTS preset sets it: one page
   * per 80 ms frame, so no frame's audio waits for the next one.
   */
  opusPagePerPush?: boolean;
}

/** The delay each stage adds, in milliseconds (0 for stages a format does not use). */
export interface AudioEncoderLatency {
  /** Resampler look-ahead: output at time `t` is emitted once input up to `t + resamplerMs` arrived. */
  readonly resamplerMs: number;
  /** Opus look-ahead (6.5 ms with libopus): the decoded audio trails the input by it until the next packet; removed by pre-skip. */
  readonly codecMs: number;
  /** Most a sample waits for its 20 ms Opus packet to fill (0 when pushes are whole packets). */
  readonly packetMs: number;
  /** Most a finished Opus packet waits for its page (0 with `opusPagePerPush`). */
  readonly pageMs: number;
  /** Sum of the above. */
  readonly totalMs: number;
}

/** An incremental encoder (see {@link createAudioEncoder}). */
export interface AudioEncoder extends Incremental<AudioEncoderInput, Uint8Array> {
  /**
   * Encodes the next chunk (any length, even empty or an odd number of bytes); returns the bytes
   * now ready, in order (the `wav` header and the Ogg header pages come with the first push).
   * Chunks are never empty. For `pcm` at the input rate, the output is a view of the input.
   */
  push(chunk: AudioEncoderInput): Uint8Array[];
  /**
   * Ends the stream: the resampler's tail, the last (padded) Opus packet and the EOS page. The
   * encoder then takes a new stream (a new `wav` header, a new Ogg stream).
   */
  flush(): Uint8Array[];
  /**
   * Barge-in: drops the audio buffered inside (the resampler's look-ahead, a partial Opus
   * packet, a stray odd byte). The byte stream itself goes on (no new header): the next push
   * continues it, and starts a new segment at {@link segmentStart}.
   */
  reset(): void;
  /** Frees the libopus encoder (format `opus`) without ending the stream. Idempotent. */
  destroy(): void;
  /** The output format (its `canonical` name folds `mulaw_8000` into `ulaw_8000`). */
  readonly format: AudioFormat;
  readonly inputRate: number;
  /** Rate of the encoded audio, Hz (48000 for `opus`). */
  readonly outputRate: number;
  /** Opus pre-skip in 48 kHz samples (312 for libopus); 0 for other formats. */
  readonly preSkip: number;
  readonly latency: AudioEncoderLatency;
  /**
   * Samples (at {@link outputRate}) of decoded audio the bytes emitted so far carry, from the start
   * of the stream: for `opus`, the last page's granule minus pre-skip.
   */
  readonly outputSamples: number;
  /** Output-timeline sample at which the current segment (since creation or the last reset) starts. */
  readonly segmentStart: number;
  /** Input samples accepted in the current segment (whole samples; a stray byte is not counted). */
  readonly segmentInputSamples: number;
  /** {@link outputSamples} of the stream the last `flush()` ended (its total length), 0 before. */
  readonly flushedSamples: number;
}

const K_PCM = 0;
const K_MULAW = 1;
const K_ALAW = 2;
const K_WAV = 3;
const K_OPUS = 4;

/** 20 ms at 48 kHz: the Opus packet grid. */
const OPUS_PACKET = 960;
/**
 * Empty arrays shared by the encoders that have no buffer of their own yet (no slab before the first
 * output) or need none (no packet but Opus's): an idle TTS session's encoder holds none (issue 22).
 */
const NO_BYTES = new Uint8Array(0);
const NO_SAMPLES = new Int16Array(0);

/** Output bytes are carved from slabs of this size (one ArrayBuffer per ~100 G.711 chunks). */
const SLAB_BYTES = 1 << 16;
const UNKNOWN_GRANULE_HI = 0xffffffff;

function checkRate(name: string, rate: unknown): number {
  if (typeof rate !== 'number' || !Number.isInteger(rate) || rate <= 0 || rate > 0x7fffffff) {
    throw new VoicewireError('INVALID_ARGUMENT', `createAudioEncoder: ${name} must be a positive integer (Hz), got ${typeof rate === 'number' ? rate : describe(rate)}`);
  }
  return rate;
}

/** Granule position of an Ogg page (RFC 3533 §6: bytes 6–13, little-endian), or -1 when unset. */
function pageGranule(page: Uint8Array): number {
  const lo = (page[6]! | (page[7]! << 8) | (page[8]! << 16) | (page[9]! << 24)) >>> 0;
  const hi = (page[10]! | (page[11]! << 8) | (page[12]! << 16) | (page[13]! << 24)) >>> 0;
  if (hi === UNKNOWN_GRANULE_HI && lo === UNKNOWN_GRANULE_HI) return -1;
  return hi * 4294967296 + lo;
}

class AudioEncoderImpl implements AudioEncoder {
  readonly format: AudioFormat;
  readonly inputRate: number;
  readonly outputRate: number;
  readonly latency: AudioEncoderLatency;
  preSkip = 0;
  private readonly kind: number;
  private readonly resampler: Resampler<Int16Array> | null;
  private readonly opusOptions: OggOpusEncoderOptions;
  private readonly pagePerPush: boolean;
  private opus: OggOpusEncoder | null = null;
  /** Samples of an unfinished Opus packet (the packet grid is ours, so reset() can drop them). */
  private readonly packet: Int16Array;
  private packetFill = 0;
  private started = false;
  private carry = -1; // a stray low byte of s16le input, or -1
  private emitted = 0; // output samples emitted (pcm, G.711, wav)
  private lastGranule = 0; // opus
  private segStart = 0;
  private segInput = 0;
  flushedSamples = 0;
  private slab = NO_BYTES;
  private slabUsed = 0;

  constructor(options: AudioEncoderOptions) {
    if (typeof options !== 'object' || options === null) throw new VoicewireError('INVALID_ARGUMENT', `createAudioEncoder: options must be an object, got ${describe(options)}`);
    this.format = parseAudioFormat(options.format, { direction: 'tts-output' });
    this.inputRate = checkRate('inputRate', options.inputRate);
    const f = this.format;
    this.kind = f.codec === 'opus' ? K_OPUS : f.container === 'wav' ? K_WAV : f.codec === 'mulaw' ? K_MULAW : f.codec === 'alaw' ? K_ALAW : K_PCM;
    let rate = f.sampleRate ?? 48000;
    if (this.kind === K_WAV && options.wavSampleRate !== undefined) rate = checkRate('wavSampleRate', options.wavSampleRate);
    this.outputRate = rate;
    const quality = options.quality ?? 'high';
    this.resampler = rate === this.inputRate ? null : createInt16Resampler({ from: this.inputRate, to: rate, quality });
    this.pagePerPush = options.opusPagePerPush ?? false;
    this.packet = this.kind === K_OPUS ? new Int16Array(OPUS_PACKET) : NO_SAMPLES;
    this.opusOptions = { sampleRate: 48000, packetDuration: 20, ...(options.opus ?? {}) };
    if (this.kind === K_OPUS) this.opus = this.newOpus();
    const resamplerMs = this.resampler === null ? 0 : this.resampler.delaySeconds * 1000;
    const codecMs = this.kind === K_OPUS ? (this.preSkip / 48000) * 1000 : 0;
    const packetMs = this.kind === K_OPUS ? 20 : 0;
    const pageMs = this.kind === K_OPUS && !this.pagePerPush ? this.opus!.latency.pageMs : 0;
    this.latency = Object.freeze({ resamplerMs, codecMs, packetMs, pageMs, totalMs: resamplerMs + codecMs + packetMs + pageMs });
  }

  get outputSamples(): number {
    if (this.kind === K_OPUS) return Math.max(0, this.lastGranule - this.preSkip);
    return this.emitted;
  }

  get segmentStart(): number {
    return this.segStart;
  }

  get segmentInputSamples(): number {
    return this.segInput;
  }

  private newOpus(): OggOpusEncoder {
    const enc = new OggOpusEncoder(this.opusOptions);
    this.preSkip = enc.preSkip;
    return enc;
  }

  push(chunk: AudioEncoderInput): Uint8Array[] {
    if (this.kind === K_PCM && this.resampler === null && chunk instanceof Int16Array && chunk.length > 0) {
      // Same rate s16le: the samples' own bytes (the TTS `pcm` path, once per 80 ms frame).
      this.started = true;
      this.segInput += chunk.length;
      this.emitted += chunk.length;
      return [bytesOf(chunk)];
    }
    const pcm = this.toInt16(chunk);
    const out: Uint8Array[] = [];
    if (!this.started) this.start(out);
    this.segInput += pcm.length;
    this.encode(this.resampler === null ? pcm : this.resampler.push(pcm), out);
    if (this.kind === K_OPUS && this.pagePerPush) this.opusPages(this.opus!.flushPage(), out);
    return out;
  }

  flush(): Uint8Array[] {
    const out: Uint8Array[] = [];
    try {
      if (!this.started) this.start(out);
      if (this.resampler !== null) this.encode(this.resampler.flush(), out);
      if (this.kind === K_OPUS) {
        const enc = this.opus!;
        if (this.packetFill > 0) this.opusPages(enc.push(this.packet.subarray(0, this.packetFill)), out);
        this.opusPages(enc.flush(), out); // pads the last packet, EOS page with granule = input + pre-skip
      }
    } finally {
      this.restart();
    }
    return out;
  }

  reset(): void {
    this.resampler?.reset();
    this.packetFill = 0;
    this.carry = -1;
    // The next accepted sample lands here in the output timeline: after what was emitted (the
    // resampler's tail is dropped), or for Opus after everything the encoder took (its look-ahead
    // comes out with the next packets; the dropped partial packet never went in).
    this.segStart = this.kind === K_OPUS ? (this.opus?.samplesIn ?? 0) : this.emitted;
    this.segInput = 0;
  }

  destroy(): void {
    this.opus?.destroy();
  }

  /** After flush: a new stream (new header, new Ogg stream, timeline from 0). */
  private restart(): void {
    this.flushedSamples = this.outputSamples;
    this.resampler?.reset();
    this.packetFill = 0;
    this.carry = -1;
    this.started = false;
    this.emitted = 0;
    this.lastGranule = 0;
    this.segStart = 0;
    this.segInput = 0;
    if (this.kind === K_OPUS) {
      this.opus?.destroy();
      this.opus = null;
    }
  }

  private start(out: Uint8Array[]): void {
    this.started = true;
    if (this.kind === K_WAV) out.push(wavStreamHeader({ sampleRate: this.outputRate }));
    else if (this.kind === K_OPUS) {
      this.opus ??= this.newOpus();
      this.opusPages(this.opus.flushPage(), out); // the OpusHead and OpusTags pages
    }
  }

  private toInt16(chunk: AudioEncoderInput): Int16Array {
    if (chunk instanceof Int16Array) return chunk;
    if (chunk instanceof Float32Array) return float32ToInt16(chunk); // ×32767, round, clamp (pcm.ts)
    if (!(chunk instanceof Uint8Array)) {
      throw new VoicewireError('INVALID_ARGUMENT', `AudioEncoder.push takes an Int16Array, Float32Array or Uint8Array (s16le), got ${describe(chunk)}`);
    }
    // s16le bytes: a sample split across two chunks is carried as its low byte.
    const n = chunk.byteLength;
    if (this.carry < 0) {
      const whole = n & ~1;
      if (whole < n) this.carry = chunk[n - 1]!;
      return int16View(chunk.subarray(0, whole));
    }
    if (n === 0) return new Int16Array(0);
    const total = n + 1;
    const whole = total & ~1;
    const out = new Int16Array(whole >> 1);
    const b = new Uint8Array(out.buffer);
    b[0] = this.carry;
    b.set(chunk.subarray(0, whole - 1), 1);
    this.carry = whole < total ? chunk[n - 1]! : -1;
    return out;
  }

  private bytes(n: number): Uint8Array {
    if (n > SLAB_BYTES >> 3) return new Uint8Array(n);
    if (this.slabUsed + n > this.slab.byteLength) {
      this.slab = new Uint8Array(SLAB_BYTES);
      this.slabUsed = 0;
    }
    const b = this.slab.subarray(this.slabUsed, this.slabUsed + n);
    this.slabUsed += n;
    return b;
  }

  private encode(pcm: Int16Array, out: Uint8Array[]): void {
    const n = pcm.length;
    switch (this.kind) {
      case K_PCM:
      case K_WAV:
        if (n > 0) out.push(bytesOf(pcm)); // s16le on little-endian hosts (all that run JS engines)
        this.emitted += n;
        return;
      case K_MULAW:
        if (n > 0) out.push(encodeMulaw(pcm, this.bytes(n)));
        this.emitted += n;
        return;
      case K_ALAW:
        if (n > 0) out.push(encodeAlaw(pcm, this.bytes(n)));
        this.emitted += n;
        return;
      default:
        this.opusSamples(pcm, out);
    }
  }

  /** Feeds whole 20 ms packets to the Ogg Opus encoder; an unfinished packet waits in `packet`. */
  private opusSamples(pcm: Int16Array, out: Uint8Array[]): void {
    const enc = this.opus!;
    const n = pcm.length;
    let i = 0;
    if (this.packetFill > 0) {
      const k = Math.min(OPUS_PACKET - this.packetFill, n);
      this.packet.set(pcm.subarray(0, k), this.packetFill);
      this.packetFill += k;
      i = k;
      if (this.packetFill < OPUS_PACKET) return;
      this.packetFill = 0;
      this.opusPages(enc.push(this.packet), out); // encoded (copied into the wasm heap) at once
    }
    const whole = Math.floor((n - i) / OPUS_PACKET) * OPUS_PACKET;
    if (whole > 0) {
      this.opusPages(enc.push(pcm.subarray(i, i + whole)), out);
      i += whole;
    }
    if (i < n) {
      this.packet.set(pcm.subarray(i), 0);
      this.packetFill = n - i;
    }
  }

  private opusPages(pages: readonly Uint8Array[], out: Uint8Array[]): void {
    for (const page of pages) {
      const g = pageGranule(page);
      if (g >= 0) this.lastGranule = g;
      out.push(page);
    }
  }
}

/**
 * Creates an incremental encoder from mono PCM at `inputRate` to the bytes of an API output
 * format. `pcm` means 48 kHz here (the TTS direction, §4.2); `wav` writes the service's
 * streaming header (RIFF and data sizes 0xFFFFFFFF) then s16le at 48 kHz (or `wavSampleRate`).
 *
 * Input: Int16Array, Float32Array (converted by {@link float32ToInt16}'s rule, ×32767 with
 * clamping, so it equals pushing its Int16 conversion), or s16le bytes in any chunking.
 *
 * @example
 * const enc = createAudioEncoder({ format: 'ulaw_8000', inputRate: 24000 });
 * for (const pcm of chunks) for (const b of enc.push(pcm)) socket.send(b);
 * for (const b of enc.flush()) socket.send(b);
 *
 * @throws VoicewireError `FORMAT_UNKNOWN` (close code 1008) for a name that is not an API
 *   format, `INVALID_ARGUMENT` for a bad rate or option, `RESAMPLER_INVALID_RATE`, and for
 *   `opus` `INVALID_STATE` when the libopus wasm cannot load synchronously (call `initOpus`).
 */
export function createAudioEncoder(options: AudioEncoderOptions): AudioEncoder {
  return new AudioEncoderImpl(options);
}

/** Joins byte chunks into one array (a chunk alone is returned as is). */
export function joinAudioBytes(parts: readonly Uint8Array[]): Uint8Array {
  arrayArg(parts, 'joinAudioBytes parts');
  for (let i = 0; i < parts.length; i++) bytesArg(parts[i], `joinAudioBytes parts[${i}]`);
  if (parts.length === 1) return parts[0]!;
  return concatChunks(parts, (n) => new Uint8Array(n));
}

/**
 * One-shot: encodes a whole mono signal at `options.inputRate` into one byte array of the format
 * (a complete stream: `wav` with the streaming header, `opus` with its EOS page).
 */
export function encodeAudio(pcm: AudioEncoderInput, options: AudioEncoderOptions): Uint8Array {
  const enc = createAudioEncoder(options);
  try {
    return joinAudioBytes([...enc.push(pcm), ...enc.flush()]);
  } finally {
    enc.destroy();
  }
}
