/**
 * scripts/prepare.mjs builds only when dist/ is older than what it is built from, so that the
 * "prepare" npm reruns on the first `npx voicewire` in a clone costs nothing. Run in a copy of
 * the layout with a stand-in tsup that only records that it ran.
 */
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
/** Every dist/ file package.json names (exports, bin, main, module, types), as prepare.mjs reads them. */
const OUTPUTS = (() => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const files = new Set<string>();
  const collect = (v: unknown): void => {
    if (typeof v === 'string') {
      if (v.startsWith('./dist/')) files.add(v.slice('./dist/'.length));
    } else if (v && typeof v === 'object') for (const x of Object.values(v)) collect(x);
  };
  collect([pkg.exports, pkg.bin, pkg.main, pkg.module, pkg.types]);
  return [...files];
})();

function layout(): string {
  const dir = mkdtempSync(join(tmpdir(), 'voicewire-prepare-'));
  mkdirSync(join(dir, 'scripts'));
  copyFileSync(join(root, 'scripts', 'prepare.mjs'), join(dir, 'scripts', 'prepare.mjs'));
  copyFileSync(join(root, 'package.json'), join(dir, 'package.json'));
  mkdirSync(join(dir, 'src', 'audio'), { recursive: true });
  writeFileSync(join(dir, 'src', 'audio', 'wav.ts'), 'export {};\n');
  writeFileSync(join(dir, 'tsup.config.ts'), 'export {};\n');
  mkdirSync(join(dir, 'node_modules', 'tsup'), { recursive: true });
  writeFileSync(join(dir, 'node_modules', 'tsup', 'package.json'), JSON.stringify({ name: 'tsup', bin: { tsup: 'fake.cjs' } }));
  writeFileSync(join(dir, 'node_modules', 'tsup', 'fake.cjs'), "require('fs').writeFileSync('built', 'yes');\n");
  mkdirSync(join(dir, 'dist'));
  const old = new Date(Date.now() - 60_000);
  for (const p of ['package.json', 'tsup.config.ts', 'src/audio/wav.ts', 'src/audio', 'src']) utimesSync(join(dir, p), old, old);
  // Built after the sources, before any change a case makes.
  const built = new Date(Date.now() - 30_000);
  for (const f of OUTPUTS) {
    writeFileSync(join(dir, 'dist', f), '');
    utimesSync(join(dir, 'dist', f), built, built);
  }
  return dir;
}

function prepare(dir: string, env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [join(dir, 'scripts', 'prepare.mjs')], { cwd: dir, encoding: 'utf8', timeout: 10_000, env: { ...process.env, npm_command: 'install', ...env } });
  return { status: r.status, stdout: r.stdout, built: existsSync(join(dir, 'built')) };
}

describe('scripts/prepare.mjs', () => {
  it('skips the build when dist/ is newer than src/, package.json and the build config, and says so', () => {
    const dir = layout();
    try {
      const r = prepare(dir);
      expect(r.status).toBe(0);
      expect(r.built).toBe(false);
      expect(r.stdout).toContain('dist/ is up to date');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('builds when a source is newer, an output is missing, or for npm pack', () => {
    const cases: [string, (dir: string) => void, Record<string, string>][] = [
      ['a source changed', (d) => writeFileSync(join(d, 'src', 'audio', 'wav.ts'), 'export const x = 1;\n'), {}],
      ['a file was added under src/', (d) => writeFileSync(join(d, 'src', 'audio', 'new.ts'), ''), {}],
      ['an output is missing', (d) => rmSync(join(d, 'dist', 'node.d.ts')), {}],
      ['npm pack', () => {}, { npm_command: 'pack' }],
    ];
    for (const [what, change, env] of cases) {
      const dir = layout();
      try {
        change(dir);
        const r = prepare(dir, env);
        expect(r.status, what).toBe(0);
        expect(r.built, what).toBe(true);
        expect(r.stdout, what).toContain('building dist/');
        expect(readFileSync(join(dir, 'built'), 'utf8')).toBe('yes');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  });
});
