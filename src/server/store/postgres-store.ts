/**
 * The store for many server instances: Postgres through `pg` (the pure-JavaScript client, with a
 * bounded pool). Same schema versions, same contract and same test suite as the SQLite store.
 *
 * Debits are one SQL statement (a CTE that lowers the balance under the row lock and inserts the
 * usage row, or does neither), so two instances spending one organization's budget never go below
 * zero nor spend twice: under READ COMMITTED the second UPDATE waits for the row and re-checks its
 * WHERE against the committed balance. Multi-statement writes (a candidate batch, migrations) run in
 * one transaction on one pooled connection; migrations also take an advisory lock, so instances
 * starting together migrate once.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
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
  checkCredits,
  checkId,
  checkKind,
  checkNow,
  checkPaging,
  checkTime,
  checkUnits,
  duplicate,
  ownedByAnother,
  toJson,
  unknownKey,
  unknownOrganization,
} from './validate.js';

type Row = Record<string, unknown>;

/** Options of {@link PostgresStore.open}. */
export interface PostgresStoreOptions {
  /** Pool bound: connections one instance opens at most. Default 10. */
  maxConnections?: number;
  /** How long a query waits for a free connection or a new one before STORE_UNAVAILABLE. Default 5000 ms. */
  connectTimeoutMs?: number;
  /** Expired tokens and candidates are deleted at most this often, on the next write of either. Default 60,000 ms. */
  purgeIntervalMs?: number;
  migrations?: readonly Migration[];
}

/** Any constant: the advisory lock key that serializes migrations across instances. */
const MIGRATION_LOCK = 7_231_004;

export class PostgresStore implements Store {
  private readonly pool: pg.Pool;
  private closed = false;
  private lastPurge = 0;
  private readonly purgeIntervalMs: number;
  private readonly migrations: readonly Migration[];

  private constructor(pool: pg.Pool, options: PostgresStoreOptions) {
    this.pool = pool;
    this.purgeIntervalMs = options.purgeIntervalMs ?? 60_000;
    this.migrations = options.migrations ?? POSTGRES_MIGRATIONS;
  }

  /** Creates the pool (no connection is made until the first query); call {@link migrate} before use. */
  static open(url: string, options: PostgresStoreOptions = {}): PostgresStore {
    const max = options.maxConnections ?? 10;
    if (!Number.isSafeInteger(max) || max < 1) throw new VoicewireError('INVALID_ARGUMENT', `maxConnections must be a positive integer, got ${String(max)}`);
    const pool = new pg.Pool({ connectionString: url, max, connectionTimeoutMillis: options.connectTimeoutMs ?? 5000, idleTimeoutMillis: 30_000 });
    // An idle connection the server drops (restart, failover) must not crash the process: the next query reconnects.
    pool.on('error', () => undefined);
    return new PostgresStore(pool, options);
  }

  async migrate(): Promise<void> {
    await this.transaction('migrate', async (c) => {
      await c.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
      await c.query('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)');
      const current = Number((await c.query('SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations')).rows[0].v);
      const latest = this.migrations.at(-1)?.version ?? 0;
      if (current > latest) throw new VoicewireError('STORE_UNAVAILABLE', `Postgres schema version ${current} is newer than this voicewire knows (${latest}); upgrade voicewire`);
      for (const m of this.migrations) {
        if (m.version <= current) continue;
        await c.query(m.sql);
        await c.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [m.version, m.name, new Date().toISOString()]);
      }
    });
  }

  async schemaVersion(): Promise<number> {
    const r = await this.query('schemaVersion', "SELECT to_regclass('schema_migrations') IS NOT NULL AS present");
    if (!r[0]!.present) return 0;
    return Number((await this.query('schemaVersion', 'SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations'))[0]!.v);
  }

  async ping(): Promise<void> {
    await this.query('ping', 'SELECT 1');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end().catch((err: unknown) => {
      throw wrap(err, 'close');
    });
  }

  /** Deletes tokens and candidates expired at `now` (also done on their writes, every `purgeIntervalMs`). */
  async purgeExpired(now: Date = new Date()): Promise<{ tokens: number; candidates: number }> {
    return this.purge(checkNow(now));
  }

  // --- organizations and credits -------------------------------------------------------------

  async createOrganization(org: Omit<Organization, 'id' | 'createdAt'> & { id?: string }): Promise<Organization> {
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
    await this.query(
      'createOrganization',
      `INSERT INTO organizations (id, name, region, allocated_credits, remaining_credits, billing_period, next_rollover_date, plan_name, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [row.id, row.name, row.region, row.allocatedCredits, row.remainingCredits, row.billingPeriod, row.nextRolloverDate, row.planName, row.createdAt],
    );
    return row;
  }

  async getOrganization(id: string): Promise<Organization | undefined> {
    const r = await this.query('getOrganization', 'SELECT * FROM organizations WHERE id = $1', [id]);
    return r[0] && toOrganization(r[0]);
  }

  async getOrganizationByName(name: string): Promise<Organization | undefined> {
    const r = await this.query('getOrganizationByName', 'SELECT * FROM organizations WHERE name = $1', [name]);
    return r[0] && toOrganization(r[0]);
  }

  async countOrganizations(): Promise<number> {
    return Number((await this.query('countOrganizations', 'SELECT COUNT(*) AS n FROM organizations'))[0]!.n);
  }

  async setCredits(orgId: string, allocated: number, remaining: number): Promise<void> {
    checkCredits('allocated', allocated);
    checkCredits('remaining', remaining);
    const r = await this.query('setCredits', 'UPDATE organizations SET allocated_credits = $1, remaining_credits = $2 WHERE id = $3 RETURNING id', [allocated, remaining, orgId]);
    if (r.length === 0) throw unknownOrganization(orgId);
  }

  async debitCredits(orgId: string, amount: number, usage: Omit<UsageRecord, 'orgId' | 'credits' | 'at'>): Promise<number | null> {
    checkCredits('amount', amount);
    const kind = checkKind(usage.kind);
    const units = checkUnits(usage.units);
    const at = new Date();
    const r = await this.query(
      'debitCredits',
      `WITH d AS (
         UPDATE organizations SET remaining_credits = remaining_credits - $1 WHERE id = $2 AND remaining_credits >= $1 RETURNING remaining_credits
       ), u AS (
         INSERT INTO usage (org_id, key_id, kind, units, credits, at, at_ms) SELECT $2, $3, $4, $5, $1, $6, $7 FROM d
       )
       SELECT remaining_credits FROM d`,
      [amount, orgId, usage.keyId ?? null, kind, units, at.toISOString(), at.getTime()],
    );
    return r[0] ? Number(r[0].remaining_credits) : null;
  }

  async usageSummary(orgId: string, since: string): Promise<UsageSummary> {
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
    const row: ApiKeyRecord = { id: checkId('key id', key.id), orgId: key.orgId, hash: checkId('key hash', key.hash), admin: Boolean(key.admin), revoked: false, prefix: key.prefix, createdAt: new Date().toISOString() };
    await this.query('createApiKey', 'INSERT INTO api_keys (id, org_id, hash, admin, revoked, prefix, created_at) VALUES ($1, $2, $3, $4, false, $5, $6)', [
      row.id,
      row.orgId,
      row.hash,
      row.admin,
      row.prefix,
      row.createdAt,
    ], { fk: () => unknownOrganization(row.orgId), unique: () => duplicate('an API key with this id or hash') });
    return row;
  }

  async findApiKeyByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    const r = await this.query('findApiKeyByHash', 'SELECT * FROM api_keys WHERE hash = $1', [hash]);
    return r[0] && toApiKey(r[0]);
  }

  async getApiKey(id: string): Promise<ApiKeyRecord | undefined> {
    const r = await this.query('getApiKey', 'SELECT * FROM api_keys WHERE id = $1', [id]);
    return r[0] && toApiKey(r[0]);
  }

  async listApiKeys(orgId?: string): Promise<ApiKeyRecord[]> {
    const rows =
      orgId === undefined
        ? await this.query('listApiKeys', 'SELECT * FROM api_keys ORDER BY created_at COLLATE "C", seq')
        : await this.query('listApiKeys', 'SELECT * FROM api_keys WHERE org_id = $1 ORDER BY created_at COLLATE "C", seq', [orgId]);
    return rows.map(toApiKey);
  }

  async revokeApiKey(id: string): Promise<boolean> {
    return (await this.query('revokeApiKey', 'UPDATE api_keys SET revoked = true WHERE id = $1 RETURNING id', [id])).length > 0;
  }

  async createToken(token: TokenRecord): Promise<void> {
    checkId('token hash', token.hash);
    const expiresMs = checkTime('expiresAt', token.expiresAt);
    await this.maybePurge();
    await this.query('createToken', 'INSERT INTO tokens (hash, key_id, expires_at, expires_ms) VALUES ($1, $2, $3, $4)', [token.hash, token.keyId, token.expiresAt, expiresMs], {
      fk: () => unknownKey(token.keyId),
      unique: () => duplicate('a token with this hash'),
    });
  }

  async findToken(hash: string, now: Date): Promise<TokenRecord | undefined> {
    const ms = checkNow(now);
    const r = await this.query('findToken', 'SELECT hash, key_id, expires_at FROM tokens WHERE hash = $1 AND expires_ms > $2', [hash, ms]);
    return r[0] && { hash: String(r[0].hash), keyId: String(r[0].key_id), expiresAt: String(r[0].expires_at) };
  }

  // --- voices --------------------------------------------------------------------------------

  async listVoices(orgId: string, options: { includeCatalog: boolean; limit: number | null; offset: number }): Promise<Page<VoiceRecord>> {
    checkPaging(options.limit, options.offset);
    // One snapshot for the page and its total.
    return this.transaction(
      'listVoices',
      async (c) => {
        const where = 'WHERE org_id = $1 OR ($2 AND org_id IS NULL)';
        const total = Number((await c.query(`SELECT COUNT(*) AS n FROM voices ${where}`, [orgId, options.includeCatalog])).rows[0].n);
        // LIMIT NULL is no limit in Postgres.
        const rows = (await c.query(`SELECT * FROM voices ${where} ORDER BY org_id IS NOT NULL, created_at COLLATE "C", uid COLLATE "C" LIMIT $3 OFFSET $4`, [orgId, options.includeCatalog, options.limit, options.offset]))
          .rows as Row[];
        return { items: rows.map(toVoice), total };
      },
      'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
    );
  }

  async getVoice(orgId: string, uid: string): Promise<VoiceRecord | undefined> {
    const r = await this.query('getVoice', 'SELECT * FROM voices WHERE uid = $1 AND (org_id = $2 OR org_id IS NULL)', [uid, orgId]);
    return r[0] && toVoice(r[0]);
  }

  async putVoice(voice: VoiceRecord): Promise<void> {
    checkId('voice uid', voice.uid);
    const tags = toJson('tags', voice.tags);
    const params = toJson('params', voice.params);
    const r = await this.query(
      'putVoice',
      `INSERT INTO voices (uid, org_id, name, description, language, filename, start_s, tags, is_pro_clone, params, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10::jsonb, $11)
       ON CONFLICT (uid) DO UPDATE SET name = EXCLUDED.name, description = EXCLUDED.description, language = EXCLUDED.language,
         filename = EXCLUDED.filename, start_s = EXCLUDED.start_s, tags = EXCLUDED.tags, is_pro_clone = EXCLUDED.is_pro_clone,
         params = EXCLUDED.params, created_at = EXCLUDED.created_at
       WHERE voices.org_id IS NOT DISTINCT FROM EXCLUDED.org_id
       RETURNING uid`,
      [voice.uid, voice.orgId, voice.name, voice.description, voice.language, voice.filename, voice.startS, tags, voice.isProClone, params, voice.createdAt],
      { fk: () => unknownOrganization(String(voice.orgId)) },
    );
    if (r.length === 0) throw ownedByAnother('voice', voice.uid);
  }

  async updateVoice(orgId: string, uid: string, patch: Partial<Pick<VoiceRecord, 'name' | 'description' | 'tags'>>): Promise<VoiceRecord | undefined> {
    const tags = patch.tags === undefined ? null : toJson('tags', patch.tags);
    const r = await this.query(
      'updateVoice',
      'UPDATE voices SET name = COALESCE($1, name), description = COALESCE($2, description), tags = COALESCE($3::jsonb, tags) WHERE uid = $4 AND org_id = $5 RETURNING *',
      [patch.name ?? null, patch.description ?? null, tags, uid, orgId],
    );
    return r[0] && toVoice(r[0]);
  }

  async deleteVoice(orgId: string, uid: string): Promise<boolean> {
    return (await this.query('deleteVoice', 'DELETE FROM voices WHERE uid = $1 AND org_id = $2 RETURNING uid', [uid, orgId])).length > 0;
  }

  // --- voice-design candidates ---------------------------------------------------------------

  async putCandidates(candidates: CandidateRecord[]): Promise<void> {
    const rows = candidates.map((c) => ({ c, expiresMs: checkTime('expiresAt', c.expiresAt), params: toJson('params', c.params), id: checkId('embeddingId', c.embeddingId) }));
    await this.maybePurge();
    await this.transaction('putCandidates', async (c) => {
      for (const { c: cand, expiresMs, params } of rows) {
        const r = await c.query(
          `INSERT INTO candidates (embedding_id, org_id, language, prompt, params, expires_at, expires_ms) VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7)
           ON CONFLICT (embedding_id) DO UPDATE SET language = EXCLUDED.language, prompt = EXCLUDED.prompt, params = EXCLUDED.params,
             expires_at = EXCLUDED.expires_at, expires_ms = EXCLUDED.expires_ms
           WHERE candidates.org_id = EXCLUDED.org_id
           RETURNING embedding_id`,
          [cand.embeddingId, cand.orgId, cand.language, cand.prompt, params, cand.expiresAt, expiresMs],
        ).catch((err: unknown) => {
          throw mapConstraint(err, { fk: () => unknownOrganization(cand.orgId) });
        });
        if (r.rowCount === 0) throw ownedByAnother('candidate', cand.embeddingId);
      }
    });
  }

  async getCandidate(orgId: string, embeddingId: string, now: Date): Promise<CandidateRecord | undefined> {
    const ms = checkNow(now);
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
    // An expired candidate is gone (issue 13): deleting it finds nothing.
    return (await this.query('deleteCandidate', 'DELETE FROM candidates WHERE embedding_id = $1 AND org_id = $2 AND expires_ms > $3 RETURNING embedding_id', [embeddingId, orgId, Date.now()])).length > 0;
  }

  // --- pronunciation dictionaries ------------------------------------------------------------

  async listDictionaries(orgId: string, options: { limit: number; offset: number }): Promise<Page<DictionaryRecord>> {
    checkPaging(options.limit, options.offset);
    return this.transaction(
      'listDictionaries',
      async (c) => {
        const total = Number((await c.query('SELECT COUNT(*) AS n FROM dictionaries WHERE org_id = $1', [orgId])).rows[0].n);
        const rows = (await c.query('SELECT * FROM dictionaries WHERE org_id = $1 ORDER BY created_at COLLATE "C", uid COLLATE "C" LIMIT $2 OFFSET $3', [orgId, options.limit, options.offset])).rows as Row[];
        return { items: rows.map(toDictionary), total };
      },
      'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
    );
  }

  async getDictionary(orgId: string, uid: string): Promise<DictionaryRecord | undefined> {
    const r = await this.query('getDictionary', 'SELECT * FROM dictionaries WHERE uid = $1 AND org_id = $2', [uid, orgId]);
    return r[0] && toDictionary(r[0]);
  }

  async putDictionary(d: DictionaryRecord): Promise<void> {
    checkId('dictionary uid', d.uid);
    const rules = toJson('rules', d.rules);
    const r = await this.query(
      'putDictionary',
      `INSERT INTO dictionaries (uid, org_id, name, language, description, rules, created_at) VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7)
       ON CONFLICT (uid) DO UPDATE SET name = EXCLUDED.name, language = EXCLUDED.language, description = EXCLUDED.description,
         rules = EXCLUDED.rules, created_at = EXCLUDED.created_at
       WHERE dictionaries.org_id = EXCLUDED.org_id
       RETURNING uid`,
      [d.uid, d.orgId, d.name, d.language, d.description, rules, d.createdAt],
      { fk: () => unknownOrganization(d.orgId) },
    );
    if (r.length === 0) throw ownedByAnother('dictionary', d.uid);
  }

  async deleteDictionary(orgId: string, uid: string): Promise<boolean> {
    return (await this.query('deleteDictionary', 'DELETE FROM dictionaries WHERE uid = $1 AND org_id = $2 RETURNING uid', [uid, orgId])).length > 0;
  }

  // --- plumbing ------------------------------------------------------------------------------

  private async query(what: string, sql: string, params: unknown[] = [], constraint: ConstraintErrors = {}): Promise<Row[]> {
    if (this.closed) throw new VoicewireError('STORE_UNAVAILABLE', 'the Postgres store is closed');
    try {
      return (await this.pool.query(sql, params)).rows as Row[];
    } catch (err) {
      throw wrap(mapConstraint(err, constraint), what);
    }
  }

  private async transaction<T>(what: string, fn: (c: pg.PoolClient) => Promise<T>, begin = 'BEGIN'): Promise<T> {
    if (this.closed) throw new VoicewireError('STORE_UNAVAILABLE', 'the Postgres store is closed');
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw wrap(err, what);
    }
    let broken = false;
    try {
      await client.query(begin);
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {
        broken = true; // the connection is gone: do not return it to the pool
      });
      throw wrap(err, what);
    } finally {
      client.release(broken);
    }
  }

  private async maybePurge(): Promise<void> {
    if (Date.now() - this.lastPurge < this.purgeIntervalMs) return;
    await this.purge(Date.now());
  }

  private async purge(nowMs: number): Promise<{ tokens: number; candidates: number }> {
    this.lastPurge = nowMs;
    const tokens = await this.query('purge', 'DELETE FROM tokens WHERE expires_ms <= $1 RETURNING 1', [nowMs]);
    const candidates = await this.query('purge', 'DELETE FROM candidates WHERE expires_ms <= $1 RETURNING 1', [nowMs]);
    return { tokens: tokens.length, candidates: candidates.length };
  }
}

interface ConstraintErrors {
  fk?: () => VoicewireError;
  unique?: () => VoicewireError;
}

/** SQLSTATE 23503 (foreign key) and 23505 (unique) as the caller's error, with a message that names the row. */
function mapConstraint(err: unknown, c: ConstraintErrors): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === '23503' && c.fk) return c.fk();
  if (code === '23505') {
    if (c.unique) return c.unique();
    const constraint = String((err as { constraint?: unknown }).constraint ?? '');
    return duplicate(constraint === 'organizations_name_key' ? 'an organization with this name' : constraint === 'organizations_pkey' ? 'an organization with this id' : 'this row');
  }
  return err;
}

/**
 * SQLSTATE class 22 (data exception) and 23 (integrity constraint) are the caller's input
 * (INVALID_ARGUMENT); everything else (no connection, server shutting down, timeouts) is STORE_UNAVAILABLE.
 * Messages never include the connection string.
 */
function wrap(err: unknown, what: string): VoicewireError {
  if (err instanceof VoicewireError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  const message = err instanceof Error ? err.message : String(err);
  if ((typeof code === 'string' && /^2[23]/.test(code)) || err instanceof TypeError || err instanceof RangeError) {
    return new VoicewireError('INVALID_ARGUMENT', `store: ${what}: ${message}`, { cause: err });
  }
  return new VoicewireError('STORE_UNAVAILABLE', `store: ${what} failed: ${message}${typeof code === 'string' ? ` (${code})` : ''}`, { cause: err });
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
  return { id: String(r.id), orgId: String(r.org_id), hash: String(r.hash), admin: r.admin === true, revoked: r.revoked === true, prefix: String(r.prefix), createdAt: String(r.created_at) };
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
