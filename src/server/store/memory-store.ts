/**
 * An in-memory Store, for unit tests only: nothing survives the process. The server's default is
 * the SQLite store; this one exists so route tests need no file. It checks its input and its
 * references exactly as SQLite does (test/server/store/store-suite.ts runs on both).
 */
import { announceAuthChange } from './auth-changes.js';
import { randomUUID } from 'node:crypto';
import type {
  ApiKeyRecord,
  CandidateRecord,
  DictionaryRecord,
  HoldCheckpoint,
  HoldOwner,
  Organization,
  Page,
  Store,
  SweptHold,
  TokenRecord,
  UsageRecord,
  UsageSummary,
  VoiceRecord,
} from './store.js';
import {
  checkCandidates,
  checkCredits,
  checkDictionary,
  checkListOptions,
  checkNewApiKey,
  checkNewOrganization,
  checkNow,
  checkText,
  checkTime,
  checkToken,
  checkUsage,
  checkHoldId,
  checkCharge,
  checkCheckpoints,
  checkId,
  checkMs,
  checkOwner,
  unknownHold,
  checkVoice,
  checkVoicePatch,
  duplicate,
  ownedByAnother,
  toJson,
  unknownKey,
  unknownOrganization,
  adminToken,
} from './validate.js';

const clone = <T>(v: T): T => structuredClone(v);

/**
 * A JSON column's value as SQLite and Postgres give it back (what JSON drops is dropped). Rows are
 * also built field by field: a caller's extra properties are not kept, as no column holds them.
 */
const jsonColumn = (what: string, value: unknown): Record<string, unknown> => JSON.parse(toJson(what, value)) as Record<string, unknown>;

export class MemoryStore implements Store {
  private readonly orgs = new Map<string, Organization>();
  private readonly keys = new Map<string, ApiKeyRecord>();
  private readonly keyIdsByHash = new Map<string, string>();
  private readonly tokens = new Map<string, TokenRecord>();
  private readonly usage: UsageRecord[] = [];
  private readonly voices = new Map<string, VoiceRecord>();
  private readonly candidates = new Map<string, CandidateRecord>();
  private readonly dictionaries = new Map<string, DictionaryRecord>();

  async migrate(): Promise<void> {}
  async ping(): Promise<void> {}
  async close(): Promise<void> {}

  async createOrganization(org: Omit<Organization, 'id' | 'createdAt'> & { id?: string }): Promise<Organization> {
    checkNewOrganization(org);
    const { name, allocatedCredits, remainingCredits, billingPeriod, nextRolloverDate, planName } = org;
    const row: Organization = { id: org.id ?? randomUUID(), name, region: org.region ?? null, allocatedCredits, remainingCredits, billingPeriod, nextRolloverDate, planName, createdAt: new Date().toISOString() };
    if (this.orgs.has(row.id)) throw duplicate(`organization ${JSON.stringify(row.id)}`);
    if ([...this.orgs.values()].some((o) => o.name === row.name)) throw duplicate(`an organization named ${JSON.stringify(row.name)}`);
    this.orgs.set(row.id, row);
    return clone(row);
  }
  async getOrganization(id: string): Promise<Organization | undefined> {
    checkText('organization id', id);
    const o = this.orgs.get(id);
    return o && clone(o);
  }
  async getOrganizationByName(name: string): Promise<Organization | undefined> {
    checkText('organization name', name);
    for (const o of this.orgs.values()) if (o.name === name) return clone(o);
    return undefined;
  }
  async countOrganizations(): Promise<number> {
    return this.orgs.size;
  }
  async setCredits(orgId: string, allocated: number, remaining: number): Promise<void> {
    checkText('orgId', orgId);
    checkCredits('allocated', allocated);
    checkCredits('remaining', remaining);
    const o = this.orgs.get(orgId);
    if (!o) throw unknownOrganization(orgId);
    Object.assign(o, { allocatedCredits: allocated, remainingCredits: remaining });
  }
  async debitCredits(orgId: string, amount: number, usage: Omit<UsageRecord, 'orgId' | 'credits' | 'at'>): Promise<number | null> {
    checkText('orgId', orgId);
    checkCredits('amount', amount);
    checkUsage(usage);
    const o = this.orgs.get(orgId);
    if (!o || o.remainingCredits < amount) return null;
    o.remainingCredits -= amount;
    this.usage.push({ keyId: usage.keyId ?? null, kind: usage.kind, units: usage.units, orgId, credits: amount, at: new Date().toISOString() });
    return o.remainingCredits;
  }
  async usageSummary(orgId: string, since: string): Promise<UsageSummary> {
    checkText('orgId', orgId);
    const sinceMs = checkTime('since', since);
    const sum: UsageSummary = { tts: { units: 0, credits: 0, requests: 0 }, stt: { units: 0, credits: 0, requests: 0 } };
    for (const u of this.usage) {
      if (u.orgId !== orgId || Date.parse(u.at) < sinceMs) continue;
      const s = sum[u.kind];
      s.units += u.units;
      s.credits += u.credits;
      s.requests += 1;
    }
    return sum;
  }

  async createApiKey(key: Omit<ApiKeyRecord, 'createdAt' | 'revoked'>): Promise<ApiKeyRecord> {
    checkNewApiKey(key);
    const row: ApiKeyRecord = { id: key.id, orgId: key.orgId, hash: key.hash, admin: key.admin, revoked: false, prefix: key.prefix, createdAt: new Date().toISOString() };
    if (row.orgId !== null && !this.orgs.has(row.orgId)) throw unknownOrganization(row.orgId);
    if (this.keys.has(row.id) || this.keyIdsByHash.has(row.hash)) throw duplicate('an API key with this id or hash');
    this.keys.set(row.id, row);
    this.keyIdsByHash.set(row.hash, row.id);
    return clone(row);
  }
  async findApiKeyByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    checkText('key hash', hash);
    const id = this.keyIdsByHash.get(hash);
    const k = id === undefined ? undefined : this.keys.get(id);
    return k && clone(k);
  }
  async getApiKey(id: string): Promise<ApiKeyRecord | undefined> {
    checkText('key id', id);
    const k = this.keys.get(id);
    return k && clone(k);
  }
  async listApiKeys(orgId?: string): Promise<ApiKeyRecord[]> {
    if (orgId !== undefined) checkText('orgId', orgId);
    return [...this.keys.values()].filter((k) => orgId === undefined || k.orgId === orgId).map(clone);
  }
  async revokeApiKey(id: string): Promise<boolean> {
    checkText('key id', id);
    const k = this.keys.get(id);
    if (!k) return false;
    k.revoked = true;
    announceAuthChange(this, id);
    return true;
  }

  async createToken(token: TokenRecord): Promise<void> {
    checkToken(token);
    const key = this.keys.get(token.keyId);
    if (!key) throw unknownKey(token.keyId);
    if (key.admin) throw adminToken(token.keyId);
    if (this.tokens.has(token.hash)) throw duplicate('a token with this hash');
    this.tokens.set(token.hash, { hash: token.hash, keyId: token.keyId, expiresAt: token.expiresAt });
  }
  async findToken(hash: string, now: Date): Promise<TokenRecord | undefined> {
    checkText('token hash', hash);
    const ms = checkNow(now);
    const t = this.tokens.get(hash);
    if (!t || Date.parse(t.expiresAt) <= ms) return undefined;
    return clone(t);
  }

  async listVoices(orgId: string, options: { includeCatalog: boolean; limit: number | null; offset: number }): Promise<Page<VoiceRecord>> {
    checkText('orgId', orgId);
    checkListOptions(options, 'voices');
    const all = [...this.voices.values()]
      .filter((v) => v.orgId === orgId || (options.includeCatalog && v.orgId === null))
      .sort((a, b) => Number(a.orgId !== null) - Number(b.orgId !== null) || a.createdAt.localeCompare(b.createdAt) || a.uid.localeCompare(b.uid));
    const end = options.limit === null ? undefined : options.offset + options.limit;
    return { items: all.slice(options.offset, end).map(clone), total: all.length };
  }
  async getVoice(orgId: string, uid: string): Promise<VoiceRecord | undefined> {
    checkText('orgId', orgId);
    checkText('voice uid', uid);
    const v = this.voices.get(uid);
    return v && (v.orgId === null || v.orgId === orgId) ? clone(v) : undefined;
  }
  async putVoice(voice: VoiceRecord): Promise<void> {
    checkVoice(voice);
    const params = jsonColumn('params', voice.params);
    if (voice.orgId !== null && !this.orgs.has(voice.orgId)) throw unknownOrganization(voice.orgId);
    const old = this.voices.get(voice.uid);
    if (old && old.orgId !== voice.orgId) throw ownedByAnother('voice', voice.uid);
    const { uid, orgId, name, description, language, filename, startS, isProClone, createdAt } = voice;
    this.voices.set(uid, { uid, orgId, name, description, language, filename, startS, tags: [...voice.tags], isProClone, params, createdAt });
  }
  async updateVoice(orgId: string, uid: string, patch: Partial<Pick<VoiceRecord, 'name' | 'description' | 'tags'>>): Promise<VoiceRecord | undefined> {
    checkText('orgId', orgId);
    checkText('voice uid', uid);
    checkVoicePatch(patch);
    const v = this.voices.get(uid);
    if (!v || v.orgId !== orgId) return undefined;
    if (patch.tags !== undefined) toJson('tags', patch.tags);
    for (const k of ['name', 'description', 'tags'] as const) if (patch[k] !== undefined) Object.assign(v, { [k]: clone(patch[k]) });
    return clone(v);
  }
  async deleteVoice(orgId: string, uid: string): Promise<boolean> {
    checkText('orgId', orgId);
    checkText('voice uid', uid);
    const v = this.voices.get(uid);
    if (!v || v.orgId !== orgId) return false;
    return this.voices.delete(uid);
  }

  async putCandidates(candidates: CandidateRecord[]): Promise<void> {
    checkCandidates(candidates);
    const rows = candidates.map((c) => ({ embeddingId: c.embeddingId, orgId: c.orgId, language: c.language, prompt: c.prompt, params: jsonColumn('params', c.params), expiresAt: c.expiresAt }));
    for (const c of rows) {
      if (!this.orgs.has(c.orgId)) throw unknownOrganization(c.orgId);
      const old = this.candidates.get(c.embeddingId);
      if (old && old.orgId !== c.orgId) throw ownedByAnother('candidate', c.embeddingId);
    }
    for (const c of rows) this.candidates.set(c.embeddingId, c);
  }
  async getCandidate(orgId: string, embeddingId: string, now: Date): Promise<CandidateRecord | undefined> {
    checkText('orgId', orgId);
    checkText('embeddingId', embeddingId);
    const ms = checkNow(now);
    const c = this.candidates.get(embeddingId);
    if (!c || c.orgId !== orgId || Date.parse(c.expiresAt) <= ms) return undefined;
    return clone(c);
  }
  async deleteCandidate(orgId: string, embeddingId: string): Promise<boolean> {
    checkText('orgId', orgId);
    checkText('embeddingId', embeddingId);
    const c = this.candidates.get(embeddingId);
    // An expired candidate is gone (issue 13): deleting it finds nothing.
    if (!c || c.orgId !== orgId || Date.parse(c.expiresAt) <= Date.now()) return false;
    return this.candidates.delete(embeddingId);
  }

  async listDictionaries(orgId: string, options: { limit: number; offset: number }): Promise<Page<DictionaryRecord>> {
    checkText('orgId', orgId);
    checkListOptions(options, 'dictionaries');
    const all = [...this.dictionaries.values()].filter((d) => d.orgId === orgId).sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.uid.localeCompare(b.uid));
    return { items: all.slice(options.offset, options.offset + options.limit).map(clone), total: all.length };
  }
  async getDictionary(orgId: string, uid: string): Promise<DictionaryRecord | undefined> {
    checkText('orgId', orgId);
    checkText('dictionary uid', uid);
    const d = this.dictionaries.get(uid);
    return d && d.orgId === orgId ? clone(d) : undefined;
  }
  async putDictionary(dictionary: DictionaryRecord): Promise<void> {
    checkDictionary(dictionary);
    if (!this.orgs.has(dictionary.orgId)) throw unknownOrganization(dictionary.orgId);
    const old = this.dictionaries.get(dictionary.uid);
    if (old && old.orgId !== dictionary.orgId) throw ownedByAnother('dictionary', dictionary.uid);
    const { uid, orgId, name, language, description, createdAt } = dictionary;
    const rules = dictionary.rules.map(({ word, replacement, kind }) => ({ word, replacement, kind }));
    this.dictionaries.set(uid, { uid, orgId, name, language, description, rules, createdAt });
  }
  async deleteDictionary(orgId: string, uid: string): Promise<boolean> {
    checkText('orgId', orgId);
    checkText('dictionary uid', uid);
    const d = this.dictionaries.get(uid);
    if (!d || d.orgId !== orgId) return false;
    return this.dictionaries.delete(uid);
  }
  /** Usage lines of open or settled holds, by hold id. */
  private readonly holds = new Map<string, UsageRecord>();
  private nextHold = 1;
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
    // Checked, not kept: the holds die with this process, its only instance (nothing to sweep).
    checkOwner(owner);
    if (holdId !== undefined) checkHoldId(holdId);
    const o = this.orgs.get(orgId);
    if (!o || o.remainingCredits < amount) return null;
    let line = holdId === undefined ? undefined : this.holds.get(holdId);
    if (holdId !== undefined && (line === undefined || line.orgId !== orgId)) return null;
    o.remainingCredits -= amount;
    if (line === undefined) {
      holdId = String(this.nextHold++);
      line = { keyId: usage.keyId ?? null, kind: usage.kind, units: usage.units, orgId, credits: amount, at: new Date().toISOString() };
      this.usage.push(line);
      this.holds.set(holdId, line);
    } else {
      line.credits += amount;
      line.units += usage.units;
    }
    return { remaining: o.remainingCredits, holdId: holdId! };
  }
  async settleCredits(orgId: string, holdId: string, charge: { units: number; credits: number }, holder?: string): Promise<number> {
    checkText('orgId', orgId);
    checkHoldId(holdId);
    checkCharge(charge);
    if (holder !== undefined) checkId('holder', holder);
    const line = this.holds.get(holdId);
    const o = this.orgs.get(orgId);
    if (!o || line === undefined || line.orgId !== orgId || line.credits < charge.credits) throw unknownHold(holdId, charge.credits);
    o.remainingCredits += line.credits - charge.credits;
    line.credits = charge.credits;
    line.units = charge.units;
    if (charge.credits === 0 && charge.units === 0) {
      this.usage.splice(this.usage.indexOf(line), 1);
      this.holds.delete(holdId);
    }
    return o.remainingCredits;
  }

  /** Nothing is recorded: a memory store's holds live and die with its one process (no other instance could sweep them). */
  async heartbeat(instanceId: string, nowMs: number, checkpoints: readonly HoldCheckpoint[]): Promise<void> {
    checkId('instanceId', instanceId);
    checkMs('nowMs', nowMs);
    checkCheckpoints(checkpoints);
  }
  /** Nothing to sweep (see {@link heartbeat}). */
  async sweepOrphanHolds(cutoffMs: number): Promise<SweptHold[]> {
    checkMs('cutoffMs', cutoffMs);
    return [];
  }
}
