/**
 * `voicewire convert`: input chunks go decoder → resampler → encoder → output as they are read,
 * on every path, so memory stays bounded for any input length (issue 10 §2, issue 11 §9):
 * - WAV, Ogg Opus and raw input: voicewire's incremental decoders;
 * - anything else (./sniff.ts): ffmpeg decodes it at its own rate to WAV on a pipe (a regular file by path,
 *   other input streamed into ffmpeg's stdin), read back by voicewire's WAV decoder, then
 *   resampled by voicewire so `--quality` applies;
 * - `wav` output: the streaming header, the data, then — when the output is a regular file — the
 *   RIFF and data sizes patched in place.
 *
 * It is a stream: an input that never ends converts without end (in bounded memory).
 * `--max-seconds` bounds it: the stage keeps that much audio, then the readers stop and the output
 * is finished as if the input had ended there.
 */
import { VoicewireError } from '../util/errors.js';
import { createAudioDecoder, type AudioDecoder } from '../pipelines/audio-decoder.js';
import { createAudioEncoder, type AudioEncoder } from '../pipelines/audio-encoder.js';
import { parseAudioFormat } from '../audio/format.js';
import { initOpus } from '../audio/opus.js';
import { feedChild, spawnFfmpegWavDecoder, type FfmpegWavDecoder } from '../node/ffmpeg.js';
import type { CliCommand } from './args.js';
import { openInput, replay, type CliInput } from './input.js';
import { headOf, sniffReader, type InputReader } from './sniff.js';
import { checkNotInput, checkNotTerminal, openOutput, type CliOutput } from './output.js';

type ConvertCommand = Extract<CliCommand, { command: 'convert' }>;

/** Ogg input is pushed in pieces this small: one Opus page may decode to minutes of audio (issue 11 §4). */
const OGG_PIECE = 1024;
/** The streaming WAV header (wavStreamHeader): RIFF size at 4, data size at 40, 44 bytes. */
const WAV_HEADER = 44;
const U32_MAX = 0xffffffff;

function u32le(n: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n, true);
  return b;
}

/** PCM in (at the rate the decoder found), bytes of the target format out, into the output. */
class EncodeStage {
  private encoder: AudioEncoder | undefined;
  /** Input-rate samples still wanted (`--max-seconds`); Infinity without it. */
  private remaining = Infinity;

  constructor(
    private readonly cmd: ConvertCommand,
    private readonly out: CliOutput,
  ) {}

  get started(): boolean {
    return this.encoder !== undefined;
  }

  /** True once `--max-seconds` of audio has been taken: read no more input. */
  get full(): boolean {
    return this.remaining <= 0;
  }

  start(inputRate: number): void {
    if (this.encoder !== undefined) return;
    const opus = this.cmd.bitrate === undefined ? {} : { opus: { bitrate: this.cmd.bitrate } };
    this.encoder = createAudioEncoder({ format: this.cmd.to, inputRate, quality: this.cmd.quality, ...opus });
    if (this.cmd.maxSeconds !== undefined) this.remaining = Math.round(this.cmd.maxSeconds * inputRate);
  }

  async push(pcm: readonly Int16Array[]): Promise<void> {
    for (let p of pcm) {
      if (this.remaining <= 0) return;
      if (p.length > this.remaining) p = p.subarray(0, this.remaining);
      this.remaining -= p.length;
      for (const b of this.encoder!.push(p)) await this.out.write(b);
    }
  }

  /** Ends the stream; for WAV in a regular file, writes the real sizes over the streaming ones. */
  async finish(): Promise<void> {
    const enc = this.encoder!;
    for (const b of enc.flush()) await this.out.write(b);
    enc.destroy();
    const total = this.out.written;
    // Past 4 GiB the sizes stay 0xFFFFFFFF ("unknown, read to the end"), as ffmpeg leaves them.
    if (enc.format.container === 'wav' && this.out.seekable && total >= WAV_HEADER && total - 8 <= U32_MAX) {
      await this.out.patch(4, u32le(total - 8));
      await this.out.patch(40, u32le(total - WAV_HEADER));
    }
  }

  destroy(): void {
    this.encoder?.destroy();
  }
}

/** Pushes a chunk into a decoder, Ogg in small pieces; the PCM goes to the stage. */
async function decodeInto(decoder: AudioDecoder, chunk: Uint8Array, stage: EncodeStage): Promise<void> {
  const piece = decoder.info?.container === 'ogg' ? OGG_PIECE : chunk.byteLength;
  for (let i = 0; i < chunk.byteLength && !stage.full; i += piece) {
    const pcm = decoder.push(chunk.subarray(i, i + piece));
    if (!stage.started && decoder.info !== null) stage.start(decoder.info.sampleRate);
    await stage.push(pcm);
  }
}

async function finishDecoder(decoder: AudioDecoder, stage: EncodeStage, emptyMessage: string): Promise<void> {
  const tail = decoder.flush();
  if (!stage.started) {
    if (decoder.info === null) throw new VoicewireError('AUDIO_FORMAT_UNDETECTED', emptyMessage);
    stage.start(decoder.info.sampleRate);
  }
  await stage.push(tail);
  await stage.finish();
}

/**
 * ffmpeg's path: it decodes at the source rate to WAV on a pipe; voicewire reads that WAV
 * (which carries the rate) and resamples. A regular file is opened by ffmpeg itself (seekable:
 * an mp3's encoder padding is trimmed, an m4a with its index at the end is readable); other
 * input is fed into ffmpeg's stdin with backpressure.
 */
async function viaFfmpeg(held: Uint8Array[], input: CliInput, stage: EncodeStage): Promise<void> {
  let ff: FfmpegWavDecoder;
  let feeding: Promise<void> = Promise.resolve();
  if (input.path !== null) {
    const path = input.path;
    await input.close();
    ff = spawnFfmpegWavDecoder({ input: { path } });
  } else {
    ff = spawnFfmpegWavDecoder({ input: { pipe: true } });
    feeding = feedChild(ff.stdin!, replay(held, input));
    feeding.catch(() => {});
  }
  const decoder = createAudioDecoder({});
  try {
    for await (const chunk of ff.stdout as AsyncIterable<Uint8Array>) {
      await decodeInto(decoder, chunk, stage);
      if (stage.full) break;
    }
    // Stopped by --max-seconds, ffmpeg is killed below: its exit and the feeding say nothing then.
    if (!stage.full) {
      await ff.exited; // ffmpeg's own error first: its WAV is cut short when it fails
      await feeding;
    }
    await finishDecoder(decoder, stage, 'ffmpeg decoded no audio');
  } finally {
    ff.kill();
    decoder.destroy();
  }
}

/** `voicewire convert`. */
export async function convert(cmd: ConvertCommand, stdoutIsTTY: boolean): Promise<void> {
  parseAudioFormat(cmd.to); // fail on a bad --to before reading anything
  if (cmd.from !== undefined) parseAudioFormat(cmd.from, { direction: 'stt-input' });
  checkNotTerminal(cmd.output, stdoutIsTTY);
  if (cmd.to === 'opus' || cmd.from === 'opus') await initOpus();
  const input = await openInput(cmd.input);
  let out: CliOutput | undefined;
  let stage: EncodeStage | undefined;
  try {
    checkNotInput(input.stat, cmd.input, cmd.output);
    out = await openOutput(cmd.output);
    stage = new EncodeStage(cmd, out);
    // Without --from: voicewire's decoders for WAV and Ogg Opus, ffmpeg for the rest.
    const held: Uint8Array[] = [];
    if (cmd.from === undefined) {
      let reader: InputReader | null = null;
      for (let ended = false; reader === null; ) {
        const chunk = await input.next();
        if (chunk === null) ended = true;
        else held.push(chunk);
        reader = sniffReader(headOf(held), ended);
      }
      if (reader === 'ffmpeg') {
        await viaFfmpeg(held, input, stage);
        await out.commit();
        return;
      }
    }
    const decoder = createAudioDecoder(cmd.from === undefined ? {} : { format: cmd.from });
    try {
      for (const chunk of held) await decodeInto(decoder, chunk, stage);
      held.length = 0;
      for (let chunk = stage.full ? null : await input.next(); chunk !== null; chunk = stage.full ? null : await input.next()) await decodeInto(decoder, chunk, stage);
      await finishDecoder(decoder, stage, 'the input is empty');
    } finally {
      decoder.destroy();
    }
    await out.commit();
  } catch (err) {
    stage?.destroy();
    await out?.abort();
    throw err;
  } finally {
    await input.close();
  }
}
