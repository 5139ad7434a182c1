/**
 * `voicewire tts "text" -o out.wav [--voice-id ID] [--format F] [--language L]`: speech from the
 * service into a file (or stdout with `-o -`). `--language` picks the first catalog voice of that
 * language when no `--voice-id` is given (the TTS API takes a voice, not a language).
 */
import { writeFile } from 'node:fs/promises';
import { VoicewireError } from '../util/errors.js';
import { parseAudioFormat, type AudioFormatName } from '../audio/format.js';
import { clientFor, parseCommand, progress, progressDone } from './service.js';
import type { CliSubcommand } from './main.js';

/** Seconds of audio in `bytes` of `format`, or undefined when the container does not say (Opus). */
function audioSeconds(bytes: number, format: ReturnType<typeof parseAudioFormat>): number | undefined {
  if (format.bytesPerSample === null || format.sampleRate === null) return undefined;
  const header = format.container === 'wav' ? 44 : 0;
  return Math.max(0, bytes - header) / format.bytesPerSample / format.sampleRate;
}

export const ttsCommand: CliSubcommand = {
  async run(argv) {
    const { values, positionals } = parseCommand('tts', argv, {
      output: { type: 'string', short: 'o' },
      'voice-id': { type: 'string' },
      format: { type: 'string' },
      language: { type: 'string' },
      http: { type: 'boolean' },
    });
    if (positionals.length !== 1) throw new VoicewireError('CLI_USAGE', 'tts takes exactly one TEXT argument (quote it)');
    const output = values.output as string | undefined;
    if (output === undefined) throw new VoicewireError('CLI_USAGE', 'tts needs -o FILE (or -o - for stdout)');
    const format = ((values.format as string | undefined) ?? 'wav').toLowerCase();
    const described = parseAudioFormat(format, { direction: 'tts-output' });
    if (output === '-' && process.stdout.isTTY) throw new VoicewireError('CLI_USAGE', 'refusing to write audio to a terminal: redirect stdout or name a file with -o');
    const client = clientFor(values);
    let voiceId = values['voice-id'] as string | undefined;
    const language = values.language as string | undefined;
    if (voiceId === undefined && language !== undefined) {
      const voice = (await client.voices.list({ includeCatalog: true })).find((v) => v.language === language);
      if (voice === undefined) throw new VoicewireError('INVALID_ARGUMENT', `no voice speaks ${JSON.stringify(language)} on this service (see voicewire voices)`);
      voiceId = voice.uid;
    }
    const started = Date.now();
    const options: Parameters<typeof client.tts>[0] = { text: positionals[0]!, outputFormat: format as AudioFormatName, http: values.http === true };
    if (voiceId !== undefined) options.voiceId = voiceId;
    progress('synthesizing…');
    const result = await client.tts(options);
    progressDone();
    if (output === '-') process.stdout.write(result.audio);
    else await writeFile(output, result.audio);
    const lastWord = result.words[result.words.length - 1];
    // Say what was written (stdout, unless stdout is the audio): a silent success looked like a failure.
    const seconds = audioSeconds(result.audio.length, described) ?? lastWord?.stop_s ?? 0;
    const said = `${output === '-' ? 'wrote stdout' : `wrote ${output}`}: ${seconds.toFixed(2)} s of ${described.canonical}, ${result.audio.length} bytes, ${result.words.length} words, in ${((Date.now() - started) / 1000).toFixed(2)} s\n`;
    if (output === '-') {
      if (process.stderr.isTTY) process.stderr.write(said);
    } else process.stdout.write(said);
    return 0;
  },
};
