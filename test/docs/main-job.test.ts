/**
 * The README's main-job commands run as written (through dist/cli.js, the file `npx voicewire`
 * runs in the clone), each output file landing in a temporary folder.
 */
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const cli = join(root, 'dist', 'cli.js');
const built = existsSync(cli);
const readme = readFileSync(join(root, 'README.md'), 'utf8');

function mainJobCommands(): string[][] {
  const section = readme.slice(readme.indexOf('## The main job'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  return block
    .split('\n')
    .map((l) => l.replace(/#.*$/, '').trim())
    .filter((l) => l.startsWith('npx voicewire '))
    .map((l) => l.split(/\s+/).slice(2));
}

describe('the README main job', () => {
  const commands = mainJobCommands();

  it('has npx voicewire commands to run', () => {
    expect(commands.map((c) => c[0])).toEqual(expect.arrayContaining(['convert', 'info']));
  });

  it.skipIf(!built)(built ? 'each command runs and writes what it names' : 'each command runs [SKIPPED: dist/ not built; npm run build]', () => {
    const out = mkdtempSync(join(tmpdir(), 'voicewire-main-job-'));
    try {
      for (const argv of commands) {
        const o = argv.indexOf('-o');
        if (o >= 0) argv[o + 1] = join(out, argv[o + 1]!);
        const r = spawnSync(process.execPath, [cli, ...argv], { cwd: root, encoding: 'utf8', timeout: 20_000 });
        expect(r.stderr, argv.join(' ')).toBe('');
        expect(r.status, argv.join(' ')).toBe(0);
        if (o >= 0) expect(statSync(argv[o + 1]!).size).toBeGreaterThan(1000);
        if (argv[0] === 'info') expect(JSON.parse(r.stdout)).toMatchObject({ sampleRate: 48000 });
      }
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
