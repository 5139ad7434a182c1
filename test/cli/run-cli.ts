/**
 * Runs the `voicewire` CLI from source (tsx) as a child process, for the CLI tests.
 */
import { spawn, spawnSync, type StdioOptions } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

export const root = new URL('../..', import.meta.url).pathname;
const MAIN = join(root, 'src/cli/main.ts');
const PRELOAD = join(root, 'test/cli/maxrss-preload.mjs');

/** The node arguments that start the CLI (`process.execPath` + these + the CLI's arguments). */
export const CLI_NODE_ARGS = ['--import', 'tsx', MAIN];

export interface CliResult {
  status: number | null;
  stdout: Uint8Array;
  stderr: string;
}

/** Runs the CLI to completion; `stdio` overrides the default pipes (e.g. a file descriptor for stdout). */
export function cli(args: string[], options: { input?: Uint8Array; env?: NodeJS.ProcessEnv; stdio?: StdioOptions } = {}): CliResult {
  const r = spawnSync(process.execPath, [...CLI_NODE_ARGS, ...args], {
    cwd: root,
    input: options.input,
    env: options.env ?? process.env,
    stdio: options.stdio,
    maxBuffer: 1 << 26,
    timeout: 60_000,
  });
  return { status: r.status, stdout: new Uint8Array(r.stdout ?? new Uint8Array(0)), stderr: r.stderr?.toString() ?? '' };
}

export interface PipedResult extends CliResult {
  /** Peak RSS of the CLI process, bytes. */
  maxRss: number;
  ms: number;
}

/**
 * Runs the CLI with stdin fed by `feed` (a child process writing to its stdout, started with
 * node and `feedArgs`), recording the CLI's peak RSS through the preload.
 */
export function cliPiped(args: string[], feedArgs: string[] | null, rssFile: string, env: NodeJS.ProcessEnv = process.env): Promise<PipedResult> {
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--import', PRELOAD, MAIN, ...args], {
      cwd: root,
      env: { ...env, VOICEWIRE_TEST_MAXRSS_FILE: rssFile },
      stdio: [feedArgs === null ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let feeder: ReturnType<typeof spawn> | undefined;
    if (feedArgs !== null) {
      feeder = spawn(process.execPath, feedArgs, { stdio: ['ignore', 'pipe', 'inherit'] });
      feeder.stdout!.pipe(child.stdin!);
      child.stdin!.on('error', () => feeder!.kill());
    }
    const out: Buffer[] = [];
    let err = '';
    child.stdout!.on('data', (b: Buffer) => out.push(b));
    child.stderr!.setEncoding('utf8').on('data', (s: string) => (err += s));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      feeder?.kill('SIGKILL');
    }, 60_000);
    child.on('error', reject);
    child.on('close', (status) => {
      clearTimeout(timer);
      feeder?.kill();
      let maxRss = NaN;
      try {
        maxRss = Number(readFileSync(rssFile, 'utf8')) * 1024;
        rmSync(rssFile);
      } catch {
        // the process died before its exit handler
      }
      resolve({ status, stdout: new Uint8Array(Buffer.concat(out)), stderr: err, maxRss, ms: Date.now() - t0 });
    });
  });
}
