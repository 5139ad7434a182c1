/**
 * WAV (RIFF WAVE and RF64) reading and writing. Platform-neutral: typed arrays in and out.
 *
 * Reading: {@link createWavDecoder} is an explicit state machine over a {@link ByteQueue}
 * (the style of ws's Receiver): it takes the file in any chunking — a header split over many
 * chunks, one byte at a time — and streams the data chunk out as whole sample frames as soon as
 * they arrive, holding back at most one partial frame. It adds no other delay, so it fits a live
 * upload. {@link decodeWav} and {@link wavInfo} are the one-shot forms over the same machine.
 *
 * What it reads (what ffmpeg, sox and streaming writers produce):
 * - format tags 1 (PCM: 8-bit unsigned, 16/24/32-bit signed), 3 (IEEE float 32/64), 6 (A-law),
 *   7 (μ-law) and 0xFFFE (WAVE_FORMAT_EXTENSIBLE, whose SubFormat GUID names one of those);
 * - any other chunk (LIST, fact, JUNK, bext, …) skipped as it streams past; a chunk of odd size is
 *   followed by one pad byte not counted in its size (RIFF: "ckData … pad byte if ckSize odd");
 * - RF64 / BW64 (EBU Tech 3306, ITU-R BS.2088): "RF64" magic, 64-bit sizes in the `ds64` chunk;
 * - unknown sizes, read to the end: a data size of 0xFFFFFFFF (ffmpeg to a pipe), 0x7FFFF000
 *   (sox to a pipe), or 0 when the RIFF size says nothing follows the data header (a streaming
 *   writer's header written before the audio).
 * Everything after the data chunk is ignored (trailing LIST chunks and the final pad byte).
 *
 * Errors are {@link VoicewireError}s with a `WAV_*` code. Nothing is ever allocated from a
 * declared size: buffers follow the bytes actually received, so a huge declared size is harmless.
 *
 * Writing: {@link encodeWav} (one-shot, exact sizes) and {@link wavStreamHeader} /
 * {@link createWavStreamEncoder}: the service's streaming form, a 44-byte header whose RIFF and
 * data sizes are 0xFFFFFFFF followed by raw PCM (protocol-notes "Output encodings").
 */
import { ByteQueue, concatChunks, describe, toBytes } from '../util/bytes.js';
import { VoicewireError } from '../util/errors.js';
import { optionsArg, shown } from '../util/args.js';
import { decodeAlaw, decodeMulaw, encodeAlaw, encodeMulaw } from './g711.js';
import {
  decodePcm,
  decodePcmToInt16,
  downmixInt16ToMono,
  downmixToMono,
  encodePcm,
  float32ToInt16,
  isPcmEncoding,
  pcmBytesPerSample,
  type PcmEncoding,
} from './pcm.js';
import type { Incremental } from '../util/stream-core.js';
import { toWebTransformStream, type WebTransformOptions } from '../util/web.js';

// ---------------------------------------------------------------------------------------------
// Public types
// ---------------------------------------------------------------------------------------------

/** The sample codec of a WAV file (names as ffmpeg's, G.711 as in the format registry). */
export type WavCodec = 'pcm_u8' | 'pcm_s16le' | 'pcm_s24le' | 'pcm_s32le' | 'pcm_f32le' | 'pcm_f64le' | 'mulaw' | 'alaw';

/** `riff` for "RIFF" files, `rf64` for "RF64" (and "BW64") files with a ds64 chunk. */
export type WavContainer = 'riff' | 'rf64';

/** The `wFormatTag` values voicewire reads (Microsoft mmreg.h). */
export const WAV_FORMAT_TAGS = {
  PCM: 0x0001,
  IEEE_FLOAT: 0x0003,
  ALAW: 0x0006,
  MULAW: 0x0007,
  EXTENSIBLE: 0xfffe,
} as const;

/** What the header of a WAV file says, as the decoder's first output carries it. */
export interface WavFormat {
  /** `riff` or `rf64`. */
  readonly container: WavContainer;
  /** The sample codec. */
  readonly codec: WavCodec;
  /** `wFormatTag` as written (0xFFFE for EXTENSIBLE). */
  readonly formatTag: number;
  /** The effective tag: the SubFormat GUID's tag for EXTENSIBLE, else `formatTag`. */
  readonly subFormatTag: number;
  /** Frames per second. */
  readonly sampleRate: number;
  /** Interleaved channels in the file (before any downmix). */
  readonly channels: number;
  /** Container bits per sample: 8, 16, 24, 32 or 64. */
  readonly bitsPerSample: number;
  /** EXTENSIBLE's wValidBitsPerSample; else `bitsPerSample`. */
  readonly validBitsPerSample: number;
  /** Bytes per frame (all channels). */
  readonly blockAlign: number;
  /** EXTENSIBLE's dwChannelMask; 0 when absent. */
  readonly channelMask: number;
  /** Declared bytes of the data chunk; `null` when unknown (pipe-written: read to the end). */
  readonly dataSize: number | null;
  /** Declared frames (`floor(dataSize / blockAlign)`); `null` when unknown. */
  readonly frames: number | null;
  /** Byte offset of the first data byte in the file. */
  readonly dataOffset: number;
}

/** What `voicewire info` prints for a WAV file. */
export interface WavInfo {
  readonly container: WavContainer;
  readonly codec: WavCodec;
  readonly sampleRate: number;
  readonly channels: number;
  readonly bitsPerSample: number;
  /** Sample frames in the data chunk (counted when the header does not say). */
  readonly frames: number;
  /** `frames / sampleRate`. */
  readonly durationS: number;
}

/**
 * What the decoder's samples carry: `float32` (default; integers / 2^(bits-1), like ffmpeg),
 * `int16` (top 16 bits of wider integers, G.711 through the G.191 tables, float by
 * {@link float32ToInt16}'s rule), or `raw` (the data chunk's bytes, whole frames, in the file's
 * own encoding: μ-law / A-law stay codes).
 */
export type WavSampleOutput = 'float32' | 'int16' | 'raw';

/** The samples type for each {@link WavSampleOutput}. */
export interface WavSampleTypes {
  float32: Float32Array;
  int16: Int16Array;
  raw: Uint8Array;
}

/** Options of {@link createWavDecoder} and {@link decodeWav}. */
export interface WavDecoderOptions<O extends WavSampleOutput = WavSampleOutput> {
  /** Sample type of the output. Default `'float32'`. */
  output?: O;
  /** Average all channels into one (not with `raw`). Default `false`: interleaved channels. */
  mono?: boolean;
  /**
   * Accept a data chunk that ends before its declared size (a recording cut short): keep what
   * arrived. Default `false`: flush() raises `WAV_SIZE_MISMATCH`.
   */
  allowTruncated?: boolean;
}

/** First output of the decoder: the header, before any samples. */
export interface WavFormatEvent {
  readonly type: 'format';
  readonly format: WavFormat;
}

/** A run of whole sample frames. */
export interface WavSamplesEvent<S> {
  readonly type: 'samples';
  /** Interleaved samples (one channel when `mono`). `raw` output may be a view of your input. */
  readonly samples: S;
  /** Frames in `samples`. */
  readonly frames: number;
  /** Index of the first frame of `samples` in the data chunk. */
  readonly startFrame: number;
}

/** One output of the decoder. */
export type WavDecoderEvent<S> = WavFormatEvent | WavSamplesEvent<S>;

/** The incremental WAV decoder. */
export interface WavDecoder<S> extends Incremental<Uint8Array, WavDecoderEvent<S>> {
  /**
   * Feeds bytes (any chunking; a Node Buffer works). Returns the format event once the header
   * is complete, then samples for every whole frame received.
   * @throws `WAV_*` on malformed input; `INVALID_STATE` after flush() or an earlier error.
   */
  push(chunk: Uint8Array): readonly WavDecoderEvent<S>[];
  /**
   * Ends the input. A partial trailing frame is dropped.
   * @throws `WAV_TRUNCATED` (input ended inside the header), `WAV_MISSING_FMT`,
   *   `WAV_MISSING_DATA`, `WAV_SIZE_MISMATCH` (data or a chunk shorter than declared).
   */
  flush(): readonly WavDecoderEvent<S>[];
  /** Forgets everything, ready for a new file. */
  reset(): void;
  /** The header once parsed, else `null`. */
  readonly format: WavFormat | null;
  /** Frames emitted so far. */
  readonly framesDecoded: number;
  /** Bytes held back: a partial header piece or a partial frame (< blockAlign). */
  readonly bufferedBytes: number;
}

// ---------------------------------------------------------------------------------------------
// The state machine
// ---------------------------------------------------------------------------------------------

const S_RIFF = 0; // 12-byte RIFF/RF64 header
const S_CHUNK = 1; // 8-byte chunk header
const S_FMT = 2; // fmt body (first min(size, 40) bytes)
const S_DS64 = 3; // ds64 body (first 28 bytes)
const S_SKIP = 4; // skipping a chunk body and its pad byte
const S_DATA = 5; // streaming whole frames
const S_DONE = 6; // data complete: the rest is ignored
const S_FLUSHED = 7;
const S_FAILED = 8;

const fourcc = (s: string): number => s.charCodeAt(0) | (s.charCodeAt(1) << 8) | (s.charCodeAt(2) << 16) | ((s.charCodeAt(3) << 24) >>> 0);
const ID_FMT = fourcc('fmt ');
const ID_DATA = fourcc('data');
const ID_DS64 = fourcc('ds64');
const MAGICS = ['RIFF', 'RF64', 'BW64'];
const UNKNOWN_32 = 0xffffffff; // ffmpeg (and RF64) "size not known / see ds64"
const SOX_UNKNOWN_DATA = 0x7ffff000; // sox's MS_UNSPEC data size when it cannot seek
/** Bytes 2..15 of every KSDATAFORMAT_SUBTYPE GUID ({xxxxxxxx-0000-0010-8000-00AA00389B71}). */
const GUID_TAIL = [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71];
const FORMAT_NAMES: Readonly<Record<number, string>> = {
  0x0002: 'MS ADPCM',
  0x0011: 'IMA ADPCM',
  0x0031: 'GSM 6.10',
  0x0050: 'MPEG',
  0x0055: 'MP3',
  0x00ff: 'AAC',
  0x1610: 'HE-AAC',
  0x6750: 'Vorbis',
  0xf1ac: 'FLAC',
};

const u16 = (b: Uint8Array, i: number): number => b[i]! | (b[i + 1]! << 8);
const u32 = (b: Uint8Array, i: number): number => (b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24)) >>> 0;
const idName = (id: number): string => JSON.stringify(String.fromCharCode(id & 0xff, (id >>> 8) & 0xff, (id >>> 16) & 0xff, id >>> 24));

function u64(b: Uint8Array, i: number, what: string): number {
  const hi = u32(b, i + 4);
  if (hi >= 0x200000) throw new VoicewireError('WAV_SIZE_MISMATCH', `ds64 ${what} ${hi} * 2^32 is beyond any real file`);
  return hi * 0x100000000 + u32(b, i);
}

class WavDecoderImpl<S extends Float32Array | Int16Array | Uint8Array> implements WavDecoder<S> {
  private readonly queue = new ByteQueue();
  private readonly output: WavSampleOutput;
  private readonly mono: boolean;
  private readonly allowTruncated: boolean;
  private state = S_RIFF;
  private failure: unknown = null;
  private offset = 0; // file bytes consumed
  private container: WavContainer = 'riff';
  private riffSize: number | null = null; // null: unknown
  private ds64DataSize: number | null = null;
  private fmtSize = 0;
  private skipLeft = 0; // chunk body bytes still to skip
  private padLeft = 0; // 1 when an odd chunk's pad byte follows
  private dataLeft = 0; // whole-frame bytes still to emit (Infinity: read to the end)
  private fmt: WavFormat | null = null;
  private frames = 0;
  private scratchF = new Float32Array(0);
  private scratchI = new Int16Array(0);

  constructor(opts: WavDecoderOptions | undefined) {
    const options = optionsArg(opts, 'createWavDecoder options');
    const output = options.output ?? 'float32';
    if (output !== 'float32' && output !== 'int16' && output !== 'raw') {
      throw new VoicewireError('INVALID_ARGUMENT', `createWavDecoder: output must be 'float32', 'int16' or 'raw', got ${JSON.stringify(output)}`);
    }
    this.output = output;
    this.mono = options.mono === true;
    if (this.mono && output === 'raw') throw new VoicewireError('INVALID_ARGUMENT', "createWavDecoder: mono needs output 'float32' or 'int16', not 'raw'");
    this.allowTruncated = options.allowTruncated === true;
  }

  get format(): WavFormat | null {
    return this.fmt;
  }

  get framesDecoded(): number {
    return this.frames;
  }

  get bufferedBytes(): number {
    return this.queue.length;
  }

  reset(): void {
    this.queue.clear();
    this.state = S_RIFF;
    this.failure = null;
    this.offset = 0;
    this.container = 'riff';
    this.riffSize = null;
    this.ds64DataSize = null;
    this.fmtSize = 0;
    this.skipLeft = 0;
    this.padLeft = 0;
    this.dataLeft = 0;
    this.fmt = null;
    this.frames = 0;
  }

  push(chunk: Uint8Array): readonly WavDecoderEvent<S>[] {
    this.checkUsable('push');
    const bytes = toBytes(chunk, 'WAV chunk');
    const out: WavDecoderEvent<S>[] = [];
    if (bytes.byteLength === 0) return out;
    this.queue.push(bytes);
    try {
      this.run(out);
    } catch (err) {
      this.fail(err);
    }
    return out;
  }

  flush(): readonly WavDecoderEvent<S>[] {
    this.checkUsable('flush');
    const out: WavDecoderEvent<S>[] = [];
    try {
      this.run(out);
      this.finish();
    } catch (err) {
      this.fail(err);
    }
    this.state = S_FLUSHED;
    this.queue.clear();
    return out;
  }

  private checkUsable(what: string): void {
    if (this.state === S_FAILED) {
      throw new VoicewireError('INVALID_STATE', `WAV decoder: ${what}() after an earlier error; call reset()`, { cause: this.failure });
    }
    if (this.state === S_FLUSHED) throw new VoicewireError('INVALID_STATE', `WAV decoder: ${what}() after flush(); call reset()`);
  }

  private fail(err: unknown): never {
    this.state = S_FAILED;
    this.failure = err;
    this.queue.clear();
    throw err;
  }

  /** Runs the states until one needs more bytes than are buffered. */
  private run(out: WavDecoderEvent<S>[]): void {
    for (;;) {
      switch (this.state) {
        case S_RIFF:
          if (!this.readRiff()) return;
          break;
        case S_CHUNK:
          if (!this.readChunkHeader(out)) return;
          break;
        case S_FMT:
          if (!this.readFmt()) return;
          break;
        case S_DS64:
          if (!this.readDs64()) return;
          break;
        case S_SKIP:
          if (!this.skip()) return;
          break;
        case S_DATA:
          this.readData(out);
          return;
        default: // S_DONE: everything after the data chunk is ignored
          this.queue.clear();
          return;
      }
    }
  }

  private readRiff(): boolean {
    const q = this.queue;
    // Reject a wrong magic as soon as its first wrong byte arrives (content sniffing must not
    // wait for 12 bytes of, say, an Ogg stream).
    const have = Math.min(q.length, 12);
    const head = q.peek(have);
    const magicOk = MAGICS.some((m) => {
      for (let i = 0; i < Math.min(have, 4); i++) if (head[i] !== m.charCodeAt(i)) return false;
      return true;
    });
    let waveOk = true;
    for (let i = 8; i < have; i++) if (head[i] !== 'WAVE'.charCodeAt(i - 8)) waveOk = false;
    if (!magicOk || !waveOk) {
      const shown = Array.from(head.subarray(0, Math.min(have, 12)), (b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.')).join('');
      throw new VoicewireError('WAV_NOT_RIFF', `not a WAV file: expected "RIFF"/"RF64" <size> "WAVE", got "${shown}"`);
    }
    if (have < 12) return false;
    const magic = String.fromCharCode(head[0]!, head[1]!, head[2]!, head[3]!);
    this.container = magic === 'RIFF' ? 'riff' : 'rf64';
    const size = u32(head, 4);
    this.riffSize = size === UNKNOWN_32 ? null : size;
    q.skip(12);
    this.offset = 12;
    this.state = S_CHUNK;
    return true;
  }

  private readChunkHeader(out: WavDecoderEvent<S>[]): boolean {
    const q = this.queue;
    if (q.length < 8) return false;
    const h = q.read(8);
    const id = u32(h, 0);
    const size = u32(h, 4);
    const at = this.offset;
    this.offset += 8;
    if (id === ID_FMT && this.fmt === null && this.fmtSize === 0) {
      if (size < 16) throw new VoicewireError('WAV_INVALID_FMT', `fmt chunk at byte ${at} is ${size} bytes; at least 16 are needed`);
      this.fmtSize = size;
      this.state = S_FMT;
    } else if (id === ID_DS64 && this.container === 'rf64' && this.ds64DataSize === null && size >= 24) {
      this.skipLeft = size;
      this.padLeft = size & 1;
      this.state = S_DS64;
    } else if (id === ID_DATA) {
      this.startData(size, at, out);
    } else {
      this.skipLeft = size;
      this.padLeft = size & 1;
      this.state = S_SKIP;
    }
    return true;
  }

  private readFmt(): boolean {
    const need = Math.min(this.fmtSize, 40);
    if (this.queue.length < need) return false;
    const b = this.queue.read(need);
    this.offset += need;
    this.fmt = parseFmt(b, this.fmtSize, this.container);
    this.skipLeft = this.fmtSize - need;
    this.padLeft = this.fmtSize & 1;
    this.state = S_SKIP;
    return true;
  }

  private readDs64(): boolean {
    // EBU Tech 3306 §3: riffSize(8) dataSize(8) sampleCount(8) tableLength(4) table[].
    if (this.queue.length < 24) return false;
    const b = this.queue.read(24);
    this.offset += 24;
    this.skipLeft -= 24;
    this.riffSize = u64(b, 0, 'RIFF size');
    this.ds64DataSize = u64(b, 8, 'data size');
    this.state = S_SKIP;
    return true;
  }

  private skip(): boolean {
    const q = this.queue;
    const n = Math.min(q.length, this.skipLeft + this.padLeft);
    q.skip(n);
    this.offset += n;
    if (n <= this.skipLeft) this.skipLeft -= n;
    else {
      this.padLeft -= n - this.skipLeft;
      this.skipLeft = 0;
    }
    if (this.skipLeft + this.padLeft > 0) return false;
    this.state = S_CHUNK;
    return true;
  }

  private startData(size: number, at: number, out: WavDecoderEvent<S>[]): void {
    const f = this.fmt;
    if (f === null) throw new VoicewireError('WAV_MISSING_FMT', `data chunk at byte ${at} comes before any fmt chunk`);
    let declared: number | null = size;
    if (size === UNKNOWN_32) {
      // RF64: the real size is in ds64 (0 there means a ds64 written before the audio).
      declared = this.container === 'rf64' && this.ds64DataSize !== null && this.ds64DataSize !== 0 ? this.ds64DataSize : null;
    } else if (size === SOX_UNKNOWN_DATA) {
      declared = null;
    } else if (size === 0 && (this.riffSize === null || this.riffSize === 0 || this.riffSize + 8 <= this.offset)) {
      // A header written before any audio: the RIFF size ends at (or before) this data header.
      declared = null;
    }
    const ba = f.blockAlign;
    const frames = declared === null ? null : Math.floor(declared / ba);
    this.dataLeft = frames === null ? Infinity : frames * ba;
    this.fmt = { ...f, dataSize: declared, frames, dataOffset: this.offset };
    out.push({ type: 'format', format: this.fmt });
    this.state = this.dataLeft === 0 ? S_DONE : S_DATA;
  }

  private readData(out: WavDecoderEvent<S>[]): void {
    const q = this.queue;
    const ba = this.fmt!.blockAlign;
    const frames = Math.floor(Math.min(q.length, this.dataLeft) / ba);
    if (frames > 0) {
      const n = frames * ba;
      // A view of the caller's chunk when the frames lie in one; one copy when a partial frame
      // held back from the previous push joins them.
      const bytes = q.read(n);
      this.offset += n;
      this.dataLeft -= n;
      out.push({ type: 'samples', samples: this.convert(bytes, frames), frames, startFrame: this.frames });
      this.frames += frames;
    }
    if (this.dataLeft === 0) {
      this.state = S_DONE;
      q.clear();
    }
  }

  private finish(): void {
    switch (this.state) {
      case S_RIFF:
        throw new VoicewireError('WAV_TRUNCATED', this.offset + this.queue.length === 0 ? 'empty input: no WAV header' : `input ended inside the 12-byte RIFF header (${this.queue.length} bytes)`);
      case S_CHUNK:
        if (this.queue.length > 0) throw new VoicewireError('WAV_TRUNCATED', `input ended inside a chunk header at byte ${this.offset}`);
        throw this.missing();
      case S_FMT:
      case S_DS64:
        throw new VoicewireError('WAV_TRUNCATED', `input ended inside the ${this.state === S_FMT ? 'fmt' : 'ds64'} chunk at byte ${this.offset}`);
      case S_SKIP:
        if (this.skipLeft > 0) throw new VoicewireError('WAV_SIZE_MISMATCH', `a chunk declares ${this.skipLeft} more bytes than the input holds (at byte ${this.offset})`);
        throw this.missing(); // only a final pad byte is missing
      case S_DATA:
        if (this.dataLeft !== Infinity && !this.allowTruncated) {
          const f = this.fmt!;
          throw new VoicewireError('WAV_SIZE_MISMATCH', `data chunk declares ${f.frames} frames (${f.dataSize} bytes); the input holds ${this.frames}`);
        }
        return; // unknown size, or truncation accepted: a partial last frame is dropped
      default:
        return;
    }
  }

  private missing(): VoicewireError {
    return this.fmt === null ? new VoicewireError('WAV_MISSING_FMT', 'the file has no fmt chunk') : new VoicewireError('WAV_MISSING_DATA', 'the file has no data chunk');
  }

  private convert(bytes: Uint8Array, frames: number): S {
    if (this.output === 'raw') return bytes as S;
    const f = this.fmt!;
    const ch = f.channels;
    const n = frames * ch;
    const down = this.mono && ch > 1;
    if (this.output === 'float32') {
      if (!down) return decodeToFloat32(bytes, f.codec, new Float32Array(n), this.g711Scratch) as S;
      if (this.scratchF.length < n) this.scratchF = new Float32Array(n);
      return downmixToMono(decodeToFloat32(bytes, f.codec, this.scratchF.subarray(0, n), this.g711Scratch), ch, new Float32Array(frames)) as S;
    }
    if (!down) return decodeToInt16(bytes, f.codec, new Int16Array(n)) as S;
    if (this.scratchI.length < n) this.scratchI = new Int16Array(n);
    return downmixInt16ToMono(decodeToInt16(bytes, f.codec, this.scratchI.subarray(0, n)), ch, new Int16Array(frames)) as S;
  }

  /** Int16 scratch for G.711 → float (kept between pushes). */
  private readonly g711Scratch = (n: number): Int16Array => {
    if (this.scratchI.length < n) this.scratchI = new Int16Array(n);
    return this.scratchI.subarray(0, n);
  };
}

function parseFmt(b: Uint8Array, size: number, container: WavContainer): WavFormat {
  const formatTag = u16(b, 0);
  const channels = u16(b, 2);
  const sampleRate = u32(b, 4);
  const blockAlign = u16(b, 12);
  const bitsPerSample = u16(b, 14);
  if (channels === 0) throw new VoicewireError('WAV_INVALID_FMT', 'fmt chunk: zero channels');
  if (sampleRate === 0) throw new VoicewireError('WAV_INVALID_FMT', 'fmt chunk: zero sample rate');
  let tag = formatTag;
  let validBitsPerSample = bitsPerSample;
  let channelMask = 0;
  if (formatTag === WAV_FORMAT_TAGS.EXTENSIBLE) {
    // WAVEFORMATEXTENSIBLE: cbSize(2) >= 22, wValidBitsPerSample(2), dwChannelMask(4), SubFormat GUID(16).
    if (size < 40 || u16(b, 16) < 22) throw new VoicewireError('WAV_INVALID_FMT', `fmt chunk: WAVE_FORMAT_EXTENSIBLE needs 40 bytes with cbSize >= 22, got ${size} bytes`);
    validBitsPerSample = u16(b, 18);
    channelMask = u32(b, 20);
    tag = u16(b, 24);
    for (let i = 0; i < 14; i++) {
      if (b[26 + i] !== GUID_TAIL[i]) throw new VoicewireError('WAV_UNSUPPORTED_FORMAT', 'fmt chunk: WAVE_FORMAT_EXTENSIBLE with a SubFormat GUID that is not a KSDATAFORMAT_SUBTYPE (PCM, IEEE float, A-law, μ-law)');
    }
  }
  const codec = codecOf(tag, bitsPerSample);
  const expected = channels * (bitsPerSample >> 3);
  if (blockAlign !== expected) {
    throw new VoicewireError('WAV_INVALID_FMT', `fmt chunk: block align ${blockAlign}, but ${channels} channels of ${bitsPerSample} bits need ${expected}`);
  }
  return {
    container,
    codec,
    formatTag,
    subFormatTag: tag,
    sampleRate,
    channels,
    bitsPerSample,
    validBitsPerSample,
    blockAlign,
    channelMask,
    dataSize: null,
    frames: null,
    dataOffset: 0,
  };
}

function codecOf(tag: number, bits: number): WavCodec {
  let codec: WavCodec | undefined;
  if (tag === WAV_FORMAT_TAGS.PCM) codec = bits === 8 ? 'pcm_u8' : bits === 16 ? 'pcm_s16le' : bits === 24 ? 'pcm_s24le' : bits === 32 ? 'pcm_s32le' : undefined;
  else if (tag === WAV_FORMAT_TAGS.IEEE_FLOAT) codec = bits === 32 ? 'pcm_f32le' : bits === 64 ? 'pcm_f64le' : undefined;
  else if (tag === WAV_FORMAT_TAGS.MULAW) codec = bits === 8 ? 'mulaw' : undefined;
  else if (tag === WAV_FORMAT_TAGS.ALAW) codec = bits === 8 ? 'alaw' : undefined;
  else {
    const name = FORMAT_NAMES[tag];
    throw new VoicewireError('WAV_UNSUPPORTED_FORMAT', `WAV format tag 0x${tag.toString(16).padStart(4, '0')}${name ? ` (${name})` : ''} is not supported; voicewire reads PCM, IEEE float, μ-law and A-law`);
  }
  if (codec === undefined) throw new VoicewireError('WAV_UNSUPPORTED_FORMAT', `WAV format tag ${tag} with ${bits} bits per sample is not supported`);
  return codec;
}

const PCM_OF: Partial<Record<WavCodec, PcmEncoding>> = { pcm_s16le: 's16le', pcm_s24le: 's24le', pcm_s32le: 's32le', pcm_f32le: 'f32le' };
const S16_SCALE = 1 / 32768;

function float64Of(bytes: Uint8Array): Float64Array {
  const b = (bytes.byteOffset & 7) === 0 ? bytes : new Uint8Array(bytes); // a copy (Buffer#slice is a view)
  return new Float64Array(b.buffer, b.byteOffset, b.byteLength >> 3);
}

function decodeToFloat32(bytes: Uint8Array, codec: WavCodec, out: Float32Array, g711Scratch: (n: number) => Int16Array): Float32Array {
  const pcm = PCM_OF[codec];
  if (pcm !== undefined) return decodePcm(bytes, pcm, out);
  const n = bytes.byteLength;
  switch (codec) {
    case 'pcm_u8':
      for (let i = 0; i < n; i++) out[i] = (bytes[i]! - 128) * (1 / 128);
      return out;
    case 'pcm_f64le':
      out.set(float64Of(bytes)); // rounds each double to the nearest float32
      return out;
    default: {
      const s = g711Scratch(n);
      if (codec === 'mulaw') decodeMulaw(bytes, s);
      else decodeAlaw(bytes, s);
      for (let i = 0; i < n; i++) out[i] = s[i]! * S16_SCALE;
      return out;
    }
  }
}

function decodeToInt16(bytes: Uint8Array, codec: WavCodec, out: Int16Array): Int16Array {
  const pcm = PCM_OF[codec];
  if (pcm !== undefined) return decodePcmToInt16(bytes, pcm, out);
  switch (codec) {
    case 'pcm_u8':
      for (let i = 0, n = bytes.byteLength; i < n; i++) out[i] = (bytes[i]! - 128) << 8;
      return out;
    case 'pcm_f64le':
      return float32ToInt16(float64Of(bytes), out);
    case 'mulaw':
      return decodeMulaw(bytes, out);
    default:
      return decodeAlaw(bytes, out);
  }
}

// ---------------------------------------------------------------------------------------------
// Public reading API
// ---------------------------------------------------------------------------------------------

/**
 * An incremental WAV decoder: `push(bytes)` in any chunking, `flush()` at the end. The first
 * output is a {@link WavFormatEvent}; then {@link WavSamplesEvent}s of whole frames.
 *
 * Delay: none beyond a partial sample frame (fewer than `blockAlign` bytes are held back).
 * Memory: the held-back bytes are bounded by 40 (header pieces) or one frame.
 *
 * @param options - output sample type (default `'float32'`), `mono` downmix (default false),
 *   `allowTruncated` (default false).
 * @throws `INVALID_ARGUMENT` on bad options.
 * @example
 * const dec = createWavDecoder({ output: 'int16', mono: true });
 * for (const ev of dec.push(chunk)) {
 *   if (ev.type === 'format') console.log(ev.format.sampleRate);
 *   else send(ev.samples); // Int16Array, mono
 * }
 */
export function createWavDecoder<O extends WavSampleOutput = 'float32'>(options: WavDecoderOptions<O> = {}): WavDecoder<WavSampleTypes[O]> {
  return new WavDecoderImpl<WavSampleTypes[O]>(options);
}

/** A decoded WAV file. */
export interface WavAudio<S> {
  /** The header. */
  readonly format: WavFormat;
  /** All samples, interleaved (one channel when `mono`). */
  readonly samples: S;
  /** Channels in `samples`: 1 when downmixed, else `format.channels`. */
  readonly channels: number;
  /** Sample frames decoded. */
  readonly frames: number;
  /** `frames / sampleRate`. */
  readonly durationS: number;
}

/**
 * Decodes a whole WAV file at once (the same machine as {@link createWavDecoder}, one push).
 *
 * @param bytes - the file (Uint8Array, Node Buffer or ArrayBuffer).
 * @param options - as {@link createWavDecoder}; default Float32 interleaved.
 * @returns the format and all samples. With `output: 'raw'` the samples may be a view of `bytes`.
 * @throws `WAV_*` codes on malformed input (see {@link WavDecoder.flush}).
 */
export function decodeWav<O extends WavSampleOutput = 'float32'>(bytes: Uint8Array | ArrayBuffer, opts?: WavDecoderOptions<O>): WavAudio<WavSampleTypes[O]> {
  const options = optionsArg(opts, 'decodeWav options');
  const dec = createWavDecoder(options);
  const input = toBytes(bytes, 'decodeWav input');
  const events = [...dec.push(input), ...dec.flush()];
  let format: WavFormat | null = null;
  const parts: WavSampleTypes[O][] = [];
  for (const e of events) {
    if (e.type === 'format') format = e.format;
    else parts.push(e.samples);
  }
  if (format === null) throw new VoicewireError('WAV_MISSING_DATA', 'the file has no data chunk'); // unreachable: flush() throws first
  const channels = options.mono === true ? 1 : format.channels;
  const output = options.output ?? 'float32';
  const alloc = (n: number) => (output === 'float32' ? new Float32Array(n) : output === 'int16' ? new Int16Array(n) : new Uint8Array(n)) as WavSampleTypes[O];
  const samples = parts.length === 1 ? parts[0]! : concatChunks(parts, alloc);
  const frames = dec.framesDecoded;
  return { format, samples, channels, frames, durationS: frames / format.sampleRate };
}


/**
 * What `voicewire info` prints for a WAV file: container, codec, sampleRate, channels,
 * bitsPerSample, frames and durationS. Validates the whole file like {@link decodeWav} but
 * converts no samples.
 *
 * @throws `WAV_*` codes on malformed input.
 */
export function wavInfo(bytes: Uint8Array | ArrayBuffer): WavInfo {
  const { format, frames } = decodeWav(bytes, { output: 'raw' });
  return {
    container: format.container,
    codec: format.codec,
    sampleRate: format.sampleRate,
    channels: format.channels,
    bitsPerSample: format.bitsPerSample,
    frames,
    durationS: frames / format.sampleRate,
  };
}

/**
 * True when `bytes` start like a WAV file ("RIFF"/"RF64"/"BW64", a size, "WAVE"); needs 12 bytes.
 * For format sniffing; it does not validate the rest.
 */
export function isWav(bytes: Uint8Array): boolean {
  if (!(bytes instanceof Uint8Array) || bytes.byteLength < 12) return false;
  const magic = String.fromCharCode(bytes[0]!, bytes[1]!, bytes[2]!, bytes[3]!);
  return MAGICS.includes(magic) && bytes[8] === 0x57 && bytes[9] === 0x41 && bytes[10] === 0x56 && bytes[11] === 0x45;
}

/**
 * A web `TransformStream` decoding WAV bytes to {@link WavDecoderEvent}s (format first, then
 * samples), over {@link createWavDecoder}.
 */
export function createWavDecoderStream<O extends WavSampleOutput = 'float32'>(
  options: WavDecoderOptions<O> = {},
  streamOptions: WebTransformOptions<Uint8Array, WavDecoderEvent<WavSampleTypes[O]>> = {},
): TransformStream<Uint8Array, WavDecoderEvent<WavSampleTypes[O]>> {
  return toWebTransformStream(createWavDecoder(options), streamOptions);
}

// ---------------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------------

/** Sample encodings {@link encodeWav} writes: PCM ones, and G.711 (format tags 7 and 6). */
export type WavEncoding = PcmEncoding | 'mulaw' | 'alaw';

/** Options of {@link encodeWav}. */
export interface EncodeWavOptions {
  /** Frames per second (a positive integer). */
  sampleRate: number;
  /** Interleaved channels in `samples`. Default 1. */
  channels?: number;
  /** Sample encoding. Default `'s16le'`. */
  encoding?: WavEncoding;
}

function checkRateChannels(fn: string, sampleRate: unknown, channels: unknown): void {
  if (typeof sampleRate !== 'number' || !Number.isInteger(sampleRate) || sampleRate < 1 || sampleRate > 0xffffffff) {
    throw new VoicewireError('INVALID_ARGUMENT', `${fn}: sampleRate must be a positive integer, got ${shown(sampleRate)}`);
  }
  if (typeof channels !== 'number' || !Number.isInteger(channels) || channels < 1 || channels > 0xffff) {
    throw new VoicewireError('INVALID_ARGUMENT', `${fn}: channels must be an integer from 1 to 65535, got ${shown(channels)}`);
  }
}

interface HeaderSpec {
  tag: number;
  bits: number;
  sampleRate: number;
  channels: number;
  /** Write an 18-byte fmt (cbSize 0) and a fact chunk, as non-PCM formats require. */
  fact: boolean;
  frames: number;
  dataSize: number; // 0xFFFFFFFF for the streaming form
  riffSize: number;
}

function writeHeader(h: HeaderSpec): Uint8Array {
  const fmtSize = h.fact ? 18 : 16;
  const len = 12 + 8 + fmtSize + (h.fact ? 12 : 0) + 8;
  const b = new Uint8Array(len);
  const v = new DataView(b.buffer);
  const tag4 = (at: number, s: string): void => {
    for (let i = 0; i < 4; i++) b[at + i] = s.charCodeAt(i);
  };
  const blockAlign = h.channels * (h.bits >> 3);
  tag4(0, 'RIFF');
  v.setUint32(4, h.riffSize, true);
  tag4(8, 'WAVE');
  tag4(12, 'fmt ');
  v.setUint32(16, fmtSize, true);
  v.setUint16(20, h.tag, true);
  v.setUint16(22, h.channels, true);
  v.setUint32(24, h.sampleRate, true);
  v.setUint32(28, h.sampleRate * blockAlign, true);
  v.setUint16(32, blockAlign, true);
  v.setUint16(34, h.bits, true);
  let at = 36;
  if (h.fact) {
    v.setUint16(36, 0, true); // cbSize
    tag4(38, 'fact');
    v.setUint32(42, 4, true);
    v.setUint32(46, h.frames, true);
    at = 50;
  }
  tag4(at, 'data');
  v.setUint32(at + 4, h.dataSize, true);
  return b;
}

function specOf(fn: string, encoding: unknown): { tag: number; bits: number; fact: boolean } {
  if (encoding === 'mulaw') return { tag: WAV_FORMAT_TAGS.MULAW, bits: 8, fact: true };
  if (encoding === 'alaw') return { tag: WAV_FORMAT_TAGS.ALAW, bits: 8, fact: true };
  if (!isPcmEncoding(encoding)) {
    throw new VoicewireError('PCM_UNSUPPORTED_ENCODING', `${fn}: unknown encoding ${JSON.stringify(encoding)}; expected s16le, s24le, s32le, f32le, mulaw or alaw`);
  }
  const bits = pcmBytesPerSample(encoding) * 8;
  return encoding === 'f32le' ? { tag: WAV_FORMAT_TAGS.IEEE_FLOAT, bits, fact: true } : { tag: WAV_FORMAT_TAGS.PCM, bits, fact: false };
}

/**
 * Writes a complete WAV file with exact RIFF, fact and data sizes (and a pad byte after an
 * odd-sized data chunk). Headers are the plain forms every reader accepts: a 16-byte fmt
 * (tag 1, 44-byte header) for integer PCM; an 18-byte fmt plus a `fact` chunk (58-byte header)
 * for float (tag 3), μ-law (7) and A-law (6).
 *
 * Samples convert as {@link encodePcm} does (Float32 → integer: ×(2^(bits-1)-1), rounded,
 * clamped); for G.711, Float32 goes through {@link float32ToInt16} first, then the G.191 encoder.
 *
 * @param samples - interleaved Float32Array or Int16Array; length a multiple of `channels`.
 * @param options - `sampleRate` (required), `channels` (default 1), `encoding` (default `s16le`).
 * @throws `INVALID_ARGUMENT`, `PCM_PARTIAL_SAMPLE` (length not whole frames),
 *   `PCM_UNSUPPORTED_ENCODING`.
 */
export function encodeWav(samples: Float32Array | Int16Array, options: EncodeWavOptions): Uint8Array {
  if (!(samples instanceof Float32Array) && !(samples instanceof Int16Array)) {
    throw new VoicewireError('INVALID_ARGUMENT', `encodeWav: samples must be a Float32Array or Int16Array, got ${describe(samples)}`);
  }
  if (typeof options !== 'object' || options === null) throw new VoicewireError('INVALID_ARGUMENT', 'encodeWav: options with a sampleRate are required');
  const channels = options.channels ?? 1;
  checkRateChannels('encodeWav', options.sampleRate, channels);
  const encoding = options.encoding ?? 's16le';
  const { tag, bits, fact } = specOf('encodeWav', encoding);
  if (samples.length % channels !== 0) {
    throw new VoicewireError('PCM_PARTIAL_SAMPLE', `encodeWav: ${samples.length} samples is not a whole number of ${channels}-channel frames`);
  }
  const frames = samples.length / channels;
  const dataSize = samples.length * (bits >> 3);
  const headerLen = fact ? 58 : 44;
  const pad = dataSize & 1;
  if (headerLen + dataSize + pad - 8 > 0xffffffff) throw new VoicewireError('INVALID_ARGUMENT', `encodeWav: ${dataSize} bytes of audio do not fit a RIFF file (4 GiB)`);
  const header = writeHeader({ tag, bits, sampleRate: options.sampleRate, channels, fact, frames, dataSize, riffSize: headerLen - 8 + dataSize + pad });
  const file = new Uint8Array(headerLen + dataSize + pad);
  file.set(header);
  const body = file.subarray(headerLen, headerLen + dataSize);
  if (encoding === 'mulaw' || encoding === 'alaw') {
    const pcm = samples instanceof Int16Array ? samples : float32ToInt16(samples);
    if (encoding === 'mulaw') encodeMulaw(pcm, body);
    else encodeAlaw(pcm, body);
  } else {
    encodePcm(samples, encoding, body);
  }
  return file;
}

/** Options of {@link wavStreamHeader}. */
export interface WavStreamHeaderOptions {
  /** Frames per second (a positive integer). */
  sampleRate: number;
  /** Channels. Default 1. */
  channels?: number;
  /** 16, 24 or 32 (integer PCM). Default 16; ignored when `encoding` is given. */
  bitsPerSample?: 16 | 24 | 32;
  /** Sample encoding instead of `bitsPerSample` (`f32le` writes format tag 3). */
  encoding?: PcmEncoding;
}

/**
 * The 44-byte header of the service's streaming WAV: RIFF and data sizes 0xFFFFFFFF ("unknown,
 * read to the end", as ffmpeg writes to a pipe), a 16-byte fmt chunk, then raw PCM follows.
 *
 * @param options - `sampleRate` (required), `channels` (default 1), `bitsPerSample` (default 16).
 * @throws `INVALID_ARGUMENT`, `PCM_UNSUPPORTED_ENCODING`.
 */
export function wavStreamHeader(options: WavStreamHeaderOptions): Uint8Array {
  if (typeof options !== 'object' || options === null) throw new VoicewireError('INVALID_ARGUMENT', 'wavStreamHeader: options with a sampleRate are required');
  const channels = options.channels ?? 1;
  checkRateChannels('wavStreamHeader', options.sampleRate, channels);
  let encoding: PcmEncoding;
  if (options.encoding !== undefined) encoding = options.encoding;
  else {
    const bits = options.bitsPerSample ?? 16;
    if (bits !== 16 && bits !== 24 && bits !== 32) throw new VoicewireError('INVALID_ARGUMENT', `wavStreamHeader: bitsPerSample must be 16, 24 or 32, got ${shown(bits)}`);
    encoding = bits === 16 ? 's16le' : bits === 24 ? 's24le' : 's32le';
  }
  const { tag, bits } = specOf('wavStreamHeader', encoding);
  return writeHeader({ tag, bits, sampleRate: options.sampleRate, channels, fact: false, frames: 0, dataSize: UNKNOWN_32, riffSize: UNKNOWN_32 });
}

/** Options of {@link createWavStreamEncoder}. */
export interface WavStreamEncoderOptions {
  /** Frames per second. */
  sampleRate: number;
  /** Channels. Default 1. */
  channels?: number;
  /** Encoding of the PCM after the header. Default `'s16le'`. */
  encoding?: PcmEncoding;
}

/**
 * The streaming WAV writer: the first output is {@link wavStreamHeader}, then each pushed chunk
 * as PCM. Float32Array / Int16Array input is encoded ({@link encodePcm}); a Uint8Array is taken
 * as PCM bytes already in `encoding` and passed through. Adds no delay. flush() emits the
 * header if nothing was pushed, so an empty stream is still a valid WAV.
 */
export function createWavStreamEncoder(options: WavStreamEncoderOptions): Incremental<Float32Array | Int16Array | Uint8Array, Uint8Array> {
  const encoding = options?.encoding ?? 's16le';
  const header = wavStreamHeader({ sampleRate: options?.sampleRate, channels: options?.channels ?? 1, encoding });
  let started = false;
  return {
    push(chunk) {
      const out: Uint8Array[] = [];
      if (!started) {
        out.push(header);
        started = true;
      }
      if (chunk instanceof Int16Array || chunk instanceof Float32Array) out.push(encodePcm(chunk, encoding));
      else out.push(toBytes(chunk, 'WAV stream chunk'));
      return out;
    },
    flush() {
      if (started) return [];
      started = true;
      return [header];
    },
  };
}

/** A web `TransformStream` writing the streaming WAV form over {@link createWavStreamEncoder}. */
export function createWavEncoderStream(
  options: WavStreamEncoderOptions,
  streamOptions: WebTransformOptions<Float32Array | Int16Array | Uint8Array, Uint8Array> = {},
): TransformStream<Float32Array | Int16Array | Uint8Array, Uint8Array> {
  return toWebTransformStream(createWavStreamEncoder(options), streamOptions);
}
