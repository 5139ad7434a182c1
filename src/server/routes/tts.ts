/**
 * TTS routes: POST /post/speech/tts and its alias POST /speech/tts (§4.2), and the /speech/tts
 * WebSocket (§4.5). Both run the library's TTS runner over a metered engine; `?token=` is accepted
 * on both (§5.2).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { VoicewireError } from '../../util/errors.js';
import { validateTtsRequestBody } from '../../protocol/rest.js';
import { createTtsHttpResponse } from '../../sessions/http.js';
import { createTtsServerSession } from '../../sessions/server.js';
import { readJson, write } from '../http.js';
import { serveWebSocketSession } from '../ws.js';
import { stagedTtsEngine } from '../first-output-stages.js';
import type { HttpRoute, RequestScope, RouteModule } from '../context.js';
import { findVoice } from '../voice-lookup.js';

/** Content-Type of raw audio (`only_audio: true`) per output format. */
function audioContentType(format: string): string {
  if (format === 'wav') return 'audio/wav';
  if (format === 'opus') return 'audio/ogg; codecs=opus';
  if (format === 'ulaw_8000' || format === 'mulaw_8000') return 'audio/basic';
  if (format === 'alaw_8000') return 'audio/x-alaw-basic';
  const rate = format === 'pcm' ? 48000 : Number(format.slice(4));
  return `audio/pcm; rate=${rate}`;
}

async function postTts(scope: RequestScope, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const { ctx, log } = scope;
  const who = await ctx.auth(req, { route: 'tts' });
  const release = ctx.sessions.open('tts_post', who.key.id);
  const started = performance.now();
  try {
    const body = validateTtsRequestBody(await readJson(req, ctx.config.limits.maxJsonBytes));
    if ([...body.text].length > ctx.config.limits.maxTextChars) {
      throw new VoicewireError('LIMIT_EXCEEDED', `text is over the limit of ${ctx.config.limits.maxTextChars} characters per request`);
    }
    // §7.1 lists an invalid voice ID among the proxy-level errors: checked here, answered as a raw string.
    const voice = body.voice_id ?? body.voice;
    if (voice !== null && (await findVoice(ctx.store, who.org.id, voice)) === undefined) {
      throw new VoicewireError('VOICE_NOT_FOUND', `invalid voice ID ${JSON.stringify(voice)}`);
    }
    const it = createTtsHttpResponse({ engine: ctx.ttsEngine(who), body })[Symbol.asyncIterator]();
    const stop = (): void => void it.return?.();
    res.once('close', stop);
    // The first chunk decides the status: a failure before it is a plain-text 500 (§7.1).
    const first = await it.next();
    ctx.metrics.timeToFirstAudio.observe({ route: 'tts_post' }, (performance.now() - started) / 1000);
    res.writeHead(200, { 'content-type': body.only_audio ? audioContentType(body.output_format) : 'application/x-ndjson', 'x-request-id': scope.requestId });
    try {
      for (let r = first; !r.done; r = await it.next()) await write(res, r.value, ctx.config.limits.idleSeconds * 1000);
    } catch (err) {
      // Raw audio has no in-stream error form: the response is cut (the client sees a broken body).
      log.warn({ route: 'tts_post', error: (err as Error).message }, 'raw audio response aborted');
      res.destroy();
      return;
    }
    res.end();
    log.info({ route: 'tts_post', chars: body.text.length, ms: Math.round(performance.now() - started) }, 'tts done');
  } finally {
    release();
  }
}

const post = (path: string): HttpRoute => ({ method: 'POST', path, handle: postTts });

export const ttsRoutes: RouteModule = {
  http: [post('/post/speech/tts'), post('/speech/tts')],
  ws: [
    {
      path: '/speech/tts',
      handle: (scope, ws, req) =>
        serveWebSocketSession(scope, ws, req, {
          route: 'tts_ws',
          credentials: 'tts',
          firstOutput: 'audio',
          create: (who, common, stages) => createTtsServerSession({ ...common, engine: stagedTtsEngine(scope.ctx.ttsEngine(who), stages) }),
        }),
    },
  ],
};

