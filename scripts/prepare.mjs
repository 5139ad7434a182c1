/**
 * The "prepare" script (`npm install` runs it): builds dist/ with tsup unless dist/ is already
 * newer than everything it is built from.
 *
 * Why the check: inside the clone, npm 11's `npx voicewire` finds the bin in the project's own
 * package.json and links the project into its npx cache, which reruns "prepare" with its output
 * hidden (libnpmexec, "self-execution of a local bin"). An unconditional build there made the
 * first `npx voicewire` sit silent for 9–30 s at ~750 MB. Plain JavaScript so that it starts
 * in ~50 ms with nothing compiled. `npm pack` / `npm publish` (and `--force`) always build.
 *
 * It ships in the tarball (package.json "files"): npm also runs "prepare" in an unpacked copy
 * (`npm install <folder>`), where a missing script failed the install. There dist/ comes built and
 * src/ does not, so it does nothing, silently (issue 23).
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

/** Newest modification time under `path` (directories count: a deleted file changes its folder). */
function newest(path) {
  const st = statSync(path, { throwIfNoEntry: false });
  if (st === undefined) return 0;
  if (!st.isDirectory()) return st.mtimeMs;
  let t = st.mtimeMs;
  for (const name of readdirSync(path)) t = Math.max(t, newest(join(path, name)));
  return t;
}

/** Every file package.json points into dist/ (exports, bin, main, module, types). */
function outputs() {
  const files = new Set();
  const collect = (v) => {
    if (typeof v === 'string') {
      if (v.startsWith('./dist/') || v.startsWith('dist/')) files.add(join(root, v));
    } else if (v && typeof v === 'object') for (const x of Object.values(v)) collect(x);
  };
  collect([pkg.exports, pkg.bin, pkg.main, pkg.module, pkg.types]);
  return [...files];
}

function upToDate() {
  const built = outputs().map((f) => statSync(f, { throwIfNoEntry: false })?.mtimeMs ?? 0);
  if (built.length === 0 || built.includes(0)) return false;
  const sources = Math.max(...['src', 'package.json', 'tsup.config.ts', 'tsconfig.json'].map((p) => newest(join(root, p))));
  return Math.min(...built) >= sources;
}

if (statSync(join(root, 'src'), { throwIfNoEntry: false }) === undefined) process.exit(0);

const always = process.argv.includes('--force') || ['pack', 'publish'].includes(process.env.npm_command ?? '');
if (!always && upToDate()) {
  console.log('voicewire: dist/ is up to date with src/ (`npm run build` rebuilds it)');
  process.exit(0);
}

console.log('voicewire: building dist/ (tsup) …');
const require = createRequire(import.meta.url);
const tsupPkg = require.resolve('tsup/package.json');
const tsupBin = join(dirname(tsupPkg), JSON.parse(readFileSync(tsupPkg, 'utf8')).bin.tsup);
const r = spawnSync(process.execPath, [tsupBin], { cwd: root, stdio: 'inherit' });
process.exit(r.status ?? 1);
