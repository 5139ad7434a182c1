/**
 * Node users of the built package get the native paths (issue 22): the documented entry
 * `voicewire` resolves, through the `node` export condition, to an entry that registers Buffer's
 * base64 and libopus (`@evan/opus`, an optional dependency), in ESM and CommonJS; `voicewire/node`
 * too. Each check runs in a fresh node process importing the package by name from a file (not
 * `node -e`, whose global `require` hid the ESM build's bug: its bundler shim made the native
 * backend fail to load, silently, so everything encoded on wasm).
 */
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const built = existsSync(join(root, 'dist', 'index-node.js'));
let nativeInstalled = true;
try {
  createRequire(import.meta.url).resolve(`@evan/opus/node/${process.arch}-${process.platform}.node`);
} catch {
  nativeInstalled = false;
}

/** Runs `code` as a module file inside the package (so `voicewire` resolves to this package) and returns its stdout. */
function run(ext: 'mjs' | 'cjs', code: string, env: NodeJS.ProcessEnv = {}): string {
  const dir = mkdtempSync(join(root, 'test-artifacts-native-'));
  try {
    const file = join(dir, `probe.${ext}`);
    writeFileSync(file, code);
    return execFileSync(process.execPath, [file], { cwd: dir, encoding: 'utf8', env: { ...process.env, ...env }, timeout: 30_000 }).trim();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const probe = (load: string) => `${load}
const e = new OpusEncoder({ sampleRate: 48000, channels: 1 });
e.destroy?.();
console.log(JSON.stringify({ base64: base64Backend(), opus: opusStats().backend }));`;

describe.skipIf(!built)('the built package on Node takes the native paths', () => {
  it.each([
    ['voicewire (ESM)', 'mjs', `import { OpusEncoder, opusStats, base64Backend } from 'voicewire';`],
    ['voicewire (CommonJS)', 'cjs', `const { OpusEncoder, opusStats, base64Backend } = require('voicewire');`],
    ['voicewire/node (ESM)', 'mjs', `import { OpusEncoder, opusStats, base64Backend } from 'voicewire/node';`],
    ['voicewire/node (CommonJS)', 'cjs', `const { OpusEncoder, opusStats, base64Backend } = require('voicewire/node');`],
  ] as const)('%s: Buffer base64, and libopus when @evan/opus is installed', (_name, ext, load) => {
    const got = JSON.parse(run(ext, probe(load))) as { base64: string; opus: string };
    expect(got.base64).toBe('registered');
    expect(got.opus).toBe(nativeInstalled ? 'native' : 'wasm');
  });

  it('VOICEWIRE_OPUS=wasm still forces the wasm backend from the ESM entry', () => {
    const got = JSON.parse(run('mjs', probe(`import { OpusEncoder, opusStats, base64Backend } from 'voicewire';`), { VOICEWIRE_OPUS: 'wasm' })) as { opus: string };
    expect(got.opus).toBe('wasm');
  });

  it('@evan/opus is installed here, so the checks above saw the native backend', () => {
    // CI installs the optional dependency; were it missing the tests above would pass on wasm alone.
    expect(nativeInstalled).toBe(true);
  });
});
