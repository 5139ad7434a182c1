/**
 * The general audio decoder: bytes of an API audio format in (any chunking), mono Int16 PCM at
 * the source's own rate out, with what was detected. The counterpart of {@link createAudioEncoder}.
 *
 * | format (`stt-input` direction)          | how                                                   |
 * |-----------------------------------------|-------------------------------------------------------|
 * | `pcm` (24 kHz), `pcm_N`                 | raw s16le; a sample split across chunks is carried     |
 * | `ulaw_8000`, `mulaw_8000`, `alaw_8000`  | G.711 (G.191 tables), 8 kHz                            |
 * | `wav`, `opus`, or no format             | sniffed: "RIFF"/"RF64"/"BW64" → the WAV decoder (any variant it reads, downmixed), "OggS" → the Ogg Opus decoder |
 *
 * Naming `wav` or `opus` only says "a container": a client that announced `wav` and sends Ogg
 * Opus (or the reverse) is decoded by what the bytes are. With no format and neither magic, the
 * decoder raises `AUDIO_FORMAT_UNDETECTED` (in Node, the pipelines adapter hands such input to
 * ffmpeg instead). Decoding adds no delay: the WAV decoder holds back at most a partial sample
 * frame, the Ogg decoder decodes each page as soon as it has arrived.
 *
 * Platform-neutral. Opus needs the libopus wasm (`initOpus` first in a browser's main thread).
 */
import { concatChunks, describe, int16View, toBytes } from '../util/bytes.js';
import { VoicewireError } from '../util/errors.js';
import { shown } from '../util/args.js';
import { parseAudioFormat, type AudioFormat, type AudioFormatDirection } from '../audio/format.js';
import { decodeAlaw, decodeMulaw } from '../audio/g711.js';
import { OggOpusDecoder } from '../audio/ogg-opus.js';
import type { OpusSampleRate } from '../audio/opus.js';
import type { Incremental } from '../util/stream-core.js';
import { createWavDecoder, type WavDecoder, type WavDecoderEvent, type WavFormat } from '../audio/wav.js';

/** What the decoder found the input to be. */
export interface AudioSourceInfo {
  /** `raw` (headerless), `wav` (RIFF/RF64) or `ogg`. */
  readonly container: 'raw' | 'wav' | 'ogg';
  /** `pcm_s16le`, `mulaw`, `alaw`, `opus`, or the WAV file's codec (`pcm_s24le`, `pcm_f32le`, …). */
  readonly codec: string;
  /** Rate of the decoder's output, Hz: the source's rate (Opus: the decode rate, 48000 by default). */
  readonly sampleRate: number;
  /** Channels in the source (the output is always mono: WAV is downmixed, Opus decoded to mono). */
  readonly channels: number;
  /** The named API format, or null when none was given. */
  readonly format: AudioFormat | null;
  /** The WAV header, for WAV input. */
  readonly wav?: WavFormat;
}

/** Options of {@link createAudioDecoder}. */
export interface AudioDecoderOptions {
  /** An API format name. Omitted: sniff WAV or Ogg Opus from the first bytes. */
  format?: string;
  /** What `pcm` means: 24 kHz for `'stt-input'` (default, docs/api.md §4.4), 48 kHz for `'tts-output'`. */
  direction?: AudioFormatDirection;
  /** Rate Opus is decoded at: 8000, 12000, 16000, 24000 or 48000 (default), natively by libopus. */
  opusSampleRate?: OpusSampleRate;
  /**
   * Accept a stream cut short — a WAV data chunk shorter than declared, an Ogg stream without its
   * EOS page — and keep what arrived, instead of raising `WAV_SIZE_MISMATCH` / `OGG_TRUNCATED` at
   * the end. Damage (a CRC mismatch, a corrupt page) is an error either way. Default false.
   */
  allowTruncated?: boolean;
  /** Called when the source becomes known: at creation for raw formats, after the header for WAV and Ogg (once per stream). */
  onInfo?: (info: AudioSourceInfo) => void;
  /**
   * Most Ogg Opus audio one `push`/`pull` decodes, samples at the Opus decode rate; the rest is
   * queued for {@link AudioDecoder.pull} (see `OggOpusDecoder` `maxSamplesPerCall`). Raw and WAV
   * output is proportional to the input and needs no bound. Default Infinity.
   */
  maxSamplesPerPush?: number;
  /**
   * Most audio decoded since creation, seconds of source audio (all streams together); past it
   * `push`/`pull`/`flush` raise `AUDIO_LIMIT_EXCEEDED` (1008). For Ogg Opus it is checked before
   * each page is decoded, so the CPU is bounded too. Default Infinity.
   */
  maxDecodedSeconds?: number;
}

/** An incremental decoder (see {@link createAudioDecoder}). */
export interface AudioDecoder extends Incremental<Uint8Array, Int16Array> {
  /**
   * Decodes the next bytes; returns mono Int16 PCM chunks (possibly none). For raw s16le input
   * the samples may be a view of your bytes: do not reuse a chunk's memory after pushing it.
   * @throws the container decoders' errors (`WAV_*`, `OGG_*`, `OPUS_*`), `AUDIO_FORMAT_UNDETECTED`,
   *   `INVALID_ARGUMENT` for a non-byte chunk; after an error, `INVALID_STATE` until `flush()`.
   */
  push(bytes: Uint8Array): Int16Array[];
  /**
   * Ends the stream (raising what the container decoders raise for a truncated file). The
   * decoder is then ready for a new stream, whatever happened.
   */
  flush(): Int16Array[];
  /**
   * Barge-in: drops a partial raw sample. Container parsers keep their place (the bytes that
   * follow continue the same file), so for WAV and Ogg this drops nothing.
   */
  reset(): void;
  /** Frees the libopus decoder. Idempotent. */
  destroy(): void;
  /**
   * Decodes the next piece of queued Ogg Opus audio (at most `maxSamplesPerPush`); [] when none.
   * Call it until {@link pending} is 0 (yielding to the event loop between calls) to get audio
   * that one `push` brought but did not decode.
   */
  pull(): Int16Array[];
  /** Audio received but not decoded yet (Ogg Opus beyond `maxSamplesPerPush`), samples. */
  readonly pending: number;
  /** The source, once known (at once for raw formats, after the header for WAV/Ogg). */
  readonly info: AudioSourceInfo | null;
  /** Samples output since the stream started. */
  readonly samplesOut: number;
  /** Stray bytes dropped at the end of raw input (half a s16 sample), since creation. */
  readonly droppedBytes: number;
}

const M_SNIFF = 0;
const M_PCM = 1;
const M_MULAW = 2;
const M_ALAW = 3;
const M_WAV = 4;
const M_OGG = 5;
const M_FAILED = 6;

function magic(b: Uint8Array): string {
  return String.fromCharCode(b[0]!, b[1]!, b[2]!, b[3]!);
}

class AudioDecoderImpl implements AudioDecoder {
  info: AudioSourceInfo | null = null;
  samplesOut = 0;
  droppedBytes = 0;
  private mode = M_SNIFF;
  private readonly initialMode: number;
  private readonly format: AudioFormat | null;
  private readonly opusRate: OpusSampleRate;
  private readonly allowTruncated: boolean;
  private readonly onInfo: ((info: AudioSourceInfo) => void) | undefined;
  private wav: WavDecoder<Int16Array> | null = null;
  private ogg: OggOpusDecoder<'int16'> | null = null;
  private head: Uint8Array[] = []; // bytes held while sniffing (fewer than 4)
  private headLength = 0;
  private carry = -1;
  private failure: unknown;
  private readonly perPush: number;
  private readonly maxSeconds: number;
  /** Seconds decoded by finished streams. */
  private pastSeconds = 0;

  constructor(options: AudioDecoderOptions) {
    if (typeof options !== 'object' || options === null) throw new VoicewireError('INVALID_ARGUMENT', `createAudioDecoder: options must be an object, got ${describe(options)}`);
    this.perPush = options.maxSamplesPerPush ?? Infinity;
    this.maxSeconds = options.maxDecodedSeconds ?? Infinity;
    for (const [name, v] of [['maxSamplesPerPush', this.perPush], ['maxDecodedSeconds', this.maxSeconds]] as const) {
      if (typeof v !== 'number' || Number.isNaN(v) || v < 0) throw new VoicewireError('INVALID_ARGUMENT', `createAudioDecoder: ${name} must be a non-negative number, got ${shown(v)}`);
    }
    if (options.onInfo !== undefined && typeof options.onInfo !== 'function') throw new VoicewireError('INVALID_ARGUMENT', `createAudioDecoder: onInfo must be a function, got ${describe(options.onInfo)}`);
    this.format = options.format === undefined ? null : parseAudioFormat(options.format, { direction: options.direction ?? 'stt-input' });
    const rate = options.opusSampleRate ?? 48000;
    if (![8000, 12000, 16000, 24000, 48000].includes(rate)) {
      throw new VoicewireError('INVALID_ARGUMENT', `createAudioDecoder: opusSampleRate must be 8000, 12000, 16000, 24000 or 48000, got ${shown(rate)}`);
    }
    this.opusRate = rate;
    this.allowTruncated = options.allowTruncated ?? false;
    this.onInfo = options.onInfo;
    const f = this.format;
    this.initialMode = f === null || f.container !== 'raw' ? M_SNIFF : f.codec === 'mulaw' ? M_MULAW : f.codec === 'alaw' ? M_ALAW : M_PCM;
    this.begin();
    if (this.info !== null) this.onInfo?.(this.info);
  }

  /** A new stream: raw formats are known at once. */
  private begin(): void {
    if (this.info !== null && this.info.sampleRate > 0) this.pastSeconds += this.samplesOut / this.info.sampleRate;
    this.mode = this.initialMode;
    this.info = null;
    this.samplesOut = 0;
    this.carry = -1;
    this.head = [];
    this.headLength = 0;
    this.failure = undefined;
    const f = this.format;
    if (this.mode !== M_SNIFF && f !== null) this.info = { container: 'raw', codec: f.codec, sampleRate: f.sampleRate!, channels: 1, format: f };
  }

  private announce(info: AudioSourceInfo): void {
    this.info = info;
    this.onInfo?.(info);
  }

  push(bytes: Uint8Array): Int16Array[] {
    const chunk = toBytes(bytes, 'AudioDecoder.push chunk');
    if (this.mode === M_FAILED) {
      throw new VoicewireError('INVALID_STATE', 'AudioDecoder used after an error; flush() starts a new stream', { cause: this.failure });
    }
    const out: Int16Array[] = [];
    try {
      this.decode(chunk, out);
    } catch (err) {
      this.mode = M_FAILED;
      this.failure = err;
      this.release();
      throw err;
    }
    return out;
  }

  private decode(chunk: Uint8Array, out: Int16Array[]): void {
    switch (this.mode) {
      case M_PCM:
        return this.raw(chunk, out);
      case M_MULAW:
        if (chunk.byteLength > 0) this.emit(decodeMulaw(chunk), out);
        return;
      case M_ALAW:
        if (chunk.byteLength > 0) this.emit(decodeAlaw(chunk), out);
        return;
      case M_WAV:
        return this.wavEvents(this.wav!.push(chunk), out);
      case M_OGG:
        for (const pcm of this.ogg!.push(chunk)) this.oggPcm(pcm, out);
        return;
      default: {
        // Sniffing: hold the first bytes until the 4-byte magic is complete.
        if (chunk.byteLength === 0) return;
        if (this.headLength + chunk.byteLength < 4) {
          this.head.push(chunk.slice());
          this.headLength += chunk.byteLength;
          return;
        }
        const held = this.head;
        this.head = [];
        this.headLength = 0;
        const first = held.length === 0 ? chunk : toBytes(concatChunks([...held, chunk.subarray(0, 4)], (n) => new Uint8Array(n)));
        this.open(first);
        for (const h of held) this.decode(h, out);
        this.decode(chunk, out);
      }
    }
  }

  /** Picks the container from the magic (RIFF/RF64/BW64: WAV; OggS: Ogg), else from the name. */
  private open(first: Uint8Array | null): void {
    const m = first === null ? '' : magic(first);
    const isWav = m === 'RIFF' || m === 'RF64' || m === 'BW64';
    const isOgg = m === 'OggS';
    const named = this.format?.container;
    if (isOgg || (!isWav && named === 'ogg')) {
      this.mode = M_OGG;
      const left = Math.max(0, Math.floor((this.maxSeconds - this.pastSeconds) * this.opusRate));
      this.ogg = new OggOpusDecoder({ sampleRate: this.opusRate, channels: 1, allowTruncated: this.allowTruncated, maxSamplesPerCall: this.perPush, maxDecodedSamples: left });
    } else if (isWav || named === 'wav') {
      this.mode = M_WAV;
      this.wav = createWavDecoder({ output: 'int16', mono: true, allowTruncated: this.allowTruncated });
    } else {
      const shown = Array.from(first === null ? [] : first.subarray(0, 4), (b) => b.toString(16).padStart(2, '0')).join(' ');
      throw new VoicewireError('AUDIO_FORMAT_UNDETECTED', `no audio format was named and the input starts with bytes ${shown}, neither RIFF/RF64 (WAV) nor OggS (Ogg Opus); name the format (pcm_N, ulaw_8000, …) or, in Node, let ffmpeg decode it`);
    }
  }

  private raw(chunk: Uint8Array, out: Int16Array[]): void {
    const n = chunk.byteLength;
    if (n === 0) return;
    if (this.carry < 0) {
      const whole = n & ~1;
      if (whole < n) this.carry = chunk[n - 1]!;
      if (whole > 0) this.emit(int16View(chunk.subarray(0, whole)), out);
      return;
    }
    // A sample split across chunks: its low byte was carried.
    const whole = (n + 1) & ~1;
    const pcm = new Int16Array(whole >> 1);
    const b = new Uint8Array(pcm.buffer);
    b[0] = this.carry;
    b.set(chunk.subarray(0, whole - 1), 1);
    this.carry = whole - 1 < n ? chunk[n - 1]! : -1;
    this.emit(pcm, out);
  }

  private emit(pcm: Int16Array, out: Int16Array[]): void {
    this.samplesOut += pcm.length;
    const rate = this.info?.sampleRate ?? 0;
    if (this.maxSeconds !== Infinity && rate > 0 && this.pastSeconds + this.samplesOut / rate > this.maxSeconds) {
      throw new VoicewireError('AUDIO_LIMIT_EXCEEDED', `the input decodes to more than maxDecodedSeconds (${this.maxSeconds} s)`, { details: { maxDecodedSeconds: this.maxSeconds } });
    }
    out.push(pcm);
  }

  get pending(): number {
    return this.ogg?.pending ?? 0;
  }

  pull(): Int16Array[] {
    if (this.mode === M_FAILED) {
      throw new VoicewireError('INVALID_STATE', 'AudioDecoder used after an error; flush() starts a new stream', { cause: this.failure });
    }
    const out: Int16Array[] = [];
    if (this.mode !== M_OGG || this.ogg === null) return out;
    try {
      for (const pcm of this.ogg.pull()) this.oggPcm(pcm, out);
    } catch (err) {
      this.mode = M_FAILED;
      this.failure = err;
      this.release();
      throw err;
    }
    return out;
  }

  private wavEvents(events: readonly WavDecoderEvent<Int16Array>[], out: Int16Array[]): void {
    for (const e of events) {
      if (e.type === 'format') {
        const w = e.format;
        this.announce({ container: 'wav', codec: w.codec, sampleRate: w.sampleRate, channels: w.channels, format: this.format, wav: w });
      } else if (e.samples.length > 0) {
        this.emit(e.samples, out);
      }
    }
  }

  private oggPcm(pcm: Int16Array, out: Int16Array[]): void {
    if (this.info === null) {
      const head = this.ogg!.head!;
      this.announce({ container: 'ogg', codec: 'opus', sampleRate: this.opusRate, channels: head.channelCount, format: this.format });
    }
    if (pcm.length > 0) this.emit(pcm, out);
  }

  flush(): Int16Array[] {
    const out: Int16Array[] = [];
    try {
      if (this.mode === M_FAILED) {
        throw new VoicewireError('INVALID_STATE', 'AudioDecoder flushed after an error; it now takes a new stream', { cause: this.failure });
      }
      if (this.mode === M_SNIFF && this.headLength > 0) {
        if (this.format === null) {
          throw new VoicewireError('AUDIO_FORMAT_UNDETECTED', `the input ended after ${this.headLength} byte(s), too short to tell WAV from Ogg Opus`);
        }
        // A named container too short to hold its magic: its own decoder reports the truncation.
        const held = concatChunks(this.head, (n) => new Uint8Array(n));
        this.open(null);
        this.decode(held, out);
      }
      if (this.mode === M_PCM && this.carry >= 0) this.droppedBytes++;
      if (this.mode === M_WAV) this.wavEvents(this.wav!.flush(), out);
      else if (this.mode === M_OGG) for (const pcm of this.ogg!.flush()) this.oggPcm(pcm, out);
    } finally {
      this.release();
      this.begin();
    }
    return out;
  }

  reset(): void {
    this.carry = -1;
  }

  destroy(): void {
    this.release();
  }

  private release(): void {
    this.ogg?.destroy();
    this.ogg = null;
    this.wav = null;
  }
}

/**
 * Creates an incremental decoder of an API audio format (or of WAV / Ogg Opus, sniffed) into
 * mono Int16 PCM at the source's rate. `info` (and `onInfo`) say what the source is.
 *
 * @example
 * const dec = createAudioDecoder({ format: 'wav' });
 * for (const pcm of dec.push(bytes)) use(pcm, dec.info!.sampleRate);
 *
 * @param options - `format` (omitted: sniff), `direction` (default `'stt-input'`: `pcm` is
 *   24 kHz), `opusSampleRate` (default 48000), `allowTruncated` (default false), `onInfo`.
 * @throws VoicewireError `FORMAT_UNKNOWN` (1008) for an unknown name, `INVALID_ARGUMENT`.
 */
export function createAudioDecoder(options: AudioDecoderOptions = {}): AudioDecoder {
  return new AudioDecoderImpl(options);
}

/** A decoded stream: all samples (mono) and what the source was. */
export interface DecodedAudio {
  readonly pcm: Int16Array;
  readonly info: AudioSourceInfo;
}

/** One-shot: decodes a whole input with {@link createAudioDecoder}. @throws as `push`/`flush`. */
export function decodeAudio(bytes: Uint8Array, options: AudioDecoderOptions = {}): DecodedAudio {
  const seen: { info: AudioSourceInfo | null } = { info: null };
  const dec = createAudioDecoder({ ...options, onInfo: (i) => (seen.info = i) });
  const parts = [...dec.push(bytes), ...dec.flush()];
  const info = seen.info;
  if (info === null) throw new VoicewireError('AUDIO_FORMAT_UNDETECTED', 'the input is empty');
  const pcm = parts.length === 1 ? parts[0]! : concatChunks(parts, (n) => new Int16Array(n));
  return { pcm, info };
}
