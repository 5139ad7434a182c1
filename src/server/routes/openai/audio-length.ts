/**
 * The length of an uploaded file, read from its container before any work (issue 31 §5: a
 * one-hour FLAC was decoded and transcribed up to the 300 s cap, then refused): a request over
 * the session limit is refused with `AUDIO_LIMIT_EXCEEDED` before an engine or a decoder starts.
 *
 * - WAV: the header's format and data size, bounded by the bytes actually held (a streaming
 *   header declares no size).
 * - Ogg Opus: the last page's granule position, less the pre-skip (RFC 7845 §4.3, §5.1).
 * - Anything ffmpeg reads: ffprobe's duration of the bytes through a pipe (FLAC's STREAMINFO, an
 *   MP4's index at the front; an MP3 or Ogg Vorbis through a pipe has none).
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
      if (dec.format !== null || read >= WAV_HEADER_MAX) break;
      dec.push(c.subarray(0, WAV_HEADER_MAX - read));
      read += Math.min(c.length, WAV_HEADER_MAX - read);
    }
  } catch {
    return null; // a malformed header: the decoder says why, with its own error
  }
  const f = dec.format;
  if (f === null || f.blockAlign <= 0 || f.sampleRate <= 0) return null;
  const held = Math.max(0, bytes - f.dataOffset);
  const dataBytes = f.dataSize === null ? held : Math.min(f.dataSize, held);
  return Math.floor(dataBytes / f.blockAlign) / f.sampleRate;
}

/** The last `n` bytes across chunks (one copy). */
function tail(chunks: readonly Uint8Array[], bytes: number, n: number): Uint8Array {
  const out = new Uint8Array(Math.min(n, bytes));
  let skip = bytes - out.length;
  let at = 0;
  for (const c of chunks) {
    if (skip >= c.length) {
      skip -= c.length;
      continue;
    }
    const part = c.subarray(skip);
    skip = 0;
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** The first `n` bytes across chunks (one copy; fewer when the file is shorter). */
export function firstBytes(chunks: readonly Uint8Array[], n: number): Uint8Array {
  const out = new Uint8Array(n);
  let at = 0;
  for (const c of chunks) {
    if (at >= n) break;
    const take = Math.min(c.length, n - at);
    out.set(c.subarray(0, take), at);
    at += take;
  }
  return out.subarray(0, at);
}

const u32 = (b: Uint8Array, at: number): number => (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24)) >>> 0;

/**
 * Seconds of an Ogg Opus file: the granule position of the last page of the first stream, less
 * the pre-skip, at 48 kHz. Null when the head is not `OggS` + OpusHead in one page or no page of
 * that stream is found near the end (its CRC is not checked: a wrong length only refuses its own request).
 */
export function oggOpusSeconds(chunks: readonly Uint8Array[], bytes: number): number | null {
  const head = firstBytes(chunks, 47);
  // RFC 7845 §5.1: OpusHead alone in the first page; the pre-skip is its bytes 10–11.
  if (head.length < 47 || head[26] !== 19) return null;
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
  // ffprobe's refusal is not ours to report: ffmpeg's decode says why, in its own words.
  return probe(() => probeWithFfprobe(chunksOf(chunks)).then((i) => i.durationS, () => null));
}

async function* chunksOf(chunks: readonly Uint8Array[]): AsyncGenerator<Uint8Array> {
  yield* chunks;
}
