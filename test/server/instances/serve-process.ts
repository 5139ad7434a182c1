/**
 * `voicewire serve` as a child process for the many-instance tests: started on 127.0.0.1:0,
 * ready once it prints its `listening on` line, stopped by SIGTERM (or SIGKILL after a bound).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

const root = join(import.meta.dirname, '../../..');
const main = join(root, 'src/cli/main.ts');

/** A running `voicewire serve`. */
export interface ServeProcess {
  child: ChildProcess;
  base: string;
  wsBase: string;
  stderr(): string;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
  /** SIGTERM, then resolves with the exit code (SIGKILL after `boundMs`: a hang fails the test with null). */
  stop(boundMs?: number): Promise<number | null>;
}

/** Starts `voicewire serve ARGS --port 0 --tts tone --stt tone`; rejects when no `listening on` line comes within 20 s. */
export function startServe(args: string[], env: Record<string, string> = {}): Promise<ServeProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', main, 'serve', '--port', '0', '--tts', 'tone', '--stt', 'tone', ...args], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, VOICEWIRE_LOG_LEVEL: 'warn', ...env },
  });
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`serve did not start in 20 s: ${err}`));
    }, 20_000);
    const early = (code: number | null): void => {
      clearTimeout(timer);
      reject(new Error(`serve exited ${code} before listening: ${err}`));
    };
    child.once('exit', early);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+\/api)\n/.exec(out);
      if (!m) return;
      clearTimeout(timer);
      child.off('exit', early);
      const base = m[1]!;
      resolve({
        child,
        base,
        wsBase: base.replace('http:', 'ws:'),
        stderr: () => err,
        exited,
        async stop(boundMs = 15_000) {
          if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
          child.kill('SIGTERM');
          const kill = setTimeout(() => child.kill('SIGKILL'), boundMs);
          const code = await exited;
          clearTimeout(kill);
          return code;
        },
      });
    });
  });
}

/** Runs `voicewire ARGS` to completion (bounded), returns its stdout; throws on a non-zero exit. */
export function cli(args: string[]): string {
  const r = spawnSync(process.execPath, ['--import', 'tsx', main, ...args], { cwd: root, encoding: 'utf8', timeout: 20_000 });
  if (r.status !== 0) throw new Error(`voicewire ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return r.stdout;
}
