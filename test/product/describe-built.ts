/**
 * `describe` for the suites that run the built server (attacks, soak): they must not pass by
 * skipping in CI. Kept apart from built-server.ts, which bench/soak.ts imports outside vitest.
 */
import { describe, it } from 'vitest';
import { pocketsphinxAvailable } from '../../src/engines/pocketsphinx-ffi.js';
import { built } from './built-server.js';

/** True in CI (`CI` set to anything but `0`/`false`, as GitHub Actions and most runners set it). */
export const inCI = process.env['CI'] !== undefined && !['', '0', 'false'].includes(process.env['CI'].toLowerCase());

/** Why the built server cannot run here (no dist/cli.js, no pocketsphinx), or undefined when it can. */
export function builtServerMissing(): string | undefined {
  const why: string[] = [];
  if (!built) why.push('dist/cli.js is missing (npm run build)');
  const ps = pocketsphinxAvailable();
  if (ps !== undefined) why.push(`pocketsphinx, the default STT engine, is not usable (${ps})`);
  return why.length === 0 ? undefined : why.join('; ');
}

/**
 * `describe` for a suite that runs the built server. Outside CI a missing prerequisite skips it,
 * saying why (title and a warning line); in CI it fails: .ci/run builds and installs pocketsphinx,
 * so a skip there would hide a broken CI, the silence issue 20 found.
 */
export function describeBuilt(title: string, body: () => void): void {
  const why = builtServerMissing();
  if (why === undefined) return void describe(title, body);
  if (inCI) {
    return void describe(title, () => {
      it('has the built server and its engines (CI must not skip this suite)', () => {
        throw new Error(`${title}: ${why}. CI (.ci/run) builds dist/ and installs pocketsphinx, so this suite must run there.`);
      });
    });
  }
  console.warn(`[skipped] ${title}: ${why}`);
  describe.skip(`${title} [SKIPPED: ${why}]`, body);
}
