/**
 * External oracles (ffmpeg, sox, opus-tools, espeak-ng). Tests that need one use
 * `describe.skipIf(!has('ffmpeg'))(needs('ffmpeg', 'title'), …)` so a skip says why in its name;
 * CI installs every tool (.ci/run), so there nothing is skipped.
 */
import { execFileSync, spawnSync } from 'node:child_process';

const cache = new Map<string, boolean>();

/** True when `tool` is on the PATH. */
export function has(tool: string): boolean {
  let ok = cache.get(tool);
  if (ok === undefined) {
    ok = spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status === 0;
    cache.set(tool, ok);
  }
  return ok;
}

/** A test title that says which tool it needs and, when missing, that it is skipped. */
export function needs(tool: string, title: string): string {
  return has(tool) ? `${title} (oracle: ${tool})` : `${title} [SKIPPED: ${tool} not installed; CI installs it]`;
}

/** Runs a tool with binary stdin/stdout; throws with its stderr on failure. */
export function run(tool: string, args: string[], input?: Uint8Array): Uint8Array {
  const out = execFileSync(tool, args, {
    input,
    maxBuffer: 1 << 28,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
}

/** Runs a tool and returns stdout + stderr as text (for tools that report on stderr, e.g. opusinfo). */
export function runText(tool: string, args: string[]): string {
  const r = spawnSync(tool, args, { encoding: 'utf8', maxBuffer: 1 << 26 });
  return `${r.stdout ?? ''}${r.stderr ?? ''}`;
}
