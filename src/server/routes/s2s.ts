/**
 * The /speech/s2s WebSocket (protocol-notes.md, last section): speech in, the words heard as
 * `text` and re-spoken as `audio` in the chosen voice and output format (s2s-session.ts). Served
 * as the other WebSockets are (src/server/ws.ts): the key is checked first, then the session
 * counts against the per-key limit, with the same duration, idle and buffer limits; both engines
 * are metered (STT per second heard, TTS per character spoken).
 */
import { createSttInputDecoder } from '../../pipelines/stt-audio-decoder.js';
import { serveWebSocketSession } from '../ws.js';
import { stagedTtsEngine } from '../first-output-stages.js';
import { defaultVoiceTtsEngine } from '../default-voice.js';
import type { RouteModule } from '../context.js';
import { createS2sServerSession } from './s2s-session.js';

export const s2sRoutes: RouteModule = {
  ws: [
    {
      path: '/speech/s2s',
      handle: (scope, ws, req) =>
        serveWebSocketSession(scope, ws, req, {
          route: 's2s_ws',
          credentials: 'stt',
          firstOutput: 'audio',
          create: (who, common, stages) =>
            createS2sServerSession({
              ...common,
              stt: scope.ctx.sttEngine(who),
              // No voice_id is the voice "default" names, as on the TTS routes (issue 35).
              tts: stagedTtsEngine(defaultVoiceTtsEngine(scope.ctx.ttsEngine(who), scope.ctx.store, who.org.id), stages),
              // Decoded audio is capped at the session limit, as on /speech/asr.
              createInputDecoder: (format) => createSttInputDecoder(format, { maxDecodedSeconds: scope.ctx.config.limits.sessionSeconds }),
            }),
        }),
    },
  ],
};
