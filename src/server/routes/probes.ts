/**
 * Probes (§4.1, §3.1): /healthz and /readyz without authentication (GET and HEAD), /statusz and
 * POST /drain with an instance-admin key (`voicewire keys create --admin`, of no organization;
 * voicewire's choice of mechanism, §5.4). An organization's key or a token is refused there.
 */
import { parseDrainQuery, readiness } from '../../protocol/drain.js';
import { sendJson } from '../http.js';
import { authenticateInstanceAdmin } from '../auth.js';
import type { HttpRoute, RouteModule, ServerContext } from '../context.js';
import type { IncomingMessage } from 'node:http';

/** A store known to be down refuses at once, as for every route (server.ts `auth`). */
async function instanceAdmin(ctx: ServerContext, req: IncomingMessage): Promise<void> {
  ctx.storeHealth.assertUp();
  await authenticateInstanceAdmin(ctx.store, req.headers);
}

const healthz: HttpRoute['handle'] = async (_s, _req, res) => sendJson(res, 200, { status: 'ok' });

const readyz: HttpRoute['handle'] = async ({ ctx }, _req, res) => {
  const r = readiness({ mode: ctx.sessions.draining ? 'draining' : 'serving', sessions: ctx.sessions.live });
  // Draining wins (the instance is going away); else a store that stopped answering makes
  // this instance unready until it answers again (README "Many instances").
  if (r.status === 200 && !ctx.storeHealth.up) return sendJson(res, 503, { status: 'store_unavailable' });
  sendJson(res, r.status, r.body);
};

export const probeRoutes: RouteModule = {
  http: [
    { method: 'GET', path: '/healthz', handle: healthz },
    { method: 'GET', path: '/readyz', handle: readyz },
    // Load balancers probe with HEAD: the same status and headers; Node leaves out the body of a HEAD answer.
    { method: 'HEAD', path: '/healthz', handle: healthz },
    { method: 'HEAD', path: '/readyz', handle: readyz },
    {
      method: 'GET',
      path: '/statusz',
      handle: async ({ ctx }, req, res) => {
        await instanceAdmin(ctx, req);
        sendJson(res, 200, {
          version: ctx.version,
          environment: ctx.config.environment,
          uptime_s: Math.round((Date.now() - ctx.startedAt) / 1000),
          draining: ctx.sessions.draining,
          // Which process answered: with `serve --workers N` each worker is its own process.
          pid: process.pid,
          store: ctx.storeHealth.up ? 'up' : 'unavailable',
          live_sessions: ctx.sessions.live,
          sessions_per_route: ctx.sessions.routes(),
          // The process-wide budgets of issue 31 (README "Limits and budgets"): what is held now.
          upload_bytes: ctx.uploads.bytes,
          ffmpeg_children: ctx.ffmpeg.live,
          engines: { tts: ctx.config.tts, stt: ctx.config.stt },
          region: ctx.config.region,
        });
      },
    },
    {
      method: 'POST',
      path: '/drain',
      handle: async ({ ctx, url, log }, req, res) => {
        await instanceAdmin(ctx, req);
        const { enable } = parseDrainQuery(url.searchParams);
        ctx.sessions.setDraining(enable);
        log.info({ draining: enable, live_sessions: ctx.sessions.live }, 'drain state changed');
        sendJson(res, 200, { draining: enable, live_sessions: ctx.sessions.live });
      },
    },
  ],
};
