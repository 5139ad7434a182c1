/**
 * What the SQL store (sql-store.ts) asks of a database driver. A store operation is written once, as
 * a generator that yields its statements and receives their results (a {@link Work}); the driver
 * steps it. The SQLite driver is synchronous and steps it in one go, so a whole transaction still
 * runs within one turn of the event loop (nothing else in the process can interleave); the
 * Postgres driver awaits each statement on a pooled connection.
 */

/** A result row, column name → value, as the driver returns it. */
export type Row = Record<string, unknown>;

/**
 * A statement and its parameters: `?` placeholders (the dialect rewrites them; a dialect's own
 * statements may use its native form). `want` is what the caller reads of the result, so a driver
 * can fetch no more: all rows, the first, the count of changed rows, or nothing (`script`: several
 * statements separated by `;`, a migration, run as written without parameters).
 */
export interface Statement {
  sql: string;
  params: readonly unknown[];
  want: 'rows' | 'first' | 'changes' | 'script';
}

/** What a statement answered: its rows (a SELECT, or RETURNING), and how many rows it changed. */
export interface SqlResult {
  rows: Row[];
  changes: number;
}

/** A store operation: yields statements, receives their results, returns its value. */
export type Work<T> = Generator<Statement, T, SqlResult>;

/**
 * How an operation's statements need to run:
 * - `read`: reads, each correct on its own (Postgres: each on any pooled connection; SQLite: a read transaction);
 * - `snapshot`: reads that must agree (a page and its total): one snapshot on both;
 * - `write`: writes whose statements need no transaction around them on Postgres (each is atomic
 *   alone); SQLite puts every write in a write transaction that holds the file's lock from the start;
 * - `transaction`: writes that commit together or not at all, on both.
 */
export type Access = 'read' | 'snapshot' | 'write' | 'transaction';

/** A database behind the SQL store. */
export interface SqlDriver {
  /** Names the database in messages (the SQLite file's path; never a Postgres URL, which may hold a password). */
  readonly label: string;
  /** Runs `work` with the access it needs; driver failures become VoicewireErrors naming `what`. */
  run<T>(what: string, access: Access, work: Work<T>): Promise<T>;
  /** Called once the schema has changed (prepared statements may be stale). */
  schemaChanged(): void;
  close(): Promise<void>;
}

/** The rows of a statement. */
export function* rows(sql: string, ...params: unknown[]): Work<Row[]> {
  return (yield { sql, params, want: 'rows' }).rows;
}

/** The first row of a statement, if any. */
export function* one(sql: string, ...params: unknown[]): Work<Row | undefined> {
  return (yield { sql, params, want: 'first' }).rows[0];
}

/** How many rows a statement changed. */
export function* changes(sql: string, ...params: unknown[]): Work<number> {
  return (yield { sql, params, want: 'changes' }).changes;
}

/** Runs a script (statements separated by `;`, no parameters). */
export function* script(sql: string): Work<void> {
  yield { sql, params: [], want: 'script' };
}

/** Steps `work` with a synchronous `execute` (SQLite): the whole operation in one go. */
export function stepSync<T>(work: Work<T>, execute: (s: Statement) => SqlResult): T {
  let step = work.next();
  while (!step.done) step = work.next(execute(step.value));
  return step.value;
}

/** Steps `work` with an asynchronous `execute` (Postgres). */
export async function stepAsync<T>(work: Work<T>, execute: (s: Statement) => Promise<SqlResult>): Promise<T> {
  let step = work.next();
  while (!step.done) step = work.next(await execute(step.value));
  return step.value;
}
