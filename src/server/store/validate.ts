/**
 * Input checks every Store implementation shares, so the same bad call fails the same way on
 * SQLite, Postgres and memory (INVALID_ARGUMENT), before anything is written.
 */
import { VoicewireError } from '../../util/errors.js';

/** Credits are integers (service-api.md §2.5: `remaining_credits`, `allocated_credits`). */
export function checkCredits(what: string, n: number): number {
  if (!Number.isSafeInteger(n) || n < 0) throw new VoicewireError('INVALID_ARGUMENT', `${what} must be a non-negative integer, got ${String(n)}`);
  return n;
}

/** A non-negative finite number of units (characters or seconds). */
export function checkUnits(n: number): number {
  if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) throw new VoicewireError('INVALID_ARGUMENT', `usage units must be a non-negative finite number, got ${String(n)}`);
  return n;
}

/** Paging: `limit` and `offset` are non-negative integers (`limit` null = no limit). */
export function checkPaging(limit: number | null, offset: number): void {
  if (limit !== null && (!Number.isSafeInteger(limit) || limit < 0)) throw new VoicewireError('INVALID_ARGUMENT', `limit must be a non-negative integer or null, got ${String(limit)}`);
  if (!Number.isSafeInteger(offset) || offset < 0) throw new VoicewireError('INVALID_ARGUMENT', `offset must be a non-negative integer, got ${String(offset)}`);
}

/** A date-time the store compares (expiry, `since`): milliseconds since the epoch. */
export function checkTime(what: string, iso: string): number {
  const ms = typeof iso === 'string' ? Date.parse(iso) : Number.NaN;
  if (Number.isNaN(ms)) throw new VoicewireError('INVALID_ARGUMENT', `${what} must be an ISO date-time, got ${JSON.stringify(iso)}`);
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
  return s;
}

export function checkKind(kind: string): 'tts' | 'stt' {
  if (kind !== 'tts' && kind !== 'stt') throw new VoicewireError('INVALID_ARGUMENT', `usage kind must be "tts" or "stt", got ${JSON.stringify(kind)}`);
  return kind;
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
  return text;
}

/** The errors the store raises when a row names a parent that does not exist, or a uid owned by another organization. */
export const unknownOrganization = (orgId: string): VoicewireError => new VoicewireError('INVALID_ARGUMENT', `no organization ${JSON.stringify(orgId)}`);
export const unknownKey = (keyId: string): VoicewireError => new VoicewireError('INVALID_ARGUMENT', `no API key ${JSON.stringify(keyId)}`);
export const duplicate = (what: string): VoicewireError => new VoicewireError('INVALID_ARGUMENT', `${what} already exists`);
export const ownedByAnother = (what: string, id: string): VoicewireError =>
  new VoicewireError('INVALID_ARGUMENT', `${what} ${JSON.stringify(id)} belongs to another organization`);
