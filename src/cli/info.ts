/**
 * `voicewire info`: what a file is, as JSON, read as a stream in bounded memory (issue 10 §2,
 * issue 11 §9). WAV is validated to its end without converting samples; Ogg Opus is measured
 * from its pages (last granule − pre-skip, RFC 7845 §4.4) without decoding; raw input is counted
 * (from the size, for a regular file); any other container is read by ffprobe.
 */
import { VoicewireError } from '../util/errors.js';
import { parseAudioFormat } from '../audio/format.js';
import { createWavDecoder } from '../audio/wav.js';
import { OggPacketReader } from '../audio/ogg.js';
import { isOpusHead, parseOpusHead, type OpusHead } from '../audio/opus-head.js';
import { probeWithFfprobe } from '../node/ffmpeg.js';
import type { CliCommand } from './args.js';
import { openInput, replay, type CliInput } from './input.js';
import { headOf, sniffReader, type InputReader } from './sniff.js';

type InfoCommand = Extract<CliCommand, { command: 'info' }>;

/** What `info` prints. */
export interface CliInfo {
  container: string;
  codec: string;
  sampleRate: number;
  channels: number;
  bitsPerSample: number | null;
  frames: number | null;
  durationS: number | null;
}

async function wavInfo(held: readonly Uint8Array[], input: CliInput): Promise<CliInfo> {
  const dec = createWavDecoder({ output: 'raw' });
  for await (const chunk of replay(held, input)) dec.push(chunk);
  dec.flush(); // WAV_SIZE_MISMATCH etc. for a damaged file
  const f = dec.format!;
  const frames = dec.framesDecoded;
  return { container: f.container, codec: f.codec, sampleRate: f.sampleRate, channels: f.channels, bitsPerSample: f.bitsPerSample, frames, durationS: frames / f.sampleRate };
}

async function oggInfo(held: readonly Uint8Array[], input: CliInput): Promise<CliInfo> {
  let serial: number | null = null;
  let head: OpusHead | null = null;
  let granule = 0n;
  const reader = new OggPacketReader({
    // The first Opus stream only; other logical streams (video, a second chain link) are skipped.
    select: (s, first) => {
      if (serial !== null || !isOpusHead(first)) return false;
      serial = s;
      return true;
    },
  });
  const pages = (p: ReturnType<OggPacketReader['push']>): void => {
    for (const page of p) {
      if (head === null && page.packets.length > 0) head = parseOpusHead(page.packets[0]!);
      if (page.granule >= 0n) granule = page.granule;
    }
  };
  for await (const chunk of replay(held, input)) pages(reader.push(chunk));
  pages(reader.flush()); // OGG_TRUNCATED for a stream cut short
  const h = head as OpusHead | null;
  if (h === null) throw new VoicewireError('OGG_NO_OPUS_STREAM', 'the Ogg input holds no Opus stream');
  const frames = Math.max(0, Number(granule) - h.preSkip);
  // Decoded at 48 kHz (RFC 7845 §5.1: the input rate in OpusHead is informational only).
  return { container: 'ogg', codec: 'opus', sampleRate: 48000, channels: h.channelCount, bitsPerSample: null, frames, durationS: frames / 48000 };
}

async function rawInfo(from: string, held: readonly Uint8Array[], input: CliInput): Promise<CliInfo> {
  const f = parseAudioFormat(from, { direction: 'stt-input' });
  let bytes = 0;
  if (input.stat !== null && input.stat.isFile()) bytes = input.stat.size;
  else for await (const chunk of replay(held, input)) bytes += chunk.byteLength;
  const frames = Math.floor(bytes / f.bytesPerSample!);
  return { container: 'raw', codec: f.codec, sampleRate: f.sampleRate!, channels: 1, bitsPerSample: f.bytesPerSample! * 8, frames, durationS: frames / f.sampleRate! };
}

/** `voicewire info`. */
export async function info(cmd: InfoCommand): Promise<CliInfo> {
  const named = cmd.from === undefined ? null : parseAudioFormat(cmd.from, { direction: 'stt-input' });
  const input = await openInput(cmd.input);
  try {
    if (named !== null && named.container === 'raw') return await rawInfo(cmd.from!, [], input);
    const held: Uint8Array[] = [];
    let reader: InputReader | null = named?.container === 'wav' ? 'wav' : named?.container === 'ogg' ? 'ogg-opus' : null;
    for (let ended = false; reader === null; ) {
      const chunk = await input.next();
      if (chunk === null) ended = true;
      else held.push(chunk);
      if (ended && held.length === 0) throw new VoicewireError('AUDIO_FORMAT_UNDETECTED', 'the input is empty');
      reader = sniffReader(headOf(held), ended);
    }
    if (reader === 'wav') return await wavInfo(held, input);
    if (reader === 'ogg-opus') return await oggInfo(held, input);
    // Not a container voicewire parses: ffprobe reads its header (by path, or the bytes piped).
    return await probeWithFfprobe(input.path ?? replay(held, input));
  } finally {
    await input.close();
  }
}
