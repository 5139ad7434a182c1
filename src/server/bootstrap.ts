/**
 * First start (issue 13): with an empty store, create the organization `default` with an API key,
 * and an instance-admin key (/statusz, /drain; of no organization), returned once for the caller
 * to print. `--no-bootstrap` skips it.
 */
import type { Store } from './store/store.js';
import { functionArg, objectArg } from '../util/args.js';
import { createKey } from './keys.js';

export interface BootstrapResult {
  org: string;
  apiKey: string;
  /** The instance-admin key: /statusz and /drain only. */
  adminKey: string;
}

/** Credits of the `default` organization and of `keys create` without `--credits`. */
export const DEFAULT_CREDITS = 1_000_000;

/** The first day of next month, YYYY-MM-DD (monthly billing). */
export function nextMonth(now = new Date()): string {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString().slice(0, 10);
}

/** Creates or finds an organization by name. */
export async function ensureOrganization(store: Store, name: string, options: { credits?: number; region?: string | null } = {}) {
  const found = await store.getOrganizationByName(name);
  if (found) return found;
  const credits = options.credits ?? DEFAULT_CREDITS;
  return store.createOrganization({
    name,
    region: options.region ?? null,
    allocatedCredits: credits,
    remainingCredits: credits,
    billingPeriod: 'monthly',
    nextRolloverDate: nextMonth(),
    planName: '',
  });
}

/** Bootstraps an empty store; resolves undefined when the store already has an organization. */
export async function bootstrap(store: Store): Promise<BootstrapResult | undefined> {
  objectArg(store, 'bootstrap: store');
  for (const m of ['countOrganizations', 'getOrganizationByName', 'createOrganization', 'createApiKey'] as const) functionArg(store[m], `bootstrap: store.${m}`);
  if ((await store.countOrganizations()) > 0) return undefined;
  const org = await ensureOrganization(store, 'default');
  const api = await createKey(store, org.id);
  const admin = await createKey(store, null);
  return { org: org.name, apiKey: api.key, adminKey: admin.key };
}
