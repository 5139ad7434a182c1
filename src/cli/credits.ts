/** `voicewire credits`: the credit balance of the key's organization (§2.5), as JSON. */
import { VoicewireError } from '../util/errors.js';
import { clientFor, parseCommand } from './service.js';
import type { CliSubcommand } from './main.js';

export const creditsCommand: CliSubcommand = {
  async run(argv) {
    const { values, positionals } = parseCommand('credits', argv, {});
    if (positionals.length > 0) throw new VoicewireError('CLI_USAGE', 'credits takes no arguments');
    process.stdout.write(`${JSON.stringify(await clientFor(values).credits(), null, 2)}\n`);
    return 0;
  },
};
