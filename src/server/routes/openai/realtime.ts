/**
 * The `/v1/realtime` WebSocket: OpenAI Realtime transcription sessions (GA API) on the server's
 * STT engine. The socket is served as the `/speech/asr` WebSocket is (src/server/ws.ts: per-key
 * sessions, drain, frame and idle limits, pings, the session's length; credits through the metered
 * engine), with realtime-session.ts translating between the two protocols.
 *
 * Credentials: `Authorization: Bearer <API key>` (OpenAI's SDKs, LiveKit's plugin) or `x-api-key`;
 * in a browser, which cannot set headers, a temporary token (§4.6) as the subprotocol
 * `openai-insecure-api-key.<token>` (OpenAI's browser form; the server answers with the
 * `realtime` subprotocol, never echoing the token) or as `?token=`. A long-lived key is not
 * accepted in a subprotocol: a page should never hold one.
 *
 * The URL: `?intent=transcription` (the only intent served) and `?model=` one of
 * {@link OPENAI_REALTIME_STT_MODELS} (default `gpt-4o-transcribe`); every model runs the same engine.
 */
import type { IncomingMessage } from 'node:http';
import type { WebSocket } from 'ws';
import { VoicewireError } from '../../../util/errors.js';
import { createSttServerSession } from '../../../sessions/stt-server-session.js';
import { createSttInputDecoder } from '../../../pipelines/stt-audio-decoder.js';
import { serveWebSocketSession } from '../../ws.js';
import { stagedSttEngine } from '../../first-output-stages.js';
import type { RequestScope } from '../../context.js';
import { bearerKey } from './auth.js';
import { OPENAI_REALTIME_STT_MODELS } from './models.js';
import { errorEventBody, realtimeEventError } from './realtime-events.js';
import { RealtimeTranscriptionSession } from './realtime-session.js';

/** A server event carrying transcript text: what the time to first text waits for. */
const FIRST_TEXT = /^\{"event_id":"[^"]*","type":"conversation\.item\.input_audio_transcription\.(?:delta|completed)"/;

/** The subprotocol prefix of OpenAI's browser credential form. */
export const INSECURE_KEY_PROTOCOL = 'openai-insecure-api-key.';

/**
 * The subprotocol the server answers (ws's `handleProtocols`): `realtime` when offered, else the
 * first that carries no credential; a credential is never echoed back.
 */
export function selectRealtimeProtocol(protocols: Set<string>): string | false {
  if (protocols.has('realtime')) return 'realtime';
  for (const p of protocols) if (!p.startsWith(INSECURE_KEY_PROTOCOL)) return p;
  return false;
}

/**
 * The request as the server's credential check reads it: a bearer key as `x-api-key`, a
 * subprotocol token as `?token=`.
 */
function credentialView(req: IncomingMessage, url: URL): IncomingMessage {
  const headers = { ...req.headers };
  const key = bearerKey(req.headers.authorization);
  if (key !== undefined) headers['x-api-key'] = key;
  const offered = String(req.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim());
  const token = offered.find((p) => p.startsWith(INSECURE_KEY_PROTOCOL))?.slice(INSECURE_KEY_PROTOCOL.length);
  const view = new URL(url.href);
  if (token !== undefined && token !== '') view.searchParams.set('token', token);
  return Object.create(req, { headers: { value: headers, enumerable: true }, url: { value: `${view.pathname}${view.search}`, enumerable: true } }) as IncomingMessage;
}

/** Sends an `error` event in OpenAI's form, then closes with the error's code. */
export function refuseRealtime(ws: WebSocket, error: VoicewireError): void {
  if (ws.readyState !== ws.OPEN) return;
  ws.resume();
  const event = { type: 'error', event_id: `event_refused`, error: errorEventBody(error) };
  ws.send(JSON.stringify(event), () => ws.close(error.closeCode ?? 1011, error.message.slice(0, 120)));
}

/** Handles a `/v1/realtime` upgrade. */
export async function serveRealtime(scope: RequestScope, ws: WebSocket, req: IncomingMessage): Promise<void> {
  const q = scope.url.searchParams;
  const intent = q.get('intent');
  const model = q.get('model') ?? undefined;
  if (intent !== null && intent !== 'transcription') {
    return refuseRealtime(ws, realtimeEventError('invalid_value', 'intent', `Invalid value: '${intent.slice(0, 64)}'. This server serves transcription sessions only: use ?intent=transcription.`));
  }
  if (model !== undefined && !(OPENAI_REALTIME_STT_MODELS as readonly string[]).includes(model)) {
    return refuseRealtime(ws, realtimeEventError('model_not_found', 'model', `The model '${model.slice(0, 64)}' is not served here for realtime transcription; use one of ${OPENAI_REALTIME_STT_MODELS.join(', ')}.`));
  }
  const { ctx } = scope;
  const limits = ctx.config.limits;
  await serveWebSocketSession(scope, ws, credentialView(req, scope.url), {
    route: 'openai_realtime',
    credentials: 'tts',
    firstOutput: 'text',
    // Its text is a transcription delta or completion (event_id first: realtime-session.ts's emit).
    isFirstOutput: (line) => FIRST_TEXT.test(line),
    refuse: refuseRealtime,
    create: (who, common, stages) => {
      // One engine per socket (its budgets count sockets), shared by the STT sessions it runs.
      const engine = stagedSttEngine(ctx.sttEngine(who), stages);
      return new RealtimeTranscriptionSession({
        transport: common.transport,
        ...(model === undefined ? {} : { model }),
        expiresAt: Math.floor(Date.now() / 1000) + limits.sessionSeconds,
        createSttSession: (transport) =>
          createSttServerSession({
            ...common,
            transport,
            engine,
            // Decoded audio is capped at the session limit, as on /speech/asr (issue 11 §4).
            createInputDecoder: (format) => createSttInputDecoder(format, { maxDecodedSeconds: limits.sessionSeconds }),
          }),
      });
    },
  });
}
