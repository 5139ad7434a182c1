/**
 * The caller's account: GET /api-keys/token (§4.6), GET /usages/credits (§4.12) and
 * GET /usages/summary (a core route real clients call; its shape is voicewire's choice:
 * `{ since, tts: {units, credits, requests}, stt: {…} }`, units are characters and seconds).
 */
import { generateToken, hashSecret } from '../keys.js';
import { sendJson } from '../http.js';
import type { RouteModule } from '../context.js';

/** Start of the current billing period: one period before the next rollover (monthly). */
function periodStart(nextRollover: string): string {
  const d = new Date(`${nextRollover}T00:00:00Z`);
  if (Number.isNaN(d.getTime())) return new Date(0).toISOString();
  d.setUTCMonth(d.getUTCMonth() - 1);
  return d.toISOString();
}

export const accountRoutes: RouteModule = {
  http: [
    {
      method: 'GET',
      path: '/api-keys/token',
      handle: async ({ ctx, log }, req, res) => {
        // A token stands for a key, never for another token.
        const who = await ctx.auth(req, { route: 'rest' });
        const token = generateToken();
        const expiresAt = new Date(Date.now() + ctx.config.tokenSeconds * 1000).toISOString();
        await ctx.store.createToken({ hash: hashSecret(token), keyId: who.key.id, expiresAt });
        log.info({ key_id: who.key.id, expires_at: expiresAt }, 'temporary token issued');
        sendJson(res, 200, { token, expires_at: expiresAt });
      },
    },
    {
      method: 'GET',
      path: '/usages/credits',
      handle: async ({ ctx }, req, res) => {
        const { org } = await ctx.auth(req);
        const fresh = (await ctx.store.getOrganization(org.id)) ?? org;
        sendJson(res, 200, {
          remaining_credits: fresh.remainingCredits,
          allocated_credits: fresh.allocatedCredits,
          billing_period: fresh.billingPeriod,
          next_rollover_date: fresh.nextRolloverDate,
          plan_name: fresh.planName,
        });
      },
    },
  ],
};

/** GET /usages/summary: a core route (served here without --core-url). */
export const usageSummaryRoutes: RouteModule = {
  http: [
    {
      method: 'GET',
      path: '/usages/summary',
      handle: async ({ ctx }, req, res) => {
        const { org: who } = await ctx.auth(req);
        // The balance as stored now: authentication's organization may be a cached lookup (auth-cache.ts).
        const org = (await ctx.store.getOrganization(who.id)) ?? who;
        const since = periodStart(org.nextRolloverDate);
        const s = await ctx.store.usageSummary(org.id, since);
        sendJson(res, 200, { since, remaining_credits: org.remainingCredits, allocated_credits: org.allocatedCredits, ...s });
      },
    },
  ],
};
