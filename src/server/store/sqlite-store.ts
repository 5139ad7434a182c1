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
import { tighten } from './file-modes.js';
import { randomUUID } from 'node:crypto';
import Database from 'libsql';
import { optionsArg, shown, stringArg } from '../../util/args.js';
import { VoicewireError } from '../../util/errors.js';
import { SQLITE_MIGRATIONS, type Migration } from './sqlite-migrations.js';
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

type Db = Database.Database;
type Stmt = Database.Statement<unknown[]>;
type Row = Record<string, unknown>;

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

/** Driver errors that mean the caller's input was wrong, not that the store failed. */
const BAD_INPUT = /^SQLITE_(CONSTRAINT|TOOBIG|MISMATCH|RANGE)/;

export class SqliteStore implements Store {
  /** The file (or `:memory:`). */
  readonly path: string;
  /** `NORMAL` or `FULL` (see {@link SqliteStoreOptions.synchronous}). */
  readonly synchronous: 'NORMAL' | 'FULL';
  /** `wal` where the file system allows it, else the rollback journal SQLite kept (`delete`), `memory` for `:memory:`. */
  readonly journalMode: string;
  private db: Db | null;
  private readonly statements = new Map<string, Stmt>();
  private readonly purgeIntervalMs: number;
  private readonly migrations: readonly Migration[];
  private lastPurge = 0;

  private constructor(path: string, db: Db, journalMode: string, synchronous: 'NORMAL' | 'FULL', options: SqliteStoreOptions) {
    this.path = path;
    this.synchronous = synchronous;
    this.db = db;
    this.journalMode = journalMode;
    this.purgeIntervalMs = options.purgeIntervalMs ?? 60_000;
    this.migrations = options.migrations ?? SQLITE_MIGRATIONS;
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
      throw wrap(err, `open ${path}`);
    }
  }

  async migrate(): Promise<void> {
    this.write('migrate', (db) => {
      db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)');
      const current = Number((db.prepare('SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations').get() as Row).v);
      const latest = this.migrations.at(-1)?.version ?? 0;
      if (current > latest) {
        throw new VoicewireError('STORE_UNAVAILABLE', `${this.path}: schema version ${current} is newer than this voicewire knows (${latest}); upgrade voicewire`);
      }
      const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
      for (const m of this.migrations) {
        if (m.version <= current) continue;
        db.exec(m.sql);
        record.run(m.version, m.name, new Date().toISOString());
      }
    });
    this.statements.clear(); // prepared against the old schema
  }

  /** The schema version the file is at (0 before the first migration). */
  async schemaVersion(): Promise<number> {
    return this.read('schemaVersion', (db) => {
      const exists = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get();
      return exists ? Number((db.prepare('SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations').get() as Row).v) : 0;
    });
  }

  async ping(): Promise<void> {
    this.read('ping', () => this.q('SELECT 1').get());
  }

  /** Problems `PRAGMA integrity_check` and `foreign_key_check` find; empty when the file is sound. */
  async integrityCheck(): Promise<string[]> {
    return this.read('integrityCheck', (db) => {
      const problems = (db.prepare('PRAGMA integrity_check').all() as Row[]).map((r) => String(r.integrity_check)).filter((s) => s !== 'ok');
      for (const r of db.prepare('PRAGMA foreign_key_check').all() as Row[]) problems.push(`foreign key: ${r.table} row ${r.rowid} -> ${r.parent}`);
      return problems;
    });
  }

  /** Deletes tokens and candidates expired at `now` (also done on their writes, every `purgeIntervalMs`). */
  async purgeExpired(now: Date = new Date()): Promise<{ tokens: number; candidates: number }> {
    const ms = checkNow(now);
    return this.write('purgeExpired', () => this.purge(ms));
  }

  async close(): Promise<void> {
    const db = this.db;
    this.db = null;
    this.statements.clear();
    if (db) {
      try {
        db.close();
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
    this.write('createOrganization', () => {
      if (this.q('SELECT 1 FROM organizations WHERE id = ?').get(row.id)) throw duplicate(`organization ${JSON.stringify(row.id)}`);
      if (this.q('SELECT 1 FROM organizations WHERE name = ?').get(row.name)) throw duplicate(`an organization named ${JSON.stringify(row.name)}`);
      this.q(
        `INSERT INTO organizations (id, name, region, allocated_credits, remaining_credits, billing_period, next_rollover_date, plan_name, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(row.id, row.name, row.region, row.allocatedCredits, row.remainingCredits, row.billingPeriod, row.nextRolloverDate, row.planName, row.createdAt);
    });
    return row;
  }

  async getOrganization(id: string): Promise<Organization | undefined> {
    checkText('organization id', id);
    const r = this.read('getOrganization', () => this.q('SELECT * FROM organizations WHERE id = ?').get(id) as Row | undefined);
    return r && toOrganization(r);
  }

  async getOrganizationByName(name: string): Promise<Organization | undefined> {
    checkText('organization name', name);
    const r = this.read('getOrganizationByName', () => this.q('SELECT * FROM organizations WHERE name = ?').get(name) as Row | undefined);
    return r && toOrganization(r);
  }

  async countOrganizations(): Promise<number> {
    return this.read('countOrganizations', () => Number((this.q('SELECT COUNT(*) AS n FROM organizations').get() as Row).n));
  }

  async setCredits(orgId: string, allocated: number, remaining: number): Promise<void> {
    checkText('orgId', orgId);
    checkCredits('allocated', allocated);
    checkCredits('remaining', remaining);
    const changes = this.write('setCredits', () => this.q('UPDATE organizations SET allocated_credits = ?, remaining_credits = ? WHERE id = ?').run(allocated, remaining, orgId).changes);
    if (changes === 0) throw unknownOrganization(orgId);
  }

  async debitCredits(orgId: string, amount: number, usage: Omit<UsageRecord, 'orgId' | 'credits' | 'at'>): Promise<number | null> {
    checkText('orgId', orgId);
    checkCredits('amount', amount);
    checkUsage(usage);
    const kind = checkKind(usage.kind);
    const units = checkUnits(usage.units);
    const at = new Date();
    return this.write('debitCredits', () => {
      // One statement decides: the balance is read and lowered under the write lock, and the
      // WHERE makes an overdraft take nothing (issue 13 "debits are atomic").
      const r = this.q('UPDATE organizations SET remaining_credits = remaining_credits - ? WHERE id = ? AND remaining_credits >= ? RETURNING remaining_credits').get(amount, orgId, amount) as
        | Row
        | undefined;
      if (!r) return null;
      this.q('INSERT INTO usage (org_id, key_id, kind, units, credits, at, at_ms) VALUES (?, ?, ?, ?, ?, ?, ?)').run(orgId, usage.keyId ?? null, kind, units, amount, at.toISOString(), at.getTime());
      return Number(r.remaining_credits);
    });
  }

  async usageSummary(orgId: string, since: string): Promise<UsageSummary> {
    checkText('orgId', orgId);
    const sinceMs = checkTime('since', since);
    const rows = this.read('usageSummary', () =>
      this.q('SELECT kind, TOTAL(units) AS units, TOTAL(credits) AS credits, COUNT(*) AS requests FROM usage WHERE org_id = ? AND at_ms >= ? GROUP BY kind').all(orgId, sinceMs) as Row[],
    );
    const sum: UsageSummary = { tts: { units: 0, credits: 0, requests: 0 }, stt: { units: 0, credits: 0, requests: 0 } };
    for (const r of rows) sum[r.kind as 'tts' | 'stt'] = { units: Number(r.units), credits: Number(r.credits), requests: Number(r.requests) };
    return sum;
  }

  // --- API keys and tokens -------------------------------------------------------------------

  async createApiKey(key: Omit<ApiKeyRecord, 'createdAt' | 'revoked'>): Promise<ApiKeyRecord> {
    checkNewApiKey(key);
    const row: ApiKeyRecord = { id: key.id, orgId: key.orgId, hash: key.hash, admin: key.admin, revoked: false, prefix: key.prefix, createdAt: new Date().toISOString() };
    this.write('createApiKey', () => {
      if (row.orgId !== null && !this.q('SELECT 1 FROM organizations WHERE id = ?').get(row.orgId)) throw unknownOrganization(row.orgId);
      if (this.q('SELECT 1 FROM api_keys WHERE id = ? OR hash = ?').get(row.id, row.hash)) throw duplicate('an API key with this id or hash');
      this.q('INSERT INTO api_keys (id, org_id, hash, admin, revoked, prefix, created_at) VALUES (?, ?, ?, ?, 0, ?, ?)').run(row.id, row.orgId, row.hash, row.admin ? 1 : 0, row.prefix, row.createdAt);
    });
    return row;
  }

  async findApiKeyByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    checkText('key hash', hash);
    const r = this.read('findApiKeyByHash', () => this.q('SELECT * FROM api_keys WHERE hash = ?').get(hash) as Row | undefined);
    return r && toApiKey(r);
  }

  async getApiKey(id: string): Promise<ApiKeyRecord | undefined> {
    checkText('key id', id);
    const r = this.read('getApiKey', () => this.q('SELECT * FROM api_keys WHERE id = ?').get(id) as Row | undefined);
    return r && toApiKey(r);
  }

  async listApiKeys(orgId?: string): Promise<ApiKeyRecord[]> {
    if (orgId !== undefined) checkText('orgId', orgId);
    const rows = this.read('listApiKeys', () =>
      orgId === undefined
        ? (this.q('SELECT * FROM api_keys ORDER BY created_at, rowid').all() as Row[])
        : (this.q('SELECT * FROM api_keys WHERE org_id = ? ORDER BY created_at, rowid').all(orgId) as Row[]),
    );
    return rows.map(toApiKey);
  }

  async revokeApiKey(id: string): Promise<boolean> {
    checkText('key id', id);
    return this.write('revokeApiKey', () => this.q('UPDATE api_keys SET revoked = 1 WHERE id = ?').run(id).changes > 0);
  }

  async createToken(token: TokenRecord): Promise<void> {
    const expiresMs = checkToken(token);
    this.write('createToken', () => {
      this.maybePurge();
      const key = this.q('SELECT admin FROM api_keys WHERE id = ?').get(token.keyId) as Row | undefined;
      if (!key) throw unknownKey(token.keyId);
      if (key.admin === 1) throw adminToken(token.keyId);
      if (this.q('SELECT 1 FROM tokens WHERE hash = ?').get(token.hash)) throw duplicate('a token with this hash');
      this.q('INSERT INTO tokens (hash, key_id, expires_at, expires_ms) VALUES (?, ?, ?, ?)').run(token.hash, token.keyId, token.expiresAt, expiresMs);
    });
  }

  async findToken(hash: string, now: Date): Promise<TokenRecord | undefined> {
    checkText('token hash', hash);
    const ms = checkNow(now);
    const r = this.read('findToken', () => this.q('SELECT hash, key_id, expires_at FROM tokens WHERE hash = ? AND expires_ms > ?').get(hash, ms) as Row | undefined);
    return r && { hash: String(r.hash), keyId: String(r.key_id), expiresAt: String(r.expires_at) };
  }

  // --- voices --------------------------------------------------------------------------------

  async listVoices(orgId: string, options: { includeCatalog: boolean; limit: number | null; offset: number }): Promise<Page<VoiceRecord>> {
    checkText('orgId', orgId);
    checkListOptions(options, 'voices');
    const catalog = options.includeCatalog ? 1 : 0;
    return this.read('listVoices', () => {
      const total = Number((this.q('SELECT COUNT(*) AS n FROM voices WHERE org_id = ? OR (? AND org_id IS NULL)').get(orgId, catalog) as Row).n);
      // Catalog first (NULL org), then by creation (store.ts listVoices). LIMIT -1: no limit.
      const rows = this.q('SELECT * FROM voices WHERE org_id = ? OR (? AND org_id IS NULL) ORDER BY org_id IS NOT NULL, created_at, uid LIMIT ? OFFSET ?').all(
        orgId,
        catalog,
        options.limit ?? -1,
        options.offset,
      ) as Row[];
      return { items: rows.map(toVoice), total };
    });
  }

  async getVoice(orgId: string, uid: string): Promise<VoiceRecord | undefined> {
    checkText('orgId', orgId);
    checkText('voice uid', uid);
    const r = this.read('getVoice', () => this.q('SELECT * FROM voices WHERE uid = ? AND (org_id = ? OR org_id IS NULL)').get(uid, orgId) as Row | undefined);
    return r && toVoice(r);
  }

  async putVoice(voice: VoiceRecord): Promise<void> {
    checkVoice(voice);
    const tags = toJson('tags', voice.tags);
    const params = toJson('params', voice.params);
    this.write('putVoice', () => {
      if (voice.orgId !== null && !this.q('SELECT 1 FROM organizations WHERE id = ?').get(voice.orgId)) throw unknownOrganization(voice.orgId);
      // Upsert by uid, but never across owners: the WHERE leaves another organization's row alone.
      const changes = this.q(
        `INSERT INTO voices (uid, org_id, name, description, language, filename, start_s, tags, is_pro_clone, params, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (uid) DO UPDATE SET name = excluded.name, description = excluded.description, language = excluded.language,
           filename = excluded.filename, start_s = excluded.start_s, tags = excluded.tags, is_pro_clone = excluded.is_pro_clone,
           params = excluded.params, created_at = excluded.created_at
         WHERE voices.org_id IS excluded.org_id`,
      ).run(voice.uid, voice.orgId, voice.name, voice.description, voice.language, voice.filename, voice.startS, tags, voice.isProClone ? 1 : 0, params, voice.createdAt).changes;
      if (changes === 0) throw ownedByAnother('voice', voice.uid);
    });
  }

  async updateVoice(orgId: string, uid: string, patch: Partial<Pick<VoiceRecord, 'name' | 'description' | 'tags'>>): Promise<VoiceRecord | undefined> {
    checkText('orgId', orgId);
    checkText('voice uid', uid);
    checkVoicePatch(patch);
    const tags = patch.tags === undefined ? null : toJson('tags', patch.tags);
    // COALESCE keeps what the patch leaves out; catalog voices (NULL org) never match.
    const r = this.write('updateVoice', () =>
      this.q('UPDATE voices SET name = COALESCE(?, name), description = COALESCE(?, description), tags = COALESCE(?, tags) WHERE uid = ? AND org_id = ? RETURNING *').get(
        patch.name ?? null,
        patch.description ?? null,
        tags,
        uid,
        orgId,
      ) as Row | undefined,
    );
    return r && toVoice(r);
  }

  async deleteVoice(orgId: string, uid: string): Promise<boolean> {
    checkText('orgId', orgId);
    checkText('voice uid', uid);
    return this.write('deleteVoice', () => this.q('DELETE FROM voices WHERE uid = ? AND org_id = ?').run(uid, orgId).changes > 0);
  }

  // --- voice-design candidates ---------------------------------------------------------------

  async putCandidates(candidates: CandidateRecord[]): Promise<void> {
    checkCandidates(candidates);
    const rows = candidates.map((c) => ({ c, expiresMs: checkTime('expiresAt', c.expiresAt), params: toJson('params', c.params), id: checkId('embeddingId', c.embeddingId) }));
    this.write('putCandidates', () => {
      this.maybePurge();
      const insert = this.q(
        `INSERT INTO candidates (embedding_id, org_id, language, prompt, params, expires_at, expires_ms) VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (embedding_id) DO UPDATE SET language = excluded.language, prompt = excluded.prompt, params = excluded.params,
           expires_at = excluded.expires_at, expires_ms = excluded.expires_ms
         WHERE candidates.org_id = excluded.org_id`,
      );
      for (const { c, expiresMs, params } of rows) {
        if (!this.q('SELECT 1 FROM organizations WHERE id = ?').get(c.orgId)) throw unknownOrganization(c.orgId);
        if (insert.run(c.embeddingId, c.orgId, c.language, c.prompt, params, c.expiresAt, expiresMs).changes === 0) throw ownedByAnother('candidate', c.embeddingId);
      }
    });
  }

  async getCandidate(orgId: string, embeddingId: string, now: Date): Promise<CandidateRecord | undefined> {
    checkText('orgId', orgId);
    checkText('embeddingId', embeddingId);
    const ms = checkNow(now);
    const r = this.read('getCandidate', () => this.q('SELECT * FROM candidates WHERE embedding_id = ? AND org_id = ? AND expires_ms > ?').get(embeddingId, orgId, ms) as Row | undefined);
    return (
      r && {
        embeddingId: String(r.embedding_id),
        orgId: String(r.org_id),
        language: String(r.language),
        prompt: String(r.prompt),
        params: JSON.parse(String(r.params)) as Record<string, unknown>,
        expiresAt: String(r.expires_at),
      }
    );
  }

  async deleteCandidate(orgId: string, embeddingId: string): Promise<boolean> {
    checkText('orgId', orgId);
    checkText('embeddingId', embeddingId);
    // An expired candidate is gone (issue 13): deleting it finds nothing.
    return this.write('deleteCandidate', () => this.q('DELETE FROM candidates WHERE embedding_id = ? AND org_id = ? AND expires_ms > ?').run(embeddingId, orgId, Date.now()).changes > 0);
  }

  // --- pronunciation dictionaries ------------------------------------------------------------

  async listDictionaries(orgId: string, options: { limit: number; offset: number }): Promise<Page<DictionaryRecord>> {
    checkText('orgId', orgId);
    checkListOptions(options, 'dictionaries');
    return this.read('listDictionaries', () => {
      const total = Number((this.q('SELECT COUNT(*) AS n FROM dictionaries WHERE org_id = ?').get(orgId) as Row).n);
      const rows = this.q('SELECT * FROM dictionaries WHERE org_id = ? ORDER BY created_at, uid LIMIT ? OFFSET ?').all(orgId, options.limit, options.offset) as Row[];
      return { items: rows.map(toDictionary), total };
    });
  }

  async getDictionary(orgId: string, uid: string): Promise<DictionaryRecord | undefined> {
    checkText('orgId', orgId);
    checkText('dictionary uid', uid);
    const r = this.read('getDictionary', () => this.q('SELECT * FROM dictionaries WHERE uid = ? AND org_id = ?').get(uid, orgId) as Row | undefined);
    return r && toDictionary(r);
  }

  async putDictionary(d: DictionaryRecord): Promise<void> {
    checkDictionary(d);
    const rules = toJson('rules', d.rules);
    this.write('putDictionary', () => {
      if (!this.q('SELECT 1 FROM organizations WHERE id = ?').get(d.orgId)) throw unknownOrganization(d.orgId);
      const changes = this.q(
        `INSERT INTO dictionaries (uid, org_id, name, language, description, rules, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (uid) DO UPDATE SET name = excluded.name, language = excluded.language, description = excluded.description,
           rules = excluded.rules, created_at = excluded.created_at
         WHERE dictionaries.org_id = excluded.org_id`,
      ).run(d.uid, d.orgId, d.name, d.language, d.description, rules, d.createdAt).changes;
      if (changes === 0) throw ownedByAnother('dictionary', d.uid);
    });
  }

  async deleteDictionary(orgId: string, uid: string): Promise<boolean> {
    checkText('orgId', orgId);
    checkText('dictionary uid', uid);
    return this.write('deleteDictionary', () => this.q('DELETE FROM dictionaries WHERE uid = ? AND org_id = ?').run(uid, orgId).changes > 0);
  }

  async reserveCredits(orgId: string, amount: number, usage: Omit<UsageRecord, 'orgId' | 'credits' | 'at'>, holdId?: string): Promise<{ remaining: number; holdId: string } | null> {
    checkText('orgId', orgId);
    checkCredits('amount', amount);
    checkUsage(usage);
    const kind = checkKind(usage.kind);
    const units = checkUnits(usage.units);
    if (holdId !== undefined) checkHoldId(holdId);
    const at = new Date();
    return this.write('reserveCredits', () => {
      if (holdId !== undefined && !this.q('SELECT 1 FROM usage WHERE id = ? AND org_id = ?').get(Number(holdId), orgId)) return null;
      // As a debit: one statement under the write lock whose WHERE refuses an overdraft, and the
      // hold's usage line in the same transaction.
      const r = this.q('UPDATE organizations SET remaining_credits = remaining_credits - ? WHERE id = ? AND remaining_credits >= ? RETURNING remaining_credits').get(amount, orgId, amount) as
        | Row
        | undefined;
      if (!r) return null;
      if (holdId !== undefined) {
        this.q('UPDATE usage SET credits = credits + ?, units = units + ? WHERE id = ?').run(amount, units, Number(holdId));
        return { remaining: Number(r.remaining_credits), holdId };
      }
      const line = this.q('INSERT INTO usage (org_id, key_id, kind, units, credits, at, at_ms) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id').get(orgId, usage.keyId ?? null, kind, units, amount, at.toISOString(), at.getTime()) as Row;
      return { remaining: Number(r.remaining_credits), holdId: String(line.id) };
    });
  }

  async settleCredits(orgId: string, holdId: string, charge: { units: number; credits: number }): Promise<number> {
    checkText('orgId', orgId);
    checkHoldId(holdId);
    checkCharge(charge);
    return this.write('settleCredits', () => {
      // The refund and the line's new charge in one transaction: both or neither.
      const line = this.q('SELECT credits FROM usage WHERE id = ? AND org_id = ?').get(Number(holdId), orgId) as Row | undefined;
      if (!line || Number(line.credits) < charge.credits) throw unknownHold(holdId, charge.credits);
      const r = this.q('UPDATE organizations SET remaining_credits = remaining_credits + ? WHERE id = ? RETURNING remaining_credits').get(Number(line.credits) - charge.credits, orgId) as Row;
      if (charge.credits === 0 && charge.units === 0) this.q('DELETE FROM usage WHERE id = ?').run(Number(holdId));
      else this.q('UPDATE usage SET credits = ?, units = ? WHERE id = ?').run(charge.credits, charge.units, Number(holdId));
      return Number(r.remaining_credits);
    });
  }

  // --- plumbing ------------------------------------------------------------------------------

  /** A cached prepared statement. */
  private q(sql: string): Stmt {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.open().prepare(sql);
      this.statements.set(sql, s);
    }
    return s;
  }

  private open(): Db {
    if (!this.db) throw storeUnavailable('open', `${this.path}: the store is closed`);
    return this.db;
  }

  /** Runs `fn` in a write transaction that holds the file's write lock from its first statement. */
  private write<T>(what: string, fn: (db: Db) => T): T {
    return this.transaction(what, 'BEGIN IMMEDIATE', fn);
  }

  /** Runs `fn` in a read transaction: its statements see one snapshot (a listing's page and total agree). */
  private read<T>(what: string, fn: (db: Db) => T): T {
    return this.transaction(what, 'BEGIN', fn);
  }

  private transaction<T>(what: string, begin: string, fn: (db: Db) => T): T {
    try {
      const db = this.open();
      db.exec(begin);
      try {
        const result = fn(db);
        db.exec('COMMIT');
        return result;
      } catch (err) {
        if (db.inTransaction) db.exec('ROLLBACK');
        throw err;
      }
    } catch (err) {
      throw wrap(err, what);
    }
  }

  private maybePurge(): void {
    const now = Date.now();
    if (now - this.lastPurge < this.purgeIntervalMs) return;
    this.purge(now);
  }

  private purge(nowMs: number): { tokens: number; candidates: number } {
    this.lastPurge = nowMs;
    return {
      tokens: this.q('DELETE FROM tokens WHERE expires_ms <= ?').run(nowMs).changes,
      candidates: this.q('DELETE FROM candidates WHERE expires_ms <= ?').run(nowMs).changes,
    };
  }
}

/** Driver failures become STORE_UNAVAILABLE; constraint and binding errors are the caller's (INVALID_ARGUMENT). */
function wrap(err: unknown, what: string): VoicewireError {
  if (err instanceof VoicewireError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  const message = err instanceof Error ? err.message : String(err);
  if ((typeof code === 'string' && BAD_INPUT.test(code)) || err instanceof TypeError || err instanceof RangeError) {
    return storeRefused(what, message, err);
  }
  return storeUnavailable(what, `${message}${typeof code === 'string' ? ` (${code})` : ''}`, err);
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
  return { id: String(r.id), orgId: r.org_id === null ? null : String(r.org_id), hash: String(r.hash), admin: r.admin === 1, revoked: r.revoked === 1, prefix: String(r.prefix), createdAt: String(r.created_at) };
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
    tags: JSON.parse(String(r.tags)) as string[],
    isProClone: r.is_pro_clone === 1,
    params: JSON.parse(String(r.params)) as Record<string, unknown>,
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
    rules: JSON.parse(String(r.rules)) as PronunciationRule[],
    createdAt: String(r.created_at),
  };
}
