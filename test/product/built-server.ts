/**
 * The built product as a stranger runs it: `node dist/cli.js serve` with its default engines, in a
 * child process, with a watchdog that SIGKILLs it past a memory bound (a leaking server must fail
 * the test, not take the machine), and clients that speak the API as real ones do.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { Agent, fetch as undiciFetch } from 'undici';

/**
 * `fetch` that reuses a connection only within 500 ms of its last use. With undici's default (the
 * server's 5 s hint less 1 s), a loaded machine (the suite beside two CPU hogs) made the client
 * reuse a connection just as the server's keep-alive timer closed it: ECONNRESET on a POST, which
 * no client retries. That race is the client's to avoid (real ones retry, or keep their idle time
 * well under the server's); these tests measure the server.
 */
const freshConnections = new Agent({ keepAliveTimeout: 500, keepAliveMaxTimeout: 500 });
export const fetchFresh = ((url: string, init: Parameters<typeof undiciFetch>[1] = {}) => undiciFetch(url, { ...init, dispatcher: freshConnections })) as unknown as typeof fetch;

export const root = fileURLToPath(new URL('../../', import.meta.url));
export const CLI = join(root, 'dist', 'cli.js');
export const built = existsSync(CLI);

/** Open file descriptors of a process (Linux /proc), or NaN once it is gone. */
export function fdsOf(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return NaN;
  }
}

/**
 * Lines of a server's output that only a bug writes: the last resorts of src/server/server.ts
 * (a request or WebSocket route that threw past its handler, an upgrade that failed) and what Node
 * prints for an unhandled rejection or an uncaught exception (the process then ends). A route that
 * needed the last resort answered 500 / 1011 and lived, but it is still a bug.
 */
export const BUG_LINES = /request failed past its handler|websocket route failed|upgrade failed|unhandledRejection|uncaughtException|UnhandledPromiseRejection|Uncaught |triggerUncaughtException|RangeError: Maximum call stack/;

/** The lines of `output` that {@link BUG_LINES} matches. */
export function bugLines(output: string): string[] {
  return output.split('\n').filter((l) => BUG_LINES.test(l));
}

/** Resident memory of a process, bytes (Linux /proc), or NaN once it is gone. */
export function rssOf(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** A running built server. */
export interface BuiltServer {
  child: ChildProcess;
  base: string;
  wsBase: string;
  /** An organization key (x-api-key) made with `voicewire keys create` on the server's data folder. */
  key: string;
  /** Highest RSS the watchdog saw, bytes. */
  peakRss(): number;
  /** Set when the watchdog killed the server for passing `maxRssBytes`. */
  killedForMemory(): string | undefined;
  alive(): boolean;
  output(): string;
  stop(): Promise<number | null>;
}

export interface BuiltServerOptions {
  dataDir: string;
  /** The watchdog's bound: past it the server is SIGKILLed. */
  maxRssBytes: number;
  args?: string[];
  credits?: number;
}

/** Starts `node dist/cli.js serve --port 0 --data DIR` with the default engines. */
export async function startBuiltServer(o: BuiltServerOptions): Promise<BuiltServer> {
  const keyRun = spawnSync(process.execPath, [CLI, 'keys', 'create', '--org', 'strangers', '--credits', String(o.credits ?? 1e9), '--data', o.dataDir], { encoding: 'utf8', timeout: 120_000 });
  // A generous bound: beside two CPU hogs starting node and the store took over 30 s.
  if (keyRun.status !== 0) throw new Error(`keys create failed (status ${keyRun.status}, signal ${keyRun.signal}, ${keyRun.error?.message ?? 'no spawn error'}): ${keyRun.stderr}`);
  const key = keyRun.stdout.trim().split('\n').at(-1)!;
  const child = spawn(process.execPath, [CLI, 'serve', '--port', '0', '--data', o.dataDir, ...(o.args ?? [])], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, VOICEWIRE_LOG_LEVEL: 'warn' },
  });
  let out = '';
  // Both pipes are read to the end: a full pipe would block the server's logger.
  child.stdout!.on('data', (d: Buffer) => (out.length < 1 << 20 ? (out += d.toString()) : undefined));
  child.stderr!.on('data', (d: Buffer) => (out.length < 1 << 20 ? (out += d.toString()) : undefined));
  let peak = 0;
  let killed: string | undefined;
  const watchdog = setInterval(() => {
    const rss = rssOf(child.pid!);
    if (rss > peak) peak = rss;
    if (rss > o.maxRssBytes) {
      killed = `server RSS ${(rss / 2 ** 20).toFixed(0)} MB passed the test's bound of ${(o.maxRssBytes / 2 ** 20).toFixed(0)} MB: killed`;
      child.kill('SIGKILL');
    }
  }, 100);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => (clearInterval(watchdog), resolve(code))));
  const base = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`serve did not start in 120 s:\n${out}`)), 120_000);
    child.once('exit', (code) => reject(new Error(`serve exited ${code} before listening:\n${out}`)));
    child.stdout!.on('data', () => {
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+\/api)/.exec(out);
      if (m) {
        clearTimeout(t);
        resolve(m[1]!);
      }
    });
  });
  return {
    child,
    base,
    wsBase: base.replace('http:', 'ws:'),
    key,
    peakRss: () => peak,
    killedForMemory: () => killed,
    alive: () => child.exitCode === null && child.signalCode === null,
    output: () => out,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const k = setTimeout(() => child.kill('SIGKILL'), 20_000);
      const code = await exited;
      clearTimeout(k);
      return code;
    },
  };
}

/**
 * Stops `s` (SIGTERM, drain) and removes `dir`; throws when the watchdog killed it for its memory or
 * it exited other than 0. The afterAll of every suite that starts one (plain errors: bench scripts
 * import this file outside vitest).
 */
export async function stopBuiltServer(s: BuiltServer | undefined, dir: string | undefined): Promise<void> {
  const code = await s?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  if (s === undefined) return;
  const killed = s.killedForMemory();
  if (killed !== undefined) throw new Error(`the built server was killed for its memory: ${killed}`);
  if (code !== 0) throw new Error(`the built server exited with ${String(code)}, not 0`);
}

/** One WebSocket session: sends `messages` (pipelined, as the Python client does), collects every message until the socket closes. */
export function wsSession(url: string, headers: Record<string, string>, messages: unknown[], timeoutMs = 120_000): Promise<Array<Record<string, unknown>>> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    const got: Array<Record<string, unknown>> = [];
    const t = setTimeout(() => {
      ws.terminate();
      reject(new Error(`session did not end in ${timeoutMs} ms; got ${got.map((m) => m.type).join(',')}`));
    }, timeoutMs);
    ws.on('open', () => {
      for (const m of messages) ws.send(JSON.stringify(m));
    });
    ws.on('message', (d) => got.push(JSON.parse(d.toString()) as Record<string, unknown>));
    ws.on('error', (e) => (clearTimeout(t), reject(e)));
    ws.on('close', () => (clearTimeout(t), resolve(got)));
  });
}

/** Runs `task(i)` for i in [0, n), `concurrency` at a time. */
export async function pool(n: number, concurrency: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < n) await task(next++);
  }));
}

/** The STT WebSocket messages of a WAV file sent as the Python client does: 4096-byte base64 chunks. */
export function sttMessages(wav: Uint8Array): unknown[] {
  const msgs: unknown[] = [{ type: 'setup', model_name: 'default', input_format: 'wav' }];
  for (let i = 0; i < wav.length; i += 4096) msgs.push({ type: 'audio', audio: Buffer.from(wav.subarray(i, i + 4096)).toString('base64') });
  msgs.push({ type: 'end_of_stream' });
  return msgs;
}

/** The first `seconds` of a 16-bit mono WAV, as a WAV (exact sizes). */
export function wavHead(wav: Buffer, seconds: number): Buffer {
  const rate = wav.readUInt32LE(24);
  const dataAt = wav.indexOf('data', 12, 'latin1');
  const n = Math.min(wav.readUInt32LE(dataAt + 4), Math.round(seconds * rate) * 2);
  const out = Buffer.concat([wav.subarray(0, dataAt + 8), wav.subarray(dataAt + 8, dataAt + 8 + n)]);
  out.writeUInt32LE(out.length - 8, 4);
  out.writeUInt32LE(n, dataAt + 4);
  return out;
}
