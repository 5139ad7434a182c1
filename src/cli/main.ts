/**
 * `voicewire` command line: a thin Node adapter over the pure decoders and encoders.
 *
 *   voicewire info FILE [--from FORMAT]
 *   voicewire convert IN --to FORMAT [--from FORMAT] [-o OUT] [--quality high|fast|best]
 *
 * Conversion streams: input chunks go through createAudioDecoder → createAudioEncoder as they are
 * read, so `-` to `-` works on a live pipe. Errors print one line on stderr and exit 1.
 */
import { createReadStream, createWriteStream, readFileSync } from 'node:fs';
import { once } from 'node:events';
import { finished } from 'node:stream/promises';
import type { Readable, Writable } from 'node:stream';
// Bundled into dist/cli.js at build time, so the version needs no path at run time.
import pkg from '../../package.json' with { type: 'json' };
import { parseCliArgs, USAGE, type CliCommand } from './args.js';
import { VoicewireError, isVoicewireError } from '../util/errors.js';
import { createAudioDecoder, decodeAudio, type AudioSourceInfo } from '../pipelines/audio-decoder.js';
import { createAudioEncoder, type AudioEncoder } from '../pipelines/audio-encoder.js';
import { parseAudioFormat } from '../audio/format.js';
import { isWav, wavInfo, encodeWav } from '../audio/wav.js';
import { concatChunks, int16View } from '../util/bytes.js';
import { initOpus } from '../audio/opus.js';
import { decodeWithFfmpeg, isFfmpegAvailable } from '../node/ffmpeg.js';

const OGG_MAGIC = [0x4f, 0x67, 0x67, 0x53]; // "OggS"

function isOgg(bytes: Uint8Array): boolean {
  return bytes.length >= 4 && OGG_MAGIC.every((b, i) => bytes[i] === b);
}

function openInput(path: string): Readable {
  if (path === '-') return process.stdin;
  return createReadStream(path).on('error', () => {});
}

function readInputFile(path: string): Uint8Array {
  try {
    return path === '-' ? readFileSync(0) : readFileSync(path);
  } catch (err) {
    throw new VoicewireError('IO_ERROR', `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { cause: err });
  }
}

/** `voicewire info`: what the file is, as JSON. */
function info(cmd: Extract<CliCommand, { command: 'info' }>): Record<string, unknown> {
  const bytes = readInputFile(cmd.input);
  if (cmd.from === undefined && isWav(bytes)) return { ...wavInfo(bytes) };
  if (cmd.from === undefined && !isOgg(bytes)) {
    throw new VoicewireError('AUDIO_FORMAT_UNDETECTED', 'not a WAV/RF64 or Ogg Opus file: name a raw format with --from (e.g. --from pcm_24000)');
  }
  const options = cmd.from === undefined ? {} : { format: cmd.from };
  const { pcm, info: src } = decodeAudio(bytes, options);
  return {
    container: src.container === 'raw' ? 'raw' : src.container,
    codec: src.codec,
    sampleRate: src.sampleRate,
    channels: src.channels,
    bitsPerSample: src.codec === 'pcm_s16le' ? 16 : src.codec === 'mulaw' || src.codec === 'alaw' ? 8 : null,
    frames: pcm.length,
    durationS: pcm.length / src.sampleRate,
  };
}

/**
 * The output of `convert`: opened on the first write (a failed input leaves no empty file behind),
 * writes honour backpressure, and any write error becomes one IO_ERROR.
 */
class OutputSink {
  private stream: Writable | undefined;
  private failure: VoicewireError | undefined;
  private failed: Promise<never> | undefined;

  constructor(private readonly path: string) {}

  private open(): Writable {
    if (this.stream) return this.stream;
    const stream: Writable = this.path === '-' ? process.stdout : createWriteStream(this.path);
    this.failed = new Promise<never>((_, reject) => {
      stream.on('error', (err: NodeJS.ErrnoException) => {
        this.failure ??= new VoicewireError('IO_ERROR', `cannot write ${this.path}: ${err.code ?? err.message}`, { cause: err });
        reject(this.failure);
      });
    });
    this.failed.catch(() => {});
    this.stream = stream;
    return stream;
  }

  async write(chunk: Uint8Array): Promise<void> {
    if (chunk.byteLength === 0) return;
    const stream = this.open();
    if (this.failure) throw this.failure;
    if (!stream.write(chunk)) await Promise.race([once(stream, 'drain'), this.failed!]);
  }

  async close(): Promise<void> {
    const stream = this.open();
    if (this.failure) throw this.failure;
    if (stream === process.stdout) return;
    await Promise.race([finished(stream.end()), this.failed!]);
  }
}

/** `voicewire convert`: streams the input through the decoder and encoder into the output. */
async function convert(cmd: Extract<CliCommand, { command: 'convert' }>): Promise<void> {
  const target = parseAudioFormat(cmd.to); // fail on a bad --to before reading anything
  if (cmd.from !== undefined) parseAudioFormat(cmd.from, { direction: 'stt-input' });
  if (target.codec === 'opus' || cmd.from === 'opus') await initOpus();
  // A file gets a WAV with exact sizes; a pipe gets the streaming header (sizes 0xFFFFFFFF).
  const exactWav = target.container === 'wav' && cmd.output !== '-';
  const out = new OutputSink(cmd.output);

  let encoder: AudioEncoder | undefined;
  const pcmParts: Uint8Array[] = [];
  const makeEncoder = (src: AudioSourceInfo | { sampleRate: number }): AudioEncoder =>
    createAudioEncoder({ format: exactWav ? 'pcm_48000' : cmd.to, inputRate: src.sampleRate, quality: cmd.quality });
  const emit = async (parts: readonly Uint8Array[]): Promise<void> => {
    for (const p of parts) {
      if (exactWav) pcmParts.push(p.slice());
      else await out.write(p);
    }
  };

  const decoder = createAudioDecoder(cmd.from === undefined ? {} : { format: cmd.from });
  const input = openInput(cmd.input);
  const head: Uint8Array[] = [];
  let viaFfmpeg = false;
  try {
    for await (const chunk of input as AsyncIterable<Uint8Array>) {
      if (viaFfmpeg) {
        head.push(chunk);
        continue;
      }
      let pcm: Int16Array[];
      try {
        pcm = decoder.push(chunk);
      } catch (err) {
        // Not WAV or Ogg and no --from: hand the whole input to ffmpeg (mp3, flac, m4a, …).
        if (cmd.from === undefined && isVoicewireError(err, 'AUDIO_FORMAT_UNDETECTED')) {
          viaFfmpeg = true;
          head.push(chunk);
          continue;
        }
        throw err;
      }
      if (encoder === undefined && decoder.info !== null) encoder = makeEncoder(decoder.info);
      for (const p of pcm) await emit(encoder!.push(p));
    }
  } catch (err) {
    if (isVoicewireError(err)) throw err;
    throw new VoicewireError('IO_ERROR', `cannot read ${cmd.input}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { cause: err });
  }

  if (viaFfmpeg) {
    if (!isFfmpegAvailable()) {
      throw new VoicewireError('FFMPEG_NOT_FOUND', 'input is not WAV or Ogg Opus: name a raw format with --from, or install ffmpeg to read other containers');
    }
    const all = concatChunks(head, (n) => new Uint8Array(n));
    const rate = target.sampleRate ?? 48000;
    const pcm = await decodeWithFfmpeg(all, { sampleRate: rate });
    encoder = makeEncoder({ sampleRate: rate });
    await emit(encoder.push(pcm));
  } else {
    const tail = decoder.flush();
    if (decoder.info === null && encoder === undefined) throw new VoicewireError('AUDIO_FORMAT_UNDETECTED', 'the input is empty');
    encoder ??= makeEncoder(decoder.info!);
    for (const p of tail) await emit(encoder.push(p));
    decoder.destroy();
  }
  await emit(encoder.flush());
  encoder.destroy();

  if (exactWav) {
    const bytes = concatChunks(pcmParts, (n) => new Uint8Array(n));
    await out.write(encodeWav(int16View(bytes), { sampleRate: 48000 }));
  }
  await out.close();
}

function version(): string {
  return pkg.version;
}

/** A command that lives in a module of its own (`src/cli/<name>.ts`), loaded only when named. */
export interface CliSubcommand {
  /** Runs with the arguments after the command name; returns the exit code. Throws VoicewireError on failure. */
  run(argv: readonly string[]): Promise<number>;
}

/** `voicewire NAME …` for the commands beyond info/convert. Each line loads its module lazily. */
const SUBCOMMANDS: Record<string, () => Promise<CliSubcommand>> = {
  tts: async () => (await import('./tts.js')).ttsCommand,
  stt: async () => (await import('./stt.js')).sttCommand,
  voices: async () => (await import('./voices.js')).voicesCommand,
  credits: async () => (await import('./credits.js')).creditsCommand,
};

/** Runs the CLI; returns the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  try {
    const sub = argv[0] === undefined ? undefined : SUBCOMMANDS[argv[0]];
    if (sub) return await (await sub()).run(argv.slice(1));
    const cmd = parseCliArgs(argv);
    switch (cmd.command) {
      case 'help':
        process.stdout.write(`${USAGE}\n`);
        return 0;
      case 'version':
        process.stdout.write(`${version()}\n`);
        return 0;
      case 'info':
        process.stdout.write(`${JSON.stringify(info(cmd), null, 2)}\n`);
        return 0;
      case 'convert':
        await convert(cmd);
        return 0;
    }
  } catch (err) {
    const message = isVoicewireError(err) ? `voicewire: ${err.message} [${err.code}]` : `voicewire: internal error: ${(err as Error)?.message ?? String(err)}`;
    process.stderr.write(`${message}\n`);
    return 1;
  }
}

// A reader that stops early (`voicewire convert … | head -c 100`) is not an error.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
});

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
