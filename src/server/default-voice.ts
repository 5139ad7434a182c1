/**
 * One default voice (issue 35): a TTS request that names no voice gets the one `"voice":
 * "default"` names — Emma, the voice of the service's examples, else the first catalog voice
 * (voice-lookup.ts) — on POST and on the WebSocket, whatever the engine, instead of an engine's
 * own fallback (espeak's bare English voice, sherpa-onnx's speaker 0).
 */
import type { TtsEngine } from '../sessions/engine.js';

/** What a request without `voice_id` (and, on POST, without `voice`) is given. */
export const DEFAULT_VOICE_NAME = 'default';

/** `inner`, with {@link DEFAULT_VOICE_NAME} as the voice of every request that names none. */
export function defaultVoiceTtsEngine(inner: TtsEngine): TtsEngine {
  return {
    open: (config, emit) => inner.open(config.voiceId === undefined ? { ...config, voiceId: DEFAULT_VOICE_NAME } : config, emit),
  };
}
