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

  private readonly sqlite: SqliteDriver;

  private constructor(path: string, driver: SqliteDriver, journalMode: string, synchronous: 'NORMAL' | 'FULL', options: SqliteStoreOptions) {
    super({ driver, dialect: SQLITE_DIALECT, purgeIntervalMs: options.purgeIntervalMs ?? 60_000, migrations: options.migrations ?? SQLITE_MIGRATIONS });
    this.sqlite = driver;
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
      return new SqliteStore(path, new SqliteDriver(path, db), mode, effective, options);
    } catch (err) {
      try {
        db?.close();
      } catch {
        // already failing: the first error is the one to report
      }
      throw wrapDriverError(err, `open ${path}`, SQLITE_DIALECT.badInput);
    }
  }

  /** Transactions run on this connection so far: writes asked within one turn of the event loop share one (see SqliteDriver). */
  get transactions(): number {
    return this.sqlite.transactions;
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

/** A store operation waiting for the next write batch (see {@link SqliteDriver}). */
interface Queued {
  what: string;
  access: Access;
  work: Work<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/**
 * One connection, synchronous: each operation runs whole inside one transaction (a write holds the
 * file's write lock from its first statement), its statements prepared once and cached.
 *
 * Settlements are batched per turn of the event loop (issue 34): a write its caller marks `batch`
 * (SqlDriver.run) does not run in its call but joins a queue that runs at the next `setImmediate`,
 * in one write transaction, each operation inside a savepoint of its own: one that throws rolls
 * back to its savepoint and fails alone, the others commit. Each promise resolves only once the
 * COMMIT returned, so "a write that returned is in the WAL" still holds. Any other operation asked
 * while some wait runs at once together with them, in the same transaction and last (order kept:
 * it sees what was asked before it), so nothing a client waits on (a hold before the engine works,
 * a read) is delayed: at 1000 concurrent sessions a turn of the loop lasts tens of ms, and a
 * session's set-up makes several store calls one after the other. BEGIN IMMEDIATE and COMMIT (the
 * WAL frames, the lock) are most of a small write's cost: a batch of 4 costs half as much per
 * operation as 4 transactions, savepoints included (libsql, this machine). A batch of one runs as
 * a plain transaction.
 */
class SqliteDriver implements SqlDriver {
  private db: Db | null;
  private readonly statements = new Map<string, Stmt>();
  private queue: Queued[] = [];
  private scheduled: NodeJS.Immediate | undefined;
  /** Transactions committed or rolled back (each batch is one), for tests and the bench. */
  transactions = 0;

  constructor(
    readonly label: string,
    db: Db,
  ) {
    this.db = db;
  }

  run<T>(what: string, access: Access, work: Work<T>, batch = false): Promise<T> {
    if (!batch && this.queue.length === 0) return this.runNow(what, access, work);
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ what, access, work, resolve: resolve as (value: unknown) => void, reject });
      if (!batch) this.flush();
      else this.scheduled ??= setImmediate(() => this.flush());
    });
  }

  /** One operation in a transaction of its own, now. */
  private async runNow<T>(what: string, access: Access, work: Work<T>): Promise<T> {
    return this.transact(what, access === 'read' || access === 'snapshot' ? 'BEGIN' : 'BEGIN IMMEDIATE', (db) => stepSync(work, (s) => this.execute(db, s)));
  }

  private transact<T>(what: string, begin: string, body: (db: Db) => T): T {
    try {
      const db = this.open();
      db.exec(begin);
      this.transactions++;
      try {
        const result = body(db);
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

  /** Runs the queued operations: one alone as before, several in one write transaction. */
  private flush(): void {
    clearImmediate(this.scheduled);
    this.scheduled = undefined;
    const batch = this.queue;
    this.queue = [];
    if (batch.length === 0) return;
    if (batch.length === 1) {
      const q = batch[0]!;
      this.runNow(q.what, q.access, q.work).then(q.resolve, q.reject);
      return;
    }
    // Each operation's outcome, settled only once the batch's COMMIT (or its failure) is known.
    const outcomes: Array<{ ok: true; value: unknown } | { ok: false; err: unknown }> = [];
    try {
      this.transact(batch.map((q) => q.what).join(', '), 'BEGIN IMMEDIATE', (db) => {
        for (const q of batch) {
          db.exec('SAVEPOINT op');
          try {
            outcomes.push({ ok: true, value: stepSync(q.work, (s) => this.execute(db, s)) });
            db.exec('RELEASE op');
          } catch (err) {
            db.exec('ROLLBACK TO op');
            db.exec('RELEASE op');
            outcomes.push({ ok: false, err: wrapDriverError(err, q.what, SQLITE_DIALECT.badInput) });
          }
        }
      });
    } catch (err) {
      // BEGIN or COMMIT failed (or a savepoint could not be rolled back): nothing was written.
      batch.forEach((q, i) => {
        const o = outcomes[i];
        q.reject(o && !o.ok ? o.err : err);
      });
      return;
    }
    batch.forEach((q, i) => {
      const o = outcomes[i]!;
      if (o.ok) q.resolve(o.value);
      else q.reject(o.err);
    });
  }

  schemaChanged(): void {
    this.statements.clear(); // prepared against the old schema
  }

  async close(): Promise<void> {
    this.flush(); // what was asked before the close is written (or fails) first
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
