/**
 * TTS routes: POST /post/speech/tts and its alias POST /speech/tts (§4.2), and the /speech/tts
 * WebSocket (§4.5). Both run the library's TTS runner over a metered engine; `?token=` is accepted
 * on both (§5.2). Each tells the engine's meter what reached the client, so a request pays for
 * the audio it delivered (src/server/credits.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { WebSocket } from 'ws';
import { VoicewireError } from '../../util/errors.js';
import { validateTtsRequestBody } from '../../protocol/rest.js';
import { createTtsServerSession } from '../../sessions/server.js';
import { sendAudioLine, type AudioLineSpan, type ServerTransport } from '../../sessions/server-session.js';
import type { MeteredTtsEngine } from '../credits.js';
import { readJson, write } from '../http.js';
import { serveWebSocketSession } from '../ws.js';
import { stagedTtsEngine } from '../first-output-stages.js';
import type { HttpRoute, RequestScope, RouteModule } from '../context.js';
import { findVoice } from '../voice-lookup.js';
import { defaultVoiceTtsEngine, voiceOrDefault } from '../default-voice.js';
import { startPaidTtsResponse } from './paid-tts-response.js';

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
  const engine = ctx.ttsEngine(who);
  try {
    const body = validateTtsRequestBody(await readJson(req, ctx.config.limits.maxJsonBytes, ctx.config.limits.maxJsonDepth));
    // Every limit before any work (issue 20 §6): the text limit, the voice, then credits for all of the text.
    const chars = [...body.text].length;
    if (chars > ctx.config.limits.maxTextChars) {
      throw new VoicewireError('LIMIT_EXCEEDED', `text is over the limit of ${ctx.config.limits.maxTextChars} characters per request`);
    }
    // §7.1 lists an invalid voice ID among the proxy-level errors: checked here, answered as a raw string.
    // No voice named is the one "default" names (default-voice.ts), as on the WebSocket.
    const voice = await voiceOrDefault(ctx.store, who.org.id, body.voice_id ?? body.voice);
    if (voice !== null && (await findVoice(ctx.store, who.org.id, voice)) === undefined) {
      throw new VoicewireError('VOICE_NOT_FOUND', `invalid voice ID ${JSON.stringify(voice)}`);
    }
    // pronunciation_id is honoured (issue 35): an unknown one is refused before any work, as a voice.
    if (body.pronunciation_id !== undefined && (await ctx.store.getDictionary(who.org.id, body.pronunciation_id)) === undefined) {
      throw new VoicewireError('TTS_UNKNOWN_PRONUNCIATION', `unknown pronunciation_id ${JSON.stringify(body.pronunciation_id)}`);
    }
    const { chunks: it, gone } = await startPaidTtsResponse(engine, { ...body, voice_id: voice }, res, chars);
    // The first chunk decides the status: a failure before it is a plain-text 500 (§7.1).
    const first = await it.next();
    if (gone()) return;
    ctx.metrics.timeToFirstAudio.observe({ route: 'tts_post' }, (performance.now() - started) / 1000);
    res.writeHead(200, { 'content-type': body.only_audio ? audioContentType(body.output_format) : 'application/x-ndjson', 'x-request-id': scope.requestId });
    try {
      for (let r = first; !r.done; r = await it.next()) {
        if (gone()) return;
        await write(res, r.value, ctx.config.limits.idleSeconds * 1000);
      }
    } catch (err) {
      // Raw audio has no in-stream error form: the response is cut (the client sees a broken body).
      log.warn({ route: 'tts_post', error: (err as Error).message }, 'raw audio response aborted');
      res.destroy();
      return;
    }
    if (gone()) return;
    // Settled before the end: once the client has the whole response, its balance is final.
    await engine.finish(null, true);
    res.end();
    log.info({ route: 'tts_post', chars: body.text.length, ms: Math.round(performance.now() - started) }, 'tts done');
  } finally {
    // A refused, failed or abandoned request pays for what was sent; the rest of its hold goes back.
    await engine.finishAll();
    release();
  }
}

/** `{"type":"audio","audio":"` — what a serialized TTS audio message starts with (serializeTtsAudioMessage). */
const AUDIO_PREFIX = '{"type":"audio","audio":"';

/** The request (`client_req_id`, null without) and end (`stop_s`) of a serialized audio message, read after its base64. */
function audioSpan(text: string): { key: string | null; stop: number } | undefined {
  if (!text.startsWith(AUDIO_PREFIX)) return undefined;
  const end = text.indexOf('"', AUDIO_PREFIX.length);
  if (end < 0 || text.charCodeAt(end + 1) !== 0x2c /* , */) return undefined;
  const fields = JSON.parse('{' + text.slice(end + 2)) as { stop_s?: unknown; client_req_id?: unknown };
  if (typeof fields.stop_s !== 'number') return undefined;
  return { key: typeof fields.client_req_id === 'string' ? fields.client_req_id : null, stop: fields.stop_s };
}

/**
 * The socket's transport, telling the engine's meter what each `audio` message handed to the open
 * socket delivered. A class over the transport (issue 22: a spread copy and a closure per session).
 */
class BilledTransport implements ServerTransport {
  constructor(
    private readonly inner: ServerTransport,
    private readonly ws: WebSocket,
    private readonly engine: MeteredTtsEngine,
  ) {}

  send(text: string): unknown {
    const open = this.ws.readyState === this.ws.OPEN;
    const r = this.inner.send(text);
    const span = open ? audioSpan(text) : undefined;
    if (span !== undefined) this.engine.sent(span.key, span.stop);
    return r;
  }

  /** An `audio` line as bytes: its span comes with it, nothing is parsed (issue 34). */
  sendAudio(line: Uint8Array, span: AudioLineSpan): unknown {
    const open = this.ws.readyState === this.ws.OPEN;
    const r = sendAudioLine(this.inner, line, span);
    if (open) this.engine.sent(span.clientReqId, span.stop_s);
    return r;
  }

  close(code: number, reason: string): void {
    this.inner.close(code, reason);
  }

  drained(): Promise<void> {
    return this.inner.drained ? this.inner.drained() : Promise.resolve();
  }

  pauseReading(): void {
    this.inner.pauseReading?.();
  }

  resumeReading(): void {
    this.inner.resumeReading?.();
  }
}

/**
 * The TTS WebSocket: audio handed to the open socket counts as delivered to its request; each
 * request settles when it ends (in full after `end_of_stream`), every bill still open when the
 * socket closes.
 */
function ttsSocket(scope: RequestScope, ws: WebSocket, req: IncomingMessage): Promise<void> {
  return serveWebSocketSession(scope, ws, req, {
    route: 'tts_ws',
    credentials: 'tts',
    firstOutput: 'audio',
    create: (who, common, stages) => {
      const engine = scope.ctx.ttsEngine(who);
      // 'close' comes once: `on`, not `once` (its wrapper is two more objects per session).
      ws.on('close', () => void engine.finishAll());
      return createTtsServerSession({
        ...common,
        transport: new BilledTransport(common.transport, ws, engine),
        onEvent: (notice) => {
          common.onEvent?.(notice);
          if (notice.type === 'request_ended') void engine.finish(notice.clientReqId, notice.outcome === 'ended');
        },
        engine: stagedTtsEngine(defaultVoiceTtsEngine(engine, scope.ctx.store, who.org.id), stages),
      });
    },
  });
}

const post = (path: string): HttpRoute => ({ method: 'POST', path, handle: postTts });

export const ttsRoutes: RouteModule = {
  http: [post('/post/speech/tts'), post('/speech/tts')],
  ws: [{ path: '/speech/tts', handle: ttsSocket }],
};
