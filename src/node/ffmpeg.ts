/**
 * The ffmpeg bridge: formats the API does not name (mp3, flac, m4a, …) become PCM, through
 * prism-media's FFmpeg stream (its strong part: it finds the binary and wires the child process
 * as a Duplex). We add what it lacks: a typed error when ffmpeg is missing, and a failed
 * conversion (non-zero exit) surfaced as an error instead of a silently short stream.
 *
 * {@link spawnFfmpegWavDecoder} is the streaming form the CLI uses: ffmpeg decodes at the
 * source's own rate and writes WAV to a pipe (the header carries the rate), so voicewire's
 * resampler does the rate change. It reads a regular file by path: through a pipe ffmpeg cannot
 * seek, so it keeps an mp3's encoder padding (LAME/Xing gapless info) at the end and cannot read
 * an m4a whose index follows the audio. {@link probeWithFfprobe} is `info` for those containers.
 */
import prism from 'prism-media';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { resolve as resolvePath } from 'node:path';
import type { Duplex, Readable, Writable } from 'node:stream';
import { VoicewireError } from '../util/errors.js';
import { bytesArg, describeValue, objectArg, shown } from '../util/args.js';
import { concatChunks } from '../util/bytes.js';

/** Most of ffmpeg's / ffprobe's stderr kept for an error message, characters. */
const STDERR_KEEP = 4096;
/** Most of ffprobe's JSON read, bytes (we ask for a few fields; a hostile file cannot make it large). */
const FFPROBE_JSON_MAX = 1 << 16;

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

/** ffmpeg's arguments for `options`, checked first: they become a child's command line. */
function ffmpegArgs(opts: FfmpegDecodeOptions): string[] {
  const options = objectArg(opts, 'ffmpeg decode options');
  const { sampleRate, channels = 1, inputFormat } = options;
  if (typeof sampleRate !== 'number' || !Number.isInteger(sampleRate) || sampleRate < 1 || sampleRate > 768_000) {
    throw new VoicewireError('INVALID_ARGUMENT', `ffmpeg decode: sampleRate must be an integer from 1 to 768000 Hz, got ${shown(sampleRate)}`);
  }
  if (typeof channels !== 'number' || !Number.isInteger(channels) || channels < 1 || channels > 8) {
    throw new VoicewireError('INVALID_ARGUMENT', `ffmpeg decode: channels must be an integer from 1 to 8, got ${shown(channels)}`);
  }
  // A demuxer name (`mp3`, `s16le`, `mov,mp4,m4a`): nothing that ffmpeg could read as another option.
  if (inputFormat !== undefined && (typeof inputFormat !== 'string' || !/^[a-z0-9_,]{1,64}$/i.test(inputFormat))) {
    throw new VoicewireError('INVALID_ARGUMENT', `ffmpeg decode: inputFormat must be an ffmpeg format name, got ${describeValue(inputFormat)}`);
  }
  const args = ['-hide_banner', '-loglevel', 'error', '-nostdin'];
  if (inputFormat !== undefined) args.push('-f', inputFormat);
  args.push('-i', '-', '-f', 's16le', '-acodec', 'pcm_s16le', '-ac', String(channels), '-ar', String(sampleRate));
  return args;
}

/**
 * A Duplex: any audio file's bytes in, s16le PCM out. Throws FFMPEG_NOT_FOUND when ffmpeg is not
 * installed; emits FFMPEG_FAILED (with ffmpeg's message) when the conversion fails.
 */
export function createFfmpegDecoderStream(options: FfmpegDecodeOptions): Duplex {
  const args = ffmpegArgs(options);
  let stream: prism.FFmpeg;
  try {
    prism.FFmpeg.getInfo();
    stream = new prism.FFmpeg({ args });
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
      bytesArg(input, 'decodeWithFfmpeg input');
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


/** Where ffmpeg reads from: a regular file by path (seekable), or a pipe we write to. */
export type FfmpegInput = { readonly path: string } | { readonly pipe: true };

/** Options of {@link spawnFfmpegWavDecoder}. */
export interface FfmpegWavDecoderOptions {
  input: FfmpegInput;
  /** ffmpeg's input format name (`-f`), when the input has no recognisable header. Default: ffmpeg probes. */
  inputFormat?: string;
}

/** A running ffmpeg decode (see {@link spawnFfmpegWavDecoder}). */
export interface FfmpegWavDecoder {
  /** WAV bytes: the first audio stream as s16le at its own rate and channel count, streaming header. */
  readonly stdout: Readable;
  /** For `{ pipe: true }`: write the file's bytes here (see {@link feedChild}); null when ffmpeg reads a path. */
  readonly stdin: Writable | null;
  /** Resolves when ffmpeg exits 0; rejects with FFMPEG_FAILED (ffmpeg's last error line) otherwise. */
  readonly exited: Promise<void>;
  /** Stops ffmpeg (SIGKILL). Idempotent. */
  kill(): void;
}

/** ffmpeg's input argument: `file:` + an absolute path, so a name like `concat:a|b` or `http:…` is only a name. */
function fileUrl(path: string): string {
  return `file:${resolvePath(path)}`;
}

/** ffmpeg's last meaningful stderr line, with the input's URL replaced by "input" (the name may hold anything). */
function lastLine(stderr: string, url: string | null): string {
  const name = url ?? 'pipe:0';
  const text = stderr.split(`${name}: `).join('').split(name).join('the input');
  const lines = text.trim().split('\n').filter((l) => l.trim() !== '');
  return lines.pop() ?? '';
}

function watchChild(child: ChildProcess, tool: string, url: string | null): Promise<void> {
  let stderr = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (s: string) => {
    if (stderr.length < STDERR_KEEP) stderr += s;
  });
  const exited = new Promise<void>((resolve, reject) => {
    child.on('error', (err: NodeJS.ErrnoException) => {
      reject(
        err.code === 'ENOENT'
          ? new VoicewireError('FFMPEG_NOT_FOUND', `this input needs ${tool} (part of ffmpeg), and it is not installed (apt-get install ffmpeg)`, { cause: err })
          : new VoicewireError('FFMPEG_FAILED', `${tool} could not be started: ${err.code ?? err.message}`, { cause: err }),
      );
    });
    child.on('close', (code, signal) => {
      if (code === 0) resolve();
      else {
        const why = lastLine(stderr, url) || (signal !== null ? `killed by ${signal}` : `exit ${code}`);
        reject(new VoicewireError('FFMPEG_FAILED', `${tool} could not ${tool === 'ffprobe' ? 'read' : 'decode'} the input: ${why}`));
      }
    });
  });
  exited.catch(() => {});
  return exited;
}

/**
 * Starts ffmpeg decoding the first audio stream of `input` to WAV on its stdout: s16le, at the
 * source's own rate and channels (no `-ar`/`-ac`: the caller resamples and downmixes, so its
 * quality settings apply). Output flows as it is read, so memory stays bounded for any length.
 *
 * @throws VoicewireError `FFMPEG_NOT_FOUND` when no ffmpeg binary is found.
 */
export function spawnFfmpegWavDecoder(options: FfmpegWavDecoderOptions): FfmpegWavDecoder {
  let command: string;
  try {
    command = prism.FFmpeg.getInfo().command;
  } catch (err) {
    throw new VoicewireError('FFMPEG_NOT_FOUND', 'this input needs ffmpeg to be decoded, and ffmpeg is not installed (apt-get install ffmpeg)', { cause: err });
  }
  const url = 'path' in options.input ? fileUrl(options.input.path) : null;
  const args = ['-hide_banner', '-loglevel', 'error', '-nostdin'];
  if (options.inputFormat !== undefined) args.push('-f', options.inputFormat);
  args.push('-i', url ?? 'pipe:0', '-map', '0:a:0', '-c:a', 'pcm_s16le', '-f', 'wav', 'pipe:1');
  const child = spawn(command, args, { stdio: [url === null ? 'pipe' : 'ignore', 'pipe', 'pipe'], windowsHide: true });
  const exited = watchChild(child, 'ffmpeg', url);
  // ffmpeg closes its stdin early when it rejects the input: that EPIPE is reported through the exit code.
  child.stdin?.on('error', () => {});
  return {
    stdout: child.stdout!,
    stdin: child.stdin,
    exited,
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}

/**
 * Writes `source` into a child's stdin with backpressure, and ends it. Stops early, without an
 * error, when the child stops reading (it exited, or had enough: ffprobe reads only the head).
 */
export async function feedChild(stdin: Writable, source: AsyncIterable<Uint8Array>): Promise<void> {
  let closed = false;
  const gone = new Promise<void>((resolve) => {
    const stop = (): void => {
      closed = true;
      resolve();
    };
    stdin.once('close', stop);
    stdin.once('error', stop);
  });
  for await (const chunk of source) {
    if (closed) break;
    if (!stdin.write(chunk)) await Promise.race([once(stdin, 'drain').catch(() => {}), gone]);
    if (closed) break;
  }
  if (!closed) stdin.end();
}

/** What {@link probeWithFfprobe} reads from a container's header. */
export interface FfprobeInfo {
  /** ffprobe's format name (`mp3`, `flac`, `mov,mp4,m4a,3gp,3g2,mj2`, …). */
  readonly container: string;
  /** Codec of the first audio stream (`mp3`, `flac`, `aac`, …). */
  readonly codec: string;
  readonly sampleRate: number;
  readonly channels: number;
  /** Bits per sample the codec stores, or null for lossy codecs. */
  readonly bitsPerSample: number | null;
  /** Frames: exact when the container counts them at the sample rate (FLAC, WAV-likes), else duration × rate; null when unknown (a pipe without a duration). */
  readonly frames: number | null;
  readonly durationS: number | null;
}

const num = (v: unknown): number | null => {
  const n = typeof v === 'string' ? Number(v) : typeof v === 'number' ? v : NaN;
  return Number.isFinite(n) ? n : null;
};
const str = (v: unknown): string => (typeof v === 'string' ? v : 'unknown');

/**
 * `info` for containers voicewire does not parse: ffprobe reads the header of the first audio
 * stream. `source` is a path (ffprobe reads the file), or bytes fed through a pipe (ffprobe stops
 * reading after its probe; the rest is not read).
 *
 * @throws VoicewireError `FFMPEG_NOT_FOUND` when ffprobe is missing, `FFMPEG_FAILED` when it
 *   cannot read the input or finds no audio stream.
 */
export async function probeWithFfprobe(source: string | AsyncIterable<Uint8Array>): Promise<FfprobeInfo> {
  const url = typeof source === 'string' ? fileUrl(source) : null;
  const args = [
    '-v', 'error', '-print_format', 'json', '-select_streams', 'a:0',
    '-show_entries', 'format=format_name,duration:stream=codec_name,sample_rate,channels,bits_per_sample,bits_per_raw_sample,duration_ts,time_base,duration',
    url ?? 'pipe:0',
  ];
  const child = spawn('ffprobe', args, { stdio: [url === null ? 'pipe' : 'ignore', 'pipe', 'pipe'], windowsHide: true });
  const exited = watchChild(child, 'ffprobe', url);
  child.stdin?.on('error', () => {});
  let json = '';
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (s: string) => {
    json += s;
    if (json.length > FFPROBE_JSON_MAX) child.kill('SIGKILL');
  });
  try {
    if (typeof source !== 'string') await feedChild(child.stdin!, source);
    await exited;
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  let parsed: { format?: Record<string, unknown>; streams?: Record<string, unknown>[] };
  try {
    parsed = JSON.parse(json) as typeof parsed;
  } catch (err) {
    throw new VoicewireError('FFMPEG_FAILED', 'ffprobe printed no readable JSON', { cause: err });
  }
  const stream = parsed.streams?.[0];
  const sampleRate = num(stream?.sample_rate);
  const channels = num(stream?.channels);
  if (stream === undefined || sampleRate === null || sampleRate <= 0 || channels === null) {
    throw new VoicewireError('FFMPEG_FAILED', 'ffprobe found no audio stream in the input');
  }
  const bits = num(stream.bits_per_raw_sample) || num(stream.bits_per_sample) || null;
  const ts = num(stream.duration_ts);
  const duration = num(stream.duration) ?? num(parsed.format?.duration);
  const frames = stream.time_base === `1/${sampleRate}` && ts !== null ? ts : duration === null ? null : Math.round(duration * sampleRate);
  return {
    container: str(parsed.format?.format_name),
    codec: str(stream.codec_name),
    sampleRate,
    channels,
    bitsPerSample: bits,
    frames,
    durationS: frames === null ? null : frames / sampleRate,
  };
}
