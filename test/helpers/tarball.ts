/**
 * The packed tarball installed in an empty folder, as `npm install ./voicewire-x.y.z.tgz` lays it
 * out, without the network: the package is unpacked into `node_modules/voicewire` and each of its
 * dependencies (and the optional ones this machine has, koffi among them) is linked from this
 * checkout's node_modules. The optional peer `@echogarden/espeak-ng-emscripten` is not there, as
 * after a plain `npm install voicewire`. Needs dist/ (`npm run build`).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('../../', import.meta.url));

export interface InstalledTarball {
  /** The empty folder the package was installed in (its package.json names no dependency). */
  app: string;
  /** `app/node_modules/voicewire`. */
  installed: string;
  /** `node app/node_modules/voicewire/dist/cli.js`: what `npx voicewire` runs there. */
  cli: string;
  remove(): void;
}

function link(from: string, to: string): void {
  mkdirSync(dirname(to), { recursive: true });
  symlinkSync(from, to, 'dir');
}

/** Packs this checkout and installs the tarball in a new temporary folder. */
export function installPackedTarball(prefix = 'voicewire-installed-'): InstalledTarball {
  const tmp = mkdtempSync(join(tmpdir(), prefix));
  const out = execFileSync('npm', ['pack', '--pack-destination', tmp, '--ignore-scripts', '--json'], { cwd: root, encoding: 'utf8', timeout: 60_000, stdio: ['ignore', 'pipe', 'ignore'] });
  const tarball = join(tmp, (JSON.parse(out) as { filename: string }[])[0]!.filename);
  const app = join(tmp, 'app');
  mkdirSync(join(app, 'node_modules'), { recursive: true });
  execFileSync('tar', ['-xzf', tarball, '-C', join(app, 'node_modules')], { timeout: 30_000 });
  const installed = join(app, 'node_modules', 'voicewire');
  renameSync(join(app, 'node_modules', 'package'), installed);
  const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> };
  for (const dep of Object.keys(manifest.dependencies ?? {})) link(join(root, 'node_modules', dep), join(app, 'node_modules', dep));
  for (const dep of Object.keys(manifest.optionalDependencies ?? {})) {
    if (existsSync(join(root, 'node_modules', dep))) link(join(root, 'node_modules', dep), join(app, 'node_modules', dep));
  }
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module', dependencies: { voicewire: `file:${tarball}` } }));
  return { app, installed, cli: join(installed, 'dist', 'cli.js'), remove: () => rmSync(tmp, { recursive: true, force: true }) };
}
