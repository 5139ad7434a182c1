/**
 * `npm run bench`: runs every bench/*.bench.ts in its own process, one after another, so suites
 * do not disturb each other's JIT state. Pass names to run a subset: `npm run bench -- g711 wav`.
 */
import { readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { machine } from './util.js';

const dir = fileURLToPath(new URL('.', import.meta.url));
const only = process.argv.slice(2);
const suites = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => only.length === 0 || only.some((o) => f.startsWith(o)))
  .sort();
console.log(`voicewire benchmarks on ${machine()}`);
let failed = 0;
for (const f of suites) {
  console.log(`\n=== ${f}`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', `${dir}${f}`], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
