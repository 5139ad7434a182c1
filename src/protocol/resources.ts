/**
 * The REST resources of docs/api.md §2 and their validators, for clients that read them and
 * servers that produce them. Validators return a fresh object with the known fields only
 * (unknown fields are dropped, `null` in an optional field counts as absent) and throw
 * `RESOURCE_INVALID` with pydantic-style issues (`loc` from the resource root) otherwise.
 *
 * The API marks few fields as required. voicewire requires the identifiers (a voice's `uid`, a
 * candidate's `embedding_id` and `ready`, a dictionary's `uid`, the list envelope, the credit
 * counts, both token fields) and type-checks every other field when present.
 */
import { VoicewireError } from '../util/errors.js';
import { FieldReader, describeIssue, isRecord, makeIssue, own, type ValidationIssue, type ValidationLoc } from './validate.js';

/** §2.1 Voice (element of GET /voices/). */
export interface Voice {
  uid: string;
  name?: string;
  is_catalog?: boolean;
  is_pro_clone?: boolean;
  description?: string;
  filename?: string;
  start_s?: number;
  language?: string;
  /** Element shape not shown by the API: kept as is. */
  tags?: unknown[];
}

/** §2.2 Voice candidate (element of `embeddings`). */
export interface VoiceCandidate {
  embedding_id: string;
  ready: boolean;
  /** ISO 8601 date-time. */
  expires_at: string;
}

/** Response of POST /voice-generator/generate (§4.7). */
export interface VoiceGenerationResponse {
  embeddings: VoiceCandidate[];
}

/** §2.3 Created voice (response of POST /voices/from-embedding). */
export interface CreatedVoice {
  uid: string;
  name?: string;
  description?: string;
  language?: string;
}

/** §2.4 Pronunciation dictionary. */
export interface PronunciationDictionary {
  uid: string;
  name?: string;
  language?: string;
  /** UUID. */
  org_uid?: string;
  /** ISO 8601 date-time. */
  created_at?: string;
  description?: string;
  /** Element shape not shown by the API: kept as is. */
  rules?: unknown[];
}

/** §2.4a Pronunciation list envelope. */
export interface PronunciationList {
  dictionaries: PronunciationDictionary[];
  total: number;
}

/** §2.5 Credit balance. */
export interface CreditBalance {
  remaining_credits: number;
  allocated_credits: number;
  billing_period?: string;
  /** YYYY-MM-DD. */
  next_rollover_date?: string;
  /** Defaults to `""`. */
  plan_name: string;
}

/** §2.6 Temporary token. */
export interface TemporaryToken {
  /** Used as the `token` query parameter (§4.6). */
  token: string;
  /** ISO 8601 date-time. */
  expires_at: string;
}

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?([Zz]|[+-]\d{2}(?::?\d{2})?)?$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const UUID = /^(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|[0-9a-fA-F]{32})$/;

function validDate(y: number, m: number, d: number): boolean {
  if (m < 1 || m > 12 || d < 1) return false;
  const days = [31, (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0 ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1]!;
  return d <= days;
}

/** True for an ISO 8601 / RFC 3339 date-time (`2025-01-31T12:00:00Z`, offsets, fractions; `T` or space). */
export function isDateTimeString(value: string): boolean {
  if (typeof value !== 'string') return false;
  const m = DATE_TIME.exec(value);
  if (!m) return false;
  const [, y, mo, d, h, mi, s] = m;
  return validDate(Number(y), Number(mo), Number(d)) && Number(h) < 24 && Number(mi) < 60 && (s === undefined || Number(s) < 61);
}

/** True for a `YYYY-MM-DD` calendar date. */
export function isDateString(value: string): boolean {
  if (typeof value !== 'string') return false;
  const m = DATE.exec(value);
  return m !== null && validDate(Number(m[1]), Number(m[2]), Number(m[3]));
}

class ResourceReader extends FieldReader {
  dateTime(key: string, required = false): string | undefined {
    const v = this.string(key, { required });
    if (v !== undefined && !isDateTimeString(v)) return this.fail(key, 'datetime_parsing', v, { error: 'invalid datetime format' });
    return v;
  }
  date(key: string): string | undefined {
    const v = this.string(key);
    if (v !== undefined && !isDateString(v)) return this.fail(key, 'date_parsing', v, { error: 'invalid date format' });
    return v;
  }
  uuid(key: string): string | undefined {
    const v = this.string(key);
    if (v !== undefined && !UUID.test(v)) return this.fail(key, 'uuid_parsing', v, { error: 'invalid character' });
    return v;
  }
  array(key: string): unknown[] | undefined {
    const v = own(this.obj, key);
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v)) return this.fail(key, 'list_type', v);
    return v.slice();
  }
}

function set<T extends object>(target: T, key: string, value: unknown): void {
  if (value !== undefined) (target as Record<string, unknown>)[key] = value;
}

function reader(value: unknown, loc: ValidationLoc, issues: ValidationIssue[]): ResourceReader | undefined {
  if (!isRecord(value)) {
    issues.push(makeIssue(loc, 'model_attributes_type', value));
    return undefined;
  }
  return new ResourceReader(value, loc, 'strict', issues);
}

function checkVoice(value: unknown, loc: ValidationLoc, issues: ValidationIssue[]): Voice | undefined {
  const r = reader(value, loc, issues);
  if (!r) return undefined;
  const out = { uid: r.string('uid', { required: true })! } as Voice;
  set(out, 'name', r.string('name'));
  set(out, 'is_catalog', r.boolean('is_catalog'));
  set(out, 'is_pro_clone', r.boolean('is_pro_clone'));
  set(out, 'description', r.string('description'));
  set(out, 'filename', r.string('filename'));
  set(out, 'start_s', r.number('start_s'));
  set(out, 'language', r.string('language'));
  set(out, 'tags', r.array('tags'));
  return out;
}

function checkCandidate(value: unknown, loc: ValidationLoc, issues: ValidationIssue[]): VoiceCandidate | undefined {
  const r = reader(value, loc, issues);
  if (!r) return undefined;
  return { embedding_id: r.string('embedding_id', { required: true })!, ready: r.boolean('ready', { required: true })!, expires_at: r.dateTime('expires_at', true)! };
}

function checkDictionary(value: unknown, loc: ValidationLoc, issues: ValidationIssue[]): PronunciationDictionary | undefined {
  const r = reader(value, loc, issues);
  if (!r) return undefined;
  const out = { uid: r.string('uid', { required: true })! } as PronunciationDictionary;
  set(out, 'name', r.string('name'));
  set(out, 'language', r.string('language'));
  set(out, 'org_uid', r.uuid('org_uid'));
  set(out, 'created_at', r.dateTime('created_at'));
  set(out, 'description', r.string('description'));
  set(out, 'rules', r.array('rules'));
  return out;
}

function listOf<T>(value: unknown, loc: ValidationLoc, issues: ValidationIssue[], item: (v: unknown, l: ValidationLoc, i: ValidationIssue[]) => T | undefined): T[] | undefined {
  if (!Array.isArray(value)) {
    issues.push(makeIssue(loc, 'list_type', value));
    return undefined;
  }
  return value.map((v, i) => item(v, [...loc, i], issues)!);
}

function run<T>(what: string, check: (issues: ValidationIssue[]) => T | undefined): T {
  const issues: ValidationIssue[] = [];
  const value = check(issues);
  if (issues.length > 0 || value === undefined) {
    throw new VoicewireError('RESOURCE_INVALID', `Invalid ${what}: ${issues.map(describeIssue).join('; ')}`, { details: { issues } });
  }
  return value;
}

/** Validates a voice (§2.1). @throws VoicewireError `RESOURCE_INVALID`. */
export function parseVoice(value: unknown): Voice {
  return run('voice', (issues) => checkVoice(value, [], issues));
}

/** Validates the response of GET /voices/ (§4.10): an array of voices. @throws VoicewireError `RESOURCE_INVALID`. */
export function parseVoiceList(value: unknown): Voice[] {
  return run('voice list', (issues) => listOf(value, [], issues, checkVoice));
}

/** Validates a voice candidate (§2.2). @throws VoicewireError `RESOURCE_INVALID`. */
export function parseVoiceCandidate(value: unknown): VoiceCandidate {
  return run('voice candidate', (issues) => checkCandidate(value, [], issues));
}

/** Validates the response of POST /voice-generator/generate (§4.7). @throws VoicewireError `RESOURCE_INVALID`. */
export function parseVoiceGenerationResponse(value: unknown): VoiceGenerationResponse {
  return run('voice generation response', (issues) => {
    const r = reader(value, [], issues);
    if (!r) return undefined;
    const v = own(r.obj, 'embeddings');
    if (v === undefined) return r.fail('embeddings', 'missing', undefined);
    const embeddings = listOf(v, ['embeddings'], issues, checkCandidate);
    return embeddings && { embeddings };
  });
}

/** Validates a created voice (§2.3). @throws VoicewireError `RESOURCE_INVALID`. */
export function parseCreatedVoice(value: unknown): CreatedVoice {
  return run('created voice', (issues) => {
    const r = reader(value, [], issues);
    if (!r) return undefined;
    const out = { uid: r.string('uid', { required: true })! } as CreatedVoice;
    set(out, 'name', r.string('name'));
    set(out, 'description', r.string('description'));
    set(out, 'language', r.string('language'));
    return out;
  });
}

/** Validates a pronunciation dictionary (§2.4). @throws VoicewireError `RESOURCE_INVALID`. */
export function parsePronunciationDictionary(value: unknown): PronunciationDictionary {
  return run('pronunciation dictionary', (issues) => checkDictionary(value, [], issues));
}

/** Validates the response of GET /pronunciations/ (§2.4a). @throws VoicewireError `RESOURCE_INVALID`. */
export function parsePronunciationList(value: unknown): PronunciationList {
  return run('pronunciation list', (issues) => {
    const r = reader(value, [], issues);
    if (!r) return undefined;
    const v = own(r.obj, 'dictionaries');
    const dictionaries = v === undefined ? r.fail('dictionaries', 'missing', undefined) : listOf(v, ['dictionaries'], issues, checkDictionary);
    const total = r.integer('total', { required: true, ge: 0 });
    return dictionaries && total !== undefined ? { dictionaries, total } : undefined;
  });
}

/** Validates a credit balance (§2.5); `plan_name` defaults to `""`. @throws VoicewireError `RESOURCE_INVALID`. */
export function parseCreditBalance(value: unknown): CreditBalance {
  return run('credit balance', (issues) => {
    const r = reader(value, [], issues);
    if (!r) return undefined;
    const out: CreditBalance = {
      remaining_credits: r.integer('remaining_credits', { required: true })!,
      allocated_credits: r.integer('allocated_credits', { required: true })!,
      plan_name: r.string('plan_name') ?? '',
    };
    set(out, 'billing_period', r.string('billing_period'));
    set(out, 'next_rollover_date', r.date('next_rollover_date'));
    return out;
  });
}

/** Validates a temporary token (§2.6): both fields required. @throws VoicewireError `RESOURCE_INVALID`. */
export function parseTemporaryToken(value: unknown): TemporaryToken {
  return run('temporary token', (issues) => {
    const r = reader(value, [], issues);
    if (!r) return undefined;
    return { token: r.string('token', { required: true, minLength: 1 })!, expires_at: r.dateTime('expires_at', true)! };
  });
}
