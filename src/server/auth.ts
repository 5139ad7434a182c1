/**
 * Authentication (docs/api.md §5): the `x-api-key` header everywhere, `?token=` where a browser
 * page needs it. Keys and tokens are looked up by their SHA-256; a missing, unknown, revoked or
 * expired one is `PROTOCOL_UNAUTHORIZED` (code 1008 on every transport, §5.6). Residency (§4.13) is
 * checked here too, so a denied request is refused before its body is read.
 *
 * Each credential means one thing (issue 20 §7; README "Credentials"):
 * - an organization's API key: every route of the API for that organization;
 * - a temporary token (§4.6): stands in for that key where a browser page speaks and listens —
 *   the routes that pass `allowToken` / route `tts` ({@link TOKEN_ROUTES}); nothing that keeps,
 *   deletes or generates anything, mints tokens or administers keys;
 * - an instance-admin key (`voicewire keys create --admin`, no organization): /statusz and /drain
 *   only ({@link authenticateInstanceAdmin}), never an organization's routes.
 */
import { VoicewireError } from '../util/errors.js';
import { readCredentials, type CredentialHeaders, type CredentialRoute } from '../protocol/auth.js';
import { hashSecret } from './keys.js';
import type { AuthCache } from './auth-cache.js';
import type { ApiKeyRecord, Organization, Store } from './store/store.js';

/**
 * The routes a temporary token is accepted on (relative to /api; `WS` is a WebSocket upgrade).
 * Documentation of the policy the routes apply, checked route by route by test/server/credentials.test.ts.
 */
export const TOKEN_ROUTES: readonly string[] = ['POST /post/speech/tts', 'POST /speech/tts', 'WS /speech/tts', 'WS /speech/asr', 'GET /voices'];

/** An organization's API key (never an instance-admin key). */
export type OrgKeyRecord = ApiKeyRecord & { orgId: string; admin: false };

/** Who is calling: the organization's key (or the key a token stands for) and its organization. */
export interface Principal {
  key: OrgKeyRecord;
  org: Organization;
  /** True when the caller used a temporary token. */
  viaToken: boolean;
}

const unauthorized = (why: string): VoicewireError => new VoicewireError('PROTOCOL_UNAUTHORIZED', why);

/**
 * Authenticates a request for an organization's route. `route: 'tts'` accepts `?token=`; every
 * other route takes the `x-api-key` header only.
 * @throws VoicewireError `PROTOCOL_UNAUTHORIZED` (1008), `RESIDENCY_DENIED` (403).
 */
export async function authenticate(
  store: Store,
  request: { headers: CredentialHeaders; url?: string; route: CredentialRoute },
  options: { region: string | null; cache?: AuthCache },
): Promise<Principal> {
  const creds = readCredentials(request);
  let key: ApiKeyRecord | undefined;
  let viaToken = false;
  const { cache } = options;
  let hash: string | undefined;
  let version = 0;
  if (creds.apiKey !== undefined) {
    hash = hashSecret(creds.apiKey);
    // A kept lookup (auth-cache.ts: its revocation delay): no store query on this connection.
    const hit = cache?.get(hash);
    if (hit !== undefined) return checkRegion({ key: hit.key as OrgKeyRecord, org: hit.org, viaToken: false }, options.region);
    version = cache?.version ?? 0;
    key = await store.findApiKeyByHash(hash);
    if (key === undefined) throw unauthorized('invalid API key');
  } else {
    const token = await store.findToken(hashSecret(creds.token!), new Date());
    if (token === undefined) throw unauthorized('invalid or expired token');
    key = await store.getApiKey(token.keyId);
    if (key === undefined) throw unauthorized('invalid or expired token');
    viaToken = true;
  }
  if (key.revoked) throw unauthorized(viaToken ? 'the API key of this token was revoked' : 'API key revoked');
  if (key.admin || key.orgId === null) throw unauthorized("an instance-admin key is for /statusz and /drain only: use an organization's API key");
  const org = await store.getOrganization(key.orgId);
  if (org === undefined) throw unauthorized('the API key has no organization');
  if (cache !== undefined && hash !== undefined) cache.set(hash, { key: key as OrgKeyRecord, org }, version);
  return checkRegion({ key: key as OrgKeyRecord, org, viaToken }, options.region);
}

/** Residency (§4.13): an organization pinned to another region is refused here. */
function checkRegion(who: Principal, region: string | null): Principal {
  if (region !== null && who.org.region !== null && who.org.region !== region) {
    throw new VoicewireError('RESIDENCY_DENIED', `organization is pinned to region ${who.org.region}; this server serves ${region}`);
  }
  return who;
}

/**
 * Authenticates instance administration (/statusz, /drain; §5.4): the `x-api-key` header with an
 * instance-admin key, never a token and never an organization's key.
 * @throws VoicewireError `PROTOCOL_UNAUTHORIZED` (1008).
 */
export async function authenticateInstanceAdmin(store: Store, headers: CredentialHeaders): Promise<ApiKeyRecord> {
  const creds = readCredentials({ headers, route: 'rest' });
  const key = await store.findApiKeyByHash(hashSecret(creds.apiKey!));
  if (key === undefined) throw unauthorized('invalid API key');
  if (key.revoked) throw unauthorized('API key revoked');
  if (!key.admin) throw unauthorized('this route needs an instance-admin key (voicewire keys create --admin)');
  return key;
}
