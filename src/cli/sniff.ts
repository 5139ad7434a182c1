/**
 * Which decoder reads an input the CLI was not told the format of: voicewire's own (WAV/RF64,
 * Ogg Opus) or ffmpeg (everything else: mp3, flac, m4a, Ogg Vorbis, Ogg FLAC, …). Decided from
 * the first bytes: the 4-byte magic, and for Ogg whether the first stream's first packet is
 * OpusHead (RFC 7845 §3: an Ogg Opus stream begins with it). At most {@link SNIFF_MAX} bytes.
 */
import { isOpusHead } from '../audio/opus-head.js';
import { concatChunks } from '../util/bytes.js';

/** The reader for an input. */
export type InputReader = 'wav' | 'ogg-opus' | 'ffmpeg';

const OGG_HEADER = 27; // RFC 3533 §6: the fixed page header, then the segment table
/** Most bytes looked at: an Ogg page header, a full segment table, the 8-byte OpusHead magic. */
export const SNIFF_MAX = OGG_HEADER + 255 + 8;

const ascii = (b: Uint8Array, at: number, n: number): string => String.fromCharCode(...b.subarray(at, at + n));

/** The reader for an input starting with `head`, or null when more bytes are needed (`ended`: there are no more). */
export function sniffReader(head: Uint8Array, ended: boolean): InputReader | null {
  if (head.length < 4) return ended ? 'wav' : null; // too short for anything: the WAV decoder says so
  const magic = ascii(head, 0, 4);
  if (magic === 'RIFF' || magic === 'RF64' || magic === 'BW64') return 'wav';
  if (magic !== 'OggS') return 'ffmpeg';
  const segments = head.length > 26 ? head[26]! : -1;
  const packetAt = OGG_HEADER + segments;
  if (segments < 0 || head.length < packetAt + 8) return ended ? 'ogg-opus' : null; // the Ogg decoder reports the truncation
  return isOpusHead(head.subarray(packetAt, packetAt + 8)) ? 'ogg-opus' : 'ffmpeg';
}

/** The first bytes of `chunks`, at most {@link SNIFF_MAX}. */
export function headOf(chunks: readonly Uint8Array[]): Uint8Array {
  const joined = concatChunks(chunks.length > 0 && chunks[0]!.length >= SNIFF_MAX ? [chunks[0]!] : [...chunks], (n) => new Uint8Array(n));
  return joined.subarray(0, SNIFF_MAX);
}
