/**
 * The library build prints no warning: npm runs it at `npm install` ("prepare"), where a warning
 * reads as a broken package (issue 23). Bundles tsup's entries with esbuild — what tsup runs
 * first, with the same package.json "sideEffects" and externals — and reads esbuild's warnings;
 * a dropped bare import ([ignored-bare-import]) is one.
 */
import { describe, expect, it } from 'vitest';
import { build } from 'esbuild';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import config from '../../tsup.config.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as Record<string, Record<string, string> | undefined>;

describe('the build', () => {
  it('bundles every entry of the package and the CLI without a warning', async () => {
    const library = (Array.isArray(config) ? config[0] : config) as { entry: Record<string, string> };
    const external = [...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.optionalDependencies ?? {}), ...Object.keys(pkg.peerDependencies ?? {})];
    const result = await build({
      absWorkingDir: root,
      entryPoints: library.entry,
      bundle: true,
      write: false,
      outdir: 'dist-check',
      format: 'esm',
      splitting: true,
      platform: 'node',
      target: 'node20',
      external,
      logLevel: 'silent',
    });
    expect(Object.keys(library.entry)).toEqual(expect.arrayContaining(['index', 'index-node', 'node', 'engines', 'server', 'client', 'cli']));
    expect(result.warnings.map((w) => `${w.id ?? ''} ${w.text} (${w.location?.file ?? ''})`)).toEqual([]);
    expect(result.errors).toEqual([]);
  });
});
