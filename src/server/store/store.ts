/**
 * The server's storage, behind one async interface (STYLE.md "The server"): organizations, API
 * keys, temporary tokens, credits, usage, voices, voice candidates and pronunciation dictionaries.
 * Implementations: SQLite (the embedded default), Postgres (many instances), memory (unit tests
 * only). One test suite runs against every implementation.
 *
 * Secrets never reach the store: API keys and tokens are stored as hashes (docs/api.md §2.6,
 * §5.3); the store looks them up by hash.
 */

/** An organization: the unit of credits, voices and dictionaries. */
export interface Organization {
  id: string;
  name: string;
  /** Residency: the region the organization is pinned to, or null (served anywhere). */
  region: string | null;
  allocatedCredits: number;
  remainingCredits: number;
  /** e.g. `monthly` (docs/api.md §2.5). */
  billingPeriod: string;
  /** YYYY-MM-DD. */
  nextRolloverDate: string;
  planName: string;
  createdAt: string;
}

/**
 * An API key, as stored: never the key itself. Two kinds, one thing each (README "Credentials"):
 * an organization's key (`admin` false, `orgId` set) for the API, and an instance-admin key
 * (`admin` true, `orgId` null) for /statusz and /drain only.
 */
export interface ApiKeyRecord {
  id: string;
  /** The organization; null exactly for an instance-admin key. */
  orgId: string | null;
  /** SHA-256 of the key, hex. */
  hash: string;
  /** An instance-admin key: /statusz and /drain, nothing of any organization. */
  admin: boolean;
  revoked: boolean;
  /** A short prefix of the key shown in listings (`vw_ab12…`). */
  prefix: string;
  createdAt: string;
}

/** A temporary token (docs/api.md §2.6): stands for a key by its id, never holds it. */
export interface TokenRecord {
  /** SHA-256 of the token, hex. */
  hash: string;
  keyId: string;
  /** ISO date-time. */
  expiresAt: string;
}

/** One debit or usage line: what was spent, on what. */
export interface UsageRecord {
  orgId: string;
  keyId: string | null;
  /** `tts` (characters) or `stt` (seconds). */
  kind: 'tts' | 'stt';
  units: number;
  credits: number;
  at: string;
}

/** A voice of an organization or of the catalog (docs/api.md §2.1). */
export interface VoiceRecord {
  uid: string;
  /** null for catalog voices. */
  orgId: string | null;
  name: string;
  description: string;
  language: string;
  filename: string;
  startS: number;
  tags: string[];
  isProClone: boolean;
  /** Engine parameters (espeak voice, pitch, rate, …) as plain JSON. */
  params: Record<string, unknown>;
  createdAt: string;
}

/** A voice-design candidate (docs/api.md §2.2). Gone once expired. */
export interface CandidateRecord {
  embeddingId: string;
  orgId: string;
  language: string;
  prompt: string;
  params: Record<string, unknown>;
  /** ISO date-time. */
  expiresAt: string;
}

/** A pronunciation rule: a word and what to say instead (a respelling, or engine phonemes). */
export interface PronunciationRule {
  word: string;
  replacement: string;
  kind: 'respelling' | 'phonemes';
}

/** A pronunciation dictionary (docs/api.md §2.4). */
export interface DictionaryRecord {
  uid: string;
  orgId: string;
  name: string;
  language: string;
  description: string;
  rules: PronunciationRule[];
  createdAt: string;
}

/** A page of a listing and the total it is cut from. */
export interface Page<T> {
  items: T[];
  total: number;
}

/** Credits spent per organization and kind since a date (GET /usages/summary). */
export interface UsageSummary {
  tts: { units: number; credits: number; requests: number };
  stt: { units: number; credits: number; requests: number };
}

/** The storage of the server. Every method may reject with a VoicewireError `STORE_UNAVAILABLE`. */
export interface Store {
  /** Creates or upgrades the schema; idempotent. */
  migrate(): Promise<void>;
  /** Resolves when the store answers (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;

  createOrganization(org: Omit<Organization, 'id' | 'createdAt'> & { id?: string }): Promise<Organization>;
  getOrganization(id: string): Promise<Organization | undefined>;
  getOrganizationByName(name: string): Promise<Organization | undefined>;
  countOrganizations(): Promise<number>;
  /** Sets allocated and remaining credits (a new billing period or an operator's grant). */
  setCredits(orgId: string, allocated: number, remaining: number): Promise<void>;
  /**
   * Atomically takes `amount` credits: resolves the remaining balance, or null when the balance is
   * below `amount` (nothing taken). Never goes below zero, never spends twice under concurrency.
   */
  debitCredits(orgId: string, amount: number, usage: Omit<UsageRecord, 'orgId' | 'credits' | 'at'>): Promise<number | null>;
  usageSummary(orgId: string, since: string): Promise<UsageSummary>;

  createApiKey(key: Omit<ApiKeyRecord, 'createdAt' | 'revoked'>): Promise<ApiKeyRecord>;
  findApiKeyByHash(hash: string): Promise<ApiKeyRecord | undefined>;
  getApiKey(id: string): Promise<ApiKeyRecord | undefined>;
  listApiKeys(orgId?: string): Promise<ApiKeyRecord[]>;
  /** Resolves false when no such key. */
  revokeApiKey(id: string): Promise<boolean>;

  createToken(token: TokenRecord): Promise<void>;
  /** The token's record while it has not expired at `now`, else undefined. */
  findToken(hash: string, now: Date): Promise<TokenRecord | undefined>;

  /** Catalog voices (orgId null) plus the organization's own, catalog first, then by creation. */
  listVoices(orgId: string, options: { includeCatalog: boolean; limit: number | null; offset: number }): Promise<Page<VoiceRecord>>;
  /** A catalog voice or one of the organization's. */
  getVoice(orgId: string, uid: string): Promise<VoiceRecord | undefined>;
  /** Inserts a voice (orgId null: a catalog voice; upsert by uid). */
  putVoice(voice: VoiceRecord): Promise<void>;
  updateVoice(orgId: string, uid: string, patch: Partial<Pick<VoiceRecord, 'name' | 'description' | 'tags'>>): Promise<VoiceRecord | undefined>;
  deleteVoice(orgId: string, uid: string): Promise<boolean>;

  putCandidates(candidates: CandidateRecord[]): Promise<void>;
  /** The organization's candidate while it has not expired at `now`. */
  getCandidate(orgId: string, embeddingId: string, now: Date): Promise<CandidateRecord | undefined>;
  deleteCandidate(orgId: string, embeddingId: string): Promise<boolean>;

  listDictionaries(orgId: string, options: { limit: number; offset: number }): Promise<Page<DictionaryRecord>>;
  getDictionary(orgId: string, uid: string): Promise<DictionaryRecord | undefined>;
  /** Inserts or replaces a dictionary (by uid). */
  putDictionary(dictionary: DictionaryRecord): Promise<void>;
  deleteDictionary(orgId: string, uid: string): Promise<boolean>;

  /**
   * Atomically holds `amount` credits for a request that is still running, on a usage line of its
   * own (the hold is spent until settled, so remaining + usage = allocated at every moment, a crash
   * included): resolves the remaining balance and the hold's id, or null when the balance is below
   * `amount` (nothing held). With `holdId`, the credits and `usage.units` are added to that hold
   * (null too when it is not the organization's). Never goes below zero, never holds twice.
   *
   * With `owner` (a server's requests; default none), the line is held open by instance
   * `owner.holder` (a new hold), and what the request delivered so far is recorded on it in the
   * same statement ({@link Store.sweepOrphanHolds} settles to that if the instance dies). Growing a
   * hold its holder no longer holds (a sweep settled it while the instance was unreachable) takes
   * nothing: `STORE_UNAVAILABLE`.
   */
  reserveCredits(orgId: string, amount: number, usage: Omit<UsageRecord, 'orgId' | 'credits' | 'at'>, holdId?: string, owner?: HoldOwner): Promise<{ remaining: number; holdId: string } | null>;
  /**
   * Settles hold `holdId`: its usage line now charges `charge.credits` (at most what it holds) for
   * `charge.units`, and the difference goes back to the balance, atomically. A line left at 0
   * credits and 0 units is removed (a request that delivered nothing leaves no usage). Resolves the
   * remaining balance. `INVALID_ARGUMENT` for an unknown hold or a charge above it.
   *
   * With `holder` (the instance that took it with an owner), a hold that instance no longer holds
   * was settled already (by a sweep, {@link Store.sweepOrphanHolds}): it is left as it is (the first
   * settlement stands, nothing is charged twice) and the balance is resolved unchanged.
   */
  settleCredits(orgId: string, holdId: string, charge: { units: number; credits: number }, holder?: string): Promise<number>;

  /**
   * Instance `instanceId` is alive at `nowMs` (its clock; instances' clocks must agree to well
   * within the sweep's timeout), and its open holds delivered `checkpoints` so far (each kept if it
   * is below what is recorded, capped at what the hold holds; a hold not its own is left alone).
   * One write. The memory store records nothing (its holds die with its process).
   */
  heartbeat(instanceId: string, nowMs: number, checkpoints: readonly HoldCheckpoint[]): Promise<void>;
  /**
   * Settles every open hold whose holder is dead: taken before `cutoffMs`, by an instance with no
   * heartbeat at or after `cutoffMs`. Each is charged what its last checkpoint says was delivered
   * (never more than it holds), the rest goes back to its organization, it is held by no one (a
   * late settlement by its holder changes nothing), and one left at 0 credits and 0 units is
   * removed; instances whose heartbeat is older than `cutoffMs` are forgotten. Atomic: two sweeps
   * at once settle each hold once, and a hold being settled or grown by its holder is left to it.
   * Resolves what was settled. The memory store has nothing to sweep (resolves []).
   */
  sweepOrphanHolds(cutoffMs: number): Promise<SweptHold[]>;
}

/** A hold's owner, given when it is taken or grown (Store.reserveCredits). */
export interface HoldOwner {
  /** The instance that holds it open (a random id per server process). */
  holder: string;
  /** What the request has delivered so far: what a sweep charges should the instance die. */
  delivered: { units: number; credits: number };
}

/** What one open hold has delivered so far (Store.heartbeat). */
export interface HoldCheckpoint {
  holdId: string;
  units: number;
  credits: number;
}

/** An open hold a sweep settled (Store.sweepOrphanHolds). */
export interface SweptHold {
  holdId: string;
  orgId: string;
  kind: 'tts' | 'stt';
  /** The instance that held it. */
  holder: string;
  /** Credits it held, and what it was charged (its last checkpoint), with the units charged. */
  held: number;
  credits: number;
  units: number;
}
