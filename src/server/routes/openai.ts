/**
 * The OpenAI-compatible routes, served at `/v1` (outside `/api`) so that an OpenAI SDK given
 * `baseURL: "http://host:port/v1"` works unchanged: POST /v1/audio/speech, POST
 * /v1/audio/transcriptions, GET /v1/models and GET /v1/models/{model}, and the /v1/realtime
 * WebSocket (transcription sessions, routes/openai/realtime.ts). Same keys (as `Bearer`),
 * credits and limits as the native routes; errors in OpenAI's JSON form (routes/openai/errors.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { VoicewireError, toVoicewireError } from '../../util/errors.js';
import { Router } from '../router.js';
import { sendJson } from '../http.js';
import type { RequestScope, RouteModule } from '../context.js';
import { sendOpenAIError } from './openai/errors.js';
import { openAIAuth } from './openai/auth.js';
import { openAIModels } from './openai/models.js';
import { postSpeech } from './openai/speech.js';
import { postTranscription } from './openai/transcriptions.js';
import { serveRealtime } from './openai/realtime.js';

/** Where the routes are mounted. */
export const OPENAI_PREFIX = '/v1';

/** The `/v1` routes; paths are relative to {@link OPENAI_PREFIX}. */
export const openAIRoutes: RouteModule = {
  http: [
    { method: 'POST', path: '/audio/speech', handle: postSpeech },
    { method: 'POST', path: '/audio/transcriptions', handle: postTranscription },
    {
      method: 'GET',
      path: '/models',
      handle: async ({ ctx }, req, res) => {
        await openAIAuth(ctx, req);
        sendJson(res, 200, { object: 'list', data: openAIModels() });
      },
    },
    {
      method: 'GET',
      path: '/models/:model',
      handle: async ({ ctx, params }, req, res) => {
        await openAIAuth(ctx, req);
        const model = openAIModels().find((m) => m.id === params['model']);
        if (model === undefined) throw new VoicewireError('NOT_FOUND', `The model ${JSON.stringify(params['model'])} does not exist`, { details: { param: 'model' } });
        sendJson(res, 200, model);
      },
    },
  ],
  ws: [{ path: '/realtime', handle: serveRealtime }],
};

const router = new Router([openAIRoutes]);

/** The `/v1` WebSocket route of a path (`/v1/realtime`), if any. */
export function matchOpenAIWs(pathname: string): ReturnType<Router['matchWs']> {
  return isOpenAIPath(pathname) ? router.matchWs(pathname.slice(OPENAI_PREFIX.length) || '/') : undefined;
}

/** True when a path belongs to the `/v1` routes. */
export function isOpenAIPath(pathname: string): boolean {
  return pathname === OPENAI_PREFIX || pathname.startsWith(`${OPENAI_PREFIX}/`);
}

/**
 * Serves one `/v1` request: routes it, and answers any failure (a 404 for an unknown route too)
 * in OpenAI's error form.
 */
export async function serveOpenAI(scope: RequestScope, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const method = req.method ?? 'GET';
  const path = scope.url.pathname.slice(OPENAI_PREFIX.length) || '/';
  try {
    const m = router.matchHttp(method, path);
    if (m === undefined) throw new VoicewireError('NOT_FOUND', `Invalid URL (${method} ${scope.url.pathname})`);
    await m.route.handle({ ...scope, params: m.params }, req, res);
  } catch (err) {
    const e = toVoicewireError(err);
    scope.ctx.metrics.errors.inc({ code: e.code });
    scope.log.info({ method, path: scope.url.pathname, code: e.code, error: e.message }, 'request failed');
    sendOpenAIError(res, e);
  }
}
