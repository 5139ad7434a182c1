/**
 * The embedded default store: one SQLite file (`<data>/voicewire.db`), through the `libsql` driver
 * (a better-sqlite3-compatible binding whose prebuilt native library ships as an npm package per
 * platform: no compiler, no download outside the registry; README "Storage").
 *
 * Durability: WAL journal with `synchronous=NORMAL`: a transaction that returned is in the WAL file
 * (the OS has it), so a `kill -9` of the process loses nothing committed and the file is never
 * corrupt; only a power loss or OS crash can roll back the last commits (SQLite "WAL" §
 * "Performance Considerations"). FULL would fsync every commit, and since the driver is
 * synchronous that fsync stalls the event loop: 4 ms at p50 and 20 ms at p99 per debit on this
 * machine's shared disk against 25 µs (bench/store.bench.ts), on every TTS and STT request.
 * `synchronous: 'FULL'` is there for operators who want power-loss durability at that price.
 * Where the file system cannot do WAL the store keeps SQLite's rollback journal with FULL.
 * Concurrency: the driver is synchronous, so within one process every method runs to completion
 * before the next (a debit is atomic by construction); across processes (the `voicewire keys`
 * CLI beside a running server) every write takes the file's write lock up front (BEGIN IMMEDIATE)
 * and waits up to `busyTimeoutMs` for it. That wait blocks the event loop, which is why it is short
 * and why only rare operator commands share the file with the server (many instances: postgres-store.ts).
 */
import { closeSync, existsSync, openSync } from 'node:fs';
import Database from 'libsql';
import { optionsArg, shown, stringArg } from '../../util/args.js';
import { VoicewireError } from '../../util/errors.js';
import { tighten } from './file-modes.js';
import { SQLITE_DIALECT } from './sql-dialect.js';
import { rows, stepSync, type Access, type Row, type SqlDriver, type SqlResult, type Statement, type Work } from './sql-driver.js';
import { SqlStore, wrapDriverError } from './sql-store.js';
import { SQLITE_MIGRATIONS, type Migration } from './sqlite-migrations.js';
import { storeUnavailable } from './validate.js';

type Db = Database.Database;
type Stmt = Database.Statement<unknown[]>;

/** Options of {@link SqliteStore.open}. */
export interface SqliteStoreOptions {
  /** How long a write waits for another process's write lock before failing STORE_UNAVAILABLE. Default 5000 ms. */
  busyTimeoutMs?: number;
  /** Expired tokens and candidates are deleted at most this often, on the next write of either. Default 60,000 ms. */
  purgeIntervalMs?: number;
  /**
   * `NORMAL` (default, WAL): a commit survives a kill -9 of the process; a power loss may roll back
   * the last commits, never corrupt the file. `FULL`: every commit is fsynced, so it survives a
   * power loss too, at the cost of an fsync per write that blocks the event loop (bench/store.bench.ts).
   * Without WAL the store always uses FULL.
   */
  synchronous?: 'FULL' | 'NORMAL';
  /** The migrations to apply (tests pass a longer list to check upgrades). Default: the shipped schema. */
  migrations?: readonly Migration[];
}

export class SqliteStore extends SqlStore {
  /** The file (or `:memory:`). */
  readonly path: string;
  /** `NORMAL` or `FULL` (see {@link SqliteStoreOptions.synchronous}). */
  readonly synchronous: 'NORMAL' | 'FULL';
  /** `wal` where the file system allows it, else the rollback journal SQLite kept (`delete`), `memory` for `:memory:`. */
  readonly journalMode: string;

  private constructor(path: string, db: Db, journalMode: string, synchronous: 'NORMAL' | 'FULL', options: SqliteStoreOptions) {
    super({ driver: new SqliteDriver(path, db), dialect: SQLITE_DIALECT, purgeIntervalMs: options.purgeIntervalMs ?? 60_000, migrations: options.migrations ?? SQLITE_MIGRATIONS });
    this.path = path;
    this.synchronous = synchronous;
    this.journalMode = journalMode;
  }

  /** Opens (creating if missing) the database file; call {@link migrate} before use. */
  static open(path: string, options: SqliteStoreOptions = {}): SqliteStore {
    stringArg(path, 'SqliteStore.open: path');
    options = optionsArg(options, 'SqliteStore.open: options');
    const busy = options.busyTimeoutMs ?? 5000;
    if (!Number.isSafeInteger(busy) || busy < 0) throw new VoicewireError('INVALID_ARGUMENT', `busyTimeoutMs must be a non-negative integer, got ${shown(busy)}`);
    const onDisk = path !== ':memory:';
    let db: Db | undefined;
    try {
      // Created 0600 before SQLite opens it (an empty file is an empty database), so the file and
      // the WAL and SHM SQLite gives its mode are never readable by others, not even for a moment.
      if (onDisk && !existsSync(path)) closeSync(openSync(path, 'wx', 0o600));
      db = new Database(path);
      // Before anything else, so even the journal-mode switch waits for a lock held elsewhere.
      db.pragma(`busy_timeout = ${busy}`);
      const mode = String((db.prepare('PRAGMA journal_mode = WAL').get() as Row).journal_mode).toLowerCase();
      // WAL + NORMAL: commits survive a process crash, the WAL is fsynced at checkpoints.
      // Rollback journal: FULL, the mode SQLite documents as safe there.
      const sync = options.synchronous ?? 'NORMAL';
      if (sync !== 'FULL' && sync !== 'NORMAL') throw new VoicewireError('INVALID_ARGUMENT', `synchronous must be FULL or NORMAL, got ${shown(sync)}`);
      const effective = mode === 'wal' ? sync : 'FULL';
      db.pragma(`synchronous = ${effective}`);
      db.pragma('foreign_keys = ON');
      // Holds key hashes and usage: the operator's only, even when an older copy was looser.
      if (onDisk) for (const f of [path, `${path}-wal`, `${path}-shm`, `${path}-journal`]) tighten(f, 0o600);
      return new SqliteStore(path, db, mode, effective, options);
    } catch (err) {
      try {
        db?.close();
      } catch {
        // already failing: the first error is the one to report
      }
      throw wrapDriverError(err, `open ${path}`, SQLITE_DIALECT.badInput);
    }
  }

  /** Problems `PRAGMA integrity_check` and `foreign_key_check` find; empty when the file is sound. */
  async integrityCheck(): Promise<string[]> {
    return this.run('integrityCheck', 'read', function* () {
      const problems = (yield* rows('PRAGMA integrity_check')).map((r) => String(r.integrity_check)).filter((s) => s !== 'ok');
      for (const r of yield* rows('PRAGMA foreign_key_check')) problems.push(`foreign key: ${r.table} row ${r.rowid} -> ${r.parent}`);
      return problems;
    });
  }
}

/**
 * One connection, synchronous: each operation runs whole inside one transaction (a write holds the
 * file's write lock from its first statement), its statements prepared once and cached.
 */
class SqliteDriver implements SqlDriver {
  private db: Db | null;
  private readonly statements = new Map<string, Stmt>();

  constructor(
    readonly label: string,
    db: Db,
  ) {
    this.db = db;
  }

  async run<T>(what: string, access: Access, work: Work<T>): Promise<T> {
    // Reads get a read transaction: their statements see one snapshot (a listing's page and total agree).
    const begin = access === 'read' || access === 'snapshot' ? 'BEGIN' : 'BEGIN IMMEDIATE';
    try {
      const db = this.open();
      db.exec(begin);
      try {
        const result = stepSync(work, (s) => this.execute(db, s));
        db.exec('COMMIT');
        return result;
      } catch (err) {
        if (db.inTransaction) db.exec('ROLLBACK');
        throw err;
      }
    } catch (err) {
      throw wrapDriverError(err, what, SQLITE_DIALECT.badInput);
    }
  }

  schemaChanged(): void {
    this.statements.clear(); // prepared against the old schema
  }

  async close(): Promise<void> {
    const db = this.db;
    this.db = null;
    this.statements.clear();
    if (db) {
      try {
        db.close();
      } catch (err) {
        throw wrapDriverError(err, 'close', SQLITE_DIALECT.badInput);
      }
    }
  }

  private execute(db: Db, s: Statement): SqlResult {
    if (s.want === 'script') {
      db.exec(s.sql);
      return { rows: [], changes: 0 };
    }
    let stmt = this.statements.get(s.sql);
    if (!stmt) {
      stmt = db.prepare(s.sql);
      this.statements.set(s.sql, stmt);
    }
    if (s.want === 'changes') return { rows: [], changes: stmt.run(...s.params).changes };
    if (s.want === 'rows') return { rows: stmt.all(...s.params) as Row[], changes: 0 };
    // All of a write's changes happen at its first step, RETURNING or not (SQLite "RETURNING" §4).
    const row = stmt.get(...s.params) as Row | undefined;
    return { rows: row ? [row] : [], changes: 0 };
  }

  private open(): Db {
    if (!this.db) throw storeUnavailable('open', `${this.label}: the store is closed`);
    return this.db;
  }
}
