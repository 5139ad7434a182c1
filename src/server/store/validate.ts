/**
 * Input checks every Store implementation shares, so the same bad call fails the same way on
 * SQLite, Postgres and memory (INVALID_ARGUMENT), before anything is written.
 */
import { describeValue, objectArg, shown } from '../../util/args.js';
import { VoicewireError } from '../../util/errors.js';
import type { ApiKeyRecord, CandidateRecord, DictionaryRecord, HoldCheckpoint, HoldOwner, Organization, TokenRecord, UsageRecord, VoiceRecord } from './store.js';

/** Credits are integers (docs/api.md §2.5: `remaining_credits`, `allocated_credits`). */
export function checkCredits(what: string, n: number): number {
  if (!Number.isSafeInteger(n) || n < 0) throw new VoicewireError('INVALID_ARGUMENT', `${what} must be a non-negative integer, got ${shown(n)}`);
  return n;
}

/** A non-negative finite number of units (characters or seconds). */
export function checkUnits(n: number): number {
  if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) throw new VoicewireError('INVALID_ARGUMENT', `usage units must be a non-negative finite number, got ${shown(n)}`);
  return n;
}

/** Paging: `limit` and `offset` are non-negative integers (`limit` null = no limit). */
export function checkPaging(limit: number | null, offset: number): void {
  if (limit !== null && (!Number.isSafeInteger(limit) || limit < 0)) throw new VoicewireError('INVALID_ARGUMENT', `limit must be a non-negative integer or null, got ${shown(limit)}`);
  if (!Number.isSafeInteger(offset) || offset < 0) throw new VoicewireError('INVALID_ARGUMENT', `offset must be a non-negative integer, got ${shown(offset)}`);
}

/** A date-time the store compares (expiry, `since`): milliseconds since the epoch. */
export function checkTime(what: string, iso: string): number {
  const ms = typeof iso === 'string' ? Date.parse(iso) : Number.NaN;
  if (Number.isNaN(ms)) throw new VoicewireError('INVALID_ARGUMENT', `${what} must be an ISO date-time, got ${typeof iso === 'string' ? JSON.stringify(iso) : describeValue(iso)}`);
  return ms;
}

/** `now` as given to findToken/getCandidate. */
export function checkNow(now: Date): number {
  const ms = now instanceof Date ? now.getTime() : Number.NaN;
  if (Number.isNaN(ms)) throw new VoicewireError('INVALID_ARGUMENT', 'now must be a valid Date');
  return ms;
}

/** A required identifier or name: a non-empty string. */
export function checkId(what: string, s: string): string {
  if (typeof s !== 'string' || s.length === 0) throw new VoicewireError('INVALID_ARGUMENT', `${what} must be a non-empty string`);
  if (s.includes('\0')) throw new VoicewireError('INVALID_ARGUMENT', `${what} must not contain the NUL character (U+0000)`);
  return s;
}

export function checkKind(kind: string): 'tts' | 'stt' {
  if (kind !== 'tts' && kind !== 'stt') throw new VoicewireError('INVALID_ARGUMENT', `usage kind must be "tts" or "stt", got ${typeof kind === 'string' ? JSON.stringify(kind) : describeValue(kind)}`);
  return kind;
}

/** A string: an id or name looked up, or a text column (SQLite would store a number as text and refuse an object). */
export function checkText(what: string, s: unknown): string {
  if (typeof s !== 'string') throw new VoicewireError('INVALID_ARGUMENT', `${what} must be a string, got ${describeValue(s)}`);
  return s;
}

/** A string the store keeps: text, with no U+0000 (Postgres refuses it, so no store keeps it). */
function checkStoredText(what: string, s: unknown): string {
  if (checkText(what, s).includes('\0')) throw new VoicewireError('INVALID_ARGUMENT', `${what} must not contain the NUL character (U+0000)`);
  return s as string;
}

function checkBoolean(what: string, b: unknown): boolean {
  if (typeof b !== 'boolean') throw new VoicewireError('INVALID_ARGUMENT', `${what} must be a boolean, got ${describeValue(b)}`);
  return b;
}

function checkStrings(what: string, list: unknown): void {
  if (!Array.isArray(list) || !list.every((s) => typeof s === 'string' && !s.includes('\0'))) throw new VoicewireError('INVALID_ARGUMENT', `${what} must be an array of strings without NUL (U+0000)`);
}

/**
 * The rows and options the store is given are checked field by field before anything is written:
 * a missing or mistyped field is INVALID_ARGUMENT on every store, never a TypeError, a row the
 * memory store keeps and later fails to sort, or a driver's binding error read as STORE_UNAVAILABLE.
 */
export function checkNewOrganization(org: Omit<Organization, 'id' | 'createdAt'> & { id?: string }): void {
  objectArg(org, 'organization');
  if (org.id !== undefined && org.id !== null) checkId('organization id', org.id);
  checkId('organization name', org.name);
  if (org.region !== undefined && org.region !== null) checkStoredText('organization region', org.region);
  checkCredits('allocatedCredits', org.allocatedCredits);
  checkCredits('remainingCredits', org.remainingCredits);
  for (const k of ['billingPeriod', 'nextRolloverDate', 'planName'] as const) checkStoredText(`organization ${k}`, org[k]);
}

export function checkUsage(usage: Omit<UsageRecord, 'orgId' | 'credits' | 'at'>): void {
  objectArg(usage, 'usage');
  checkKind(usage.kind);
  checkUnits(usage.units);
  if (usage.keyId !== undefined && usage.keyId !== null) checkStoredText('usage keyId', usage.keyId);
}

export function checkNewApiKey(key: Omit<ApiKeyRecord, 'createdAt' | 'revoked'>): void {
  objectArg(key, 'API key');
  checkId('key id', key.id);
  checkId('key hash', key.hash);
  checkBoolean('key admin', key.admin);
  // One thing each: an instance-admin key has no organization, an organization's key has one.
  if (key.admin && key.orgId !== null) throw new VoicewireError('INVALID_ARGUMENT', 'an instance-admin key belongs to no organization: its orgId must be null');
  if (!key.admin) checkStoredText('key orgId', key.orgId);
  checkStoredText('key prefix', key.prefix);
}

/** A token to store; resolves its expiry in ms. */
export function checkToken(token: TokenRecord): number {
  objectArg(token, 'token');
  checkId('token hash', token.hash);
  checkStoredText('token keyId', token.keyId);
  return checkTime('expiresAt', token.expiresAt);
}

export function checkVoice(voice: VoiceRecord): void {
  objectArg(voice, 'voice');
  checkId('voice uid', voice.uid);
  if (voice.orgId !== null) checkStoredText('voice orgId', voice.orgId);
  for (const k of ['name', 'description', 'language', 'filename', 'createdAt'] as const) checkStoredText(`voice ${k}`, voice[k]);
  if (typeof voice.startS !== 'number' || !Number.isFinite(voice.startS)) throw new VoicewireError('INVALID_ARGUMENT', `voice startS must be a finite number, got ${describeValue(voice.startS)}`);
  checkStrings('voice tags', voice.tags);
  checkBoolean('voice isProClone', voice.isProClone);
  objectArg(voice.params, 'voice params');
}

export function checkVoicePatch(patch: Partial<Pick<VoiceRecord, 'name' | 'description' | 'tags'>>): void {
  objectArg(patch, 'voice patch');
  if (patch.name !== undefined) checkStoredText('voice patch name', patch.name);
  if (patch.description !== undefined) checkStoredText('voice patch description', patch.description);
  if (patch.tags !== undefined) checkStrings('voice patch tags', patch.tags);
}

/** The candidates of one putCandidates: an array of complete rows. */
export function checkCandidates(candidates: CandidateRecord[]): void {
  if (!Array.isArray(candidates)) throw new VoicewireError('INVALID_ARGUMENT', `candidates must be an array, got ${describeValue(candidates)}`);
  for (const c of candidates) {
    objectArg(c, 'candidate');
    checkId('embeddingId', c.embeddingId);
    for (const k of ['orgId', 'language', 'prompt'] as const) checkStoredText(`candidate ${k}`, c[k]);
    objectArg(c.params, 'candidate params');
    checkTime('expiresAt', c.expiresAt);
  }
}

export function checkDictionary(d: DictionaryRecord): void {
  objectArg(d, 'dictionary');
  checkId('dictionary uid', d.uid);
  for (const k of ['orgId', 'name', 'language', 'description', 'createdAt'] as const) checkStoredText(`dictionary ${k}`, d[k]);
  // Engines read every rule's word and replacement (src/engines/espeak-tts.ts).
  if (!Array.isArray(d.rules)) throw new VoicewireError('INVALID_ARGUMENT', `dictionary rules must be an array, got ${describeValue(d.rules)}`);
  for (const r of d.rules) {
    if (r === null || typeof r !== 'object' || typeof r.word !== 'string' || typeof r.replacement !== 'string' || r.word.includes('\0') || r.replacement.includes('\0') || (r.kind !== 'respelling' && r.kind !== 'phonemes')) {
      throw new VoicewireError('INVALID_ARGUMENT', 'dictionary rules must be objects { word, replacement, kind: "respelling" | "phonemes" }');
    }
  }
}

/** The options of listVoices (`includeCatalog`, a null limit for all) or listDictionaries (a limit always). */
export function checkListOptions(options: { includeCatalog?: boolean; limit: number | null; offset: number }, of: 'voices' | 'dictionaries'): void {
  objectArg(options, `list ${of} options`);
  if (of === 'voices') checkBoolean('includeCatalog', options.includeCatalog);
  else if (options.limit === null) throw new VoicewireError('INVALID_ARGUMENT', 'limit must be a non-negative integer, got null');
  checkPaging(options.limit, options.offset);
}

/** A value a JSON column holds: must survive JSON.stringify (no cycles, no BigInt). */
export function toJson(what: string, value: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (cause) {
    throw new VoicewireError('INVALID_ARGUMENT', `${what} is not JSON-serializable`, { cause });
  }
  if (text === undefined) throw new VoicewireError('INVALID_ARGUMENT', `${what} is not JSON-serializable`);
  // JSON.stringify writes U+0000 as \u0000, which Postgres JSONB refuses: refused on every store.
  if (/(^|[^\\])(\\\\)*\\u0000/.test(text)) throw new VoicewireError('INVALID_ARGUMENT', `${what} must not contain the NUL character (U+0000)`);
  return text;
}

/** The errors the store raises when a row names a parent that does not exist, or a uid owned by another organization. */
export const unknownOrganization = (orgId: string): VoicewireError => new VoicewireError('INVALID_ARGUMENT', `no organization ${JSON.stringify(orgId)}`);
export const unknownKey = (keyId: string): VoicewireError => new VoicewireError('INVALID_ARGUMENT', `no API key ${JSON.stringify(keyId)}`);
/** A temporary token stands for an organization's key (§2.6), never for the instance-admin key. */
export const adminToken = (keyId: string): VoicewireError => new VoicewireError('INVALID_ARGUMENT', `API key ${JSON.stringify(keyId)} is an instance-admin key: no token stands for it`);
export const duplicate = (what: string): VoicewireError => new VoicewireError('INVALID_ARGUMENT', `${what} already exists`);
export const ownedByAnother = (what: string, id: string): VoicewireError =>
  new VoicewireError('INVALID_ARGUMENT', `${what} ${JSON.stringify(id)} belongs to another organization`);

/**
 * A failure of the store itself (unreachable, locked, closed): the caller is told only `store
 * unavailable` (503, WebSocket 1011); what failed and why (driver message and code) are in
 * `details`, for the logs (issue 20 §8: a client saw `connect ECONNREFUSED 127.0.0.1:port`).
 */
export function storeUnavailable(operation: string, reason: string, cause?: unknown): VoicewireError {
  return new VoicewireError('STORE_UNAVAILABLE', 'store unavailable', { cause, details: { operation, reason } });
}

/** Data the driver refused that the checks above let through: INVALID_ARGUMENT, the driver's text in `details` only. */
export function storeRefused(operation: string, reason: string, cause?: unknown): VoicewireError {
  return new VoicewireError('INVALID_ARGUMENT', 'the store refused the data', { cause, details: { operation, reason } });
}

/** Why a store call failed, for logs and operators: `operation: reason` from its details, else its message. */
export function storeErrorReason(err: unknown): string {
  const d = (err as { details?: { operation?: unknown; reason?: unknown } } | null)?.details;
  if (d && typeof d.reason === 'string') return typeof d.operation === 'string' ? `${d.operation}: ${d.reason}` : d.reason;
  return err instanceof Error ? err.message : String(err);
}
/** A hold's id (Store.reserveCredits): the decimal id of its usage line. */
export function checkHoldId(holdId: string): string {
  if (typeof holdId !== 'string' || !/^[0-9]{1,18}$/.test(holdId)) throw new VoicewireError('INVALID_ARGUMENT', `a hold id is a decimal usage line id, got ${shown(holdId)}`);
  return holdId;
}

/** A settlement's charge (Store.settleCredits): integer credits, non-negative units. */
export function checkCharge(charge: { units: number; credits: number }): void {
  objectArg(charge, 'charge');
  checkCredits('charge credits', charge.credits);
  checkUnits(charge.units);
}

export const unknownHold = (holdId: string, credits: number): VoicewireError =>
  new VoicewireError('INVALID_ARGUMENT', `no hold ${holdId} of this organization holding at least ${credits} credits`);

/** A hold's owner (Store.reserveCredits): an instance id and what it delivered. */
export function checkOwner(owner: HoldOwner | undefined): HoldOwner | undefined {
  if (owner === undefined) return undefined;
  objectArg(owner, 'owner');
  checkId('owner.holder', owner.holder);
  objectArg(owner.delivered, 'owner.delivered');
  checkUnits(owner.delivered.units);
  checkCredits('owner.delivered.credits', owner.delivered.credits);
  return { holder: owner.holder, delivered: { units: owner.delivered.units, credits: owner.delivered.credits } };
}

/** A heartbeat's time or a sweep's cutoff: epoch milliseconds. */
export function checkMs(what: string, ms: number): number {
  if (!Number.isSafeInteger(ms) || ms < 0) throw new VoicewireError('INVALID_ARGUMENT', `${what} must be epoch milliseconds (a non-negative integer), got ${shown(ms)}`);
  return ms;
}

/** A heartbeat's checkpoints (Store.heartbeat), copied field by field. */
export function checkCheckpoints(checkpoints: readonly HoldCheckpoint[]): HoldCheckpoint[] {
  if (!Array.isArray(checkpoints)) throw new VoicewireError('INVALID_ARGUMENT', `checkpoints must be an array, got ${describeValue(checkpoints)}`);
  return (checkpoints as readonly HoldCheckpoint[]).map((c) => {
    objectArg(c, 'checkpoint');
    return { holdId: checkHoldId(c.holdId), units: checkUnits(c.units), credits: checkCredits('checkpoint credits', c.credits) };
  });
}

/** A hold grown by an instance that no longer holds it: a sweep settled it while the instance was unreachable (nothing taken). */
export const holdLost = (holdId: string): VoicewireError =>
  new VoicewireError('STORE_UNAVAILABLE', 'store unavailable', {
    details: { operation: 'reserveCredits', reason: `hold ${holdId} was settled by another instance while this one was unreachable (its heartbeat was older than the sweep's timeout)` },
  });
