/** `voicewire voices [--json]`: the voices this key can use (catalog and the organization's own). */
import { VoicewireError } from '../util/errors.js';
import { clientFor, parseCommand } from './service.js';
import type { CliSubcommand } from './main.js';

export const voicesCommand: CliSubcommand = {
  async run(argv) {
    const { values, positionals } = parseCommand('voices', argv, { json: { type: 'boolean' } });
    if (positionals.length > 0) throw new VoicewireError('CLI_USAGE', 'voices takes no arguments');
    const voices = await clientFor(values).voices.list({ includeCatalog: true });
    if (values.json) {
      process.stdout.write(`${JSON.stringify(voices, null, 2)}\n`);
      return 0;
    }
    for (const v of voices) process.stdout.write(`${v.uid}\t${v.language}\t${v.is_catalog ? 'catalog' : 'own'}\t${v.name}\t${v.description}\n`);
    return 0;
  },
};
