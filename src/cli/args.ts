/**
 * Command-line parsing for `voicewire`, kept pure (no `process`) so it is tested directly.
 */
import { VoicewireError } from '../util/errors.js';

/** Opus `--bitrate` bounds, bit/s: what libopus' OPUS_SET_BITRATE accepts (src/audio/opus.ts). */
export const CLI_OPUS_BITRATE_MIN = 500;
export const CLI_OPUS_BITRATE_MAX = 512000;

/** A parsed command line. */
export type CliCommand =
  | { command: 'help' }
  | { command: 'version' }
  | { command: 'info'; input: string; from?: string }
  | {
      command: 'convert';
      input: string;
      to: string;
      from?: string;
      /** A path, or `-` for stdout named explicitly (also to a terminal); undefined: stdout, refused when it is a terminal. */
      output?: string;
      quality: 'high' | 'fast' | 'best';
      /** Opus bitrate, bit/s; undefined: libopus's automatic choice. */
      bitrate?: number;
      /** Stop after this many seconds of audio (an input that never ends, a pipe); undefined: to the input's end. */
      maxSeconds?: number;
    };

/** The commands, one line each, `serve` first (`voicewire --help`, `voicewire help`). */
export const COMMANDS = `usage: voicewire COMMAND [options]      (voicewire COMMAND --help: its options)

  serve            run the voice service: every API route, a web page, keys and data in ./voicewire-data
  keys             create, list and revoke API keys of the service's store
  pronunciations   import a pronunciation dictionary into the service's store
  tts              speech from a running service into a file
  stt              transcribe an audio file with a running service
  voices           list the voices of a running service
  credits          the credit balance of a running service
  convert          convert audio between the API's formats (streaming, bounded memory)
  info             describe an audio file
  help             this list; --version: the version

Documentation: the README, and docs/ beside it (also in the installed package).`;

/** The usage text printed by `voicewire --help`: the commands, then the options of info and convert. */
export const USAGE = `${COMMANDS}

info and convert:
  voicewire info FILE [--from FORMAT]
  voicewire convert IN --to FORMAT [--from FORMAT] [-o OUT] [--quality high|fast|best] [--bitrate BPS]
                    [--max-seconds S]

  IN/OUT may be '-' for stdin/stdout (OUT defaults to stdout; binary output to a terminal
  is refused unless you write -o -). A file OUT is written to a temporary file beside it and
  renamed into place only when the conversion succeeded; OUT may not be the input file.
  Input is detected from its header (WAV/RF64, Ogg Opus); raw input needs --from
  (pcm = 24 kHz s16le as the STT API reads it, pcm_8000 … pcm_48000, ulaw_8000, alaw_8000).
  Other containers (mp3, flac, m4a, …) are decoded through ffmpeg when it is installed
  (info uses ffprobe); they are resampled by voicewire, so --quality applies.
  FORMAT is an API format name, any case: wav pcm opus ulaw_8000 mulaw_8000 alaw_8000
  pcm_8000 pcm_16000 pcm_22050 pcm_24000 pcm_44100 pcm_48000 (pcm = 48 kHz s16le as output).
  wav to a file (or stdout redirected to a file) gets exact sizes; to a pipe, the streaming header.
  --bitrate: Opus target bit/s, ${CLI_OPUS_BITRATE_MIN}–${CLI_OPUS_BITRATE_MAX} (or 64k); default libopus's choice.
  Multichannel input is downmixed to mono.
  convert is a stream: it reads until the input ends, so an input that never ends (a pipe, a
  device, /dev/urandom that ffmpeg takes for audio) converts without end in bounded memory.
  --max-seconds S stops after S seconds of audio and finishes the output normally (or bound the
  bytes read: head -c N IN | voicewire convert - …).

client commands (a running service; --base-url default http://127.0.0.1:8080/api,
--api-key or VOICEWIRE_API_KEY):
  voicewire tts TEXT -o OUT [--voice-id ID] [--format FORMAT] [--language L] [--http]
  voicewire stt FILE [--json] [--language L] [--from FORMAT] [--http]
  voicewire voices [--json]
  voicewire credits`;

function usage(message: string): VoicewireError {
  return new VoicewireError('CLI_USAGE', `${message} (see voicewire --help)`);
}

/** API format names are lower case; the CLI takes any case (`PCM_16000`). */
function formatName(value: string): string {
  return value.toLowerCase();
}

/** `64000`, `64k` or `64K` → 64000; anything else, or out of range, is a usage error. */
function parseBitrate(value: string): number {
  const m = /^(\d{1,7})([kK]?)$/.exec(value);
  const bps = m === null ? NaN : Number(m[1]) * (m[2] === '' ? 1 : 1000);
  if (!Number.isInteger(bps) || bps < CLI_OPUS_BITRATE_MIN || bps > CLI_OPUS_BITRATE_MAX) {
    throw usage(`--bitrate must be an integer ${CLI_OPUS_BITRATE_MIN}–${CLI_OPUS_BITRATE_MAX} bit/s (e.g. 32000 or 32k), not ${JSON.stringify(value)}`);
  }
  return bps;
}

/** Parses `argv` (without the node and script paths). Throws CLI_USAGE on bad arguments. */
export function parseCliArgs(argv: readonly string[]): CliCommand {
  const positional: string[] = [];
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '-h' || a === '--help') return { command: 'help' };
    if (a === '--version' || a === '-v') return { command: 'version' };
    if (a === '-' || !a.startsWith('-')) {
      positional.push(a);
      continue;
    }
    const eq = a.indexOf('=');
    const name = eq > 0 ? a.slice(0, eq) : a;
    if (!['--to', '--from', '-o', '--output', '--quality', '--bitrate', '--max-seconds'].includes(name)) throw usage(`unknown option ${name}`);
    const value = eq > 0 ? a.slice(eq + 1) : argv[++i];
    if (value === undefined || value === '') throw usage(`option ${name} needs a value`);
    flags.set(name === '--output' ? '-o' : name, value);
  }
  const [command, ...rest] = positional;
  if (command === undefined) throw usage('missing command');
  if (command === 'help' && rest.length === 0 && flags.size === 0) return { command: 'help' };
  const fromFlag = flags.get('--from');
  const from = fromFlag === undefined ? undefined : formatName(fromFlag);
  if (command === 'info') {
    if (rest.length !== 1) throw usage('info takes exactly one FILE');
    for (const f of flags.keys()) if (f !== '--from') throw usage(`info does not take ${f}`);
    return from === undefined ? { command, input: rest[0]! } : { command, input: rest[0]!, from };
  }
  if (command === 'convert') {
    if (rest.length !== 1) throw usage('convert takes exactly one input (a path or -)');
    const toFlag = flags.get('--to');
    if (toFlag === undefined) throw usage('convert needs --to FORMAT');
    const to = formatName(toFlag);
    const quality = flags.get('--quality') ?? 'high';
    if (quality !== 'high' && quality !== 'fast' && quality !== 'best') throw usage(`--quality must be high, fast or best, not ${quality}`);
    const cmd: CliCommand = { command, input: rest[0]!, to, quality };
    const output = flags.get('-o');
    if (output !== undefined) cmd.output = output;
    if (from !== undefined) cmd.from = from;
    const bitrate = flags.get('--bitrate');
    if (bitrate !== undefined) {
      if (to !== 'opus') throw usage(`--bitrate applies to --to opus only, not ${to}`);
      cmd.bitrate = parseBitrate(bitrate);
    }
    const maxSeconds = flags.get('--max-seconds');
    if (maxSeconds !== undefined) {
      const s = /^\d+(\.\d+)?$/.test(maxSeconds) ? Number(maxSeconds) : NaN;
      if (!(s > 0 && s <= 1e7)) throw usage(`--max-seconds must be a number of seconds above 0 (e.g. 30 or 2.5), not ${JSON.stringify(maxSeconds)}`);
      cmd.maxSeconds = s;
    }
    return cmd;
  }
  throw usage(`unknown command ${command}`);
}
