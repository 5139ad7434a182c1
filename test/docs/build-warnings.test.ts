/**
 * The build prints no warning: npm runs it at `npm install` ("prepare"), where a warning reads as
 * a broken package (issue 23: esbuild's dropped bare import, rollup's "imported … but never
 * used"). Runs tsup.config.ts's builds for real — esbuild, then tsup's rollup tree-shaking and
 * CommonJS pass — into a temporary folder, without the declaration build (its own test is
 * typescript-consumer.test.ts) and without source maps, and reads what tsup prints.
 */
import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

const SCRIPT = `
const { build } = await import('tsup');
const configs = (await import('./tsup.config.ts')).default;
const out = process.env.VOICEWIRE_BUILD_OUT;
let i = 0;
for (const c of Array.isArray(configs) ? configs : [configs]) {
  await build({ ...c, config: false, dts: false, sourcemap: false, clean: true, outDir: out + '/' + i++ });
}
`;

describe('the build', () => {
  it('bundles every entry, the CLI and the page without a warning', { timeout: 90_000 }, async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'voicewire-build-'));
    try {
      const r = await new Promise<{ status: number; out: string }>((resolve) =>
        execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', SCRIPT], { cwd: root, encoding: 'utf8', timeout: 80_000, env: { ...process.env, VOICEWIRE_BUILD_OUT: tmp, NO_COLOR: '1', FORCE_COLOR: '0' } }, (err, stdout, stderr) =>
          resolve({ status: err ? (typeof err.code === 'number' ? err.code : -1) : 0, out: stdout + stderr }),
        ),
      );
      expect(r.out).toContain('Build success');
      expect(r.out.split('\n').filter((l) => /warn|never used/i.test(l))).toEqual([]);
      expect(r.status).toBe(0);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
