/**
 * The ffmpeg bridge: formats the API does not name (mp3, flac, m4a, …) become s16le mono PCM at a
 * chosen rate, through prism-media's FFmpeg stream (its strong part: it finds the binary and wires
 * the child process as a Duplex). We add what it lacks: a typed error when ffmpeg is missing, and
 * a failed conversion (non-zero exit) surfaced as an error instead of a silently short stream.
 */
import prism from 'prism-media';
import type { Duplex } from 'node:stream';
import { VoicewireError } from '../util/errors.js';
import { concatChunks } from '../util/bytes.js';

/** Options of {@link createFfmpegDecoderStream} and {@link decodeWithFfmpeg}. */
export interface FfmpegDecodeOptions {
  /** Output sample rate in Hz. */
  sampleRate: number;
  /** Output channels. Default 1 (ffmpeg downmixes). */
  channels?: number;
  /** ffmpeg's input format name (`-f`), when the input has no recognisable header. */
  inputFormat?: string;
}

/** True when an ffmpeg binary can be found (cached by prism-media after the first look-up). */
export function isFfmpegAvailable(): boolean {
  try {
    prism.FFmpeg.getInfo();
    return true;
  } catch {
    return false;
  }
}

function ffmpegArgs(options: FfmpegDecodeOptions): string[] {
  const args = ['-hide_banner', '-loglevel', 'error', '-nostdin'];
  if (options.inputFormat !== undefined) args.push('-f', options.inputFormat);
  args.push('-i', '-', '-f', 's16le', '-acodec', 'pcm_s16le', '-ac', String(options.channels ?? 1), '-ar', String(options.sampleRate));
  return args;
}

/**
 * A Duplex: any audio file's bytes in, s16le PCM out. Throws FFMPEG_NOT_FOUND when ffmpeg is not
 * installed; emits FFMPEG_FAILED (with ffmpeg's message) when the conversion fails.
 */
export function createFfmpegDecoderStream(options: FfmpegDecodeOptions): Duplex {
  let stream: prism.FFmpeg;
  try {
    prism.FFmpeg.getInfo();
    stream = new prism.FFmpeg({ args: ffmpegArgs(options) });
  } catch (err) {
    throw new VoicewireError('FFMPEG_NOT_FOUND', 'this input needs ffmpeg to be decoded, and ffmpeg is not installed (apt-get install ffmpeg)', { cause: err });
  }
  const child = (stream as unknown as { process: import('node:child_process').ChildProcess }).process;
  let stderr = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (s: string) => {
    if (stderr.length < 4096) stderr += s;
  });
  // ffmpeg closes its stdin early when it rejects the input: that EPIPE is reported through the exit code.
  child.stdin?.on('error', () => {});
  child.on('close', (code) => {
    if (code !== 0 && code !== null) {
      stream.emit('error', new VoicewireError('FFMPEG_FAILED', `ffmpeg could not decode the input: ${stderr.trim().split('\n').pop() ?? `exit ${code}`}`));
    }
  });
  return stream as unknown as Duplex;
}

/** Decodes a whole file through ffmpeg into s16 PCM (interleaved when channels > 1). */
export function decodeWithFfmpeg(input: Uint8Array, options: FfmpegDecodeOptions): Promise<Int16Array> {
  return new Promise((resolve, reject) => {
    let stream: Duplex;
    try {
      stream = createFfmpegDecoderStream(options);
    } catch (err) {
      reject(err);
      return;
    }
    const parts: Uint8Array[] = [];
    let failed = false;
    stream.on('data', (b: Uint8Array) => parts.push(b));
    stream.on('error', (err: unknown) => {
      failed = true;
      reject(err);
    });
    const child = (stream as unknown as { process: import('node:child_process').ChildProcess }).process;
    child.on('close', (code) => {
      if (failed || code !== 0) return;
      const bytes = concatChunks(parts, (n) => new Uint8Array(n));
      resolve(new Int16Array(bytes.buffer, 0, bytes.byteLength >> 1));
    });
    stream.end(input);
  });
}
