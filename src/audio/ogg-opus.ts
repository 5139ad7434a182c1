/**
 * Ogg Opus (RFC 7845): {@link OggOpusEncoder} turns PCM into Ogg pages that opus-tools accept,
 * streamed page by page; {@link OggOpusDecoder} turns Ogg Opus bytes into PCM, honouring pre-skip,
 * output gain and end trimming. Both are pure push/flush cores; web TransformStreams are below,
 * Node Transforms in `voicewire/node`. Platform-neutral.
 *
 * Latency. Encoder: a sample waits for its 20 ms packet to fill (≤ 20 ms), then for its page to
 * be written: with the default 80 ms pages, the first packet of a page waits for three more
 * (≤ 60 ms; 0 when input arrives in 80 ms chunks, as TTS frames do). libopus adds its 6.5 ms
 * look-ahead, which the stream's pre-skip removes at the decoder. Decoder: a packet is decoded as
 * soon as the page that completes it has arrived and passed its CRC, so a sample waits at most
 * for the rest of its page (the sender's page duration); converting to a rate libopus does not
 * run at (e.g. 22050, 44100) adds the resampler's look-ahead. See `OggOpusDecoder.latency`.
 */
import { concatChunks, int16View, float32View, toBytes, describe } from '../util/bytes.js';
import { VoicewireError } from '../util/errors.js';
import { shown } from '../util/args.js';
import { OggPacketReader, OggPageWriter, type OggPacketReaderOptions, type OggPagePackets, type OggWarning } from './ogg.js';
import { OpusDecoder, OpusEncoder, OPUS_FRAME_DURATIONS_MS, OPUS_LIBRARY_VERSION, OPUS_SAMPLE_RATES, opusPacketDuration, type OpusApplication, type OpusFrameDuration, type OpusSampleRate } from './opus.js';
import { buildOpusHead, buildOpusTags, isOpusHead, parseOpusHead, parseOpusTags, type OpusHead, type OpusTags } from './opus-head.js';
import { createInt16Resampler, createResampler, type Resampler } from './resampler.js';
import type { Incremental } from '../util/stream-core.js';
import { toWebTransformStream, type WebTransformOptions } from '../util/web.js';

/** Options objects: undefined means the defaults; anything but an object is INVALID_ARGUMENT. */
function objectOptions<T extends object>(options: T | undefined, what: string): T {
  if (options === undefined) return {} as T;
  if (options === null || typeof options !== 'object') throw new VoicewireError('INVALID_ARGUMENT', `${what} options must be an object, got ${describe(options)}`);
  return options;
}

// --- encoder -------------------------------------------------------------------------------------

/** PCM an {@link OggOpusEncoder} accepts: Int16 or Float32 samples, or bytes (see `inputEncoding`). */
export type OggOpusEncoderInput = Int16Array | Float32Array | Uint8Array;

/** Options of {@link OggOpusEncoder}. */
export interface OggOpusEncoderOptions {
  /** Input sample rate; granule positions are still counted at 48 kHz (RFC 7845 §4). Default 48000. */
  sampleRate?: OpusSampleRate;
  /** libopus coding mode. Default `'audio'`. */
  application?: OpusApplication;
  /** Target bitrate, bit/s (500–512000), `'auto'` (default) or `'max'`. */
  bitrate?: number | 'auto' | 'max';
  /** libopus complexity 0–10. Default libopus's (9). */
  complexity?: number;
  /** Duration of each Opus packet, ms. Default 20 (an 80 ms TTS frame is four packets). */
  packetDuration?: OpusFrameDuration;
  /**
   * A page is written as soon as it holds this much audio, ms (rounded up to whole packets).
   * Default 80: one page per TTS frame. Use the packet duration for a page per packet (lowest
   * latency, 28 bytes of overhead per packet).
   */
  pageDuration?: number;
  /** How `Uint8Array` chunks are read: `'s16le'` (default) or `'f32le'`. Typed arrays are read as they are. */
  inputEncoding?: 's16le' | 'f32le';
  /** Ogg serial number. Default random. */
  serial?: number;
  /** Output gain written to OpusHead, Q7.8 dB. Default 0. */
  outputGain?: number;
  /** OpusTags vendor string. Default `"voicewire (libopus 1.4)"`. */
  vendor?: string;
  /** OpusTags user comments, `"NAME=value"`. Default none. */
  comments?: readonly string[];
}

/** The delay each stage of an Ogg Opus encoder adds, ms. */
export interface OggOpusEncoderLatency {
  /** libopus look-ahead (pre-skip): 6.5 ms, 2.5 ms for `'lowdelay'`. Removed again by the decoder. */
  readonly codecMs: number;
  /** Most a sample waits for its packet to fill: the packet duration. */
  readonly packetMs: number;
  /** Most a finished packet waits for its page to be written: page duration − packet duration. */
  readonly pageMs: number;
}

const S_OPEN = 0;
const S_ENDED = 1;
const S_FAILED = 2;

/**
 * Encodes 48 kHz (or another libopus rate) mono PCM into an Ogg Opus stream (RFC 7845), page by
 * page. The first `push` (even of an empty chunk) returns the two header pages: OpusHead alone on
 * page 0 (BOS, granule 0), OpusTags on page 1 (granule 0). Then 20 ms packets are grouped into
 * pages of 80 ms (see `pageDuration`); {@link flushPage} writes a partial page now.
 * {@link flush} pads the last packet, encodes until the look-ahead is flushed out, and writes the
 * EOS page with granule = input length + pre-skip, so a decoder outputs exactly the input length
 * (end trimming, RFC 7845 §4.4).
 *
 * Granule positions count 48 kHz samples through the last packet completed on the page,
 * pre-skip included (RFC 7845 §4). Chunks may have any length; empty chunks are fine.
 */
export class OggOpusEncoder implements Incremental<OggOpusEncoderInput, Uint8Array> {
  /** Pre-skip written to OpusHead, 48 kHz samples: the encoder's look-ahead (312 for libopus). */
  readonly preSkip: number;
  /** Ogg serial number of the stream. */
  readonly serial: number;
  /** Input sample rate. */
  readonly sampleRate: OpusSampleRate;
  /** Delay added by each stage. */
  readonly latency: OggOpusEncoderLatency;
  private readonly encoder: OpusEncoder;
  private readonly writer: OggPageWriter;
  private readonly frame: Int16Array;
  private readonly frameSize: number;
  /** Packet duration in 48 kHz samples. */
  private readonly packet48: number;
  private readonly packetsPerPage: number;
  private readonly f32Bytes: boolean;
  private readonly headers: Uint8Array[];
  private fill = 0;
  private inputSamples = 0;
  private encoded48 = 0;
  private state = S_OPEN;
  private headersSent = false;
  /** Bytes of an incomplete sample carried to the next Uint8Array chunk. */
  private readonly carry = new Uint8Array(4);
  private carryLength = 0;
  private failure: unknown;

  constructor(options: OggOpusEncoderOptions = {}) {
    options = objectOptions(options, 'OggOpusEncoder');
    const packetMs = options.packetDuration ?? 20;
    if (!(OPUS_FRAME_DURATIONS_MS as readonly number[]).includes(packetMs)) {
      throw new VoicewireError('INVALID_ARGUMENT', `OggOpusEncoder packetDuration must be 2.5, 5, 10, 20, 40, 60, 80, 100 or 120 ms, got ${shown(packetMs)}`);
    }
    const pageMs = options.pageDuration ?? 80;
    if (typeof pageMs !== 'number' || !(pageMs >= 0) || pageMs > 10_000) throw new VoicewireError('INVALID_ARGUMENT', `OggOpusEncoder pageDuration must be 0–10000 ms, got ${shown(pageMs)}`);
    const enc = options.inputEncoding ?? 's16le';
    if (enc !== 's16le' && enc !== 'f32le') throw new VoicewireError('INVALID_ARGUMENT', `OggOpusEncoder inputEncoding must be 's16le' or 'f32le', got ${shown(enc)}`);
    this.f32Bytes = enc === 'f32le';
    const encoderOptions: { sampleRate: OpusSampleRate; channels: 1; application?: OpusApplication; bitrate?: number | 'auto' | 'max'; complexity?: number } = {
      sampleRate: options.sampleRate ?? 48000,
      channels: 1,
    };
    if (options.application !== undefined) encoderOptions.application = options.application;
    if (options.bitrate !== undefined) encoderOptions.bitrate = options.bitrate;
    if (options.complexity !== undefined) encoderOptions.complexity = options.complexity;
    // Header packets are built before the encoder is acquired, so a bad option leaks nothing.
    const tags = buildOpusTags({ vendor: options.vendor ?? `voicewire (${OPUS_LIBRARY_VERSION.split(' (')[0]})`, comments: options.comments ?? [] });
    this.writer = new OggPageWriter(options.serial === undefined ? {} : { serial: options.serial });
    this.serial = this.writer.serial;
    this.encoder = new OpusEncoder(encoderOptions);
    this.sampleRate = this.encoder.sampleRate;
    const ratio = 48000 / this.sampleRate;
    this.preSkip = this.encoder.lookahead * ratio;
    this.frameSize = (this.sampleRate * packetMs) / 1000;
    this.frame = new Int16Array(this.frameSize);
    this.packet48 = this.frameSize * ratio;
    this.packetsPerPage = Math.max(1, Math.ceil(pageMs / packetMs - 1e-9));
    this.latency = { codecMs: this.preSkip / 48, packetMs, pageMs: (this.packetsPerPage - 1) * packetMs };
    let head: Uint8Array;
    try {
      head = buildOpusHead({ channelCount: 1, preSkip: this.preSkip, inputSampleRate: this.sampleRate, outputGain: options.outputGain ?? 0 });
    } catch (err) {
      this.encoder.destroy();
      throw err;
    }
    // RFC 7845 §3: OpusHead alone on the first page; OpusTags begins the second and ends its page.
    this.headers = [];
    this.writer.addPacket(head, 0);
    this.headers.push(...this.writer.flushPage());
    this.writer.addPacket(tags, 0);
    this.headers.push(...this.writer.flushPage());
  }

  /** Samples (per channel, at the input rate) accepted so far. */
  get samplesIn(): number {
    return this.inputSamples;
  }

  /** Pushes PCM; returns the pages completed (the header pages on the first call). */
  push(chunk: OggOpusEncoderInput): Uint8Array[] {
    this.checkOpen();
    const out = this.takeHeaders();
    try {
      if (chunk instanceof Int16Array || chunk instanceof Float32Array) this.addSamples(chunk, out);
      else if (chunk instanceof Uint8Array) this.addBytes(chunk, out);
      else throw new VoicewireError('INVALID_ARGUMENT', `OggOpusEncoder.push takes an Int16Array, Float32Array or Uint8Array, got ${describe(chunk)}`);
    } catch (err) {
      this.fail(err);
      throw err;
    }
    return out;
  }

  /**
   * Writes the packets encoded so far as a page now, without waiting for `pageDuration` (e.g. at
   * the end of an utterance on a socket that stays open). Samples of an unfinished packet stay
   * buffered: a packet is never padded before {@link flush}.
   */
  flushPage(): Uint8Array[] {
    this.checkOpen();
    const out = this.takeHeaders();
    out.push(...this.writer.flushPage());
    return out;
  }

  /**
   * Ends the stream: pads the last packet with silence, encodes until the look-ahead has left the
   * encoder, writes the EOS page with granule = input length + pre-skip, and frees the encoder.
   */
  flush(): Uint8Array[] {
    this.checkOpen();
    const out = this.takeHeaders();
    try {
      if (this.carryLength > 0) {
        throw new VoicewireError('PCM_PARTIAL_SAMPLE', `OggOpusEncoder: the input ended inside a sample (${this.carryLength} stray byte${this.carryLength > 1 ? 's' : ''})`);
      }
      const ratio = 48000 / this.sampleRate;
      const final = this.inputSamples * ratio + this.preSkip;
      if (this.fill > 0) {
        this.frame.fill(0, this.fill);
        this.fill = 0;
        this.encodePacket(this.frame, out, final, false);
      }
      // The last input sample leaves libopus `preSkip` samples later: encode silence until the
      // packets cover input + pre-skip, then the EOS granule trims the excess (RFC 7845 §4.4).
      if (this.encoded48 < final) this.frame.fill(0);
      // These last packets all stay for the EOS page, which must hold the packet it trims.
      while (this.encoded48 < final) this.encodePacket(this.frame, out, final, false);
      out.push(...this.writer.flushPage({ eos: true, eosGranule: final }));
    } catch (err) {
      this.fail(err);
      throw err;
    }
    this.state = S_ENDED;
    this.encoder.destroy();
    return out;
  }

  /** Frees the encoder without ending the stream (abort). Idempotent. */
  destroy(): void {
    if (this.state === S_OPEN) this.state = S_ENDED;
    this.encoder.destroy();
  }

  private checkOpen(): void {
    if (this.state !== S_OPEN) {
      throw new VoicewireError('INVALID_STATE', `OggOpusEncoder used after ${this.state === S_FAILED ? 'an error' : 'flush() or destroy()'}`, { cause: this.failure });
    }
  }

  private fail(err: unknown): void {
    this.state = S_FAILED;
    this.failure = err;
    this.encoder.destroy();
  }

  private takeHeaders(): Uint8Array[] {
    if (this.headersSent) return [];
    this.headersSent = true;
    return this.headers.slice();
  }

  private addBytes(bytes: Uint8Array, out: Uint8Array[]): void {
    const size = this.f32Bytes ? 4 : 2;
    let b = toBytes(bytes);
    if (this.carryLength > 0) {
      const need = size - this.carryLength;
      if (b.length < need) {
        this.carry.set(b, this.carryLength);
        this.carryLength += b.length;
        return;
      }
      this.carry.set(b.subarray(0, need), this.carryLength);
      this.carryLength = 0;
      const one = this.carry.slice(0, size);
      this.addSamples(this.f32Bytes ? float32View(one) : int16View(one), out);
      b = b.subarray(need);
    }
    const whole = b.length - (b.length % size);
    if (whole > 0) {
      const body = b.subarray(0, whole);
      this.addSamples(this.f32Bytes ? float32View(body) : int16View(body), out);
    }
    if (whole < b.length) {
      this.carry.set(b.subarray(whole), 0);
      this.carryLength = b.length - whole;
    }
  }

  private addSamples(pcm: Int16Array | Float32Array, out: Uint8Array[]): void {
    const n = pcm.length;
    const size = this.frameSize;
    const frame = this.frame;
    let i = 0;
    while (i < n) {
      if (this.fill === 0 && n - i >= size) {
        // A whole packet inside the chunk: encode it in place, no copy.
        this.encodePacket(pcm.subarray(i, i + size), out, Infinity, true);
        i += size;
        this.inputSamples += size;
        continue;
      }
      const k = Math.min(size - this.fill, n - i);
      if (pcm instanceof Int16Array) {
        frame.set(pcm.subarray(i, i + k), this.fill);
      } else {
        // Same conversion as OpusEncoder.encode: scale by 32767, clamp, round half away from zero.
        for (let j = 0; j < k; j++) {
          let v = pcm[i + j]! * 32767;
          v = v >= 32767 ? 32767 : v <= -32768 ? -32768 : v;
          frame[this.fill + j] = (v + (v >= 0 ? 0.5 : -0.5)) | 0;
        }
      }
      this.fill += k;
      this.inputSamples += k;
      i += k;
      if (this.fill === size) {
        this.fill = 0;
        this.encodePacket(frame, out, Infinity, true);
      }
    }
  }

  private encodePacket(pcm: Int16Array | Float32Array, out: Uint8Array[], limit: number, pageOut: boolean): void {
    const packet = this.encoder.encode(pcm);
    this.encoded48 += this.packet48;
    // The page granule through this packet; the last packet of the stream gets input + pre-skip.
    for (const page of this.writer.addPacket(packet, Math.min(this.encoded48, limit))) out.push(page);
    if (pageOut && this.writer.pendingPackets >= this.packetsPerPage) for (const page of this.writer.flushPage()) out.push(page);
  }
}

/** Encodes a whole PCM signal (mono, `options.sampleRate`, default 48 kHz) into an Ogg Opus file. */
export function encodeOggOpus(pcm: Int16Array | Float32Array, options: OggOpusEncoderOptions = {}): Uint8Array {
  const enc = new OggOpusEncoder(options);
  let pages: Uint8Array[];
  try {
    pages = [...enc.push(pcm), ...enc.flush()];
  } finally {
    enc.destroy();
  }
  return concatChunks(pages, (n) => new Uint8Array(n));
}

// --- decoder -------------------------------------------------------------------------------------

/** Output sample type of an {@link OggOpusDecoder}. */
export type OggOpusSampleFormat = 'int16' | 'float32';
/** The PCM array type of a sample format. */
export type OggOpusPcm<F extends OggOpusSampleFormat> = F extends 'float32' ? Float32Array : Int16Array;

/** Options of {@link OggOpusDecoder}. */
export interface OggOpusDecoderOptions<F extends OggOpusSampleFormat = 'int16'> {
  /** `'int16'` (default) or `'float32'` (±1.0). */
  sampleFormat?: F;
  /**
   * Output sample rate, Hz. Default 48000. 8000, 12000, 16000 and 24000 are decoded natively by
   * libopus; any other rate is decoded at 48 kHz and converted by voicewire's resampler.
   */
  sampleRate?: number;
  /** Output channels, 1 or 2 (libopus downmixes or duplicates). Default: the stream's (OpusHead). */
  channels?: 1 | 2;
  /** Apply OpusHead's output gain (RFC 7845 §5.1: decoders SHOULD). Default true. */
  applyOutputGain?: boolean;
  /**
   * Damage is an error (default true): a page failing its CRC (`OGG_CRC_MISMATCH`), bytes after
   * the first page that are not a page, e.g. a flipped capture-pattern byte (`OGG_CORRUPT`), and
   * lost pages (`OGG_SEQUENCE_GAP`). `false` decodes what survives, as a player does: damaged
   * pages are skipped and reported through `onWarning` (`crc-mismatch`, `garbage`, `sequence-gap`).
   */
  strict?: boolean;
  /**
   * Accept a stream that ends early (default false). Without it, {@link OggOpusDecoder.flush}
   * raises `OGG_TRUNCATED` when the input ends inside a page, before OpusTags is complete, or
   * without the stream's EOS page, after everything complete was emitted. With it, what was
   * complete is the whole output, and the cut is reported through `onWarning`.
   */
  allowTruncated?: boolean;
  /** Receives non-fatal problems: leading garbage, other logical streams, layout, and what `strict: false`/`allowTruncated` tolerate. */
  onWarning?: (warning: OggWarning) => void;
  /** Consecutive bytes without a valid page before the input is declared not Ogg. Default 65536. */
  maxGarbage?: number;
  /** Largest packet reassembled across pages (OpusTags with pictures). Default 16 MiB. */
  maxPacketSize?: number;
  /**
   * Most audio one call ({@link OggOpusDecoder.push}, {@link OggOpusDecoder.pull}) decodes, in
   * samples per channel at the decode rate (the output rate, or 48000 when resampling). Pages that
   * arrive beyond it are queued (their packets only, linear in the bytes received) and decoded by
   * later calls: `pull()` until {@link OggOpusDecoder.pending} is 0, or `flush()`. A page is never
   * split, so a call decodes at most this plus one page (255 × 120 ms = 30.6 s). Bounds the CPU
   * and memory of one call: 1 MB of 2-byte 120 ms packets is 11 hours of audio (issue 11 §4).
   * Default Infinity (push decodes everything complete); the STT decoders set 1 s.
   */
  maxSamplesPerCall?: number;
  /**
   * Most audio decoded in all, samples per channel at the decode rate; a page that would pass it
   * raises `AUDIO_LIMIT_EXCEEDED` (1008) before it is decoded. Default Infinity.
   */
  maxDecodedSamples?: number;
}

const D_HEAD = 0;
const D_TAGS = 1;
const D_AUDIO = 2;
const D_DONE = 3;
const D_FAILED = 4;

/** The delay an {@link OggOpusDecoder} adds, ms. */
export interface OggOpusDecoderLatency {
  /**
   * Most a sample waits for the rest of its page: the longest page of audio read so far (a page
   * is decoded once it is complete and its CRC checked). Set by the sender: 80 ms for
   * voicewire's encoder by default, about 1 s for opusenc files. 0 before the first audio page.
   */
  readonly pageMs: number;
  /** The resampler's look-ahead when `sampleRate` is not a libopus rate (8/12/16/24/48 kHz); else 0. */
  readonly resamplerMs: number;
  /** `pageMs + resamplerMs`. libopus itself adds none (the encoder's look-ahead is the pre-skip, removed). */
  readonly totalMs: number;
}

/** The PCM an error interrupted, attached to it as `details.pcm` (see {@link OggOpusDecoder}). */
export interface OggOpusErrorDetails {
  /** Interleaved samples decoded before the error that the call could not return. */
  readonly pcm: Int16Array | Float32Array;
  /** Sample rate of `pcm`. */
  readonly sampleRate: number;
  /** Channels of `pcm`. */
  readonly channels: number;
  /** Further fields of the underlying error (`offset`, `serial`, …). */
  readonly [key: string]: unknown;
}

/**
 * Decodes an Ogg Opus stream (RFC 7845) pushed in byte chunks of any size into PCM, one output
 * chunk per page of audio. Only the first logical stream that starts with OpusHead is decoded;
 * others are reported through `onWarning` (`other-stream`) and never mixed in.
 *
 * Honours pre-skip (§4.2), the output gain (§5.1), the first page's granule (§4.5) and end
 * trimming by the EOS page's granule (§4.4). Packets of any duration (2.5–120 ms) decode whole.
 *
 * Errors: `OPUS_INVALID_HEADER` (bad OpusHead/OpusTags), `OPUS_UNSUPPORTED` (more than two
 * channels), `OPUS_INVALID_PACKET`, the Ogg reader's (`OGG_CRC_MISMATCH`, `OGG_CORRUPT`,
 * `OGG_SEQUENCE_GAP`, `OGG_INVALID_PAGE`, `OGG_PACKET_TOO_LARGE`; see `strict`), and from
 * {@link flush}: `OGG_NO_OPUS_STREAM`, `OGG_TRUNCATED` (see `allowTruncated`). What was complete
 * before an error is always delivered first: if an error follows good pages in one chunk, `push`
 * returns their audio and the next `push`/`flush` raises the error. When resampling, the
 * resampler's last samples are delivered the same way; an error raised by `flush` itself carries
 * them as `details.pcm` ({@link OggOpusErrorDetails}).
 */
export class OggOpusDecoder<F extends OggOpusSampleFormat = 'int16'> implements Incremental<Uint8Array, OggOpusPcm<F>> {
  /** The stream's OpusHead, once read. */
  head: OpusHead | undefined;
  /** The stream's OpusTags, once read. */
  tags: OpusTags | undefined;
  /** Serial number of the decoded logical stream, once found. */
  serial: number | undefined;
  /** Output sample rate. */
  readonly sampleRate: number;
  private readonly float: boolean;
  private readonly reader: OggPacketReader;
  private readonly onWarning: ((w: OggWarning) => void) | undefined;
  private readonly forcedChannels: 1 | 2 | undefined;
  private readonly applyGain: boolean;
  private readonly decodeRate: OpusSampleRate;
  private decoder: OpusDecoder | undefined;
  private resampler: Resampler<Float32Array> | Resampler<Int16Array> | undefined;
  private outChannels = 1;
  private state = D_HEAD;
  /** Pre-skip left to discard, samples at the decode rate. */
  private skipLeft = 0;
  /** 48 kHz samples decoded so far (pre-skip included): the granule reached. */
  private decoded48 = 0;
  /** Granule of the stream's first sample (RFC 7845 §4.5), known from the first audio page. */
  private startGranule = 0;
  private firstAudioPage = true;
  private eosSeen = false;
  /** Decoded PCM of the current page; grown to the largest page seen (80 ms mono: 7.5 KB). */
  private scratch = new Int16Array(0);
  private pendingError: unknown;
  private failure: unknown;
  private readonly allowTruncated: boolean;
  private readonly resamplerMs: number;
  /** Longest audio page read, 48 kHz samples. */
  private longestPage48 = 0;
  /** Audio pages read and not yet decoded (an O(1) queue: array and head index). */
  private queue: ({ group: OggPagePackets; packets: Uint8Array[]; total48: number } | undefined)[] = [];
  private queueHead = 0;
  private queued48 = 0;
  /** An error found after queued pages: raised once they are decoded. */
  private deferred: unknown;
  private readonly budget48: number;
  private readonly cap48: number;
  /** 48 kHz samples decoded so far (for the cap). */
  private total48 = 0;

  constructor(options: OggOpusDecoderOptions<F> = {}) {
    options = objectOptions(options, 'OggOpusDecoder');
    const format = options.sampleFormat ?? 'int16';
    if (format !== 'int16' && format !== 'float32') throw new VoicewireError('INVALID_ARGUMENT', `OggOpusDecoder sampleFormat must be 'int16' or 'float32', got ${shown(format)}`);
    this.float = format === 'float32';
    const rate = options.sampleRate ?? 48000;
    if (typeof rate !== 'number' || !Number.isInteger(rate) || rate <= 0) throw new VoicewireError('INVALID_ARGUMENT', `OggOpusDecoder sampleRate must be a positive integer, got ${shown(rate)}`);
    this.sampleRate = rate;
    this.decodeRate = (OPUS_SAMPLE_RATES as readonly number[]).includes(rate) ? (rate as OpusSampleRate) : 48000;
    if (options.channels !== undefined && options.channels !== 1 && options.channels !== 2) throw new VoicewireError('INVALID_ARGUMENT', `OggOpusDecoder channels must be 1 or 2, got ${shown(options.channels)}`);
    this.forcedChannels = options.channels;
    this.applyGain = options.applyOutputGain ?? true;
    this.onWarning = options.onWarning;
    this.allowTruncated = options.allowTruncated ?? false;
    if (this.decodeRate !== rate) this.resampler = this.makeResampler(this.forcedChannels ?? 1);
    this.resamplerMs = this.resampler ? this.resampler.delaySeconds * 1000 : 0;
    const readerOptions: OggPacketReaderOptions = {
      select: (serial, first) => {
        if (this.serial !== undefined || !isOpusHead(first)) return false;
        this.serial = serial;
        return true;
      },
    };
    if (options.strict !== undefined) readerOptions.strict = options.strict;
    if (options.allowTruncated !== undefined) readerOptions.allowTruncated = options.allowTruncated;
    if (options.onWarning !== undefined) readerOptions.onWarning = options.onWarning;
    if (options.maxGarbage !== undefined) readerOptions.maxGarbage = options.maxGarbage;
    if (options.maxPacketSize !== undefined) readerOptions.maxPacketSize = options.maxPacketSize;
    this.reader = new OggPacketReader(readerOptions);
    const perCall = options.maxSamplesPerCall ?? Infinity;
    const cap = options.maxDecodedSamples ?? Infinity;
    for (const [name, v] of [['maxSamplesPerCall', perCall], ['maxDecodedSamples', cap]] as const) {
      if (typeof v !== 'number' || Number.isNaN(v) || v < 0) throw new VoicewireError('INVALID_ARGUMENT', `OggOpusDecoder ${name} must be a non-negative number, got ${shown(v)}`);
    }
    this.budget48 = (perCall * 48000) / this.decodeRate;
    this.cap48 = (cap * 48000) / this.decodeRate;
  }

  /** Audio read but not decoded yet, samples per channel at the decode rate: call {@link pull} (or `flush`) for it. */
  get pending(): number {
    return (this.queued48 * this.decodeRate) / 48000;
  }

  /**
   * Decodes the next queued pages, at most `maxSamplesPerCall` (plus one page). Returns [] when
   * nothing is queued. Raises an error found after the queued pages once they are out.
   */
  pull(): OggOpusPcm<F>[] {
    this.checkUsable();
    const out: OggOpusPcm<F>[] = [];
    try {
      this.drain(out, this.budget48);
    } catch (err) {
      return this.fail(err, out);
    }
    if (this.deferred !== undefined && this.queueHead === this.queue.length) {
      const err = this.deferred;
      this.deferred = undefined;
      return this.fail(err, out);
    }
    return out;
  }

  /** Decodes queued pages until `budget48` samples are out (a page is never split). */
  private drain(out: OggOpusPcm<F>[], budget48: number): void {
    let done = 0;
    const q = this.queue;
    while (this.queueHead < q.length && done < budget48) {
      const item = q[this.queueHead]!;
      q[this.queueHead++] = undefined;
      this.queued48 -= item.total48;
      if (this.total48 + item.total48 > this.cap48) {
        const limit = Math.floor((this.cap48 * this.decodeRate) / 48000);
        throw new VoicewireError('AUDIO_LIMIT_EXCEEDED', `the Ogg Opus stream decodes to more than maxDecodedSamples (${limit} samples, ${(this.cap48 / 48000).toFixed(2)} s)`, { details: { offset: item.group.offset, maxDecodedSamples: limit } });
      }
      this.total48 += item.total48;
      this.decodePage(item.group, item.packets, item.total48, out);
      done += item.total48;
      if (item.group.eos) this.end();
    }
    if (this.queueHead === q.length) {
      this.queue = [];
      this.queueHead = 0;
    } else if (this.queueHead > 1024 && this.queueHead * 2 > q.length) {
      this.queue = q.slice(this.queueHead);
      this.queueHead = 0;
    }
  }

  /** Output channels (known once OpusHead is read; 1 before). */
  get channels(): number {
    return this.outChannels;
  }

  /** True once the EOS page of the decoded stream was read. */
  get ended(): boolean {
    return this.eosSeen;
  }

  /** The delay this decoder adds (see {@link OggOpusDecoderLatency}). */
  get latency(): OggOpusDecoderLatency {
    const pageMs = this.longestPage48 / 48;
    return { pageMs, resamplerMs: this.resamplerMs, totalMs: pageMs + this.resamplerMs };
  }

  /** Pushes Ogg bytes; returns the PCM of every page of audio they complete. */
  push(chunk: Uint8Array): OggOpusPcm<F>[] {
    this.checkUsable();
    const out: OggOpusPcm<F>[] = [];
    if (this.deferred === undefined) {
      try {
        for (const group of this.reader.push(chunk)) this.handle(group);
      } catch (err) {
        // Raised after the audio queued before it (what was complete is delivered first).
        this.deferred = err;
      }
    } else {
      toBytes(chunk, 'OggOpusDecoder.push chunk'); // the input after an error is not read, but must still be bytes
    }
    try {
      this.drain(out, this.budget48);
    } catch (err) {
      return this.fail(err, out);
    }
    if (this.deferred !== undefined && this.queueHead === this.queue.length) {
      const err = this.deferred;
      this.deferred = undefined;
      return this.fail(err, out);
    }
    return out;
  }

  /**
   * Ends the input. Returns what the resampler still holds (when converting the rate). Raises,
   * after all complete pages were decoded and returned by `push`: `OGG_TRUNCATED` when the input
   * ended inside a page, before OpusTags was complete or without the stream's EOS page (unless
   * `allowTruncated`), `OGG_NO_OPUS_STREAM` when no Opus stream was found. The error then carries
   * the resampler's last samples as `details.pcm` (empty without resampling).
   */
  flush(): OggOpusPcm<F>[] {
    this.checkUsable();
    const out: OggOpusPcm<F>[] = [];
    try {
      this.drain(out, Infinity); // bounded by maxDecodedSamples
      if (this.deferred !== undefined) {
        const err = this.deferred;
        this.deferred = undefined;
        throw err;
      }
      this.reader.flush();
      if (this.state === D_HEAD) {
        throw new VoicewireError('OGG_NO_OPUS_STREAM', this.reader.offset === 0 ? 'the Ogg Opus input is empty' : `no logical stream starting with OpusHead in ${this.reader.offset} bytes of Ogg input`);
      }
      if (this.state === D_TAGS) {
        const message = 'the Ogg Opus stream ended before its OpusTags header was complete';
        if (!this.allowTruncated) throw new VoicewireError('OGG_TRUNCATED', message, { details: { offset: this.reader.offset } });
        this.onWarning?.({ kind: 'missing-eos', message, offset: this.reader.offset, ...(this.serial === undefined ? {} : { serial: this.serial }) });
      }
    } catch (err) {
      this.abort(err, out);
      throw this.withPcm(err, out);
    }
    this.drainResampler(out);
    this.release();
    this.state = D_FAILED; // used up
    this.failure = undefined;
    return out;
  }

  /** Frees the libopus decoder (abort). Idempotent; the decoder is unusable afterwards. */
  destroy(): void {
    this.release();
    this.state = D_FAILED;
  }

  private release(): void {
    this.decoder?.destroy();
    this.decoder = undefined;
  }

  private checkUsable(): void {
    if (this.pendingError !== undefined) {
      const err = this.pendingError;
      this.pendingError = undefined;
      throw err;
    }
    if (this.state === D_FAILED) {
      throw new VoicewireError('INVALID_STATE', `OggOpusDecoder used after ${this.failure ? 'an error' : 'flush() or destroy()'}`, { cause: this.failure });
    }
  }

  /** Fails the decoder; the resampler's last samples (audio decoded before the error) join `out`. */
  private abort(err: unknown, out: OggOpusPcm<F>[]): void {
    this.drainResampler(out);
    this.release();
    this.state = D_FAILED;
    this.failure = err;
  }

  /** Fails the decoder in `push`: returns `out` and raises `err` on the next call, or now if `out` is empty. */
  private fail(err: unknown, out: OggOpusPcm<F>[]): OggOpusPcm<F>[] {
    this.abort(err, out);
    if (out.length === 0) throw err;
    this.pendingError = err;
    return out;
  }

  private drainResampler(out: OggOpusPcm<F>[]): void {
    if (!this.resampler || this.state === D_HEAD) return;
    const tail = this.resampler.flush();
    this.resampler = undefined;
    if (tail.length > 0) out.push(tail as OggOpusPcm<F>);
  }

  /** `err` with `details.pcm`: the samples in `out` (the call cannot return them). */
  private withPcm(err: unknown, out: OggOpusPcm<F>[]): unknown {
    return attachPcm(err, joinPcm(out, this.float), this.sampleRate, this.outChannels);
  }

  private makeResampler(channels: number): Resampler<Float32Array> | Resampler<Int16Array> {
    const o = { from: this.decodeRate, to: this.sampleRate, channels };
    return this.float ? createResampler(o) : createInt16Resampler(o);
  }

  private warn(group: OggPagePackets, message: string): void {
    this.onWarning?.({ kind: 'layout', message, offset: group.offset, serial: group.serial });
  }

  private handle(group: OggPagePackets): void {
    let packets = group.packets;
    if (this.state === D_HEAD) {
      // RFC 7845 §3: the first page holds exactly one packet, OpusHead, and nothing else.
      if (packets.length === 0) throw new VoicewireError('OPUS_INVALID_HEADER', 'OpusHead does not end on the first page of its stream (RFC 7845 §3)');
      const head = parseOpusHead(packets[0]!);
      if (packets.length > 1) this.warn(group, `the OpusHead page holds ${packets.length - 1} more packet(s); ignored`);
      if (group.granule !== 0n) this.warn(group, `the OpusHead page has granule ${group.granule}, not 0`);
      this.open(head);
      this.state = D_TAGS;
      return;
    }
    if (this.state === D_TAGS) {
      if (packets.length === 0) return; // OpusTags continues on the next page
      this.tags = parseOpusTags(packets[0]!);
      this.state = D_AUDIO;
      if (packets.length === 1) {
        if (group.eos) this.end();
        return;
      }
      // §3: audio begins on a new page; tolerate it, as opusdec does.
      this.warn(group, 'audio packets share the OpusTags page');
      packets = packets.slice(1);
    }
    if (this.state === D_AUDIO) {
      let total48 = 0;
      for (const p of packets) total48 += opusPacketDuration(p); // validates every TOC first
      this.queue.push({ group, packets, total48 });
      this.queued48 += total48;
      if (group.eos) this.state = D_DONE; // the decoder is released when this page is decoded
    }
  }

  private end(): void {
    this.state = D_DONE;
    this.eosSeen = true;
    this.release();
  }

  private open(head: OpusHead): void {
    // A single-stream family-1/255 header with the identity mapping decodes like family 0; more
    // needs libopus' multistream decoder, which this build does not export.
    const single = head.streamCount === 1 && head.channelCount <= 2 && head.coupledCount === head.channelCount - 1 && head.channelMapping.every((m, i) => m === i);
    if (!(head.mappingFamily === 0 || single)) {
      throw new VoicewireError('OPUS_UNSUPPORTED', `Ogg Opus with ${head.channelCount} channels in ${head.streamCount} streams (mapping family ${head.mappingFamily}) needs a multistream decoder, which this libopus build lacks`);
    }
    this.head = head;
    this.outChannels = this.forcedChannels ?? head.channelCount;
    this.decoder = new OpusDecoder({ sampleRate: this.decodeRate, channels: this.outChannels as 1 | 2, gain: this.applyGain ? head.outputGain : 0 });
    this.skipLeft = Math.round((head.preSkip * this.decodeRate) / 48000);
    // Made in the constructor (for its latency); again if the stream's channel count differs.
    if (this.resampler && this.resampler.channels !== this.outChannels) this.resampler = this.makeResampler(this.outChannels);
  }

  private decodePage(group: OggPagePackets, packets: Uint8Array[], total48: number, out: OggOpusPcm<F>[]): void {
    const ch = this.outChannels;
    const rate = this.decodeRate;
    if (total48 > this.longestPage48) this.longestPage48 = total48;
    const total = (total48 * rate) / 48000;
    if (this.scratch.length < total * ch) this.scratch = new Int16Array(Math.max(total * ch, 3840));
    const pcm = this.scratch;
    let at = 0;
    for (const p of packets) at += this.decoder!.decodeInto(p, pcm, at * ch);

    if (this.firstAudioPage && group.granule !== -1n) {
      this.firstAudioPage = false;
      // RFC 7845 §4.5: a first audio page whose granule exceeds its packets' samples starts the
      // stream later (a live capture joined mid-way); one below it is only valid on the EOS page.
      const g = Number(group.granule);
      if (g > total48) this.startGranule = g - total48;
      else if (g < total48 && !group.eos) this.warn(group, `the first audio page's granule ${g} is below its ${total48} samples (RFC 7845 §4.5); ignored`);
    }
    let start = 0;
    if (this.skipLeft > 0) {
      start = Math.min(this.skipLeft, at);
      this.skipLeft -= start;
    }
    let end = at;
    if (group.eos && group.granule !== -1n) {
      // RFC 7845 §4.4: the EOS granule may end the stream before the last packet does.
      const last = Number(group.granule) - this.startGranule;
      const reached = this.decoded48 + total48;
      if (last < reached) {
        if (last < this.decoded48) this.warn(group, `the EOS granule ${group.granule} is before this page's first sample; the page is dropped`);
        const trim48 = reached - Math.max(last, this.decoded48);
        end = Math.max(start, at - Math.round((trim48 * rate) / 48000));
      }
    }
    // Granule positions anchor the count (RFC 7845 §4): after lost pages (a sequence gap) the EOS
    // trim is still measured from where the stream really is, not from what was decoded.
    this.decoded48 = group.granule !== -1n && !group.eos ? Number(group.granule) - this.startGranule : this.decoded48 + total48;
    if (end <= start) return;
    const n = (end - start) * ch;
    let chunk: Int16Array | Float32Array;
    if (this.float) {
      const f = new Float32Array(n);
      const off = start * ch;
      for (let i = 0; i < n; i++) f[i] = pcm[off + i]! / 32768;
      chunk = f;
    } else {
      chunk = pcm.slice(start * ch, end * ch);
    }
    if (this.resampler) {
      chunk = (this.resampler as Resampler<Int16Array | Float32Array>).push(chunk as never);
      if (chunk.length === 0) return;
    }
    out.push(chunk as OggOpusPcm<F>);
  }
}

/** The result of {@link decodeOggOpus}. */
export interface DecodedOggOpus<F extends OggOpusSampleFormat> {
  /** Interleaved PCM. */
  readonly pcm: OggOpusPcm<F>;
  readonly sampleRate: number;
  readonly channels: number;
  readonly head: OpusHead;
  readonly tags: OpusTags | undefined;
}

/** Concatenates PCM chunks (one copy). */
function joinPcm<F extends OggOpusSampleFormat>(chunks: readonly OggOpusPcm<F>[], float: boolean): OggOpusPcm<F> {
  return concatChunks(chunks, (n) => (float ? new Float32Array(n) : new Int16Array(n)) as OggOpusPcm<F>);
}

/** A copy of a VoicewireError with `details.pcm` (see {@link OggOpusErrorDetails}); anything else as it is. */
function attachPcm(err: unknown, pcm: Int16Array | Float32Array, sampleRate: number, channels: number): unknown {
  if (!(err instanceof VoicewireError)) return err;
  const base = typeof err.details === 'object' && err.details !== null ? (err.details as Record<string, unknown>) : {};
  const details: OggOpusErrorDetails = { ...base, pcm, sampleRate, channels };
  const copy = new VoicewireError(err.code, err.message, { cause: err.cause, details, ...(err.closeCode === undefined ? {} : { closeCode: err.closeCode }) });
  if (err.stack !== undefined) copy.stack = err.stack;
  return copy;
}

/**
 * Decodes a whole Ogg Opus file into PCM (see {@link OggOpusDecoder} for options and errors).
 * Nothing decoded is lost to an error: the VoicewireError's `details.pcm` holds every sample
 * decoded before it ({@link OggOpusErrorDetails}), e.g. all the complete audio of a truncated file
 * (or pass `allowTruncated: true` to get it as the result).
 */
export function decodeOggOpus<F extends OggOpusSampleFormat = 'int16'>(bytes: Uint8Array, options: OggOpusDecoderOptions<F> = {}): DecodedOggOpus<F> {
  options = objectOptions(options, 'decodeOggOpus');
  const dec = new OggOpusDecoder<F>(options);
  const float = options.sampleFormat === 'float32';
  const chunks: OggOpusPcm<F>[] = [];
  try {
    chunks.push(...dec.push(bytes));
    chunks.push(...dec.flush());
  } catch (err) {
    const tail = err instanceof VoicewireError ? (err.details as Partial<OggOpusErrorDetails> | undefined)?.pcm : undefined;
    if (tail !== undefined && tail.length > 0) chunks.push(tail as OggOpusPcm<F>);
    throw attachPcm(err, joinPcm(chunks, float), dec.sampleRate, dec.channels);
  } finally {
    dec.destroy();
  }
  return { pcm: joinPcm(chunks, float), sampleRate: dec.sampleRate, channels: dec.channels, head: dec.head!, tags: dec.tags };
}

// --- web streams ---------------------------------------------------------------------------------

/** Frees the core's libopus instance when the stream errors or ends. */
function guarded<In, Out>(core: Incremental<In, Out> & { destroy(): void }): Incremental<In, Out> {
  return {
    push(chunk: In): readonly Out[] {
      try {
        return core.push(chunk);
      } catch (err) {
        core.destroy();
        throw err;
      }
    },
    flush(): readonly Out[] {
      try {
        return core.flush();
      } finally {
        core.destroy();
      }
    },
  };
}

/** A web TransformStream: PCM chunks in (Int16Array, Float32Array or s16le/f32le bytes), Ogg pages out. */
export function createOggOpusEncoderStream(
  options: OggOpusEncoderOptions = {},
  streamOptions: WebTransformOptions<OggOpusEncoderInput, Uint8Array> = {},
): TransformStream<OggOpusEncoderInput, Uint8Array> {
  streamOptions = objectOptions(streamOptions, 'createOggOpusEncoderStream stream');
  return toWebTransformStream(guarded(new OggOpusEncoder(options)), streamOptions);
}

/** A web TransformStream: Ogg Opus bytes in, PCM chunks out (Int16Array, or Float32Array with `sampleFormat: 'float32'`). */
export function createOggOpusDecoderStream<F extends OggOpusSampleFormat = 'int16'>(
  options: OggOpusDecoderOptions<F> = {},
  streamOptions: WebTransformOptions<Uint8Array, OggOpusPcm<F>> = {},
): TransformStream<Uint8Array, OggOpusPcm<F>> {
  streamOptions = objectOptions(streamOptions, 'createOggOpusDecoderStream stream');
  return toWebTransformStream(guarded(new OggOpusDecoder<F>(options)), streamOptions);
}
