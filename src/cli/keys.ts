/**
 * `voicewire keys create|list|revoke`: API keys of the store `serve` uses.
 *
 *   voicewire keys create [--org NAME] [--credits N] [--region NAME] [--data DIR | --store URL]
 *   voicewire keys create --admin [--data DIR | --store URL]
 *   voicewire keys list [--org NAME] [--data DIR | --store URL]
 *   voicewire keys revoke ID [--data DIR | --store URL]
 *
 * `create` makes an organization's key, and the organization when it is new (with N credits,
 * default 1 000 000, and the region it is pinned to); `create --admin` makes an instance-admin key
 * (/statusz, /drain), which belongs to no organization, so it takes no --org, --credits or
 * --region. Either prints the key alone on stdout: the only time it is shown.
 */
import { parseArgs } from 'node:util';
import { VoicewireError } from '../util/errors.js';
import { createKey } from '../server/keys.js';
import { ensureOrganization } from '../server/bootstrap.js';
import { openCliStore } from './serve.js';
import type { CliSubcommand } from './main.js';

const USAGE = `usage: voicewire keys create [--org NAME] [--credits N] [--region NAME] [--data DIR | --store URL]
       voicewire keys create --admin [--data DIR | --store URL]   (instance admin: /statusz, /drain)
       voicewire keys list [--org NAME] [--data DIR | --store URL]
       voicewire keys revoke ID [--data DIR | --store URL]`;

export const keysCommand: CliSubcommand = {
  async run(argv) {
    let parsed;
    try {
      parsed = parseArgs({
        args: [...argv],
        allowPositionals: true,
        options: {
          org: { type: 'string' },
          credits: { type: 'string' },
          admin: { type: 'boolean' },
          region: { type: 'string' },
          data: { type: 'string' },
          store: { type: 'string' },
          help: { type: 'boolean', short: 'h' },
        },
      });
    } catch (err) {
      throw new VoicewireError('CLI_USAGE', `${(err as Error).message}\n${USAGE}`);
    }
    const { values, positionals } = parsed;
    const [verb, ...rest] = positionals;
    if (values.help || verb === undefined) {
      process.stdout.write(`${USAGE}\n`);
      return values.help ? 0 : 1;
    }
    if (verb === 'create' && values.admin) {
      // Issue 20 §7: an admin key made "for" an organization drained the whole instance.
      const orgFlags = (['org', 'credits', 'region'] as const).filter((k) => values[k] !== undefined);
      if (orgFlags.length > 0) {
        throw new VoicewireError('CLI_USAGE', `an instance-admin key belongs to no organization: --admin takes no ${orgFlags.map((k) => `--${k}`).join(', ')}\n${USAGE}`);
      }
    }
    const store = await openCliStore(values);
    try {
      if (verb === 'create' && values.admin) {
        const { key } = await createKey(store, null);
        process.stdout.write(`${key}\n`);
        return 0;
      }
      if (verb === 'create') {
        let credits: number | undefined;
        if (values.credits !== undefined) {
          credits = Number(values.credits);
          if (!Number.isInteger(credits) || credits < 0) throw new VoicewireError('CLI_USAGE', `--credits must be an integer ≥ 0, got ${values.credits}`);
        }
        const org = await ensureOrganization(store, values.org ?? 'default', { ...(credits !== undefined ? { credits } : {}), region: values.region ?? null });
        const { key } = await createKey(store, org.id);
        process.stdout.write(`${key}\n`);
        return 0;
      }
      if (verb === 'list') {
        let orgId: string | undefined;
        if (values.org !== undefined) {
          const org = await store.getOrganizationByName(values.org);
          if (org === undefined) throw new VoicewireError('CLI_USAGE', `no organization ${values.org}`);
          orgId = org.id;
        }
        for (const k of await store.listApiKeys(orgId)) {
          const org = k.orgId === null ? undefined : await store.getOrganization(k.orgId);
          const owner = k.orgId === null ? '-' : (org?.name ?? k.orgId);
          process.stdout.write(`${k.id}\t${owner}\t${k.prefix}…\t${k.admin ? 'instance-admin' : 'api'}\t${k.revoked ? 'revoked' : 'active'}\t${k.createdAt}\n`);
        }
        return 0;
      }
      if (verb === 'revoke') {
        if (rest.length !== 1) throw new VoicewireError('CLI_USAGE', `keys revoke takes one key ID (see voicewire keys list)\n${USAGE}`);
        if (!(await store.revokeApiKey(rest[0]!))) throw new VoicewireError('CLI_USAGE', `no key with ID ${rest[0]}`);
        process.stderr.write(`revoked ${rest[0]}\n`);
        return 0;
      }
      throw new VoicewireError('CLI_USAGE', `unknown keys command ${verb}\n${USAGE}`);
    } finally {
      await store.close();
    }
  },
};

export default keysCommand;
