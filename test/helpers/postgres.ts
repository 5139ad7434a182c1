/**
 * A throwaway Postgres cluster for tests: Debian's `postgresql` binaries (`initdb`, `pg_ctl`),
 * `initdb` into a temp dir, the server on 127.0.0.1 at a free port (its Unix socket in the temp
 * dir too), `fsync=off` unless `durable` (a test cluster need not survive a power cut), stopped and removed at the
 * end. Postgres refuses to run as root, so as root the cluster runs as the `postgres` user
 * (`runuser`), in a temp dir it owns. CI installs `postgresql` (.ci/run); locally, tests use
 * `describe.skipIf(!hasPostgres())(needsPostgres('title'), …)` so a skip says why in its name.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Each pg_ctl/initdb call is bounded: a wedged cluster fails the test, never hangs it. */
const STEP_TIMEOUT_MS = 30_000;

let binCache: string | null | undefined;

/** Debian's `/usr/lib/postgresql/<version>/bin` (newest), or the folder of `initdb` on the PATH; null when absent. */
export function postgresBin(): string | null {
  if (binCache !== undefined) return binCache;
  binCache = null;
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => existsSync(join(root, v, 'bin', 'initdb')) && existsSync(join(root, v, 'bin', 'pg_ctl')))
      .sort((a, b) => Number(b) - Number(a));
    if (versions[0] !== undefined) binCache = join(root, versions[0], 'bin');
  }
  if (binCache === null) {
    const r = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' });
    const path = r.status === 0 ? r.stdout.trim() : '';
    if (path && existsSync(join(path, '..', 'pg_ctl'))) binCache = join(path, '..');
  }
  return binCache;
}

/** True when a cluster can be started here (binaries present; as root, a `postgres` user to run it). */
export function hasPostgres(): boolean {
  if (postgresBin() === null) return false;
  return !isRoot() || spawnSync('id', ['-u', 'postgres'], { stdio: 'ignore' }).status === 0;
}

/** A title that says the test needs Postgres and, when it is missing, that it is skipped and why. */
export function needsPostgres(title: string): string {
  return hasPostgres() ? `${title} (throwaway Postgres cluster)` : `${title} [SKIPPED: Postgres (initdb, pg_ctl) not installed; CI installs Debian postgresql]`;
}

function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/** A free loopback port (the OS picks it; there is a small window before the cluster binds it). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** A running throwaway cluster. */
export interface PostgresCluster {
  /** `postgres://postgres@127.0.0.1:<port>/<database>`: trust auth, loopback only. */
  url(database?: string): string;
  readonly port: number;
  readonly dir: string;
  /** Stops the server (`pg_ctl stop -m fast`: open connections are cut), keeping the data. */
  stop(): void;
  /** Starts it again on the same port and data. */
  start(): void;
  /** Runs SQL through `psql` (as the superuser), returns its output. */
  psql(sql: string, database?: string): string;
  /** Stops the server and removes the temp dir; idempotent. */
  destroy(): void;
}

/** Options of {@link startPostgres}. */
export interface StartPostgresOptions {
  /** Keep Postgres' own durability (fsync, synchronous commit) as a real server has it: for benchmarks. Default false (tests). */
  durable?: boolean;
}

/** Starts a cluster with one database, `voicewire_test`. Takes about a second or two. */
export async function startPostgres(options: StartPostgresOptions = {}): Promise<PostgresCluster> {
  const bin = postgresBin();
  if (bin === null) throw new Error('Postgres binaries not found (install Debian postgresql)');
  const dir = mkdtempSync(join(tmpdir(), 'vw-pg-'));
  const data = join(dir, 'data');
  const log = join(dir, 'server.log');
  const asUser = isRoot() ? Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()) : null;
  if (asUser !== null) chownSync(dir, asUser, Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim()));
  const run = (tool: string, args: string[]): string => {
    const [cmd, argv] = asUser !== null ? ['runuser', ['-u', 'postgres', '--', join(bin, tool), ...args]] : [join(bin, tool), args];
    const r = spawnSync(cmd, argv, { encoding: 'utf8', timeout: STEP_TIMEOUT_MS, cwd: dir });
    if (r.status !== 0) {
      const serverLog = existsSync(log) ? readFileSync(log, 'utf8').slice(-2000) : '';
      throw new Error(`${tool} ${args.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`}): ${r.stderr}${r.stdout}\n${serverLog}`);
    }
    return r.stdout;
  };
  const port = await freePort();
  // C locale: byte order, as SQLite sorts; --no-sync: a test cluster need not be durable.
  run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-locale', ...(options.durable ? [] : ['--no-sync'])]);
  const fast = options.durable ? [] : ['-c fsync=off', '-c synchronous_commit=off', '-c full_page_writes=off'];
  const serverOptions = [`-p ${port}`, "-c listen_addresses='127.0.0.1'", `-k ${dir}`, ...fast, '-c max_connections=60'].join(' ');
  let running = false;
  const start = (): void => {
    run('pg_ctl', ['start', '-w', '-t', '20', '-D', data, '-l', log, '-o', serverOptions]);
    running = true;
  };
  const stop = (): void => {
    if (!running) return;
    run('pg_ctl', ['stop', '-w', '-t', '20', '-m', 'fast', '-D', data]);
    running = false;
  };
  const psql = (sql: string, database = 'postgres'): string => run('psql', ['-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1', '-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-d', database, '-c', sql]);
  let destroyed = false;
  const destroy = (): void => {
    if (destroyed) return;
    destroyed = true;
    process.off('exit', destroy);
    try {
      if (running) run('pg_ctl', ['stop', '-w', '-t', '10', '-m', 'immediate', '-D', data]);
    } finally {
      running = false;
      rmSync(dir, { recursive: true, force: true });
    }
  };
  // A crashed test run must not leave a postmaster behind.
  process.on('exit', destroy);
  try {
    start();
    psql('CREATE DATABASE voicewire_test');
  } catch (err) {
    destroy();
    throw err;
  }
  return {
    port,
    dir,
    url: (database = 'voicewire_test') => `postgres://postgres@127.0.0.1:${port}/${database}`,
    stop,
    start,
    psql,
    destroy,
  };
}
