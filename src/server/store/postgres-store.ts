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
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { optionsArg, shown, stringArg } from '../../util/args.js';
import { VoicewireError } from '../../util/errors.js';
import { POSTGRES_MIGRATIONS } from './postgres-migrations.js';
import type { Migration } from './sqlite-migrations.js';
import type {
  ApiKeyRecord,
  CandidateRecord,
  DictionaryRecord,
  Organization,
  Page,
  PronunciationRule,
  Store,
  TokenRecord,
  UsageRecord,
  UsageSummary,
  VoiceRecord,
} from './store.js';
import {
  checkCandidates,
  checkCredits,
  checkDictionary,
  checkId,
  checkKind,
  checkListOptions,
  checkNewApiKey,
  checkNewOrganization,
  checkNow,
  checkText,
  checkTime,
  checkToken,
  checkUnits,
  checkUsage,
  checkHoldId,
  checkCharge,
  unknownHold,
  checkVoice,
  checkVoicePatch,
  duplicate,
  ownedByAnother,
  adminToken,
  storeRefused,
  storeUnavailable,
  toJson,
  unknownKey,
  unknownOrganization,
} from './validate.js';

type Row = Record<string, unknown>;
type Queryable = Pick<pg.PoolClient, 'query'>;

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

/**
 * SQLSTATE classes that mean the caller's input was wrong, not that the store failed: 22 data
 * exception (a NUL byte in text, a number out of range), 23 integrity constraint violation (a
 * duplicate or a missing parent that raced the store's own checks). PostgreSQL Appendix A.
 */
const BAD_INPUT = /^(22|23)[0-9A-Z]{3}$/;

export class PostgresStore implements Store {
  private pool: pg.Pool | null;
  private readonly purgeIntervalMs: number;
  private readonly migrations: readonly Migration[];
  private lastPurge = 0;

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
    this.purgeIntervalMs = o.purgeIntervalMs;
    this.migrations = options.migrations ?? POSTGRES_MIGRATIONS;
    this.pool = new pg.Pool({
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
    this.pool.on('error', () => undefined);
  }

  /** Same as `new PostgresStore(url, options)` (the factory form SqliteStore.open has). */
  static open(url: string, options: PostgresStoreOptions = {}): PostgresStore {
    return new PostgresStore(url, options);
  }

  async migrate(): Promise<void> {
    await this.transaction('migrate', async (c) => {
      // One migrator at a time across instances; released at COMMIT or ROLLBACK.
      await c.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
      await c.query('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)');
      const current = Number((await c.query('SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations')).rows[0].v);
      const latest = this.migrations.at(-1)?.version ?? 0;
      if (current > latest) {
        throw new VoicewireError('STORE_UNAVAILABLE', `postgres: schema version ${current} is newer than this voicewire knows (${latest}); upgrade voicewire`);
      }
      for (const m of this.migrations) {
        if (m.version <= current) continue;
        await c.query(m.sql);
        await c.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [m.version, m.name, new Date().toISOString()]);
      }
    });
  }

  /** The schema version the database is at (0 before the first migration). */
  async schemaVersion(): Promise<number> {
    const r = await this.query('schemaVersion', "SELECT to_regclass('schema_migrations') IS NOT NULL AS exists");
    if (!r[0]!.exists) return 0;
    return Number((await this.query('schemaVersion', 'SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations'))[0]!.v);
  }

  async ping(): Promise<void> {
    await this.query('ping', 'SELECT 1');
  }

  /** Connections open now, idle among them, and calls waiting for one (for metrics). */
  poolStats(): { total: number; idle: number; waiting: number } {
    const p = this.pool;
    return p ? { total: p.totalCount, idle: p.idleCount, waiting: p.waitingCount } : { total: 0, idle: 0, waiting: 0 };
  }

  /** Deletes tokens and candidates expired at `now` (also done on their writes, every `purgeIntervalMs`). */
  async purgeExpired(now: Date = new Date()): Promise<{ tokens: number; candidates: number }> {
    const ms = checkNow(now);
    return this.transaction('purgeExpired', (c) => this.purge(c, ms));
  }

  async close(): Promise<void> {
    const pool = this.pool;
    this.pool = null;
    if (pool) {
      try {
        await pool.end();
      } catch (err) {
        throw wrap(err, 'close');
      }
    }
  }

  // --- organizations and credits -------------------------------------------------------------

  async createOrganization(org: Omit<Organization, 'id' | 'createdAt'> & { id?: string }): Promise<Organization> {
    checkNewOrganization(org);
    const row: Organization = {
      id: org.id ?? randomUUID(),
      name: checkId('organization name', org.name),
      region: org.region ?? null,
      allocatedCredits: checkCredits('allocatedCredits', org.allocatedCredits),
      remainingCredits: checkCredits('remainingCredits', org.remainingCredits),
      billingPeriod: org.billingPeriod,
      nextRolloverDate: org.nextRolloverDate,
      planName: org.planName,
      createdAt: new Date().toISOString(),
    };
    checkId('organization id', row.id);
    await this.transaction('createOrganization', async (c) => {
      if ((await c.query('SELECT 1 FROM organizations WHERE id = $1', [row.id])).rowCount) throw duplicate(`organization ${JSON.stringify(row.id)}`);
      if ((await c.query('SELECT 1 FROM organizations WHERE name = $1', [row.name])).rowCount) throw duplicate(`an organization named ${JSON.stringify(row.name)}`);
      // A concurrent insert of the same id or name fails the UNIQUE constraint (23505): INVALID_ARGUMENT too.
      await c.query(
        `INSERT INTO organizations (id, name, region, allocated_credits, remaining_credits, billing_period, next_rollover_date, plan_name, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        [row.id, row.name, row.region, row.allocatedCredits, row.remainingCredits, row.billingPeriod, row.nextRolloverDate, row.planName, row.createdAt],
      );
    });
    return row;
  }

  async getOrganization(id: string): Promise<Organization | undefined> {
    checkText('organization id', id);
    if (hasNul(id)) return undefined;
    const r = (await this.query('getOrganization', 'SELECT * FROM organizations WHERE id = $1', [id]))[0];
    return r && toOrganization(r);
  }

  async getOrganizationByName(name: string): Promise<Organization | undefined> {
    checkText('organization name', name);
    if (hasNul(name)) return undefined;
    const r = (await this.query('getOrganizationByName', 'SELECT * FROM organizations WHERE name = $1', [name]))[0];
    return r && toOrganization(r);
  }

  async countOrganizations(): Promise<number> {
    return Number((await this.query('countOrganizations', 'SELECT COUNT(*) AS n FROM organizations'))[0]!.n);
  }

  async setCredits(orgId: string, allocated: number, remaining: number): Promise<void> {
    checkText('orgId', orgId);
    checkCredits('allocated', allocated);
    checkCredits('remaining', remaining);
    const rows = await this.query('setCredits', 'UPDATE organizations SET allocated_credits = $1, remaining_credits = $2 WHERE id = $3 RETURNING 1', [allocated, remaining, orgId]);
    if (rows.length === 0) throw unknownOrganization(orgId);
  }

  async debitCredits(orgId: string, amount: number, usage: Omit<UsageRecord, 'orgId' | 'credits' | 'at'>): Promise<number | null> {
    checkText('orgId', orgId);
    checkCredits('amount', amount);
    checkUsage(usage);
    const kind = checkKind(usage.kind);
    const units = checkUnits(usage.units);
    const at = new Date();
    // One statement, one transaction: the UPDATE takes the row lock and its WHERE refuses an
    // overdraft (a waiting debit re-checks it on the committed balance); the usage row is written
    // only from the UPDATE's RETURNING, so it exists exactly when credits were taken.
    const rows = await this.query(
      'debitCredits',
      `WITH debit AS (
         UPDATE organizations SET remaining_credits = remaining_credits - $1 WHERE id = $2 AND remaining_credits >= $1 RETURNING remaining_credits
       ), line AS (
         INSERT INTO usage (org_id, key_id, kind, units, credits, at, at_ms) SELECT $2, $3, $4, $5, $1, $6, $7 FROM debit
       )
       SELECT remaining_credits FROM debit`,
      [amount, orgId, usage.keyId ?? null, kind, units, at.toISOString(), at.getTime()],
    );
    return rows[0] ? Number(rows[0].remaining_credits) : null;
  }

  async usageSummary(orgId: string, since: string): Promise<UsageSummary> {
    checkText('orgId', orgId);
    const sinceMs = checkTime('since', since);
    const rows = await this.query(
      'usageSummary',
      'SELECT kind, COALESCE(SUM(units), 0) AS units, COALESCE(SUM(credits), 0) AS credits, COUNT(*) AS requests FROM usage WHERE org_id = $1 AND at_ms >= $2 GROUP BY kind',
      [orgId, sinceMs],
    );
    const sum: UsageSummary = { tts: { units: 0, credits: 0, requests: 0 }, stt: { units: 0, credits: 0, requests: 0 } };
    for (const r of rows) sum[r.kind as 'tts' | 'stt'] = { units: Number(r.units), credits: Number(r.credits), requests: Number(r.requests) };
    return sum;
  }

  // --- API keys and tokens -------------------------------------------------------------------

  async createApiKey(key: Omit<ApiKeyRecord, 'createdAt' | 'revoked'>): Promise<ApiKeyRecord> {
    checkNewApiKey(key);
    const row: ApiKeyRecord = { id: key.id, orgId: key.orgId, hash: key.hash, admin: key.admin, revoked: false, prefix: key.prefix, createdAt: new Date().toISOString() };
    await this.transaction('createApiKey', async (c) => {
      if (row.orgId !== null && !(await c.query('SELECT 1 FROM organizations WHERE id = $1', [row.orgId])).rowCount) throw unknownOrganization(row.orgId);
      if ((await c.query('SELECT 1 FROM api_keys WHERE id = $1 OR hash = $2', [row.id, row.hash])).rowCount) throw duplicate('an API key with this id or hash');
      await c.query('INSERT INTO api_keys (id, org_id, hash, admin, revoked, prefix, created_at) VALUES ($1, $2, $3, $4, FALSE, $5, $6)', [
        row.id,
        row.orgId,
        row.hash,
        row.admin,
        row.prefix,
        row.createdAt,
      ]);
    });
    return row;
  }

  async findApiKeyByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    checkText('key hash', hash);
    const r = (await this.query('findApiKeyByHash', 'SELECT * FROM api_keys WHERE hash = $1', [hash]))[0];
    return r && toApiKey(r);
  }

  async getApiKey(id: string): Promise<ApiKeyRecord | undefined> {
    checkText('key id', id);
    if (hasNul(id)) return undefined;
    const r = (await this.query('getApiKey', 'SELECT * FROM api_keys WHERE id = $1', [id]))[0];
    return r && toApiKey(r);
  }

  async listApiKeys(orgId?: string): Promise<ApiKeyRecord[]> {
    if (orgId !== undefined) checkText('orgId', orgId);
    const rows =
      orgId === undefined
        ? await this.query('listApiKeys', 'SELECT * FROM api_keys ORDER BY created_at, seq')
        : await this.query('listApiKeys', 'SELECT * FROM api_keys WHERE org_id = $1 ORDER BY created_at, seq', [orgId]);
    return rows.map(toApiKey);
  }

  async revokeApiKey(id: string): Promise<boolean> {
    checkText('key id', id);
    if (hasNul(id)) return false;
    return (await this.query('revokeApiKey', 'UPDATE api_keys SET revoked = TRUE WHERE id = $1 RETURNING 1', [id])).length > 0;
  }

  async createToken(token: TokenRecord): Promise<void> {
    const expiresMs = checkToken(token);
    await this.transaction('createToken', async (c) => {
      await this.maybePurge(c);
      const key = (await c.query('SELECT admin FROM api_keys WHERE id = $1', [token.keyId])).rows[0] as Row | undefined;
      if (!key) throw unknownKey(token.keyId);
      if (key.admin === true) throw adminToken(token.keyId);
      if ((await c.query('SELECT 1 FROM tokens WHERE hash = $1', [token.hash])).rowCount) throw duplicate('a token with this hash');
      await c.query('INSERT INTO tokens (hash, key_id, expires_at, expires_ms) VALUES ($1, $2, $3, $4)', [token.hash, token.keyId, token.expiresAt, expiresMs]);
    });
  }

  async findToken(hash: string, now: Date): Promise<TokenRecord | undefined> {
    checkText('token hash', hash);
    const ms = checkNow(now);
    const r = (await this.query('findToken', 'SELECT hash, key_id, expires_at FROM tokens WHERE hash = $1 AND expires_ms > $2', [hash, ms]))[0];
    return r && { hash: String(r.hash), keyId: String(r.key_id), expiresAt: String(r.expires_at) };
  }

  // --- voices --------------------------------------------------------------------------------

  async listVoices(orgId: string, options: { includeCatalog: boolean; limit: number | null; offset: number }): Promise<Page<VoiceRecord>> {
    checkText('orgId', orgId);
    checkListOptions(options, 'voices');
    const catalog = options.includeCatalog;
    // One snapshot for the total and the page (REPEATABLE READ), as SQLite's read transaction.
    return this.transaction(
      'listVoices',
      async (c) => {
        const total = Number((await c.query('SELECT COUNT(*) AS n FROM voices WHERE org_id = $1 OR ($2 AND org_id IS NULL)', [orgId, catalog])).rows[0].n);
        // Catalog first (NULL org), then by creation (store.ts listVoices). LIMIT NULL: no limit.
        const rows = (
          await c.query('SELECT * FROM voices WHERE org_id = $1 OR ($2 AND org_id IS NULL) ORDER BY org_id IS NOT NULL, created_at, uid LIMIT $3 OFFSET $4', [
            orgId,
            catalog,
            options.limit,
            options.offset,
          ])
        ).rows as Row[];
        return { items: rows.map(toVoice), total };
      },
      'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
    );
  }

  async getVoice(orgId: string, uid: string): Promise<VoiceRecord | undefined> {
    checkText('orgId', orgId);
    checkText('voice uid', uid);
    if (hasNul(orgId, uid)) return undefined;
    const r = (await this.query('getVoice', 'SELECT * FROM voices WHERE uid = $1 AND (org_id = $2 OR org_id IS NULL)', [uid, orgId]))[0];
    return r && toVoice(r);
  }

  async putVoice(voice: VoiceRecord): Promise<void> {
    checkVoice(voice);
    const tags = toJson('tags', voice.tags);
    const params = toJson('params', voice.params);
    await this.transaction('putVoice', async (c) => {
      if (voice.orgId !== null && !(await c.query('SELECT 1 FROM organizations WHERE id = $1', [voice.orgId])).rowCount) throw unknownOrganization(voice.orgId);
      // Upsert by uid, but never across owners: the WHERE leaves another organization's row alone.
      const r = await c.query(
        `INSERT INTO voices (uid, org_id, name, description, language, filename, start_s, tags, is_pro_clone, params, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10::jsonb, $11)
         ON CONFLICT (uid) DO UPDATE SET name = excluded.name, description = excluded.description, language = excluded.language,
           filename = excluded.filename, start_s = excluded.start_s, tags = excluded.tags, is_pro_clone = excluded.is_pro_clone,
           params = excluded.params, created_at = excluded.created_at
         WHERE voices.org_id IS NOT DISTINCT FROM excluded.org_id`,
        [voice.uid, voice.orgId, voice.name, voice.description, voice.language, voice.filename, voice.startS, tags, Boolean(voice.isProClone), params, voice.createdAt],
      );
      if (r.rowCount === 0) throw ownedByAnother('voice', voice.uid);
    });
  }

  async updateVoice(orgId: string, uid: string, patch: Partial<Pick<VoiceRecord, 'name' | 'description' | 'tags'>>): Promise<VoiceRecord | undefined> {
    checkText('orgId', orgId);
    checkText('voice uid', uid);
    checkVoicePatch(patch);
    if (hasNul(orgId, uid)) return undefined;
    const tags = patch.tags === undefined ? null : toJson('tags', patch.tags);
    // COALESCE keeps what the patch leaves out; catalog voices (NULL org) never match.
    const r = (
      await this.query(
        'updateVoice',
        'UPDATE voices SET name = COALESCE($1, name), description = COALESCE($2, description), tags = COALESCE($3::jsonb, tags) WHERE uid = $4 AND org_id = $5 RETURNING *',
        [patch.name ?? null, patch.description ?? null, tags, uid, orgId],
      )
    )[0];
    return r && toVoice(r);
  }

  async deleteVoice(orgId: string, uid: string): Promise<boolean> {
    checkText('orgId', orgId);
    checkText('voice uid', uid);
    if (hasNul(orgId, uid)) return false;
    return (await this.query('deleteVoice', 'DELETE FROM voices WHERE uid = $1 AND org_id = $2 RETURNING 1', [uid, orgId])).length > 0;
  }

  // --- voice-design candidates ---------------------------------------------------------------

  async putCandidates(candidates: CandidateRecord[]): Promise<void> {
    checkCandidates(candidates);
    const rows = candidates.map((c) => ({ c, expiresMs: checkTime('expiresAt', c.expiresAt), params: toJson('params', c.params), id: checkId('embeddingId', c.embeddingId) }));
    // One transaction: a batch with a bad candidate stores none of it.
    await this.transaction('putCandidates', async (db) => {
      await this.maybePurge(db);
      for (const { c, expiresMs, params } of rows) {
        if (!(await db.query('SELECT 1 FROM organizations WHERE id = $1', [c.orgId])).rowCount) throw unknownOrganization(c.orgId);
        const r = await db.query(
          `INSERT INTO candidates (embedding_id, org_id, language, prompt, params, expires_at, expires_ms) VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7)
           ON CONFLICT (embedding_id) DO UPDATE SET language = excluded.language, prompt = excluded.prompt, params = excluded.params,
             expires_at = excluded.expires_at, expires_ms = excluded.expires_ms
           WHERE candidates.org_id = excluded.org_id`,
          [c.embeddingId, c.orgId, c.language, c.prompt, params, c.expiresAt, expiresMs],
        );
        if (r.rowCount === 0) throw ownedByAnother('candidate', c.embeddingId);
      }
    });
  }

  async getCandidate(orgId: string, embeddingId: string, now: Date): Promise<CandidateRecord | undefined> {
    checkText('orgId', orgId);
    checkText('embeddingId', embeddingId);
    const ms = checkNow(now);
    if (hasNul(orgId, embeddingId)) return undefined;
    const r = (await this.query('getCandidate', 'SELECT * FROM candidates WHERE embedding_id = $1 AND org_id = $2 AND expires_ms > $3', [embeddingId, orgId, ms]))[0];
    return (
      r && {
        embeddingId: String(r.embedding_id),
        orgId: String(r.org_id),
        language: String(r.language),
        prompt: String(r.prompt),
        params: r.params as Record<string, unknown>,
        expiresAt: String(r.expires_at),
      }
    );
  }

  async deleteCandidate(orgId: string, embeddingId: string): Promise<boolean> {
    checkText('orgId', orgId);
    checkText('embeddingId', embeddingId);
    if (hasNul(orgId, embeddingId)) return false;
    // An expired candidate is gone (issue 13): deleting it finds nothing.
    return (await this.query('deleteCandidate', 'DELETE FROM candidates WHERE embedding_id = $1 AND org_id = $2 AND expires_ms > $3 RETURNING 1', [embeddingId, orgId, Date.now()])).length > 0;
  }

  // --- pronunciation dictionaries ------------------------------------------------------------

  async listDictionaries(orgId: string, options: { limit: number; offset: number }): Promise<Page<DictionaryRecord>> {
    checkText('orgId', orgId);
    checkListOptions(options, 'dictionaries');
    return this.transaction(
      'listDictionaries',
      async (c) => {
        const total = Number((await c.query('SELECT COUNT(*) AS n FROM dictionaries WHERE org_id = $1', [orgId])).rows[0].n);
        const rows = (await c.query('SELECT * FROM dictionaries WHERE org_id = $1 ORDER BY created_at, uid LIMIT $2 OFFSET $3', [orgId, options.limit, options.offset])).rows as Row[];
        return { items: rows.map(toDictionary), total };
      },
      'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
    );
  }

  async getDictionary(orgId: string, uid: string): Promise<DictionaryRecord | undefined> {
    checkText('orgId', orgId);
    checkText('dictionary uid', uid);
    if (hasNul(orgId, uid)) return undefined;
    const r = (await this.query('getDictionary', 'SELECT * FROM dictionaries WHERE uid = $1 AND org_id = $2', [uid, orgId]))[0];
    return r && toDictionary(r);
  }

  async putDictionary(d: DictionaryRecord): Promise<void> {
    checkDictionary(d);
    const rules = toJson('rules', d.rules);
    await this.transaction('putDictionary', async (c) => {
      if (!(await c.query('SELECT 1 FROM organizations WHERE id = $1', [d.orgId])).rowCount) throw unknownOrganization(d.orgId);
      const r = await c.query(
        `INSERT INTO dictionaries (uid, org_id, name, language, description, rules, created_at) VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7)
         ON CONFLICT (uid) DO UPDATE SET name = excluded.name, language = excluded.language, description = excluded.description,
           rules = excluded.rules, created_at = excluded.created_at
         WHERE dictionaries.org_id = excluded.org_id`,
        [d.uid, d.orgId, d.name, d.language, d.description, rules, d.createdAt],
      );
      if (r.rowCount === 0) throw ownedByAnother('dictionary', d.uid);
    });
  }

  async deleteDictionary(orgId: string, uid: string): Promise<boolean> {
    checkText('orgId', orgId);
    checkText('dictionary uid', uid);
    if (hasNul(orgId, uid)) return false;
    return (await this.query('deleteDictionary', 'DELETE FROM dictionaries WHERE uid = $1 AND org_id = $2 RETURNING 1', [uid, orgId])).length > 0;
  }

  async reserveCredits(orgId: string, amount: number, usage: Omit<UsageRecord, 'orgId' | 'credits' | 'at'>, holdId?: string): Promise<{ remaining: number; holdId: string } | null> {
    checkText('orgId', orgId);
    checkCredits('amount', amount);
    checkUsage(usage);
    const kind = checkKind(usage.kind);
    const units = checkUnits(usage.units);
    const at = new Date();
    if (holdId === undefined) {
      // As a debit: one statement; the hold's usage line is written only from the UPDATE's RETURNING.
      const rows = await this.query(
        'reserveCredits',
        `WITH debit AS (
           UPDATE organizations SET remaining_credits = remaining_credits - $1 WHERE id = $2 AND remaining_credits >= $1 RETURNING remaining_credits
         ), line AS (
           INSERT INTO usage (org_id, key_id, kind, units, credits, at, at_ms) SELECT $2, $3, $4, $5, $1, $6, $7 FROM debit RETURNING id
         )
         SELECT debit.remaining_credits, line.id FROM debit, line`,
        [amount, orgId, usage.keyId ?? null, kind, units, at.toISOString(), at.getTime()],
      );
      return rows[0] ? { remaining: Number(rows[0].remaining_credits), holdId: String(rows[0].id) } : null;
    }
    checkHoldId(holdId);
    // Adding to a hold: the balance is lowered only when the organization has that line, and the
    // line grows only from the UPDATE's RETURNING.
    const rows = await this.query(
      'reserveCredits',
      `WITH debit AS (
         UPDATE organizations SET remaining_credits = remaining_credits - $1
         WHERE id = $2 AND remaining_credits >= $1 AND EXISTS (SELECT 1 FROM usage WHERE id = $4 AND org_id = $2)
         RETURNING remaining_credits
       ), line AS (
         UPDATE usage SET credits = usage.credits + $1, units = usage.units + $3 FROM debit WHERE usage.id = $4 RETURNING usage.id
       )
       SELECT remaining_credits FROM debit`,
      [amount, orgId, units, holdId],
    );
    return rows[0] ? { remaining: Number(rows[0].remaining_credits), holdId } : null;
  }

  async settleCredits(orgId: string, holdId: string, charge: { units: number; credits: number }): Promise<number> {
    checkText('orgId', orgId);
    checkHoldId(holdId);
    checkCharge(charge);
    // The line is locked, the difference refunded and the line lowered (or removed) in one transaction.
    return this.transaction('settleCredits', async (c) => {
      const line = (await c.query('SELECT credits FROM usage WHERE id = $1 AND org_id = $2 FOR UPDATE', [holdId, orgId])).rows[0] as Row | undefined;
      if (!line || Number(line.credits) < charge.credits) throw unknownHold(holdId, charge.credits);
      const r = (await c.query('UPDATE organizations SET remaining_credits = remaining_credits + $1 WHERE id = $2 RETURNING remaining_credits', [Number(line.credits) - charge.credits, orgId])).rows[0] as Row;
      if (charge.credits === 0 && charge.units === 0) await c.query('DELETE FROM usage WHERE id = $1', [holdId]);
      else await c.query('UPDATE usage SET credits = $1, units = $2 WHERE id = $3', [charge.credits, charge.units, holdId]);
      return Number(r.remaining_credits);
    });
  }

  // --- plumbing ------------------------------------------------------------------------------

  private open(): pg.Pool {
    if (!this.pool) throw storeUnavailable('open', 'postgres: the store is closed');
    return this.pool;
  }

  /** One statement on any pooled connection (its own implicit transaction). */
  private async query(what: string, sql: string, params: unknown[] = []): Promise<Row[]> {
    try {
      return (await this.open().query(sql, params)).rows as Row[];
    } catch (err) {
      throw wrap(err, what);
    }
  }

  /** Runs `fn` in a transaction on one pooled connection; a connection that failed is discarded, not reused. */
  private async transaction<T>(what: string, fn: (c: Queryable) => Promise<T>, begin = 'BEGIN'): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.open().connect();
    } catch (err) {
      throw wrap(err, what);
    }
    // A checked-out connection has no pool listener: the server dropping it between two of our
    // queries would emit an unhandled 'error' (a crash). The failing query reports it instead.
    let broken: Error | undefined;
    const onError = (err: Error): void => {
      broken ??= err;
    };
    client.on('error', onError);
    try {
      await client.query(begin);
      const result = await fn(client);
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
      throw wrap(err, what);
    } finally {
      client.off('error', onError);
      client.release(broken);
    }
  }

  private async maybePurge(c: Queryable): Promise<void> {
    const now = Date.now();
    if (now - this.lastPurge < this.purgeIntervalMs) return;
    await this.purge(c, now);
  }

  private async purge(c: Queryable, nowMs: number): Promise<{ tokens: number; candidates: number }> {
    this.lastPurge = nowMs;
    return {
      tokens: (await c.query('DELETE FROM tokens WHERE expires_ms <= $1', [nowMs])).rowCount ?? 0,
      candidates: (await c.query('DELETE FROM candidates WHERE expires_ms <= $1', [nowMs])).rowCount ?? 0,
    };
  }
}

/** Postgres text cannot hold U+0000 (SQLSTATE 22021): an id with it names no row, as on the other stores. */
function hasNul(...ids: string[]): boolean {
  return ids.some((id) => id.includes('\0'));
}

/** Driver failures become STORE_UNAVAILABLE; data and constraint errors are the caller's (INVALID_ARGUMENT). */
function wrap(err: unknown, what: string): VoicewireError {
  if (err instanceof VoicewireError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  const message = err instanceof Error ? err.message || err.constructor.name : String(err);
  if ((typeof code === 'string' && BAD_INPUT.test(code)) || err instanceof TypeError || err instanceof RangeError) {
    return storeRefused(what, message, err);
  }
  return storeUnavailable(what, `${message}${typeof code === 'string' ? ` (${code})` : ''}`, err);
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function toOrganization(r: Row): Organization {
  return {
    id: String(r.id),
    name: String(r.name),
    region: r.region === null ? null : String(r.region),
    allocatedCredits: Number(r.allocated_credits),
    remainingCredits: Number(r.remaining_credits),
    billingPeriod: String(r.billing_period),
    nextRolloverDate: String(r.next_rollover_date),
    planName: String(r.plan_name),
    createdAt: String(r.created_at),
  };
}

function toApiKey(r: Row): ApiKeyRecord {
  return { id: String(r.id), orgId: r.org_id === null ? null : String(r.org_id), hash: String(r.hash), admin: r.admin === true, revoked: r.revoked === true, prefix: String(r.prefix), createdAt: String(r.created_at) };
}

function toVoice(r: Row): VoiceRecord {
  return {
    uid: String(r.uid),
    orgId: r.org_id === null ? null : String(r.org_id),
    name: String(r.name),
    description: String(r.description),
    language: String(r.language),
    filename: String(r.filename),
    startS: Number(r.start_s),
    tags: r.tags as string[],
    isProClone: r.is_pro_clone === true,
    params: r.params as Record<string, unknown>,
    createdAt: String(r.created_at),
  };
}

function toDictionary(r: Row): DictionaryRecord {
  return {
    uid: String(r.uid),
    orgId: String(r.org_id),
    name: String(r.name),
    language: String(r.language),
    description: String(r.description),
    rules: r.rules as PronunciationRule[],
    createdAt: String(r.created_at),
  };
}
