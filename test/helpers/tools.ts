/**
 * External oracles (ffmpeg, sox, opus-tools, espeak-ng). Tests that need one use
 * `describe.skipIf(!has('ffmpeg'))(needs('ffmpeg', 'title'), …)` so a skip says why in its name;
 * CI installs every tool (.ci/run), so there nothing is skipped.
 */
import { execFileSync, spawnSync } from 'node:child_process';

const cache = new Map<string, boolean>();

/** True when `tool` (or every tool of a list) is on the PATH. */
export function has(tool: string | readonly string[]): boolean {
  if (typeof tool !== 'string') return tool.every((t) => has(t));
  let ok = cache.get(tool);
  if (ok === undefined) {
    ok = spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status === 0;
    cache.set(tool, ok);
  }
  return ok;
}

/** A test title that says which tools it needs and, when one is missing, that it is skipped and why. */
export function needs(tool: string | readonly string[], title: string): string {
  const tools = typeof tool === 'string' ? [tool] : tool;
  const missing = tools.filter((t) => !has(t));
  return missing.length === 0
    ? `${title} (oracle: ${tools.join(', ')})`
    : `${title} [SKIPPED: ${missing.join(', ')} not installed; CI installs it]`;
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
