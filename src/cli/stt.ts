/**
 * `voicewire stt FILE [--json] [--language L]`: the transcript of a recording. WAV and Ogg Opus go
 * to the service as they are (streamed from the file); anything else (mp3, flac, raw with
 * `--from`) is decoded first (ffmpeg for other containers) and sent as 24 kHz PCM.
 */
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { VoicewireError } from '../util/errors.js';
import { decodeAudio } from '../pipelines/audio-decoder.js';
import { resampleInt16 } from '../audio/resampler.js';
import { bytesOf } from '../util/bytes.js';
import { decodeWithFfmpeg, isFfmpegAvailable } from '../node/ffmpeg.js';
import { readFile } from 'node:fs/promises';
import type { AudioFormatName } from '../audio/format.js';
import { clientFor, parseCommand, progress, progressDone } from './service.js';
import type { CliSubcommand } from './main.js';

async function sniff(path: string): Promise<'wav' | 'opus' | 'other'> {
  const fh = await open(path, 'r').catch((err: NodeJS.ErrnoException) => {
    throw new VoicewireError('IO_ERROR', `cannot read ${path}: ${err.code ?? err.message}`, { cause: err });
  });
  try {
    const head = new Uint8Array(12);
    await fh.read(head, 0, 12, 0);
    const tag = String.fromCharCode(...head.subarray(0, 4));
    if ((tag === 'RIFF' || tag === 'RF64') && String.fromCharCode(...head.subarray(8, 12)) === 'WAVE') return 'wav';
    if (tag === 'OggS') return 'opus';
    return 'other';
  } finally {
    await fh.close();
  }
}

/** 24 kHz s16le PCM of a file voicewire does not send as is. */
async function pcm24(path: string, from: string | undefined): Promise<Uint8Array> {
  const bytes = new Uint8Array(await readFile(path));
  if (from !== undefined) {
    const { pcm, info } = decodeAudio(bytes, { format: from });
    return bytesOf(info.sampleRate === 24000 ? pcm : resampleInt16(pcm, info.sampleRate, 24000));
  }
  if (!isFfmpegAvailable()) throw new VoicewireError('FFMPEG_NOT_FOUND', 'this input is not WAV or Ogg Opus: name a raw format with --from, or install ffmpeg to read other containers');
  return bytesOf(await decodeWithFfmpeg(bytes, { sampleRate: 24000 }));
}

export const sttCommand: CliSubcommand = {
  async run(argv) {
    const { values, positionals } = parseCommand('stt', argv, {
      json: { type: 'boolean' },
      language: { type: 'string' },
      from: { type: 'string' },
      http: { type: 'boolean' },
    });
    if (positionals.length !== 1) throw new VoicewireError('CLI_USAGE', 'stt takes exactly one FILE');
    const path = positionals[0]!;
    const client = clientFor(values);
    const kind = values.from === undefined ? await sniff(path) : 'other';
    const language = values.language as string | undefined;
    const started = Date.now();
    let result;
    if (kind === 'other') {
      const audio = await pcm24(path, values.from as string | undefined);
      const options: Parameters<typeof client.stt>[1] = { inputFormat: 'pcm', http: values.http === true };
      if (language !== undefined) options.language = language;
      result = await client.stt(audio, options);
    } else {
      // Streamed from the file: a long recording is never held whole.
      const options: Parameters<typeof client.sttStream>[0] = { inputFormat: kind as AudioFormatName, turnTaking: false };
      if (language !== undefined) options.language = language;
      const stream = client.sttStream(options);
      let sent = 0;
      const sending = (async () => {
        for await (const chunk of createReadStream(path, { highWaterMark: 4096 })) {
          stream.write(chunk as Uint8Array);
          sent += (chunk as Uint8Array).length;
        }
        stream.end();
      })();
      const words: { text: string; start_s: number; stop_s: number }[] = [];
      let audioS = 0;
      for await (const e of stream) {
        if (e.type === 'text') words.push({ text: e.text, start_s: e.start_s, stop_s: e.start_s });
        else if (e.type === 'end_text' && words.length > 0) words[words.length - 1]!.stop_s = e.stop_s;
        else if (e.type === 'step') {
          audioS = e.step.total_duration_s;
          const elapsed = (Date.now() - started) / 1000;
          progress(`${(sent / 1e6).toFixed(1)} MB sent, ${audioS.toFixed(1)} s transcribed, ${(audioS / Math.max(elapsed, 1e-3)).toFixed(1)}× realtime`);
        }
      }
      await sending;
      progressDone();
      result = { text: words.map((w) => w.text).join(' '), words };
    }
    process.stdout.write(values.json ? `${JSON.stringify(result, null, 2)}\n` : `${result.text}\n`);
    return 0;
  },
};
