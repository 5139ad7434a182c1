/**
 * API keys and temporary tokens: random secrets (192 bits, base64url), shown once, stored only as
 * their SHA-256 (docs/api.md §2.6, §5.3). SHA-256 without salt is enough for 192 random bits:
 * there is no dictionary to attack, and lookups stay one indexed equality.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { functionArg, objectArg, stringArg } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';
import type { ApiKeyRecord, Store } from './store/store.js';

/** SHA-256 of a secret, hex. */
export function hashSecret(secret: string): string {
  stringArg(secret, 'hashSecret: secret');
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** A new API key: `vw_` + 32 base64url characters (192 bits). */
export function generateApiKey(): string {
  return `vw_${randomBytes(24).toString('base64url')}`;
}

/** A new temporary token: `vwt_` + 32 base64url characters (192 bits). */
export function generateToken(): string {
  return `vwt_${randomBytes(24).toString('base64url')}`;
}

/**
 * Creates a key: an organization's (`orgId`), or with `orgId` null an instance-admin key (/statusz,
 * /drain; no organization). Returns the key (the only time it exists in clear) and its record.
 */
export async function createKey(store: Store, orgId: string | null): Promise<{ key: string; record: ApiKeyRecord }> {
  functionArg(objectArg(store, 'createKey: store').createApiKey, 'createKey: store.createApiKey');
  if (orgId !== null) stringArg(orgId, 'createKey: orgId');
  // The old third argument (admin) made an organization's key that could drain the instance.
  if (arguments.length > 2) throw new VoicewireError('INVALID_ARGUMENT', 'createKey takes (store, orgId): the admin flag is gone; orgId null makes an instance-admin key');
  const key = generateApiKey();
  const record = await store.createApiKey({ id: randomUUID(), orgId, hash: hashSecret(key), admin: orgId === null, prefix: key.slice(0, 7) });
  return { key, record };
}
