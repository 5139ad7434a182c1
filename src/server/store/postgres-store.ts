/**
 * The store for many server instances: one Postgres database (`--store postgres://USER:PW@HOST:PORT/DB`),
 * through the `pg` driver with a bounded connection pool (README "Storage").
 *
 * Concurrency: every instance talks to the same rows, so nothing here relies on one process. A
 * debit is one SQL statement (the UPDATE whose WHERE refuses an overdraft, and the usage INSERT,
 * in one data-modifying CTE: one implicit transaction); under READ COMMITTED a second debit of
 * the same organization waits for the first's row lock and re-checks the WHERE on the new balance,
 * so concurrent debits never overspend (issue 13 "debits are atomic"). Migrations take an advisory
 * lock, so instances starting together migrate once.
 *
 * Failure: a refused or lost connection, a server shutting down, a timeout → `STORE_UNAVAILABLE`
 * (nothing was spent: a debit either committed or did not). Connection attempts, statements and
 * client-side reads are each bounded by a timeout, so a dead or hung server is reported within
 * seconds, and the pool replaces broken connections on the next call: when the database returns,
 * the same store works again without a restart.
 */
import { AUTH_CHANNEL, announceAuthChange } from './auth-changes.js';
import pg from 'pg';
import { optionsArg, shown, stringArg } from '../../util/args.js';
import { VoicewireError } from '../../util/errors.js';
import { POSTGRES_MIGRATIONS } from './postgres-migrations.js';
import { POSTGRES_DIALECT } from './sql-dialect.js';
import { stepAsync, type Access, type Row, type SqlDriver, type SqlResult, type Statement, type Work } from './sql-driver.js';
import { SqlStore, wrapDriverError } from './sql-store.js';
import type { Migration } from './sqlite-migrations.js';
import { storeUnavailable } from './validate.js';

/** Options of {@link PostgresStore}; every one has a default. */
export interface PostgresStoreOptions {
  /** Most connections this store opens to the server; calls beyond wait for a free one. Default 10. */
  maxConnections?: number;
  /** How long opening a connection (or waiting for a free one in the pool) may take. Default 5000 ms. */
  connectionTimeoutMs?: number;
  /** Server-side `statement_timeout` (includes waiting for a row lock). Default 10,000 ms. */
  statementTimeoutMs?: number;
  /** Client-side bound on one query's answer, for a server that no longer answers at all. Default 15,000 ms. */
  queryTimeoutMs?: number;
  /** An idle pooled connection is closed after this long. Default 30,000 ms. */
  idleTimeoutMs?: number;
  /** Expired tokens and candidates are deleted at most this often, on the next write of either. Default 60,000 ms. */
  purgeIntervalMs?: number;
  /** The migrations to apply (tests pass a longer list to check upgrades). Default: the shipped schema. */
  migrations?: readonly Migration[];
}

/** Defaults of {@link PostgresStoreOptions}, as documented in the README. */
export const POSTGRES_DEFAULTS = {
  maxConnections: 10,
  connectionTimeoutMs: 5000,
  statementTimeoutMs: 10_000,
  queryTimeoutMs: 15_000,
  idleTimeoutMs: 30_000,
  purgeIntervalMs: 60_000,
} as const;

/** Any 32-bit key: the advisory lock migrations hold ("vwmg"). */
const MIGRATION_LOCK = 0x76776d67;

/** The BEGIN of each access that needs a transaction; the others run statement by statement. */
const BEGIN: Partial<Record<Access, string>> = {
  // One snapshot for a page and its total, as SQLite's read transaction.
  snapshot: 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
  transaction: 'BEGIN',
};

export class PostgresStore extends SqlStore {
  private readonly pgDriver: PostgresDriver;

  /**
   * Creates the pool; no connection is opened until the first call. Call {@link migrate} before use
   * (openStore does). The URL is never repeated in an error message (it may hold a password).
   */
  constructor(url: string, options: PostgresStoreOptions = {}) {
    stringArg(url, 'PostgresStore: url');
    options = optionsArg(options, 'PostgresStore: options');
    const o = { ...POSTGRES_DEFAULTS, ...definedOnly(options) };
    for (const [name, value] of Object.entries(o)) {
      if (name === 'migrations') continue;
      const min = name === 'maxConnections' ? 1 : 0;
      if (!Number.isSafeInteger(value) || (value as number) < min) throw new VoicewireError('INVALID_ARGUMENT', `${name} must be an integer >= ${min}, got ${shown(value)}`);
    }
    try {
      // pg's own parser (libpq's URL forms, e.g. `postgres://user@/db?host=/run/postgresql` for a
      // Unix socket), run now so a malformed URL fails here, not on the first query. No connection.
      new pg.Client({ connectionString: url });
    } catch {
      // Never quote the URL: it may hold a password.
      throw new VoicewireError('INVALID_ARGUMENT', 'postgres: not a valid postgres:// URL');
    }
    const pool = new pg.Pool({
      connectionString: url,
      max: o.maxConnections,
      connectionTimeoutMillis: o.connectionTimeoutMs,
      idleTimeoutMillis: o.idleTimeoutMs,
      statement_timeout: o.statementTimeoutMs,
      query_timeout: o.queryTimeoutMs,
      // A transaction left open by a bug must not hold row locks forever.
      idle_in_transaction_session_timeout: o.statementTimeoutMs * 2,
      keepAlive: true,
      application_name: 'voicewire',
    });
    // An idle pooled connection that the server drops (restart, failover) emits 'error'; the pool
    // discards it and opens a new one on the next call. Without a listener Node would crash.
    pool.on('error', () => undefined);
    const driver = new PostgresDriver(pool);
    super({
      driver,
      dialect: POSTGRES_DIALECT,
      purgeIntervalMs: o.purgeIntervalMs,
      migrations: options.migrations ?? POSTGRES_MIGRATIONS,
      migrationLock: { sql: 'SELECT pg_advisory_xact_lock($1)', params: [MIGRATION_LOCK] },
    });
    this.pgDriver = driver;
    this.url = url;
  }

  /** For the LISTEN connection of {@link watchAuthChanges} (never logged: it may hold a password). */
  private readonly url: string;

  /** A revoked key (issue 34): this process's caches forget it, and every instance LISTENing hears it. */
  protected override async authChanged(keyId: string): Promise<void> {
    announceAuthChange(this, keyId);
    const pool = this.pgDriver.pool;
    // The revocation is written: a lost notification leaves the other instances their TTL bound.
    if (pool !== null) await pool.query('SELECT pg_notify($1, $2)', [AUTH_CHANNEL, keyId]).catch(() => undefined);
  }

  /**
   * Hears key changes made by any instance (Postgres LISTEN on a connection of its own, outside
   * the pool) and announces each to this process's authentication caches (auth-changes.ts). A lost
   * connection announces "any key" (the caches forget everything: a notification may have been
   * missed) and reconnects after `retryMs`. Returns the stop.
   */
  watchAuthChanges(retryMs = 1000): () => Promise<void> {
    let client: pg.Client | null = null;
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    const connect = (): void => {
      if (stopped) return;
      const c = new pg.Client({ connectionString: this.url, application_name: 'voicewire-auth-listen', keepAlive: true });
      client = c;
      const lost = (): void => {
        if (client !== c) return;
        client = null;
        c.removeAllListeners();
        c.on('error', () => undefined);
        void c.end().catch(() => undefined);
        announceAuthChange(this, null);
        if (!stopped) timer = setTimeout(connect, retryMs).unref();
      };
      c.on('error', lost);
      c.on('end', lost);
      c.on('notification', (n) => announceAuthChange(this, n.payload ? n.payload : null));
      c.connect()
        .then(() => c.query(`LISTEN ${AUTH_CHANNEL}`))
        // Changes made while it was not listening: forget everything once it listens.
        .then(() => announceAuthChange(this, null))
        .catch(lost);
    };
    connect();
    return async () => {
      stopped = true;
      clearTimeout(timer);
      const c = client;
      client = null;
      if (c !== null) {
        c.removeAllListeners();
        c.on('error', () => undefined);
        await c.end().catch(() => undefined);
      }
    };
  }

  /** Same as `new PostgresStore(url, options)` (the factory form SqliteStore.open has). */
  static open(url: string, options: PostgresStoreOptions = {}): PostgresStore {
    return new PostgresStore(url, options);
  }

  /** Connections open now, idle among them, and calls waiting for one (for metrics). */
  poolStats(): { total: number; idle: number; waiting: number } {
    const p = this.pgDriver.pool;
    return p ? { total: p.totalCount, idle: p.idleCount, waiting: p.waitingCount } : { total: 0, idle: 0, waiting: 0 };
  }
}

/**
 * A bounded pool: statements that stand alone go to any pooled connection (each its own implicit
 * transaction), a transaction holds one connection from BEGIN to COMMIT.
 */
class PostgresDriver implements SqlDriver {
  readonly label = 'postgres';

  constructor(public pool: pg.Pool | null) {}

  async run<T>(what: string, access: Access, work: Work<T>): Promise<T> {
    const begin = BEGIN[access];
    if (begin) return this.transaction(what, begin, work);
    try {
      return await stepAsync(work, (s) => execute(this.open(), s));
    } catch (err) {
      throw wrapDriverError(err, what, POSTGRES_DIALECT.badInput);
    }
  }

  schemaChanged(): void {
    // Statements are not prepared by name: nothing is stale.
  }

  async close(): Promise<void> {
    const pool = this.pool;
    this.pool = null;
    if (pool) {
      try {
        await pool.end();
      } catch (err) {
        throw wrapDriverError(err, 'close', POSTGRES_DIALECT.badInput);
      }
    }
  }

  private open(): pg.Pool {
    if (!this.pool) throw storeUnavailable('open', 'postgres: the store is closed');
    return this.pool;
  }

  /** Runs `work` in a transaction on one pooled connection; a connection that failed is discarded, not reused. */
  private async transaction<T>(what: string, begin: string, work: Work<T>): Promise<T> {
    // A checked-out connection has no pool listener: the server dropping it between two of our
    // queries would emit an unhandled 'error' (a crash). The failing query reports it instead.
    let broken: Error | undefined;
    const onError = (err: Error): void => {
      broken ??= err;
    };
    let client: pg.PoolClient;
    try {
      client = await checkout(this.open(), onError);
    } catch (err) {
      throw wrapDriverError(err, what, POSTGRES_DIALECT.badInput);
    }
    try {
      await client.query(begin);
      const result = await stepAsync(work, (s) => execute(client, s));
      await client.query('COMMIT');
      return result;
    } catch (err) {
      if (err instanceof pg.DatabaseError || err instanceof VoicewireError) {
        // The server answered (or our own check refused): the connection is sound, undo and reuse it.
        try {
          await client.query('ROLLBACK');
        } catch (rollbackError) {
          broken ??= rollbackError as Error;
        }
      } else {
        // Lost, refused or timed out: a ROLLBACK would wait for the same dead server. Destroying the
        // connection ends the transaction server-side.
        broken ??= err instanceof Error ? err : new Error(String(err));
      }
      throw wrapDriverError(err, what, POSTGRES_DIALECT.badInput);
    } finally {
      client.off('error', onError);
      client.release(broken);
    }
  }
}

/**
 * A connection from the pool with `onError` listening from the moment it is handed over: in the
 * pool's own callback, not after an `await` (issue 36: during `pg_ctl stop -m fast` a connection
 * that had just become ready received the server's "terminating connection" in the same read,
 * before the awaiting code could listen, and the unhandled 'error' ended the process).
 */
function checkout(pool: pg.Pool, onError: (err: Error) => void): Promise<pg.PoolClient> {
  return new Promise((resolve, reject) => {
    pool.connect((err, client) => {
      if (err || client === undefined) {
        reject(err ?? new Error('postgres: the pool gave no connection'));
        return;
      }
      client.on('error', onError);
      resolve(client);
    });
  });
}

/** One statement on a pool (any connection) or a checked-out connection. */
async function execute(on: Pick<pg.Pool, 'query'>, s: Statement): Promise<SqlResult> {
  const r = s.want === 'script' ? await on.query(s.sql) : await on.query(POSTGRES_DIALECT.placeholders(s.sql), s.params as unknown[]);
  return { rows: r.rows as Row[], changes: r.rowCount ?? 0 };
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
