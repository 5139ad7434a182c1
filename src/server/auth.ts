/**
 * Authentication (service-api.md §5): the `x-api-key` header everywhere, `?token=` on TTS routes.
 * Keys and tokens are looked up by their SHA-256; a missing, unknown, revoked or expired one is
 * `PROTOCOL_UNAUTHORIZED` (code 1008 on every transport, §5.6). Residency (§4.13) is checked here
 * too, so a denied request is refused before its body is read.
 */
import { VoicewireError } from '../util/errors.js';
import { readCredentials, type CredentialHeaders, type CredentialRoute } from '../protocol/auth.js';
import { hashSecret } from './keys.js';
import type { ApiKeyRecord, Organization, Store } from './store/store.js';

/** Who is calling: the key (or the key a token stands for) and its organization. */
export interface Principal {
  key: ApiKeyRecord;
  org: Organization;
  /** True when the caller used a temporary token. */
  viaToken: boolean;
}

const unauthorized = (why: string): VoicewireError => new VoicewireError('PROTOCOL_UNAUTHORIZED', why);

/**
 * Authenticates a request.
 * @throws VoicewireError `PROTOCOL_UNAUTHORIZED` (1008), `RESIDENCY_DENIED` (403).
 */
export async function authenticate(
  store: Store,
  request: { headers: CredentialHeaders; url?: string; route: CredentialRoute },
  options: { region: string | null; admin?: boolean },
): Promise<Principal> {
  const creds = readCredentials(request);
  let key: ApiKeyRecord | undefined;
  let viaToken = false;
  if (creds.apiKey !== undefined) {
    key = await store.findApiKeyByHash(hashSecret(creds.apiKey));
    if (key === undefined) throw unauthorized('invalid API key');
  } else {
    const token = await store.findToken(hashSecret(creds.token!), new Date());
    if (token === undefined) throw unauthorized('invalid or expired token');
    key = await store.getApiKey(token.keyId);
    if (key === undefined) throw unauthorized('invalid or expired token');
    viaToken = true;
  }
  if (key.revoked) throw unauthorized(viaToken ? 'the API key of this token was revoked' : 'API key revoked');
  const org = await store.getOrganization(key.orgId);
  if (org === undefined) throw unauthorized('the API key has no organization');
  if (options.admin && !key.admin) throw unauthorized('this route needs an admin key');
  if (options.region !== null && org.region !== null && org.region !== options.region) {
    throw new VoicewireError('RESIDENCY_DENIED', `organization is pinned to region ${org.region}; this server serves ${options.region}`);
  }
  return { key, org, viaToken };
}
