/**
 * What `npm pack` ships: a CLI that imports the library's chunks instead of a second copy of the
 * core, no source maps, a LICENSE, and a `voicewire/node` that TypeScript resolves under the old
 * `moduleResolution: node` (node10) through typesVersions. These read dist/: CI builds before
 * testing (.ci/run); without a build they are skipped and say so.
 */
import { describe, expect, it } from 'vitest';
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdtempSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const dist = join(root, 'dist');
const built = existsSync(join(dist, 'cli.js')) && existsSync(join(dist, 'node.d.ts'));
const title = (t: string) => (built ? t : `${t} [SKIPPED: dist/ not built; npm run build]`);
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Record<string, unknown>;

describe.skipIf(!built)('the built package', () => {
  it(title('dist/cli.js is small, imports the shared chunks, and alone carries the #! line and the executable bit'), () => {
    const cli = readFileSync(join(dist, 'cli.js'), 'utf8');
    expect(cli.startsWith('#!/usr/bin/env node\n')).toBe(true);
    // The core (WAV, resampler, Opus wrapper…) is ~180 KB; the CLI's own code a few KB.
    expect(cli.length).toBeLessThan(40_000);
    const chunks = [...cli.matchAll(/from '\.\/(chunk-[\w-]+\.js)'/g)].map((m) => m[1]!);
    expect(chunks.length).toBeGreaterThan(0);
    const library = readFileSync(join(dist, 'node.js'), 'utf8') + readFileSync(join(dist, 'index.js'), 'utf8');
    expect(chunks.some((c) => library.includes(c))).toBe(true);
    accessSync(join(dist, 'cli.js'), constants.X_OK);
    const others = readdirSync(dist).filter((f) => /\.(c?js)$/.test(f) && f !== 'cli.js');
    expect(others.filter((f) => readFileSync(join(dist, f), 'utf8').startsWith('#!'))).toEqual([]);
    expect(readdirSync(dist)).not.toContain('cli.cjs');
  });

  it(title('dist/cli.js runs (--version)'), () => {
    const r = spawnSync(process.execPath, [join(dist, 'cli.js'), '--version'], { encoding: 'utf8', timeout: 20_000 });
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toBe(pkg.version);
  });

  it(title('npm pack ships dist/ without source maps, plus LICENSE, README, docs/ and the README example\'s LibriVox clip'), () => {
    const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8', timeout: 30_000, stdio: ['ignore', 'pipe', 'ignore'] });
    const files = (JSON.parse(out) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path);
    expect(files).toEqual(expect.arrayContaining(['LICENSE', 'README.md', 'docs/api.md', 'docs/errors.md', 'package.json', 'dist/cli.js', 'dist/index.js', 'dist/index.cjs', 'dist/node.js', 'dist/node.d.ts', 'dist/node.d.cts']));
    expect(files.filter((f) => f.endsWith('.map'))).toEqual([]);
    // The documentation ships (docs/*.md: what error messages cite), the sources do not; the
    // "prepare" script does, as npm runs it in an unpacked copy too (test/docs/typescript-consumer.test.ts);
    // so does the one human recording the README's SDK example transcribes.
    const clip = 'fixtures/speech/librivox-0880.wav';
    expect(files).toContain(clip);
    expect(files.filter((f) => !f.startsWith('dist/') && !/^docs\/[\w-]+\.md$/.test(f) && !['LICENSE', 'README.md', 'package.json', 'scripts/prepare.mjs', clip].includes(f))).toEqual([]);
  });

  it(title('voicewire/node resolves under moduleResolution node10 through typesVersions (and not without it)'), async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'voicewire-node10-'));
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    const project = (manifest: Record<string, unknown>) => {
      const dir = join(tmp, String(Math.random()).slice(2));
      const installed = join(dir, 'node_modules', 'voicewire');
      mkdirSync(installed, { recursive: true });
      writeFileSync(join(installed, 'package.json'), JSON.stringify(manifest));
      symlinkSync(dist, join(installed, 'dist'), 'dir');
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'commonjs', moduleResolution: 'node10', target: 'ES2022', strict: true, noEmit: true, skipLibCheck: true, types: [], ignoreDeprecations: '5.0' }, files: ['main.ts'] }));
      writeFileSync(join(dir, 'main.ts'), "import { createFramerTransform, STT_FRAME } from 'voicewire/node';\nimport { createFramer } from 'voicewire';\nexport const t = [createFramerTransform(STT_FRAME), createFramer(STT_FRAME)];\n");
      return new Promise<{ status: number; stdout: string; stderr: string }>((resolve) =>
        execFile(process.execPath, [tsc, '-p', dir], { encoding: 'utf8', timeout: 30_000 }, (err, stdout, stderr) =>
          resolve({ status: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr }),
        ),
      );
    };
    try {
      const { typesVersions: _dropped, ...without } = pkg;
      const [ok, bad] = await Promise.all([project(pkg), project(without)]);
      expect(ok.stdout + ok.stderr).toBe('');
      expect(ok.status).toBe(0);
      expect(bad.status).not.toBe(0);
      expect(bad.stdout).toContain("Cannot find module 'voicewire/node'");
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});

