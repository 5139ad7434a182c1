/**
 * The length of an uploaded file, read from its container before any work (issue 31 §5: a
 * one-hour FLAC was decoded and transcribed up to the 300 s cap, then refused): a request over
 * the session limit is refused with `AUDIO_LIMIT_EXCEEDED` before an engine or a decoder starts.
 *
 * - WAV: the header's format and data size, bounded by the bytes actually held (a streaming
 *   header declares no size).
 * - Ogg Opus: the last page's granule position, less the pre-skip (RFC 7845 §4.3, §5.1).
 * - MP3: its Xing/Info or VBRI frame count, or a constant bitrate over the bytes held.
 * - Anything else ffmpeg reads: ffprobe's duration of the bytes through a pipe (FLAC's
 *   STREAMINFO, an MP4's index at the front; Ogg Vorbis through a pipe has none).
 *
 * Unknown lengths are null: the decoder's cap (`maxDecodedSeconds`) still ends such a request.
 */
import { createWavDecoder } from '../../../audio/wav.js';
import type { AudioFormatName } from '../../../audio/format.js';
import { probeWithFfprobe } from '../../../node/ffmpeg.js';

/** Most header bytes read to find a WAV's data chunk (chunks before it, LIST/bext, are small). */
const WAV_HEADER_MAX = 1 << 20;
/** How far from the end the last Ogg page is looked for (a page is at most 65 307 bytes). */
const OGG_TAIL = 65_307 + 27;

/** Seconds of a WAV held in `chunks` (`bytes` in all), or null when the header cannot be read. */
export function wavSeconds(chunks: readonly Uint8Array[], bytes: number): number | null {
  const dec = createWavDecoder({ output: 'raw' });
  let read = 0;
  try {
    for (const c of chunks) {
      // The format is known after `fmt `; the data chunk's offset and size after its own header.
      if ((dec.format !== null && dec.format.dataOffset > 0) || read >= WAV_HEADER_MAX) break;
      dec.push(c.subarray(0, WAV_HEADER_MAX - read));
      read += Math.min(c.length, WAV_HEADER_MAX - read);
    }
  } catch {
    return null; // a malformed header: the decoder says why, with its own error
  }
  const f = dec.format;
  if (f === null || f.dataOffset === 0 || f.blockAlign <= 0 || f.sampleRate <= 0) return null;
  const held = Math.max(0, bytes - f.dataOffset);
  const dataBytes = f.dataSize === null ? held : Math.min(f.dataSize, held);
  return Math.floor(dataBytes / f.blockAlign) / f.sampleRate;
}

/** `n` bytes from `offset` across chunks (one copy; fewer at the end of the file). */
function bytesAt(chunks: readonly Uint8Array[], offset: number, n: number): Uint8Array {
  // Never more than the file holds: an offset read from a header (an ID3 size) may be anything.
  let total = 0;
  for (const c of chunks) total += c.length;
  n = Math.max(0, Math.min(n, total - offset));
  const out = new Uint8Array(n);
  let skip = offset;
  let at = 0;
  for (const c of chunks) {
    if (at >= n) break;
    if (skip >= c.length) {
      skip -= c.length;
      continue;
    }
    const part = c.subarray(skip, skip + n - at);
    skip = 0;
    out.set(part, at);
    at += part.length;
  }
  return out.subarray(0, at);
}

/** The last `n` bytes of a file of `bytes` across chunks. */
const tail = (chunks: readonly Uint8Array[], bytes: number, n: number): Uint8Array => bytesAt(chunks, Math.max(0, bytes - n), n);

/** The first `n` bytes across chunks (one copy; fewer when the file is shorter). */
export const firstBytes = (chunks: readonly Uint8Array[], n: number): Uint8Array => bytesAt(chunks, 0, n);

const u32 = (b: Uint8Array, at: number): number => (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24)) >>> 0;

/**
 * Seconds of an Ogg Opus file: the granule position of the last page of the first stream, less
 * the pre-skip, at 48 kHz. Null when the head is not `OggS` + OpusHead in one page or no page of
 * that stream is found near the end (its CRC is not checked: a wrong length only refuses its own request).
 */
export function oggOpusSeconds(chunks: readonly Uint8Array[], bytes: number): number | null {
  const head = firstBytes(chunks, 47);
  // RFC 7845 §5.1: OpusHead alone in the first page; the pre-skip is its bytes 10–11.
  if (head.length < 47 || ascii(head, 28, 36) !== 'OpusHead') return null;
  const serial = u32(head, 14);
  const preSkip = head[27 + 1 + 10]! | (head[27 + 1 + 11]! << 8);
  const t = tail(chunks, bytes, OGG_TAIL);
  for (let at = t.length - 27; at >= 0; at--) {
    if (t[at] !== 0x4f || t[at + 1] !== 0x67 || t[at + 2] !== 0x67 || t[at + 3] !== 0x53 || u32(t, at + 14) !== serial) continue;
    const lo = u32(t, at + 6);
    const hi = u32(t, at + 10);
    if (hi === 0xffffffff && lo === 0xffffffff) continue; // no packet ends on this page (granule −1)
    const granule = hi * 2 ** 32 + lo;
    return Math.max(0, granule - preSkip) / 48000;
  }
  return null;
}

/** MPEG audio bitrates, kbps, by [MPEG-1?][layer III?][index] (ISO 11172-3 §2.4.2.3, ISO 13818-3). */
const MPEG_KBPS = [
  [[0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160], [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160]],
  [[0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384], [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320]],
] as const;
const MPEG1_RATES = [44100, 48000, 32000] as const;
/** Places (fractions of the file) where a frame's bitrate must match the first's to call a file constant-bitrate. */
const MP3_CBR_PROBES = [0.2, 0.4, 0.6, 0.8] as const;

interface MpegFrame {
  mpeg1: boolean;
  layer3: boolean;
  kbps: number;
  sampleRate: number;
  mono: boolean;
  bytes: number;
  samples: number;
}

/** The first offset from `from` (within 4 KiB) where two MPEG audio frames follow each other, or -1. */
function mpegSync(b: Uint8Array, from: number): number {
  for (let at = from; at < Math.min(b.length, from + 4096); at++) {
    const f = mpegFrame(b, at);
    if (f !== null && mpegFrame(b, at + f.bytes) !== null) return at;
  }
  return -1;
}

/** The MPEG audio (layer II or III) frame header at `at`, or null. */
function mpegFrame(b: Uint8Array, at: number): MpegFrame | null {
  if (at + 4 > b.length || b[at] !== 0xff || (b[at + 1]! & 0xe0) !== 0xe0) return null;
  const version = (b[at + 1]! >> 3) & 3; // 0: MPEG-2.5, 2: MPEG-2, 3: MPEG-1
  const layer = (b[at + 1]! >> 1) & 3; // 1: III, 2: II
  const bitrate = b[at + 2]! >> 4;
  const rateIndex = (b[at + 2]! >> 2) & 3;
  if (version === 1 || (layer !== 1 && layer !== 2) || bitrate === 0 || bitrate === 15 || rateIndex === 3) return null;
  const mpeg1 = version === 3;
  const layer3 = layer === 1;
  const kbps = MPEG_KBPS[mpeg1 ? 1 : 0][layer3 ? 1 : 0][bitrate]!;
  const sampleRate = MPEG1_RATES[rateIndex]! / (mpeg1 ? 1 : version === 2 ? 2 : 4);
  const samples = layer3 && !mpeg1 ? 576 : 1152;
  const bytes = Math.floor((samples / 8) * ((kbps * 1000) / sampleRate)) + ((b[at + 2]! >> 1) & 1);
  return { mpeg1, layer3, kbps, sampleRate, mono: b[at + 3]! >> 6 === 3, bytes, samples };
}

const u32be = (b: Uint8Array, at: number): number => ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;

/**
 * Seconds of an MP3 (or MP2) file: its Xing/Info or VBRI frame count when the first frame has one
 * (LAME writes it), else, when frames across the file ({@link MP3_CBR_PROBES}) have the first's
 * bitrate, its audio bytes at that bitrate (a variable-bitrate file that opens in silence would
 * read as several times its length from its first frames alone, as ffprobe reads it). Null when
 * the head is not MPEG audio (two frames in a row) or the bitrate varies without a count. ffprobe
 * cannot tell it through a pipe: it needs the file's size.
 */
export function mp3Seconds(chunks: readonly Uint8Array[], bytes: number): number | null {
  const id3 = firstBytes(chunks, 10);
  // ID3v2 (id3.org v2.4 §3.1): a syncsafe size after the 10-byte header, plus a footer when flagged.
  const skip = id3.length === 10 && id3[0] === 0x49 && id3[1] === 0x44 && id3[2] === 0x33 ? 10 + ((id3[6]! << 21) | (id3[7]! << 14) | (id3[8]! << 7) | id3[9]!) + (id3[5]! & 0x10 ? 10 : 0) : 0;
  const head = firstBytes(chunks, skip + 8192);
  const at = mpegSync(head, skip);
  const first = at < 0 ? null : mpegFrame(head, at);
  if (first === null) return null;
  if (first.layer3) {
    const xing = at + 4 + (first.mpeg1 ? (first.mono ? 17 : 32) : first.mono ? 9 : 17);
    const tag = ascii(head, xing, xing + 4);
    if ((tag === 'Xing' || tag === 'Info') && (u32be(head, xing + 4) & 1) === 1) return (u32be(head, xing + 8) * first.samples) / first.sampleRate;
    if (ascii(head, at + 36, at + 40) === 'VBRI') return (u32be(head, at + 36 + 14) * first.samples) / first.sampleRate;
  }
  for (const p of MP3_CBR_PROBES) {
    const from = skip + Math.floor((bytes - skip) * p);
    const piece = bytesAt(chunks, from, 8192);
    const sync = mpegSync(piece, 0);
    if (sync < 0 || mpegFrame(piece, sync)!.kbps !== first.kbps) return null;
  }
  return ((bytes - at) * 8) / (first.kbps * 1000);
}

/** Bytes `from`–`to` as Latin-1 text ('' past the end): a container's four-letter tags. */
export const ascii = (b: Uint8Array, from: number, to: number): string => (to <= b.length ? String.fromCharCode(...b.subarray(from, to)) : '');

/**
 * Seconds of the file in `chunks`, when its container says so cheaply; else null. `native` is
 * the format voicewire reads itself (`wav`, `opus`), null for a file ffmpeg reads: then ffprobe
 * runs (`probe` starts it within the server's ffmpeg budget).
 */
export async function knownSeconds(
  chunks: readonly Uint8Array[],
  bytes: number,
  native: AudioFormatName | null,
  probe: (task: () => Promise<number | null>) => Promise<number | null>,
): Promise<number | null> {
  if (native === 'wav') return wavSeconds(chunks, bytes);
  if (native === 'opus') return oggOpusSeconds(chunks, bytes);
  if (native !== null) return null;
  const mp3 = mp3Seconds(chunks, bytes);
  if (mp3 !== null) return mp3;
  // ffprobe's refusal is not ours to report: ffmpeg's decode says why, in its own words.
  return probe(() => probeWithFfprobe(chunksOf(chunks)).then((i) => i.durationS, () => null));
}

async function* chunksOf(chunks: readonly Uint8Array[]): AsyncGenerator<Uint8Array> {
  yield* chunks;
}
