/**
 * Command-line parsing for `voicewire`, kept pure (no `process`) so it is tested directly.
 */
import { VoicewireError } from '../util/errors.js';

/** A parsed command line. */
export type CliCommand =
  | { command: 'help' }
  | { command: 'version' }
  | { command: 'info'; input: string; from?: string }
  | { command: 'convert'; input: string; to: string; from?: string; output: string; quality: 'high' | 'fast' | 'best' };

/** The usage text printed by `voicewire --help`. */
export const USAGE = `usage:
  voicewire info FILE [--from FORMAT]
  voicewire convert IN --to FORMAT [--from FORMAT] [-o OUT] [--quality high|fast|best]

  IN/OUT may be '-' for stdin/stdout (OUT defaults to stdout).
  Input is detected from its header (WAV/RF64, Ogg Opus); raw input needs --from
  (pcm = 24 kHz s16le as the STT API reads it, pcm_8000 … pcm_48000, ulaw_8000, alaw_8000).
  Other containers (mp3, flac, m4a, …) are decoded through ffmpeg when it is installed.
  FORMAT is an API format name: wav pcm opus ulaw_8000 mulaw_8000 alaw_8000
  pcm_8000 pcm_16000 pcm_22050 pcm_24000 pcm_44100 pcm_48000 (pcm = 48 kHz s16le as output).
  Multichannel input is downmixed to mono.

client commands (a running service; --base-url default http://127.0.0.1:8080/api,
--api-key or VOICEWIRE_API_KEY):
  voicewire tts TEXT -o OUT [--voice-id ID] [--format FORMAT] [--language L] [--http]
  voicewire stt FILE [--json] [--language L] [--from FORMAT] [--http]
  voicewire voices [--json]
  voicewire credits`;

function usage(message: string): VoicewireError {
  return new VoicewireError('CLI_USAGE', `${message} (see voicewire --help)`);
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
    if (!['--to', '--from', '-o', '--output', '--quality'].includes(name)) throw usage(`unknown option ${name}`);
    const value = eq > 0 ? a.slice(eq + 1) : argv[++i];
    if (value === undefined || value === '') throw usage(`option ${name} needs a value`);
    flags.set(name === '--output' ? '-o' : name, value);
  }
  const [command, ...rest] = positional;
  if (command === undefined) throw usage('missing command');
  const from = flags.get('--from');
  if (command === 'info') {
    if (rest.length !== 1) throw usage('info takes exactly one FILE');
    for (const f of flags.keys()) if (f !== '--from') throw usage(`info does not take ${f}`);
    return from === undefined ? { command, input: rest[0]! } : { command, input: rest[0]!, from };
  }
  if (command === 'convert') {
    if (rest.length !== 1) throw usage('convert takes exactly one input (a path or -)');
    const to = flags.get('--to');
    if (to === undefined) throw usage('convert needs --to FORMAT');
    const quality = flags.get('--quality') ?? 'high';
    if (quality !== 'high' && quality !== 'fast' && quality !== 'best') throw usage(`--quality must be high, fast or best, not ${quality}`);
    const cmd: CliCommand = { command, input: rest[0]!, to, output: flags.get('-o') ?? '-', quality };
    if (from !== undefined) cmd.from = from;
    return cmd;
  }
  throw usage(`unknown command ${command}`);
}
