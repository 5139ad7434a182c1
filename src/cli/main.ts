/**
 * `voicewire` command line: a thin Node adapter over the pure decoders and encoders.
 *
 *   voicewire info FILE [--from FORMAT]
 *   voicewire convert IN --to FORMAT [--from FORMAT] [-o OUT] [--quality high|fast|best] [--bitrate BPS]
 *
 * Everything streams in bounded memory (./convert.ts, ./info.ts); a file output appears only
 * when complete (./output.ts). Errors print one line on stderr, control characters escaped
 * (./escape.ts), and exit 1.
 */
// Bundled into dist/cli.js at build time, so the version needs no path at run time.
import pkg from '../../package.json' with { type: 'json' };
import { parseCliArgs, USAGE } from './args.js';
import { convert } from './convert.js';
import { info } from './info.js';
import { errorLine, escapeJsonText } from './escape.js';

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
  serve: async () => (await import('./serve.js')).serveCommand,
  keys: async () => (await import('./keys.js')).keysCommand,
  pronunciations: async () => (await import('./pronunciations.js')).pronunciationsCommand,
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
        process.stdout.write(`${escapeJsonText(JSON.stringify(await info(cmd), null, 2))}\n`);
        return 0;
      case 'convert':
        await convert(cmd, process.stdout.isTTY === true);
        return 0;
    }
  } catch (err) {
    process.stderr.write(errorLine(err));
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
