/**
 * The speech formats voicewire does not encode itself (mp3, flac, aac) come from ffmpeg: the
 * engine's WAV goes to ffmpeg's stdin, the encoded stream comes out of its stdout as it is made.
 * One child per request, killed when the request ends (it lives no longer than the request's
 * session slot).
 */
import prism from 'prism-media';
import { spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { VoicewireError } from '../../../util/errors.js';

/** ffmpeg's output arguments and the Content-Type of each format it makes for `/v1/audio/speech`. */
export const FFMPEG_SPEECH_FORMATS = Object.freeze({
  mp3: { args: ['-f', 'mp3', '-c:a', 'libmp3lame', '-b:a', '128k'], contentType: 'audio/mpeg' },
  flac: { args: ['-f', 'flac', '-c:a', 'flac'], contentType: 'audio/flac' },
  aac: { args: ['-f', 'adts', '-c:a', 'aac', '-b:a', '128k'], contentType: 'audio/aac' },
});

/** A format of {@link FFMPEG_SPEECH_FORMATS}. */
export type FfmpegSpeechFormat = keyof typeof FFMPEG_SPEECH_FORMATS;

/** A running encode: WAV in, the format out. */
export interface FfmpegEncoder {
  readonly stdin: Writable;
  readonly stdout: Readable;
  /** Resolves when ffmpeg exits 0; rejects with FFMPEG_FAILED (its last stderr line) otherwise. */
  readonly exited: Promise<void>;
  /** Stops ffmpeg (SIGKILL). Idempotent. */
  kill(): void;
}

/**
 * Starts ffmpeg encoding WAV from its stdin into `format` on its stdout.
 * @throws VoicewireError `FFMPEG_NOT_FOUND` when no ffmpeg binary is found.
 */
export function spawnFfmpegEncoder(format: FfmpegSpeechFormat): FfmpegEncoder {
  let command: string;
  try {
    command = prism.FFmpeg.getInfo().command;
  } catch (err) {
    throw new VoicewireError('FFMPEG_NOT_FOUND', `response_format ${format} needs ffmpeg, and ffmpeg is not installed here`, { cause: err });
  }
  const args = ['-hide_banner', '-loglevel', 'error', '-nostdin', '-f', 'wav', '-i', 'pipe:0', ...FFMPEG_SPEECH_FORMATS[format].args, '-flush_packets', '1', 'pipe:1'];
  const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'], windowsHide: true });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (s: string) => {
    if (stderr.length < 4096) stderr += s;
  });
  // A killed or failed ffmpeg closes its stdin: that EPIPE is reported through the exit.
  child.stdin.on('error', () => {});
  const exited = new Promise<void>((resolve, reject) => {
    child.on('error', (err) => reject(new VoicewireError('FFMPEG_FAILED', `ffmpeg could not be started: ${err.message}`, { cause: err, details: { status: 500 } })));
    child.on('close', (code, signal) => {
      if (code === 0) resolve();
      else reject(new VoicewireError('FFMPEG_FAILED', `ffmpeg could not encode ${format}: ${stderr.trim().split('\n').pop() || (signal ?? `exit ${code}`)}`, { details: { status: 500 } }));
    });
  });
  exited.catch(() => {});
  return {
    stdin: child.stdin,
    stdout: child.stdout,
    exited,
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}
