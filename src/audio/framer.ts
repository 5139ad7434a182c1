/**
 * The 80 ms framer: cuts a byte stream of PCM (or G.711) arriving in chunks of any size into
 * frames of exactly `frameSamples` samples. The STT model steps on 1920 samples at 24 kHz
 * (3840 bytes, docs/api.md §4.4 "recommended chunk is 1920 samples"); TTS output moves in
 * 3840 samples at 48 kHz (7680 bytes, §4.2 "chunk size is 3840 samples").
 *
 * Copying is linear in the input and nothing is ever concatenated per chunk:
 * - a frame that lies entirely inside one pushed chunk is returned as a VIEW of that chunk
 *   (`chunk.subarray`, zero copy);
 * - a frame that straddles chunks is assembled in fresh (zeroed) memory, each byte copied exactly
 *   once (the bytes of an unfinished frame are copied in as they arrive, so the framer holds no
 *   reference to any chunk after `push` returns). That memory is carved from a slab of up to
 *   {@link FRAMER_SLAB_FRAMES} frames: allocating an ArrayBuffer costs ~1.9 µs for 7680 bytes on
 *   Node 20, a slab of 8 frames ~4.5 µs, so straddling frames cost ~3× less. Consequence: several
 *   copied frames share one `ArrayBuffer` (non-overlapping; a frame kept alive keeps its slab,
 *   at most 8 frames, alive).
 *
 * Latency: a frame is emitted by the very `push` that delivers its last byte, never later; the
 * framer holds back at most `frameBytes - 1` bytes, i.e. {@link Framer.delay} = `frameSamples - 1`
 * samples in the worst case.
 */
import { VoicewireError } from '../util/errors.js';
import { shown } from '../util/args.js';
import { describe, toBytes } from '../util/bytes.js';
import type { Incremental } from '../util/stream-core.js';
import { toWebTransformStream, type WebTransformOptions } from '../util/web.js';

/** What to do with the last, incomplete frame on {@link Framer.flush}. */
export type FramerPartial = 'pad' | 'short' | 'drop';

/** Options of {@link createFramer}. */
export interface FramerOptions {
  /** Samples per frame, per channel (1920 for STT at 24 kHz, 3840 for TTS at 48 kHz). */
  frameSamples: number;
  /** Bytes per sample: 2 for s16le, 1 for G.711, 3 for s24le, 4 for f32le/s32le. */
  bytesPerSample: number;
  /** Interleaved channels. Default 1 (the service is mono). */
  channels?: number;
  /**
   * The final partial frame on `flush()`:
   * - `'pad'` (default): zero-padded to a whole frame (the STT model needs whole frames, §4.4);
   * - `'short'`: emitted as it is, rounded up to whole samples (a trailing odd byte of s16 is
   *   completed with a zero byte), so `int16View` always works on it;
   * - `'drop'`: discarded.
   */
  partial?: FramerPartial;
  /** Sample rate, only used to report {@link Framer.delaySeconds}. Optional. */
  sampleRate?: number;
}

/** A frame preset: frame size and the rate it stands for. */
export interface FramePreset {
  readonly frameSamples: number;
  readonly bytesPerSample: number;
  readonly sampleRate: number;
  readonly channels: 1;
  /** `frameSamples * bytesPerSample * channels`. */
  readonly frameBytes: number;
}

/** STT input frame: 80 ms = 1920 samples of s16le mono at 24 kHz = 3840 bytes (docs/api.md §4.4). */
export const STT_FRAME: FramePreset = Object.freeze({ frameSamples: 1920, bytesPerSample: 2, sampleRate: 24000, channels: 1, frameBytes: 3840 });

/** TTS output frame: 80 ms = 3840 samples of s16le mono at 48 kHz = 7680 bytes (docs/api.md §4.2). */
export const TTS_FRAME: FramePreset = Object.freeze({ frameSamples: 3840, bytesPerSample: 2, sampleRate: 48000, channels: 1, frameBytes: 7680 });

/** Largest frame the framer accepts (64 MiB): a guard against nonsense options, not a real limit. */
export const MAX_FRAME_BYTES = 1 << 26;

/** Copied (straddling) frames are carved from slabs of this many frames at most (and ≤ 64 KiB
 *  unless one frame is larger). */
export const FRAMER_SLAB_FRAMES = 8;

/**
 * An incremental framer. `push` returns the frames completed by that chunk; `flush` ends the
 * input and returns the final partial frame (per {@link FramerOptions.partial}); after `flush`
 * the framer is empty and can take a new stream.
 *
 * View lifetime: frames that lie inside one pushed chunk ALIAS that chunk's memory. If you reuse
 * or overwrite a chunk after pushing it, copy those frames first (`frame.slice()`). Copied frames
 * share slabs with each other (see the module note). Always respect `byteOffset`/`byteLength`:
 * never read `frame.buffer` whole. Frames may start at an odd byte offset when the chunk does;
 * use `int16View` (which copies when misaligned) to read samples.
 */
export interface Framer extends Incremental<Uint8Array, Uint8Array> {
  /** Appends bytes (any length, including 0 and odd counts); returns every frame now complete. */
  push(bytes: Uint8Array): Uint8Array[];
  /** Ends the input: returns the final partial frame (padded, short, or nothing), then empties. */
  flush(): Uint8Array[];
  /** Drops the buffered partial frame (barge-in: stale audio must not leak into the next turn). */
  reset(): void;
  /** Bytes held back for the next frame (0 ≤ buffered < frameBytes). */
  readonly buffered: number;
  /** Bytes per frame: `frameSamples * bytesPerSample * channels`. */
  readonly frameBytes: number;
  /** Worst-case delay the framer adds, in samples (per channel): `frameSamples - 1`. A frame is
   *  emitted as soon as its last byte arrives, so no sample waits longer than that. */
  readonly delay: number;
  /** {@link delay} in seconds when `sampleRate` was given, else `null`. */
  readonly delaySeconds: number | null;
}

function positiveInteger(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) {
    throw new VoicewireError('INVALID_ARGUMENT', `createFramer: ${name} must be a positive integer, got ${typeof value === 'number' ? value : describe(value)}`);
  }
  return value;
}

class FramerImpl implements Framer {
  readonly frameBytes: number;
  readonly delay: number;
  readonly delaySeconds: number | null;
  private readonly sampleBytes: number; // bytes per sample frame (all channels)
  private readonly partial: FramerPartial;
  private pending: Uint8Array | null = null; // the straddling frame being assembled (zero-filled)
  private fill = 0; // bytes of `pending` written
  private slab: Uint8Array = new Uint8Array(0); // fresh zeroed memory for straddling frames
  private slabUsed = 0;
  private readonly slabBytes: number;

  constructor(options: FramerOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new VoicewireError('INVALID_ARGUMENT', `createFramer: options must be an object, got ${describe(options)}`);
    }
    const frameSamples = positiveInteger('frameSamples', options.frameSamples);
    const bytesPerSample = positiveInteger('bytesPerSample', options.bytesPerSample);
    const channels = positiveInteger('channels', options.channels ?? 1);
    const partial = options.partial ?? 'pad';
    if (partial !== 'pad' && partial !== 'short' && partial !== 'drop') {
      throw new VoicewireError('INVALID_ARGUMENT', `createFramer: partial must be 'pad', 'short' or 'drop', got ${shown(partial)}`);
    }
    this.sampleBytes = bytesPerSample * channels;
    this.frameBytes = frameSamples * this.sampleBytes;
    if (this.frameBytes > MAX_FRAME_BYTES) {
      throw new VoicewireError('INVALID_ARGUMENT', `createFramer: a frame of ${this.frameBytes} bytes exceeds ${MAX_FRAME_BYTES}`);
    }
    this.partial = partial;
    this.slabBytes = this.frameBytes * Math.max(1, Math.min(FRAMER_SLAB_FRAMES, Math.floor(65536 / this.frameBytes)));
    this.delay = frameSamples - 1;
    this.delaySeconds = options.sampleRate === undefined ? null : this.delay / positiveInteger('sampleRate', options.sampleRate);
  }

  get buffered(): number {
    return this.fill;
  }

  push(input: Uint8Array): Uint8Array[] {
    const bytes = toBytes(input, 'Framer.push: bytes');
    const frames: Uint8Array[] = [];
    const n = bytes.byteLength;
    const size = this.frameBytes;
    let pos = 0;
    // 1. Complete the frame that straddles the previous chunk boundary (one copy per byte).
    if (this.fill > 0) {
      const k = Math.min(size - this.fill, n);
      this.pending!.set(bytes.subarray(0, k), this.fill);
      this.fill += k;
      pos = k;
      if (this.fill === size) {
        frames.push(this.pending!);
        this.pending = null;
        this.fill = 0;
      }
    }
    // 2. Whole frames inside this chunk: views, no copy.
    while (n - pos >= size) {
      frames.push(bytes.subarray(pos, pos + size));
      pos += size;
    }
    // 3. The tail starts a new straddling frame; copy it now so no reference to `bytes` is kept.
    if (pos < n) {
      const frame = this.freshFrame();
      frame.set(bytes.subarray(pos), 0);
      this.pending = frame;
      this.fill = n - pos;
    }
    return frames;
  }

  /** A never-used, zeroed region of frameBytes (so 'pad' needs no fill). Regions are not reused:
   *  one dropped by reset() holds stale bytes and is simply abandoned with its slab. */
  private freshFrame(): Uint8Array {
    const size = this.frameBytes;
    if (this.slabUsed + size > this.slab.byteLength) {
      this.slab = new Uint8Array(this.slabBytes);
      this.slabUsed = 0;
    }
    const frame = this.slab.subarray(this.slabUsed, this.slabUsed + size);
    this.slabUsed += size;
    return frame;
  }

  flush(): Uint8Array[] {
    const pending = this.pending;
    const fill = this.fill;
    this.reset();
    if (pending === null || fill === 0 || this.partial === 'drop') return [];
    if (this.partial === 'pad') return [pending]; // `pending` is zero-filled past `fill`
    // 'short': round up to whole samples; the bytes past `fill` are zeros.
    const whole = Math.ceil(fill / this.sampleBytes) * this.sampleBytes;
    return [pending.subarray(0, whole)];
  }

  reset(): void {
    this.pending = null;
    this.fill = 0;
  }
}

/**
 * Creates an incremental framer.
 *
 * ```ts
 * const framer = createFramer(STT_FRAME);         // 3840-byte frames, final one zero-padded
 * for (const frame of framer.push(chunk)) send(frame);
 * for (const frame of framer.flush()) send(frame);
 * ```
 *
 * @throws VoicewireError `INVALID_ARGUMENT` for non-positive-integer sizes, an unknown `partial`,
 *   a frame larger than {@link MAX_FRAME_BYTES}; `push` throws it for a non-byte input.
 */
export function createFramer(options: FramerOptions): Framer {
  return new FramerImpl(options);
}

/**
 * One-shot framing of a whole buffer: `createFramer(options)`, one `push`, then `flush`.
 * Frames inside `bytes` are views of it; the last (padded or short) frame is a copy.
 */
export function splitIntoFrames(bytes: Uint8Array, options: FramerOptions): Uint8Array[] {
  const framer = createFramer(options);
  const frames = framer.push(bytes);
  for (const f of framer.flush()) frames.push(f);
  return frames;
}

/**
 * A web `TransformStream` that frames a byte stream (browsers, Deno, Node ≥ 18). Backpressure is
 * the platform's (default strategies: one chunk queued on the writable side, none on the
 * readable side). Frames may alias written chunks (see {@link Framer}): do not reuse a chunk
 * after writing it.
 */
export function createFramerStream(options: FramerOptions, streamOptions: WebTransformOptions<Uint8Array, Uint8Array> = {}): TransformStream<Uint8Array, Uint8Array> {
  return toWebTransformStream<Uint8Array, Uint8Array>(createFramer(options), streamOptions);
}

// ---------------------------------------------------------------------------------------------
// Silence
// ---------------------------------------------------------------------------------------------

/** Sizes above this get a fresh buffer from {@link silenceFrame} instead of the shared one. */
const SHARED_SILENCE_LIMIT = 1 << 20;
let sharedZeros = new Uint8Array(TTS_FRAME.frameBytes);

function checkFrameBytes(fn: string, frameBytes: unknown): number {
  if (typeof frameBytes !== 'number' || !Number.isInteger(frameBytes) || frameBytes <= 0 || frameBytes > MAX_FRAME_BYTES) {
    throw new VoicewireError('INVALID_ARGUMENT', `${fn}: frameBytes must be an integer from 1 to ${MAX_FRAME_BYTES}, got ${typeof frameBytes === 'number' ? frameBytes : describe(frameBytes)}`);
  }
  return frameBytes;
}

/**
 * One frame of digital silence (zero bytes: silence for signed PCM, s16le included).
 *
 * READ-ONLY: every call returns a view of ONE shared zero buffer (per process, grown to the
 * largest size asked, up to 1 MiB; larger sizes get a fresh buffer). Writing into it would corrupt
 * every other silence frame; copy it (`.slice()`) if you need to modify it. Not for G.711: μ-law
 * silence is 0xFF and A-law silence 0xD5.
 *
 * @param frameBytes - frame size in bytes. Default 3840 (an STT frame, {@link STT_FRAME}).
 */
export function silenceFrame(frameBytes: number = STT_FRAME.frameBytes): Uint8Array {
  checkFrameBytes('silenceFrame', frameBytes);
  if (frameBytes > SHARED_SILENCE_LIMIT) return new Uint8Array(frameBytes);
  if (frameBytes > sharedZeros.byteLength) sharedZeros = new Uint8Array(frameBytes);
  return sharedZeros.subarray(0, frameBytes);
}

/**
 * `count` frames of silence, e.g. the `delay_in_frames` frames the STT turn-taking flush pushes
 * behind the audio (docs/api.md §4.4 "Feeding delay_in_frames chunks of silence").
 * The frames are fresh, distinct, non-overlapping views of one zeroed allocation (safe to modify).
 *
 * @param count - number of frames, a non-negative integer.
 * @param frameBytes - bytes per frame. Default 3840 (80 ms of s16le at 24 kHz, {@link STT_FRAME}).
 * @throws VoicewireError `INVALID_ARGUMENT` for a bad count or frame size.
 */
export function createSilenceFrames(count: number, frameBytes = 3840): Uint8Array[] {
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 0) {
    throw new VoicewireError('INVALID_ARGUMENT', `createSilenceFrames: count must be a non-negative integer, got ${typeof count === 'number' ? count : describe(count)}`);
  }
  checkFrameBytes('createSilenceFrames', frameBytes);
  if (count * frameBytes > MAX_FRAME_BYTES) {
    throw new VoicewireError('INVALID_ARGUMENT', `createSilenceFrames: ${count} frames of ${frameBytes} bytes exceed ${MAX_FRAME_BYTES} bytes`);
  }
  const zeros = new Uint8Array(count * frameBytes);
  const frames: Uint8Array[] = new Array<Uint8Array>(count);
  for (let i = 0; i < count; i++) frames[i] = zeros.subarray(i * frameBytes, (i + 1) * frameBytes);
  return frames;
}
