/**
 * The store over SQL, written once for SQLite and Postgres: queries, row mapping, input checks and
 * migrations. What differs between the two databases is in their dialect (sql-dialect.ts); how
 * statements reach the database, in their driver (sql-driver.ts; sqlite-store.ts, postgres-store.ts).
 * Every operation runs as one {@link Work} with the access it needs, so on SQLite it is one
 * transaction in one turn of the event loop, and on Postgres one statement where one suffices.
 */
import { announceAuthChange } from './auth-changes.js';
import { randomUUID } from 'node:crypto';
import { VoicewireError } from '../../util/errors.js';
import type { SqlDialect } from './sql-dialect.js';
import { changes, one, rows, script, type Access, type Row, type SqlDriver, type Work } from './sql-driver.js';
import type { Migration } from './sql-migrations.js';
import type {
  ApiKeyRecord,
  CandidateRecord,
  DictionaryRecord,
  Organization,
  Page,
  PronunciationRule,
  HoldCheckpoint,
  HoldOwner,
  Store,
  SweptHold,
  TokenRecord,
  UsageRecord,
  UsageSummary,
  VoiceRecord,
} from './store.js';
import {
  adminToken,
  checkCandidates,
  checkCharge,
  checkCheckpoints,
  checkCredits,
  checkDictionary,
  checkHoldId,
  checkId,
  checkKind,
  checkListOptions,
  checkMs,
  checkNewApiKey,
  checkNewOrganization,
  checkNow,
  checkOwner,
  checkText,
  checkTime,
  checkToken,
  checkUnits,
  checkUsage,
  checkVoice,
  checkVoicePatch,
  duplicate,
  ownedByAnother,
  storeRefused,
  storeUnavailable,
  toJson,
  unknownHold,
  unknownKey,
  unknownOrganization,
} from './validate.js';

/** What {@link SqlStore} is built from. */
export interface SqlStoreParts {
  driver: SqlDriver;
  dialect: SqlDialect;
  /** Expired tokens and candidates are deleted at most this often, on the next write of either. */
  purgeIntervalMs: number;
  migrations: readonly Migration[];
  /** A statement run first in the migration's transaction (Postgres: an advisory lock, so instances starting together migrate once). */
  migrationLock?: { sql: string; params: unknown[] };
}

export class SqlStore implements Store {
  private readonly driver: SqlDriver;
  private readonly d: SqlDialect;
  private readonly purgeIntervalMs: number;
  private readonly migrations: readonly Migration[];
  private readonly migrationLock: { sql: string; params: unknown[] } | undefined;
  private lastPurge = 0;
  private readonly built = new Map<string, string>();

  protected constructor(parts: SqlStoreParts) {
    this.driver = parts.driver;
    this.d = parts.dialect;
    this.purgeIntervalMs = parts.purgeIntervalMs;
    this.migrations = parts.migrations;
    this.migrationLock = parts.migrationLock;
  }

  async migrate(): Promise<void> {
    const label = this.driver.label;
    const migrations = this.migrations;
    const lock = this.migrationLock;
    await this.run('migrate', 'transaction', function* () {
      // One migrator at a time across instances; released at COMMIT or ROLLBACK.
      if (lock) yield* rows(lock.sql, ...lock.params);
      yield* script('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)');
      // Versions may have gaps (two changes made at once each took a number): every known version
      // not yet applied is applied, in order, even one below the highest applied.
      const applied = new Set((yield* rows('SELECT version FROM schema_migrations')).map((r) => Number(r.version)));
      const current = Math.max(0, ...applied);
      const latest = migrations.at(-1)?.version ?? 0;
      if (current > latest) {
        throw new VoicewireError('STORE_UNAVAILABLE', `${label}: schema version ${current} is newer than this voicewire knows (${latest}); upgrade voicewire`);
      }
      for (const m of migrations) {
        if (applied.has(m.version)) continue;
        yield* script(m.sql);
        yield* changes('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)', m.version, m.name, new Date().toISOString());
      }
    });
    this.driver.schemaChanged();
  }

  /** The schema version the database is at (0 before the first migration). */
  async schemaVersion(): Promise<number> {
    const exists = this.d.hasMigrationsTable;
    return this.run('schemaVersion', 'read', function* () {
      if (!(yield* one(exists))) return 0;
      return Number((yield* one('SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations'))!.v);
    });
  }

  async ping(): Promise<void> {
    await this.run('ping', 'read', rows('SELECT 1'));
  }

  /** Deletes tokens and candidates expired at `now` (also done on their writes, every `purgeIntervalMs`). */
  async purgeExpired(now: Date = new Date()): Promise<{ tokens: number; candidates: number }> {
    const ms = checkNow(now);
    return this.run('purgeExpired', 'transaction', this.purge(ms));
  }

  async close(): Promise<void> {
    await this.driver.close();
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
    await this.run('createOrganization', 'transaction', function* () {
      if (yield* one('SELECT 1 FROM organizations WHERE id = ?', row.id)) throw duplicate(`organization ${JSON.stringify(row.id)}`);
      if (yield* one('SELECT 1 FROM organizations WHERE name = ?', row.name)) throw duplicate(`an organization named ${JSON.stringify(row.name)}`);
      // A concurrent insert of the same id or name (Postgres) fails the UNIQUE constraint: INVALID_ARGUMENT too.
      yield* changes(
        `INSERT INTO organizations (id, name, region, allocated_credits, remaining_credits, billing_period, next_rollover_date, plan_name, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        row.id,
        row.name,
        row.region,
        row.allocatedCredits,
        row.remainingCredits,
        row.billingPeriod,
        row.nextRolloverDate,
        row.planName,
        row.createdAt,
      );
    });
    return row;
  }

  async getOrganization(id: string): Promise<Organization | undefined> {
    checkText('organization id', id);
    if (this.namesNoRow(id)) return undefined;
    const r = await this.run('getOrganization', 'read', one('SELECT * FROM organizations WHERE id = ?', id));
    return r && toOrganization(r);
  }

  async getOrganizationByName(name: string): Promise<Organization | undefined> {
    checkText('organization name', name);
    if (this.namesNoRow(name)) return undefined;
    const r = await this.run('getOrganizationByName', 'read', one('SELECT * FROM organizations WHERE name = ?', name));
    return r && toOrganization(r);
  }

  async countOrganizations(): Promise<number> {
    return Number((await this.run('countOrganizations', 'read', one('SELECT COUNT(*) AS n FROM organizations')))!.n);
  }

  async setCredits(orgId: string, allocated: number, remaining: number): Promise<void> {
    checkText('orgId', orgId);
    checkCredits('allocated', allocated);
    checkCredits('remaining', remaining);
    const n = await this.run('setCredits', 'write', changes('UPDATE organizations SET allocated_credits = ?, remaining_credits = ? WHERE id = ?', allocated, remaining, orgId));
    if (n === 0) throw unknownOrganization(orgId);
  }

  async debitCredits(orgId: string, amount: number, usage: Omit<UsageRecord, 'orgId' | 'credits' | 'at'>): Promise<number | null> {
    checkText('orgId', orgId);
    checkCredits('amount', amount);
    checkUsage(usage);
    const line = { orgId, amount, keyId: usage.keyId ?? null, kind: checkKind(usage.kind), units: checkUnits(usage.units), at: new Date() };
    return this.run('debitCredits', 'write', this.d.debit(line));
  }

  async usageSummary(orgId: string, since: string): Promise<UsageSummary> {
    checkText('orgId', orgId);
    const sinceMs = checkTime('since', since);
    const sql = this.sql(
      'usageSummary',
      (d) => `SELECT kind, ${d.total('units')} AS units, ${d.total('credits')} AS credits, COUNT(*) AS requests FROM usage WHERE org_id = ? AND at_ms >= ? GROUP BY kind`,
    );
    const found = await this.run('usageSummary', 'read', rows(sql, orgId, sinceMs));
    const sum: UsageSummary = { tts: { units: 0, credits: 0, requests: 0 }, stt: { units: 0, credits: 0, requests: 0 } };
    for (const r of found) sum[r.kind as 'tts' | 'stt'] = { units: Number(r.units), credits: Number(r.credits), requests: Number(r.requests) };
    return sum;
  }

  async reserveCredits(
    orgId: string,
    amount: number,
    usage: Omit<UsageRecord, 'orgId' | 'credits' | 'at'>,
    holdId?: string,
    owner?: HoldOwner,
  ): Promise<{ remaining: number; holdId: string } | null> {
    checkText('orgId', orgId);
    checkCredits('amount', amount);
    checkUsage(usage);
    const line = { orgId, amount, keyId: usage.keyId ?? null, kind: checkKind(usage.kind), units: checkUnits(usage.units), at: new Date(), owner: checkOwner(owner) };
    if (holdId === undefined) return this.run('reserveCredits', 'write', this.d.hold(line));
    checkHoldId(holdId);
    const remaining = await this.run('reserveCredits', 'write', this.d.addToHold(line, holdId));
    return remaining === null ? null : { remaining, holdId };
  }

  async settleCredits(orgId: string, holdId: string, charge: { units: number; credits: number }, holder?: string): Promise<number> {
    checkText('orgId', orgId);
    checkHoldId(holdId);
    checkCharge(charge);
    if (holder !== undefined) checkId('holder', holder);
    const key = this.d.holdKey(holdId);
    const lineSql = this.sql('settleCredits', (d) => `SELECT credits, holder FROM usage WHERE id = ? AND org_id = ?${d.forUpdate}`);
    // The line is read (and locked, on Postgres), the difference refunded and the line lowered (or
    // removed) in one transaction: both or neither. A sweep locks it too, so one of the two settles.
    return this.run('settleCredits', 'transaction', function* () {
      const line = yield* one(lineSql, key, orgId);
      if (line && holder !== undefined && line.holder !== holder) {
        // Settled by a sweep while this instance was unreachable: that settlement stands.
        return Number((yield* one('SELECT remaining_credits FROM organizations WHERE id = ?', orgId))!.remaining_credits);
      }
      if (!line || Number(line.credits) < charge.credits) throw unknownHold(holdId, charge.credits);
      const r = (yield* one('UPDATE organizations SET remaining_credits = remaining_credits + ? WHERE id = ? RETURNING remaining_credits', Number(line.credits) - charge.credits, orgId)) as Row;
      if (charge.credits === 0 && charge.units === 0) yield* changes('DELETE FROM usage WHERE id = ?', key);
      else yield* changes('UPDATE usage SET credits = ?, units = ?, holder = NULL WHERE id = ?', charge.credits, charge.units, key);
      return Number(r.remaining_credits);
    });
  }

  // --- instances and their open holds (issue 36) ---------------------------------------------

  async heartbeat(instanceId: string, nowMs: number, checkpoints: readonly HoldCheckpoint[]): Promise<void> {
    checkId('instanceId', instanceId);
    checkMs('nowMs', nowMs);
    // Sorted: two writers of the same lines lock them in one order.
    const lines = checkCheckpoints(checkpoints).sort((a, b) => Number(a.holdId) - Number(b.holdId));
    const d = this.d;
    await this.run('heartbeat', 'write', function* () {
      yield* changes('INSERT INTO instances (id, heartbeat_ms) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET heartbeat_ms = excluded.heartbeat_ms', instanceId, nowMs);
      yield* d.checkpoint(instanceId, lines);
    });
  }

  async sweepOrphanHolds(cutoffMs: number): Promise<SweptHold[]> {
    checkMs('cutoffMs', cutoffMs);
    const d = this.d;
    const orphansSql = this.sql(
      'sweepOrphans',
      (d) => `SELECT id, org_id, kind, holder, credits, units, delivered_credits, delivered_units FROM usage
         WHERE holder IS NOT NULL AND at_ms < ? AND NOT EXISTS (SELECT 1 FROM instances WHERE instances.id = usage.holder AND instances.heartbeat_ms >= ?)
         ORDER BY id${d.forUpdateSkipLocked}`,
    );
    const settleSql = this.sql(
      'sweepSettle',
      (d) => `UPDATE usage SET credits = ${d.least}(credits, delivered_credits), units = ${d.least}(units, delivered_units), holder = NULL WHERE ${d.idIn('id')}`,
    );
    const emptySql = this.sql('sweepEmpty', (d) => `DELETE FROM usage WHERE ${d.idIn('id')} AND credits = 0 AND units = 0`);
    // Lines first (locked; on Postgres a line a settlement or a growth holds is skipped, left to
    // its holder), then organizations in id order: the order settlements take them, so two
    // sweeps and a settlement never wait on each other in a circle.
    return this.run('sweepOrphanHolds', 'transaction', function* () {
      const found = yield* rows(orphansSql, cutoffMs, cutoffMs);
      const swept: SweptHold[] = found.map((r) => {
        const held = Number(r.credits);
        const credits = Math.min(held, Number(r.delivered_credits));
        return { holdId: String(r.id), orgId: String(r.org_id), kind: r.kind as 'tts' | 'stt', holder: String(r.holder), held, credits, units: Math.min(Number(r.units), Number(r.delivered_units)) };
      });
      const back = new Map<string, number>();
      for (const h of swept) back.set(h.orgId, (back.get(h.orgId) ?? 0) + h.held - h.credits);
      for (const orgId of [...back.keys()].sort()) {
        const n = back.get(orgId)!;
        if (n > 0) yield* changes('UPDATE organizations SET remaining_credits = remaining_credits + ? WHERE id = ?', n, orgId);
      }
      if (swept.length > 0) {
        const ids = d.idList(swept.map((h) => h.holdId));
        yield* changes(settleSql, ids);
        yield* changes(emptySql, ids);
      }
      yield* changes('DELETE FROM instances WHERE heartbeat_ms < ?', cutoffMs);
      return swept;
    });
  }

  // --- API keys and tokens -------------------------------------------------------------------

  async createApiKey(key: Omit<ApiKeyRecord, 'createdAt' | 'revoked'>): Promise<ApiKeyRecord> {
    checkNewApiKey(key);
    const row: ApiKeyRecord = { id: key.id, orgId: key.orgId, hash: key.hash, admin: key.admin, revoked: false, prefix: key.prefix, createdAt: new Date().toISOString() };
    const admin = this.d.bool(row.admin);
    await this.run('createApiKey', 'transaction', function* () {
      if (row.orgId !== null && !(yield* one('SELECT 1 FROM organizations WHERE id = ?', row.orgId))) throw unknownOrganization(row.orgId);
      if (yield* one('SELECT 1 FROM api_keys WHERE id = ? OR hash = ?', row.id, row.hash)) throw duplicate('an API key with this id or hash');
      yield* changes('INSERT INTO api_keys (id, org_id, hash, admin, revoked, prefix, created_at) VALUES (?, ?, ?, ?, FALSE, ?, ?)', row.id, row.orgId, row.hash, admin, row.prefix, row.createdAt);
    });
    return row;
  }

  async findApiKeyByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    checkText('key hash', hash);
    const r = await this.run('findApiKeyByHash', 'read', one('SELECT * FROM api_keys WHERE hash = ?', hash));
    return r && this.toApiKey(r);
  }

  async getApiKey(id: string): Promise<ApiKeyRecord | undefined> {
    checkText('key id', id);
    if (this.namesNoRow(id)) return undefined;
    const r = await this.run('getApiKey', 'read', one('SELECT * FROM api_keys WHERE id = ?', id));
    return r && this.toApiKey(r);
  }

  async listApiKeys(orgId?: string): Promise<ApiKeyRecord[]> {
    if (orgId !== undefined) checkText('orgId', orgId);
    const found =
      orgId === undefined
        ? await this.run('listApiKeys', 'read', rows(this.sql('listApiKeys', (d) => `SELECT * FROM api_keys ORDER BY created_at, ${d.keyOrder}`)))
        : await this.run('listApiKeys', 'read', rows(this.sql('listOrgApiKeys', (d) => `SELECT * FROM api_keys WHERE org_id = ? ORDER BY created_at, ${d.keyOrder}`), orgId));
    return found.map((r) => this.toApiKey(r));
  }

  async revokeApiKey(id: string): Promise<boolean> {
    checkText('key id', id);
    if (this.namesNoRow(id)) return false;
    const revoked = (await this.run('revokeApiKey', 'write', changes('UPDATE api_keys SET revoked = TRUE WHERE id = ?', id))) > 0;
    if (revoked) await this.authChanged(id);
    return revoked;
  }

  /** A key changed (issue 34): this process's authentication caches forget it (Postgres tells the other instances too). */
  protected async authChanged(keyId: string): Promise<void> {
    announceAuthChange(this, keyId);
  }

  async createToken(token: TokenRecord): Promise<void> {
    const expiresMs = checkToken(token);
    const d = this.d;
    const purge = this.maybePurge();
    await this.run('createToken', 'transaction', function* () {
      yield* purge;
      const key = yield* one('SELECT admin FROM api_keys WHERE id = ?', token.keyId);
      if (!key) throw unknownKey(token.keyId);
      if (d.isTrue(key.admin)) throw adminToken(token.keyId);
      if (yield* one('SELECT 1 FROM tokens WHERE hash = ?', token.hash)) throw duplicate('a token with this hash');
      yield* changes('INSERT INTO tokens (hash, key_id, expires_at, expires_ms) VALUES (?, ?, ?, ?)', token.hash, token.keyId, token.expiresAt, expiresMs);
    });
  }

  async findToken(hash: string, now: Date): Promise<TokenRecord | undefined> {
    checkText('token hash', hash);
    const ms = checkNow(now);
    const r = await this.run('findToken', 'read', one('SELECT hash, key_id, expires_at FROM tokens WHERE hash = ? AND expires_ms > ?', hash, ms));
    return r && { hash: String(r.hash), keyId: String(r.key_id), expiresAt: String(r.expires_at) };
  }

  // --- voices --------------------------------------------------------------------------------

  async listVoices(orgId: string, options: { includeCatalog: boolean; limit: number | null; offset: number }): Promise<Page<VoiceRecord>> {
    checkText('orgId', orgId);
    checkListOptions(options, 'voices');
    const catalog = this.d.bool(options.includeCatalog);
    const limit = options.limit ?? this.d.noLimit;
    const found = await this.run('listVoices', 'snapshot', function* () {
      const total = Number((yield* one('SELECT COUNT(*) AS n FROM voices WHERE org_id = ? OR (? AND org_id IS NULL)', orgId, catalog))!.n);
      // Catalog first (NULL org), then by creation (store.ts listVoices).
      const page = yield* rows('SELECT * FROM voices WHERE org_id = ? OR (? AND org_id IS NULL) ORDER BY org_id IS NOT NULL, created_at, uid LIMIT ? OFFSET ?', orgId, catalog, limit, options.offset);
      return { page, total };
    });
    return { items: found.page.map((r) => this.toVoice(r)), total: found.total };
  }

  async getVoice(orgId: string, uid: string): Promise<VoiceRecord | undefined> {
    checkText('orgId', orgId);
    checkText('voice uid', uid);
    if (this.namesNoRow(orgId, uid)) return undefined;
    const r = await this.run('getVoice', 'read', one('SELECT * FROM voices WHERE uid = ? AND (org_id = ? OR org_id IS NULL)', uid, orgId));
    return r && this.toVoice(r);
  }

  async putVoice(voice: VoiceRecord): Promise<void> {
    checkVoice(voice);
    const tags = toJson('tags', voice.tags);
    const params = toJson('params', voice.params);
    const isProClone = this.d.bool(voice.isProClone);
    // Upsert by uid, but never across owners: the WHERE leaves another organization's row alone.
    const upsert = this.sql(
      'putVoice',
      (d) => `INSERT INTO voices (uid, org_id, name, description, language, filename, start_s, tags, is_pro_clone, params, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ${d.json}, ?, ${d.json}, ?)
         ON CONFLICT (uid) DO UPDATE SET name = excluded.name, description = excluded.description, language = excluded.language,
           filename = excluded.filename, start_s = excluded.start_s, tags = excluded.tags, is_pro_clone = excluded.is_pro_clone,
           params = excluded.params, created_at = excluded.created_at
         WHERE voices.org_id IS NOT DISTINCT FROM excluded.org_id`,
    );
    await this.run('putVoice', 'transaction', function* () {
      if (voice.orgId !== null && !(yield* one('SELECT 1 FROM organizations WHERE id = ?', voice.orgId))) throw unknownOrganization(voice.orgId);
      const n = yield* changes(
        upsert,
        voice.uid,
        voice.orgId,
        voice.name,
        voice.description,
        voice.language,
        voice.filename,
        voice.startS,
        tags,
        isProClone,
        params,
        voice.createdAt,
      );
      if (n === 0) throw ownedByAnother('voice', voice.uid);
    });
  }

  async updateVoice(orgId: string, uid: string, patch: Partial<Pick<VoiceRecord, 'name' | 'description' | 'tags'>>): Promise<VoiceRecord | undefined> {
    checkText('orgId', orgId);
    checkText('voice uid', uid);
    checkVoicePatch(patch);
    if (this.namesNoRow(orgId, uid)) return undefined;
    const tags = patch.tags === undefined ? null : toJson('tags', patch.tags);
    // COALESCE keeps what the patch leaves out; catalog voices (NULL org) never match.
    const r = await this.run(
      'updateVoice',
      'write',
      one(
        this.sql('updateVoice', (d) => `UPDATE voices SET name = COALESCE(?, name), description = COALESCE(?, description), tags = COALESCE(${d.json}, tags) WHERE uid = ? AND org_id = ? RETURNING *`),
        patch.name ?? null,
        patch.description ?? null,
        tags,
        uid,
        orgId,
      ),
    );
    return r && this.toVoice(r);
  }

  async deleteVoice(orgId: string, uid: string): Promise<boolean> {
    checkText('orgId', orgId);
    checkText('voice uid', uid);
    if (this.namesNoRow(orgId, uid)) return false;
    return (await this.run('deleteVoice', 'write', changes('DELETE FROM voices WHERE uid = ? AND org_id = ?', uid, orgId))) > 0;
  }

  // --- voice-design candidates ---------------------------------------------------------------

  async putCandidates(candidates: CandidateRecord[]): Promise<void> {
    checkCandidates(candidates);
    const checked = candidates.map((c) => ({ c, expiresMs: checkTime('expiresAt', c.expiresAt), params: toJson('params', c.params), id: checkId('embeddingId', c.embeddingId) }));
    const upsert = this.sql(
      'putCandidates',
      (d) => `INSERT INTO candidates (embedding_id, org_id, language, prompt, params, expires_at, expires_ms) VALUES (?, ?, ?, ?, ${d.json}, ?, ?)
         ON CONFLICT (embedding_id) DO UPDATE SET language = excluded.language, prompt = excluded.prompt, params = excluded.params,
           expires_at = excluded.expires_at, expires_ms = excluded.expires_ms
         WHERE candidates.org_id = excluded.org_id`,
    );
    const purge = this.maybePurge();
    // One transaction: a batch with a bad candidate stores none of it.
    await this.run('putCandidates', 'transaction', function* () {
      yield* purge;
      for (const { c, expiresMs, params } of checked) {
        if (!(yield* one('SELECT 1 FROM organizations WHERE id = ?', c.orgId))) throw unknownOrganization(c.orgId);
        const n = yield* changes(upsert, c.embeddingId, c.orgId, c.language, c.prompt, params, c.expiresAt, expiresMs);
        if (n === 0) throw ownedByAnother('candidate', c.embeddingId);
      }
    });
  }

  async getCandidate(orgId: string, embeddingId: string, now: Date): Promise<CandidateRecord | undefined> {
    checkText('orgId', orgId);
    checkText('embeddingId', embeddingId);
    const ms = checkNow(now);
    if (this.namesNoRow(orgId, embeddingId)) return undefined;
    const r = await this.run('getCandidate', 'read', one('SELECT * FROM candidates WHERE embedding_id = ? AND org_id = ? AND expires_ms > ?', embeddingId, orgId, ms));
    return (
      r && {
        embeddingId: String(r.embedding_id),
        orgId: String(r.org_id),
        language: String(r.language),
        prompt: String(r.prompt),
        params: this.d.fromJson(r.params) as Record<string, unknown>,
        expiresAt: String(r.expires_at),
      }
    );
  }

  async deleteCandidate(orgId: string, embeddingId: string): Promise<boolean> {
    checkText('orgId', orgId);
    checkText('embeddingId', embeddingId);
    if (this.namesNoRow(orgId, embeddingId)) return false;
    // An expired candidate is gone (issue 13): deleting it finds nothing.
    return (await this.run('deleteCandidate', 'write', changes('DELETE FROM candidates WHERE embedding_id = ? AND org_id = ? AND expires_ms > ?', embeddingId, orgId, Date.now()))) > 0;
  }

  // --- pronunciation dictionaries ------------------------------------------------------------

  async listDictionaries(orgId: string, options: { limit: number; offset: number }): Promise<Page<DictionaryRecord>> {
    checkText('orgId', orgId);
    checkListOptions(options, 'dictionaries');
    const found = await this.run('listDictionaries', 'snapshot', function* () {
      const total = Number((yield* one('SELECT COUNT(*) AS n FROM dictionaries WHERE org_id = ?', orgId))!.n);
      const page = yield* rows('SELECT * FROM dictionaries WHERE org_id = ? ORDER BY created_at, uid LIMIT ? OFFSET ?', orgId, options.limit, options.offset);
      return { page, total };
    });
    return { items: found.page.map((r) => this.toDictionary(r)), total: found.total };
  }

  async getDictionary(orgId: string, uid: string): Promise<DictionaryRecord | undefined> {
    checkText('orgId', orgId);
    checkText('dictionary uid', uid);
    if (this.namesNoRow(orgId, uid)) return undefined;
    const r = await this.run('getDictionary', 'read', one('SELECT * FROM dictionaries WHERE uid = ? AND org_id = ?', uid, orgId));
    return r && this.toDictionary(r);
  }

  async putDictionary(d: DictionaryRecord): Promise<void> {
    checkDictionary(d);
    const rules = toJson('rules', d.rules);
    const upsert = this.sql(
      'putDictionary',
      (dialect) => `INSERT INTO dictionaries (uid, org_id, name, language, description, rules, created_at) VALUES (?, ?, ?, ?, ?, ${dialect.json}, ?)
         ON CONFLICT (uid) DO UPDATE SET name = excluded.name, language = excluded.language, description = excluded.description,
           rules = excluded.rules, created_at = excluded.created_at
         WHERE dictionaries.org_id = excluded.org_id`,
    );
    await this.run('putDictionary', 'transaction', function* () {
      if (!(yield* one('SELECT 1 FROM organizations WHERE id = ?', d.orgId))) throw unknownOrganization(d.orgId);
      const n = yield* changes(upsert, d.uid, d.orgId, d.name, d.language, d.description, rules, d.createdAt);
      if (n === 0) throw ownedByAnother('dictionary', d.uid);
    });
  }

  async deleteDictionary(orgId: string, uid: string): Promise<boolean> {
    checkText('orgId', orgId);
    checkText('dictionary uid', uid);
    if (this.namesNoRow(orgId, uid)) return false;
    return (await this.run('deleteDictionary', 'write', changes('DELETE FROM dictionaries WHERE uid = ? AND org_id = ?', uid, orgId))) > 0;
  }

  // --- plumbing ------------------------------------------------------------------------------

  /** Runs `work` on the driver (a generator function is called here, so its statements start inside the driver's transaction). */
  protected run<T>(what: string, access: Access, work: Work<T> | (() => Work<T>)): Promise<T> {
    return this.driver.run(what, access, typeof work === 'function' ? work() : work);
  }

  /** A statement written in the dialect's terms, built once per store (SQLite's statement cache is keyed by the text). */
  private sql(name: string, build: (d: SqlDialect) => string): string {
    let text = this.built.get(name);
    if (text === undefined) {
      text = build(this.d);
      this.built.set(name, text);
    }
    return text;
  }

  /** Where text cannot hold U+0000 (Postgres), an id with one names no row, as on the other stores. */
  private namesNoRow(...ids: string[]): boolean {
    return !this.d.textHoldsNul && ids.some((id) => id.includes('\0'));
  }

  /** The purge, when `purgeIntervalMs` has passed since the last (run inside the caller's write). */
  private *maybePurge(): Work<void> {
    const now = Date.now();
    if (now - this.lastPurge < this.purgeIntervalMs) return;
    yield* this.purge(now);
  }

  private *purge(nowMs: number): Work<{ tokens: number; candidates: number }> {
    this.lastPurge = nowMs;
    return {
      tokens: yield* changes('DELETE FROM tokens WHERE expires_ms <= ?', nowMs),
      candidates: yield* changes('DELETE FROM candidates WHERE expires_ms <= ?', nowMs),
    };
  }

  private toApiKey(r: Row): ApiKeyRecord {
    return {
      id: String(r.id),
      orgId: r.org_id === null ? null : String(r.org_id),
      hash: String(r.hash),
      admin: this.d.isTrue(r.admin),
      revoked: this.d.isTrue(r.revoked),
      prefix: String(r.prefix),
      createdAt: String(r.created_at),
    };
  }

  private toVoice(r: Row): VoiceRecord {
    return {
      uid: String(r.uid),
      orgId: r.org_id === null ? null : String(r.org_id),
      name: String(r.name),
      description: String(r.description),
      language: String(r.language),
      filename: String(r.filename),
      startS: Number(r.start_s),
      tags: this.d.fromJson(r.tags) as string[],
      isProClone: this.d.isTrue(r.is_pro_clone),
      params: this.d.fromJson(r.params) as Record<string, unknown>,
      createdAt: String(r.created_at),
    };
  }

  private toDictionary(r: Row): DictionaryRecord {
    return {
      uid: String(r.uid),
      orgId: String(r.org_id),
      name: String(r.name),
      language: String(r.language),
      description: String(r.description),
      rules: this.d.fromJson(r.rules) as PronunciationRule[],
      createdAt: String(r.created_at),
    };
  }
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

/** Driver failures become STORE_UNAVAILABLE; data and constraint errors (`badInput` codes) and binding errors are the caller's (INVALID_ARGUMENT). */
export function wrapDriverError(err: unknown, what: string, badInput: RegExp): VoicewireError {
  if (err instanceof VoicewireError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  const message = err instanceof Error ? err.message || err.constructor.name : String(err);
  if ((typeof code === 'string' && badInput.test(code)) || err instanceof TypeError || err instanceof RangeError) {
    return storeRefused(what, message, err);
  }
  return storeUnavailable(what, `${message}${typeof code === 'string' ? ` (${code})` : ''}`, err);
}
