/**
 * `npm run bench`: runs every bench/*.bench.ts in its own process, one after another, so suites
 * do not disturb each other's JIT state. Pass names to run a subset (`npm run bench -- g711 wav`);
 * an unknown name is an error that lists the suites. Results go to bench/results/ only with
 * `--save`: they are tracked, and the README quotes them.
 */
import { readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { machine } from './util.js';

const USAGE = 'usage: npm run bench -- [SUITE…] [--save]';

const dir = fileURLToPath(new URL('.', import.meta.url));
const known = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .map((f) => f.slice(0, -'.bench.ts'.length))
  .sort();

const args = process.argv.slice(2);
const save = args.includes('--save');
const flags = args.filter((a) => a.startsWith('-') && a !== '--save');
const names = args.filter((a) => !a.startsWith('-'));
// A name selects the suites it starts ("pipe" runs pipelines), as before; one that selects none
// would otherwise run nothing and exit 0.
const unknown = names.filter((n) => !known.some((k) => k.startsWith(n)));
if (flags.length > 0 || unknown.length > 0) {
  const what = flags.length > 0 ? `unknown option ${flags.join(' ')}` : `unknown suite ${unknown.join(', ')}`;
  console.error(`bench: ${what}; suites: ${known.join(', ')}\n${USAGE}`);
  process.exit(2);
}
const suites = known.filter((k) => names.length === 0 || names.some((n) => k.startsWith(n)));

console.log(`voicewire benchmarks on ${machine()}${save ? '' : ' (results not saved: pass --save)'}`);
let failed = 0;
for (const s of suites) {
  console.log(`\n=== ${s}.bench.ts`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', `${dir}${s}.bench.ts`], {
    stdio: 'inherit',
    env: { ...process.env, VOICEWIRE_BENCH_SAVE: save ? '1' : '0' },
  });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
