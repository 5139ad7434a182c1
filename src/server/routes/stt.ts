/**
 * STT routes: POST /post/speech/asr and its alias POST /speech/asr (§4.3: body audio, format from
 * `input_format` or Content-Type, NDJSON out) and the /speech/asr WebSocket (§4.4); /speech/s2s is
 * routes/s2s.ts.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { VoicewireError, isVoicewireError } from '../../util/errors.js';
import { createSttHttpResponse } from '../../sessions/http.js';
import { createSttServerSession, type SttInputDecoder } from '../../sessions/server.js';
import { createSttInputDecoder } from '../../pipelines/stt-audio-decoder.js';
import type { AudioFormatName } from '../../audio/format.js';
import { parseAsrQuery } from '../../protocol/rest.js';
import { unsupportedSttConfigIssues } from '../../protocol/config.js';
import { limitedBody, write } from '../http.js';
import { serveWebSocketSession } from '../ws.js';
import { stagedSttEngine } from '../first-output-stages.js';
import type { HttpRoute, RequestScope, RouteModule } from '../context.js';

async function postAsr(scope: RequestScope, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const { ctx, log } = scope;
  const who = await ctx.auth(req, { route: 'stt' });
  const release = ctx.sessions.open('stt_post', who.key.id);
  const started = performance.now();
  try {
    const declared = Number(req.headers['content-length'] ?? NaN);
    if (declared > ctx.config.limits.maxAudioBytes) {
      throw new VoicewireError('LIMIT_EXCEEDED', `request body of ${declared} bytes is over the limit of ${ctx.config.limits.maxAudioBytes}`);
    }
    // Validates the query and the Content-Type before any byte of the body is read (422 / plain text).
    const config = parseAsrQuery(scope.url.searchParams).json_config;
    const unsupported = config === null ? [] : unsupportedSttConfigIssues(config, ['query', 'json_config']);
    if (unsupported.length > 0) throw new VoicewireError('VALIDATION_FAILED', 'json_config holds a key no STT client documents', { details: { detail: unsupported } });
    const malformed = { seen: false };
    // The session reports a failed open as a line (code and message): keep the error itself, so a
    // busy engine can answer 503.
    const engine = ctx.sttEngine(who);
    let openError: unknown;
    const lines = createSttHttpResponse({
      engine: {
        open: async (config, emit) => {
          try {
            return await engine.open(config, emit);
          } catch (err) {
            openError = err;
            throw err;
          }
        },
      },
      body: limitedBody(req, ctx.config.limits.maxAudioBytes),
      contentType: req.headers['content-type'] ?? null,
      query: scope.url.searchParams,
      createInputDecoder: (format) => watchDecoder(inputDecoder(ctx.config.limits.sessionSeconds)(format), malformed),
    });
    const it = lines[Symbol.asyncIterator]();
    // A client gone is not written to: a write to a closed response would wait out the idle
    // limit, holding the session (and the request's credits) that long.
    let gone = false;
    res.once('close', () => {
      gone = true;
      void it.return?.();
    });
    let first: IteratorResult<string>;
    try {
      first = await it.next();
    } catch (err) {
      // A busy server (no decoder left in the process's budget) is 503, as a draining one: retry later.
      if (isVoicewireError(openError, 'ENGINE_BUSY')) {
        ctx.metrics.errors.inc({ code: openError.code });
        log.info({ route: 'stt_post', code: openError.code }, 'stt refused: engine busy');
        res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8', 'retry-after': '1' });
        res.end(openError.message);
        return;
      }
      // §7.1 lists malformed audio among the proxy-level errors: the raw string, no upstream prefix.
      if (!malformed.seen || !(err instanceof VoicewireError)) throw err;
      res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8', 'x-request-id': scope.requestId });
      res.end(err.message);
      log.info({ route: 'stt_post', error: err.message }, 'stt refused: malformed audio');
      return;
    }
    if (gone) return;
    res.writeHead(200, { 'content-type': 'application/x-ndjson', 'x-request-id': scope.requestId });
    let timed = false;
    for (let r = first; !r.done; r = await it.next()) {
      if (gone) return;
      if (!timed && r.value.startsWith('{"type":"text"')) {
        timed = true;
        ctx.metrics.timeToFirstText.observe({ route: 'stt_post' }, (performance.now() - started) / 1000);
      }
      await write(res, r.value, ctx.config.limits.idleSeconds * 1000);
    }
    if (gone) return;
    res.end();
    log.info({ route: 'stt_post', ms: Math.round(performance.now() - started) }, 'stt done');
  } finally {
    release();
  }
}

/**
 * The STT input decoder of a request: decoded audio is capped at the session limit (a request can
 * hold no more audio than a session may last), so a small Ogg Opus message that decodes to hours
 * ends with AUDIO_LIMIT_EXCEEDED (issue 11 §4) instead of being decoded.
 */
const inputDecoder = (sessionSeconds: number) => (format: AudioFormatName) => createSttInputDecoder(format, { maxDecodedSeconds: sessionSeconds });

/**
 * Notes in `flag` that the decoder refused the bytes as malformed (PROTOCOL_INVALID_AUDIO, or an
 * error without a close code); a limit such as AUDIO_LIMIT_EXCEEDED keeps its upstream form.
 */
function watchDecoder(decoder: SttInputDecoder, flag: { seen: boolean }): SttInputDecoder {
  const watched = <A extends unknown[], R>(f: (...args: A) => R) => (...args: A): R => {
    try {
      return f.apply(decoder, args);
    } catch (err) {
      if (!(err instanceof VoicewireError) || err.code === 'PROTOCOL_INVALID_AUDIO' || err.closeCode === undefined) flag.seen = true;
      throw err;
    }
  };
  const out: SttInputDecoder = {
    push: watched(decoder.push),
    get pending() {
      return decoder.pending ?? 0;
    },
  };
  if (decoder.pull) out.pull = watched(decoder.pull);
  if (decoder.drain) out.drain = watched(decoder.drain);
  if (decoder.end) out.end = watched(decoder.end);
  return out;
}

const post = (path: string): HttpRoute => ({ method: 'POST', path, handle: postAsr });

export const sttRoutes: RouteModule = {
  http: [post('/post/speech/asr'), post('/speech/asr')],
  ws: [
    {
      path: '/speech/asr',
      handle: (scope, ws, req) =>
        serveWebSocketSession(scope, ws, req, {
          route: 'stt_ws',
          // A temporary token is accepted here too (voicewire's extension, README "Server"): the
          // web page's microphone has no other way to authenticate a browser WebSocket.
          credentials: 'tts',
          firstOutput: 'text',
          create: (who, common, stages) => createSttServerSession({ ...common, engine: stagedSttEngine(scope.ctx.sttEngine(who), stages), createInputDecoder: inputDecoder(scope.ctx.config.limits.sessionSeconds) }),
        }),
    },
  ],
};
