/**
 * Nothing stateful or secret is tracked (issue 20 §4): a tracked `voicewire-data/voicewire.db`
 * shipped two live keys (one admin) to every clone, stopped `serve` from printing keys at first
 * start, and showed the user's key hashes in `git status`. Runs `git ls-files` in the checkout;
 * skipped (and says so) only outside a git checkout, e.g. an unpacked npm tarball.
 */
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const inGit = (spawnSync('git', ['rev-parse', '--is-inside-work-tree'], { cwd: root, encoding: 'utf8' }).stdout ?? '').trim() === 'true';
const title = (t: string): string => (inGit ? t : `${t} [SKIPPED: not a git checkout]`);

/** Databases, their WAL/SHM/journal files, key material and the server's data folder. */
const STATEFUL = [
  /(^|\/)voicewire-data(\/|$)/,
  /\.(db|sqlite|sqlite3|db3)$/i,
  /-(wal|shm|journal)$/i,
  /\.(pem|key|p12|pfx|keystore)$/i,
  /(^|\/)id_(rsa|ecdsa|ed25519)(\.pub)?$/,
  /(^|\/)\.env(\..+)?$/,
];

describe.skipIf(!inGit)('the repository', () => {
  it(title('tracks no database, WAL/SHM/journal, key file or data folder'), () => {
    const r = spawnSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    expect(r.status, r.stderr).toBe(0);
    const files = r.stdout.split('\0').filter(Boolean);
    expect(files.length).toBeGreaterThan(10);
    expect(files.filter((f) => STATEFUL.some((re) => re.test(f)))).toEqual([]);
  });

  it(title('ignores the default data folder, so a first `serve` leaves `git status` clean'), () => {
    for (const f of ['voicewire-data/voicewire.db', 'voicewire-data/voicewire.db-wal', 'voicewire-data/voicewire.db-shm']) {
      expect(spawnSync('git', ['check-ignore', '--no-index', '-q', f], { cwd: root }).status, f).toBe(0);
    }
  });
});
