/**
 * Opens the server's store from the command line's `--data DIR` / `--store URL`
 * (VOICEWIRE_DATA / VOICEWIRE_STORE, resolved by the caller's config). The embedded SQLite file in
 * DATA is the default; `postgres://…` selects Postgres. The server and the `voicewire keys` CLI
 * both get their store here, so both see the same file and the same schema.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve as resolvePath } from 'node:path';
import { describeValue, optionsArg } from '../../util/args.js';
import { VoicewireError, isVoicewireError } from '../../util/errors.js';
import type { PostgresStore } from './postgres-store.js';
import { SqliteStore } from './sqlite-store.js';
import { tighten } from './file-modes.js';
import { storeErrorReason } from './validate.js';
import type { Store } from './store.js';

/** Where the store lives. */
export interface OpenStoreOptions {
  /** Data folder; the SQLite file is `<data>/voicewire.db`. Default `./voicewire-data` (created if missing). */
  data?: string;
  /** A store URL (`sqlite:PATH`, `postgres://…`); wins over `data`. */
  store?: string;
}

/** Default data folder, relative to the working directory. */
export const DEFAULT_DATA_DIR = './voicewire-data';
/** The SQLite file's name inside the data folder. */
export const SQLITE_FILE_NAME = 'voicewire.db';

/** What a store option names, before anything is opened. */
export type StoreLocation = { kind: 'sqlite'; path: string; synchronous?: 'NORMAL' | 'FULL' } | { kind: 'postgres'; url: string };

/**
 * Resolves `--store` / `--data` to a location. `sqlite:PATH` takes PATH as a file path (`sqlite:data/x.db`,
 * `sqlite:/abs/x.db`; `sqlite://` drops the two slashes of URL style, so `sqlite:///abs/x.db` is
 * `/abs/x.db`; `sqlite::memory:` is a private in-memory database). `postgres://` and `postgresql://`
 * name Postgres. A trailing `?synchronous=full` (or `normal`, the default) on a sqlite: URL picks
 * the SQLite durability level (sqlite-store.ts).
 *
 * @throws VoicewireError `INVALID_ARGUMENT` for an empty path or an unknown scheme (the message never
 * repeats the URL: a database URL may hold a password).
 */
export function resolveStoreLocation(options: OpenStoreOptions): StoreLocation {
  options = optionsArg(options, 'store options');
  for (const k of ['store', 'data'] as const) {
    if (options[k] !== undefined && typeof options[k] !== 'string') throw new VoicewireError('INVALID_ARGUMENT', `store options: ${k} must be a string, got ${describeValue(options[k])}`);
  }
  const url = options.store;
  if (url !== undefined && url !== '') {
    if (/^postgres(ql)?:\/\//i.test(url)) return { kind: 'postgres', url };
    const m = /^sqlite:(.*)$/is.exec(url);
    if (!m) {
      const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1];
      throw new VoicewireError('INVALID_ARGUMENT', `--store: ${scheme ? `unknown scheme "${scheme}:"` : 'not a URL'}; use sqlite:PATH or postgres://USER@HOST/DB`);
    }
    let rest = m[1]!.startsWith('//') ? m[1]!.slice(2) : m[1]!;
    let synchronous: 'NORMAL' | 'FULL' | undefined;
    const q = /\?synchronous=([a-z]+)$/i.exec(rest);
    if (q) {
      const level = q[1]!.toUpperCase();
      if (level !== 'NORMAL' && level !== 'FULL') throw new VoicewireError('INVALID_ARGUMENT', `--store: synchronous must be normal or full, got "${q[1]}"`);
      synchronous = level;
      rest = rest.slice(0, q.index);
    }
    if (rest === '') throw new VoicewireError('INVALID_ARGUMENT', '--store: sqlite: needs a file path (sqlite:PATH)');
    return synchronous ? { kind: 'sqlite', path: rest, synchronous } : { kind: 'sqlite', path: rest };
  }
  return { kind: 'sqlite', path: join(options.data || DEFAULT_DATA_DIR, SQLITE_FILE_NAME) };
}

/**
 * Opens the store the options name and brings its schema up to date (migrations run here, so a
 * server and a CLI started on an older file both upgrade it, once).
 *
 * @throws VoicewireError `STORE_UNAVAILABLE` when it cannot be opened (folder not creatable, file not a
 * database, schema newer than this version; Postgres refusing the connection or not answering
 * within the connection timeout); `INVALID_ARGUMENT` for a malformed `--store`.
 */
export async function openStore(options: OpenStoreOptions): Promise<Store> {
  try {
    return await open(options);
  } catch (err) {
    // At start the operator is the one reading: the reason the requests' answers leave out.
    if (isVoicewireError(err, 'STORE_UNAVAILABLE') && err.message === 'store unavailable') {
      throw new VoicewireError('STORE_UNAVAILABLE', `store unavailable: ${storeErrorReason(err)}`, { cause: err });
    }
    throw err;
  }
}

async function open(options: OpenStoreOptions): Promise<Store> {
  const where = resolveStoreLocation(options);
  if (where.kind === 'postgres') {
    // Loaded on demand: a SQLite deployment never loads the pg driver.
    const { PostgresStore: Postgres } = await import('./postgres-store.js');
    // Pool and timeouts at their documented defaults (postgres-store.ts, README "Storage").
    let pg: PostgresStore;
    try {
      pg = new Postgres(where.url);
    } catch (err) {
      // pg parses the URL here; its message may quote the URL, which may hold a password.
      if (isVoicewireError(err)) throw err;
      throw new VoicewireError('INVALID_ARGUMENT', '--store: not a valid postgres:// URL');
    }
    try {
      await pg.migrate();
    } catch (err) {
      await pg.close().catch(() => undefined);
      throw err;
    }
    return pg;
  }
  if (where.path !== ':memory:') {
    const folder = dirname(where.path);
    try {
      // 0700: the folder holds key hashes and usage, the operator's only.
      makeFolder(folder, 0o700);
      // --data names voicewire's own folder: one left looser (a checkout, a cp) is tightened.
      // The folder of a sqlite:PATH may be shared (/tmp, a home): only the files are ours there.
      if (options.store === undefined || options.store === '') tighten(folder, 0o700);
    } catch (cause) {
      throw new VoicewireError('STORE_UNAVAILABLE', `cannot create the data folder ${folder}: ${(cause as Error).message}`, { cause });
    }
  }
  const store = SqliteStore.open(where.path, where.synchronous ? { synchronous: where.synchronous } : {});
  try {
    await store.migrate();
  } catch (err) {
    await store.close().catch(() => undefined);
    throw err;
  }
  return store;
}


/**
 * `mkdir -p` one level at a time. Node's own recursive mkdir never returns under /proc (a folder
 * there cannot be made, yet each attempt reports its parent missing): `serve --data /proc/vw`
 * hung silently (issue 23). Non-recursive calls fail with the real cause instead.
 */
function makeFolder(folder: string, mode: number): void {
  const missing: string[] = [];
  for (let p = resolvePath(folder); !existsSync(p); p = dirname(p)) {
    missing.unshift(p);
    if (dirname(p) === p) break;
  }
  for (const d of missing) mkdirSync(d, { mode });
}
