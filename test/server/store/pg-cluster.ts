/**
 * A throwaway Postgres cluster for the store tests (issue 16): `initdb` into a temp folder, started
 * by `pg_ctl` listening on a Unix socket in that folder only (no TCP port at all), fsync off, and
 * removed at the end. Postgres refuses to run as root, so as root it runs as the `postgres` user
 * (Debian's `postgresql` package creates it). Debian keeps initdb and pg_ctl off the PATH, in
 * /usr/lib/postgresql/<version>/bin: the newest there is used when the PATH has none.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { has } from '../../helpers/tools.js';

const asRoot = process.getuid?.() === 0;

function postgresUid(): { uid: number; gid: number } | undefined {
  const r = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
  const g = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
  return r.status === 0 && g.status === 0 ? { uid: Number(r.stdout.trim()), gid: Number(g.stdout.trim()) } : undefined;
}

/** The path of a Postgres server tool: on the PATH, else in Debian's versioned folder. */
function pgBin(tool: 'initdb' | 'pg_ctl'): string | undefined {
  if (has(tool)) return tool;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a));
  for (const v of versions) if (existsSync(join(root, v, 'bin', tool))) return join(root, v, 'bin', tool);
  return undefined;
}

/** True when a cluster can be started here: initdb and pg_ctl (and, as root, a `postgres` user). */
export function canRunPostgres(): boolean {
  return pgBin('initdb') !== undefined && pgBin('pg_ctl') !== undefined && (!asRoot || postgresUid() !== undefined);
}

export interface PgCluster {
  /** A connection URL for a fresh database of this cluster. */
  createDatabase(name: string): Promise<string>;
  /** Stops the server (fast shutdown: connections are cut), keeping its files. */
  pause(): void;
  /** Starts it again on the same socket. */
  resume(): void;
  stop(): void;
}

function run(tool: 'initdb' | 'pg_ctl', args: string[]): void {
  const cmd = pgBin(tool)!;
  const full = asRoot ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] as const : ([cmd, args] as const);
  execFileSync(full[0], full[1], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
}

/** Starts a cluster; `fsync: true` keeps Postgres' durability on (benchmarks), off by default (tests). */
export async function startCluster(options: { fsync?: boolean } = {}): Promise<PgCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'vw-pg-'));
  if (asRoot) {
    const pgUser = postgresUid()!;
    chownSync(dir, pgUser.uid, pgUser.gid);
  }
  const data = join(dir, 'data');
  const port = 5432;
  run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale=C']);
  const start = (): void =>
    run('pg_ctl', ['-D', data, '-l', join(dir, 'log'), '-w', '-t', '30', '-o', `-k ${dir} -p ${port} -c listen_addresses= -c fsync=${options.fsync ? 'on' : 'off'} -c max_connections=100`, 'start']);
  start();
  const base = `postgres://postgres@/postgres?host=${encodeURIComponent(dir)}&port=${port}`;
  const { default: pg } = await import('pg');
  return {
    async createDatabase(name: string): Promise<string> {
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      try {
        await c.query(`CREATE DATABASE "${name}"`);
      } finally {
        await c.end();
      }
      return `postgres://postgres@/${name}?host=${encodeURIComponent(dir)}&port=${port}`;
    },
    pause(): void {
      run('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
    },
    resume: start,
    stop(): void {
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
