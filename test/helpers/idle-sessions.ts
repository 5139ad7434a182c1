/**
 * What an idle TTS WebSocket session retains on the server (issue 22): the server runs in a child
 * process (test/helpers/idle-server-child.ts, `--expose-gc`), so its heap holds no client object;
 * this side opens sessions (`setup`, then waits for `ready`) and asks the child for its heap after
 * a full GC. Used by test/server/idle-session-memory.test.ts and bench/idle-heap.ts.
 *
 * The child runs the sources bundled by esbuild as tsup builds dist/ (no `keepNames`), not under
 * tsx: tsx's `keepNames` gives every function expression a `name` property of its own, a
 * dictionary of 256 bytes per closure (~8.7 KiB per session measured, none of it in `voicewire serve`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { WebSocket } from 'ws';

const root = join(import.meta.dirname, '../..');

/** The child's heap after a full GC, bytes. */
export interface HeapFigures {
  heapUsed: number;
  /** The heap's committed size (used, free and fragmented). */
  heapTotal: number;
  external: number;
  arrayBuffers: number;
  rss: number;
}

export interface IdleServer {
  child: ChildProcess;
  /** `ws://127.0.0.1:PORT/api` */
  wsBase: string;
  apiKey: string;
  /** Full GC in the child, then its heap. */
  measure(): Promise<HeapFigures>;
  /** A heap snapshot (after a GC) written to `file`. */
  snapshot(file: string): Promise<void>;
  /** Opens `n` TTS sessions (50 at a time), each set up (`ready` received); rejects if one fails. */
  openIdle(n: number, setup?: Record<string, unknown>): Promise<WebSocket[]>;
  /** Closes `sockets` and waits until each is closed (the server has let its sessions go). */
  closeAll(sockets: WebSocket[]): Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts the child (`bare`: the bare ws server of bench/bare-ws-server.ts, for comparison): the sources bundled (default; the bundle goes to a folder of node_modules, so
 * that its packages resolve as dist/'s do, and is removed on close), or `tsx: true` under tsx.
 */
export async function startIdleServer(options: { tsx?: boolean; bare?: boolean } = {}): Promise<IdleServer> {
  let entry = join(root, 'test/helpers/idle-server-child.ts');
  let bundleDir: string | undefined;
  if (!options.tsx) {
    bundleDir = mkdtempSync(join(root, 'node_modules', '.vw-idle-'));
    const out = join(bundleDir, 'child.mjs');
    await build({ entryPoints: [entry], outfile: out, bundle: true, platform: 'node', format: 'esm', target: 'node20', packages: 'external', logLevel: 'error' });
    entry = out;
  }
  // No bytecode flushing: V8 drops the bytecode of functions unused for a few full GCs (the
  // server's start-up code), which freed megabytes between two measures and hid sessions' memory.
  const child = spawn(process.execPath, ['--expose-gc', '--no-flush-bytecode', ...(options.tsx ? ['--import', 'tsx'] : []), entry, ...(options.bare ? ['--bare'] : [])], {
    cwd: root,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  child.once('exit', () => bundleDir !== undefined && rmSync(bundleDir, { recursive: true, force: true }));
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  let out = '';
  const waiting: Array<(line: string) => void> = [];
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
    for (let i = out.indexOf('\n'); i >= 0; i = out.indexOf('\n')) {
      const line = out.slice(0, i);
      out = out.slice(i + 1);
      waiting.shift()?.(line);
    }
  });
  const next = (): Promise<string> =>
    new Promise((resolve, reject) => {
      waiting.push(resolve);
      child.once('exit', (code) => reject(new Error(`idle server exited ${code}: ${err}`)));
    });
  const sockets: WebSocket[] = [];
  return next().then((line) => {
    const bare = /^listening on (http:\/\/\S+)$/.exec(line);
    const [, wsBase, apiKey] = bare ? ['', bare[1]!.replace(/^http/, 'ws'), 'none'] : (line.split(' ') as [string, string, string]);
    const ask = async (cmd: string): Promise<string> => {
      const answer = next();
      child.stdin!.write(`${cmd}\n`);
      return answer;
    };
    const openOne = (setup: Record<string, unknown>): Promise<WebSocket> =>
      new Promise((resolve, reject) => {
        const ws = new WebSocket(`${wsBase}/speech/tts`, { headers: { 'x-api-key': apiKey }, perMessageDeflate: false });
        sockets.push(ws);
        ws.once('open', () => ws.send(JSON.stringify(setup)));
        ws.on('message', (data: Buffer) => {
          if (String(data).startsWith('{"type":"ready"')) resolve(ws);
          else reject(new Error(`unexpected message before ready: ${String(data).slice(0, 200)}`));
        });
        ws.once('error', reject);
        ws.once('close', (code) => reject(new Error(`closed ${code} before ready`)));
      });
    return {
      child,
      wsBase,
      apiKey,
      measure: async () => JSON.parse(await ask('measure')) as HeapFigures,
      snapshot: async (file) => void (await ask(`snapshot ${file}`)),
      openIdle: async (n, setup = { type: 'setup', output_format: 'pcm' }) => {
        const opened: WebSocket[] = [];
        for (let i = 0; i < n; i += 50) opened.push(...(await Promise.all(Array.from({ length: Math.min(50, n - i) }, () => openOne(setup)))));
        return opened;
      },
      closeAll: async (list) => {
        await Promise.all(list.map((ws) => (ws.readyState === ws.CLOSED ? undefined : new Promise((r) => (ws.once('close', r), ws.close())))));
      },
      close: async () => {
        for (const ws of sockets) ws.terminate();
        const exited = new Promise((r) => (child.exitCode === null ? child.once('exit', r) : r(null)));
        child.stdin!.end();
        const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(kill);
      },
    };
  });
}
