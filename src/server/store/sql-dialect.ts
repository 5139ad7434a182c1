/**
 * Where SQLite and Postgres differ, in one place: placeholders, booleans, JSON, sums, limits, column
 * types, the errors that are the caller's, and the credit statements, which Postgres writes as
 * one statement each (a data-modifying CTE: one round trip, one implicit transaction) and SQLite as
 * several inside the write transaction its driver holds. Everything else the SQL store
 * (sql-store.ts) writes once, in SQL both understand: `?` placeholders, TRUE/FALSE,
 * `IS NOT DISTINCT FROM`, `ON CONFLICT … DO UPDATE … WHERE`, `RETURNING`.
 */
import { changes, one, type Row, type Work } from './sql-driver.js';
import type { HoldCheckpoint, HoldOwner } from './store.js';
import { holdLost } from './validate.js';

/** What a debit or a hold writes (Store.debitCredits, Store.reserveCredits). */
export interface CreditLine {
  orgId: string;
  amount: number;
  keyId: string | null;
  kind: 'tts' | 'stt';
  units: number;
  at: Date;
  /** A hold's owner: the instance holding it open and what it delivered so far (Store.reserveCredits). */
  owner?: HoldOwner | undefined;
}

/** Column types of the schema (sql-migrations.ts). */
export interface ColumnTypes {
  /** Credits and epoch milliseconds. */
  integer: string;
  /** Units and offsets in seconds. */
  real: string;
  /** Text that listings sort on: bytewise on both. */
  sortedText: string;
  /** `usage.id`, the hold id. */
  usageId: string;
  /** The column that keeps `api_keys` in insertion order, if the database has none of its own (a full line). */
  keySeq: string;
  /** A boolean column, with its default if any. */
  bool(column: string, byDefault?: boolean): string;
  /** A JSON column. */
  json(column: string): string;
}

/** One database's SQL. */
export interface SqlDialect {
  readonly name: 'sqlite' | 'postgres';
  /** The statement with `?` placeholders in the database's own form (cached; SQL never holds data). */
  placeholders(sql: string): string;
  /** A boolean as a parameter. */
  bool(b: boolean): unknown;
  /** A boolean column's value. */
  isTrue(v: unknown): boolean;
  /** The placeholder of a JSON parameter (the JSON is bound as text). */
  readonly json: string;
  /** A JSON column's value. */
  fromJson(v: unknown): unknown;
  /** The sum of a column, 0 over no rows. */
  total(column: string): string;
  /** The LIMIT that means no limit. */
  readonly noLimit: number | null;
  /** The column `api_keys` listings break ties on: insertion order. */
  readonly keyOrder: string;
  /** Text can hold U+0000: where it cannot, an id with one names no row. */
  readonly textHoldsNul: boolean;
  /** Locks the rows a SELECT reads, where other writers could race (empty where the write lock is the file's). */
  readonly forUpdate: string;
  /** As forUpdate, skipping rows another transaction holds (a sweep leaves a hold being settled to its holder). */
  readonly forUpdateSkipLocked: string;
  /** The smaller and the larger of two values (SQLite's scalar MIN/MAX, Postgres's LEAST/GREATEST). */
  readonly least: string;
  readonly greatest: string;
  /** `column` is one of a list of usage ids given as one parameter ({@link idList}). */
  idIn(column: string): string;
  /** The parameter of {@link idIn}. */
  idList(ids: readonly string[]): unknown;
  /** A hold id (decimal text) as a parameter. */
  holdKey(holdId: string): unknown;
  /** A statement that returns a row exactly when `schema_migrations` exists. */
  readonly hasMigrationsTable: string;
  /** Driver error codes that mean the caller's input was wrong, not that the store failed. */
  readonly badInput: RegExp;
  readonly types: ColumnTypes;
  /** Takes `line.amount` credits and writes the usage line, or takes nothing: the remaining balance, or null. */
  debit(line: CreditLine): Work<number | null>;
  /** As debit, the usage line's id too (a new hold). */
  hold(line: CreditLine): Work<{ remaining: number; holdId: string } | null>;
  /**
   * Adds `line.amount` credits and `line.units` to the organization's hold `holdId` (and records
   * `line.owner`'s delivered so far): the remaining balance, or null. A hold held by another than
   * `line.owner` (settled by a sweep): `STORE_UNAVAILABLE`, nothing taken.
   */
  addToHold(line: CreditLine, holdId: string): Work<number | null>;
  /** Records what `holder`'s open holds delivered so far (Store.heartbeat), in one statement where the database allows. */
  checkpoint(holder: string, lines: readonly HoldCheckpoint[]): Work<void>;
}

const DEBIT = 'UPDATE organizations SET remaining_credits = remaining_credits - ? WHERE id = ? AND remaining_credits >= ? RETURNING remaining_credits';
const USAGE = 'INSERT INTO usage (org_id, key_id, kind, units, credits, at, at_ms) VALUES (?, ?, ?, ?, ?, ?, ?)';
const HOLD = 'INSERT INTO usage (org_id, key_id, kind, units, credits, at, at_ms, holder, delivered_units, delivered_credits) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id';

/** A hold's owner columns: its holder, and what it delivered (0 without an owner). */
const ownerParams = (l: CreditLine): [string | null, number, number] => [l.owner?.holder ?? null, l.owner?.delivered.units ?? 0, l.owner?.delivered.credits ?? 0];

/** The embedded SQLite file (sqlite-store.ts): booleans are 0/1, JSON is TEXT checked by json_valid. */
export const SQLITE_DIALECT: SqlDialect = {
  name: 'sqlite',
  placeholders: (sql) => sql,
  bool: (b) => (b ? 1 : 0),
  isTrue: (v) => v === 1,
  json: '?',
  fromJson: (v) => JSON.parse(String(v)),
  // TOTAL is a float and never overflows, where SUM of integers could.
  total: (column) => `TOTAL(${column})`,
  noLimit: -1,
  keyOrder: 'rowid',
  textHoldsNul: true,
  forUpdate: '',
  forUpdateSkipLocked: '',
  least: 'MIN',
  greatest: 'MAX',
  idIn: (column) => `${column} IN (SELECT value FROM json_each(?))`,
  idList: (ids) => JSON.stringify(ids.map(Number)),
  holdKey: Number,
  hasMigrationsTable: "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'",
  badInput: /^SQLITE_(CONSTRAINT|TOOBIG|MISMATCH|RANGE)/,
  types: {
    integer: 'INTEGER',
    real: 'REAL',
    sortedText: 'TEXT',
    usageId: 'INTEGER PRIMARY KEY',
    keySeq: '',
    bool: (column, byDefault) => `INTEGER NOT NULL${byDefault === undefined ? '' : ` DEFAULT ${byDefault ? 1 : 0}`} CHECK (${column} IN (0, 1))`,
    json: (column) => `TEXT NOT NULL CHECK (json_valid(${column}))`,
  },
  // The driver holds the write lock for the whole operation (BEGIN IMMEDIATE), so these run as
  // one: the UPDATE's WHERE makes an overdraft take nothing (issue 13 "debits are atomic").
  *debit(l) {
    const r = yield* one(DEBIT, l.amount, l.orgId, l.amount);
    if (!r) return null;
    yield* changes(USAGE, l.orgId, l.keyId, l.kind, l.units, l.amount, l.at.toISOString(), l.at.getTime());
    return Number(r.remaining_credits);
  },
  *hold(l) {
    const r = yield* one(DEBIT, l.amount, l.orgId, l.amount);
    if (!r) return null;
    const line = (yield* one(HOLD, l.orgId, l.keyId, l.kind, l.units, l.amount, l.at.toISOString(), l.at.getTime(), ...ownerParams(l))) as Row;
    return { remaining: Number(r.remaining_credits), holdId: String(line.id) };
  },
  *addToHold(l, holdId) {
    const line = yield* one('SELECT holder FROM usage WHERE id = ? AND org_id = ?', Number(holdId), l.orgId);
    if (!line) return null;
    const [holder, units, credits] = ownerParams(l);
    if ((line.holder ?? null) !== holder) throw holdLost(holdId);
    const r = yield* one(DEBIT, l.amount, l.orgId, l.amount);
    if (!r) return null;
    yield* changes(
      'UPDATE usage SET credits = credits + ?, units = units + ?, delivered_units = MAX(delivered_units, ?), delivered_credits = MAX(delivered_credits, ?) WHERE id = ?',
      l.amount,
      l.units,
      units,
      credits,
      Number(holdId),
    );
    return Number(r.remaining_credits);
  },
  // One write transaction (the driver's): a statement per hold costs microseconds here.
  *checkpoint(holder, lines) {
    for (const c of lines) {
      yield* changes(
        'UPDATE usage SET delivered_units = MIN(units, MAX(delivered_units, ?)), delivered_credits = MIN(credits, MAX(delivered_credits, ?)) WHERE id = ? AND holder = ?',
        c.units,
        c.credits,
        Number(c.holdId),
        holder,
      );
    }
  },
};

const numbered = new Map<string, string>();

/** A debit's or a new hold's parameters in Postgres's CTEs: $1 amount, $2 org, $3 key, $4 kind, $5 units, $6 at, $7 at (ms). */
const lineParams = (l: CreditLine): unknown[] => [l.amount, l.orgId, l.keyId, l.kind, l.units, l.at.toISOString(), l.at.getTime()];

/**
 * One Postgres database shared by many instances (postgres-store.ts): BOOLEAN, JSONB, `$n`
 * placeholders. Its credit statements are each one statement: the UPDATE takes the row lock and
 * its WHERE refuses an overdraft (a waiting debit re-checks it on the committed balance), and the
 * usage line is written only from the UPDATE's RETURNING, so it exists exactly when credits were taken.
 */
export const POSTGRES_DIALECT: SqlDialect = {
  name: 'postgres',
  placeholders(sql) {
    let out = numbered.get(sql);
    if (out === undefined) {
      let n = 0;
      out = sql.replace(/\?/g, () => `$${++n}`);
      numbered.set(sql, out);
    }
    return out;
  },
  bool: (b) => Boolean(b),
  isTrue: (v) => v === true,
  json: '?::jsonb',
  fromJson: (v) => v,
  total: (column) => `COALESCE(SUM(${column}), 0)`,
  noLimit: null,
  // api_keys.seq stands in for SQLite's rowid (postgres-migrations.ts).
  keyOrder: 'seq',
  // SQLSTATE 22021: Postgres text cannot hold U+0000.
  textHoldsNul: false,
  forUpdate: ' FOR UPDATE',
  forUpdateSkipLocked: ' FOR UPDATE SKIP LOCKED',
  least: 'LEAST',
  greatest: 'GREATEST',
  idIn: (column) => `${column} = ANY(?::bigint[])`,
  idList: (ids) => [...ids],
  holdKey: (holdId) => holdId,
  hasMigrationsTable: "SELECT 1 WHERE to_regclass('schema_migrations') IS NOT NULL",
  // SQLSTATE classes 22 data exception (a NUL byte in text, a number out of range) and 23 integrity
  // constraint violation (a duplicate or a missing parent that raced the store's own checks).
  // PostgreSQL Appendix A.
  badInput: /^(22|23)[0-9A-Z]{3}$/,
  types: {
    integer: 'BIGINT',
    real: 'DOUBLE PRECISION',
    // Bytewise, as SQLite, whatever the database's locale.
    sortedText: 'TEXT COLLATE "C"',
    usageId: 'BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY',
    keySeq: '  seq        BIGINT GENERATED ALWAYS AS IDENTITY,\n',
    bool: (_column, byDefault) => `BOOLEAN NOT NULL${byDefault === undefined ? '' : ` DEFAULT ${byDefault ? 'TRUE' : 'FALSE'}`}`,
    json: () => 'JSONB NOT NULL',
  },
  *debit(l) {
    const r = yield* one(
      `WITH debit AS (
         UPDATE organizations SET remaining_credits = remaining_credits - $1 WHERE id = $2 AND remaining_credits >= $1 RETURNING remaining_credits
       ), line AS (
         INSERT INTO usage (org_id, key_id, kind, units, credits, at, at_ms) SELECT $2, $3, $4, $5, $1, $6, $7 FROM debit
       )
       SELECT remaining_credits FROM debit`,
      ...lineParams(l),
    );
    return r ? Number(r.remaining_credits) : null;
  },
  *hold(l) {
    const r = yield* one(
      `WITH debit AS (
         UPDATE organizations SET remaining_credits = remaining_credits - $1 WHERE id = $2 AND remaining_credits >= $1 RETURNING remaining_credits
       ), line AS (
         INSERT INTO usage (org_id, key_id, kind, units, credits, at, at_ms, holder, delivered_units, delivered_credits)
         SELECT $2, $3, $4, $5, $1, $6, $7, $8, $9, $10 FROM debit RETURNING id
       )
       SELECT debit.remaining_credits, line.id FROM debit, line`,
      ...lineParams(l),
      ...ownerParams(l),
    );
    return r ? { remaining: Number(r.remaining_credits), holdId: String(r.id) } : null;
  },
  // The line is locked first (as a settlement and a sweep lock it: usage line, then organization),
  // so a sweep settling it meanwhile is seen (the lock re-reads the line): then nothing is taken.
  // The balance is lowered only when the organization has that line, held by this owner, and the
  // line grows only from the UPDATE's RETURNING.
  *addToHold(l, holdId) {
    const [holder, units, credits] = ownerParams(l);
    const r = (yield* one(
      `WITH line AS (
         SELECT holder FROM usage WHERE id = $4 AND org_id = $2 FOR UPDATE
       ), debit AS (
         UPDATE organizations SET remaining_credits = remaining_credits - $1
         WHERE id = $2 AND remaining_credits >= $1 AND EXISTS (SELECT 1 FROM line WHERE holder IS NOT DISTINCT FROM $5::text)
         RETURNING remaining_credits
       ), grown AS (
         UPDATE usage SET credits = usage.credits + $1, units = usage.units + $3,
           delivered_units = GREATEST(usage.delivered_units, $6::double precision), delivered_credits = GREATEST(usage.delivered_credits, $7::bigint)
         FROM debit WHERE usage.id = $4 RETURNING usage.id
       )
       SELECT (SELECT remaining_credits FROM debit) AS remaining_credits, EXISTS (SELECT 1 FROM line) AS found,
         EXISTS (SELECT 1 FROM line WHERE holder IS NOT DISTINCT FROM $5::text) AS mine`,
      l.amount,
      l.orgId,
      l.units,
      holdId,
      holder,
      units,
      credits,
    )) as Row;
    if (r.found === true && r.mine !== true) throw holdLost(holdId);
    return r.remaining_credits === null ? null : Number(r.remaining_credits);
  },
  // One statement for every hold of the instance (arrays, unnested).
  *checkpoint(holder, lines) {
    if (lines.length === 0) return;
    yield* changes(
      `UPDATE usage SET delivered_units = LEAST(usage.units, GREATEST(usage.delivered_units, v.units)),
         delivered_credits = LEAST(usage.credits, GREATEST(usage.delivered_credits, v.credits))
       FROM unnest($1::bigint[], $2::double precision[], $3::bigint[]) AS v(id, units, credits)
       WHERE usage.id = v.id AND usage.holder = $4`,
      lines.map((c) => c.holdId),
      lines.map((c) => c.units),
      lines.map((c) => c.credits),
      holder,
    );
  },
};
