/**
 * A TTS answer over HTTP, billed as credits.ts says: the whole text held before any work, then
 * each chunk's audio paid for once the client took it; a client that went away takes nothing
 * more, and its response's close stops the synthesis. POST /api/post/speech/tts and
 * POST /v1/audio/speech share it; each settles (`engine.finish`) and gives back the rest
 * (`engine.finishAll`) itself.
 */
import type { ServerResponse } from 'node:http';
import type { TtsRequestBody } from '../../protocol/rest.js';
import type { TtsEngine } from '../../sessions/engine.js';
import { createTtsHttpResponse } from '../../sessions/http.js';
import type { MeteredTtsEngine } from '../credits.js';

export interface PaidTtsResponse {
  /** The response's chunks (createTtsHttpResponse). */
  readonly chunks: AsyncIterator<Uint8Array | string>;
  /** True once the client went away (`res` closed). */
  gone(): boolean;
}

/**
 * Holds credits for `chars` characters on `engine`, then starts the answer to `body` for `res`.
 * `run` is the engine that speaks: `engine` itself, or a wrapper of it.
 */
export async function startPaidTtsResponse(engine: MeteredTtsEngine, body: TtsRequestBody, res: ServerResponse, chars: number, run: TtsEngine = engine): Promise<PaidTtsResponse> {
  await engine.prepay(chars);
  // The client gone, nothing more counts as delivered (a write to a closed socket reaches no one).
  let gone = false;
  const onAudioTaken = (stopS: number): void => {
    if (!gone) engine.sent(null, stopS);
  };
  const chunks = createTtsHttpResponse({ engine: run, body, onAudioTaken })[Symbol.asyncIterator]();
  res.once('close', () => {
    gone = true;
    void chunks.return?.();
  });
  return { chunks, gone: () => gone };
}
