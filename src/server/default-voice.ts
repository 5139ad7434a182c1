/**
 * One default voice (issue 35): a TTS request that names no voice gets the one `"voice":
 * "default"` names — Emma, the voice of the service's examples, else the first catalog voice
 * (voice-lookup.ts) — on POST and on the WebSocket, whatever the engine, instead of an engine's
 * own fallback (espeak's bare English voice, sherpa-onnx's speaker 0). A server whose catalog has
 * no voice at all keeps the engine's fallback.
 */
import type { TtsEngine } from '../sessions/engine.js';
import type { Store } from './store/store.js';
import { findVoice } from './voice-lookup.js';

/** What a request without `voice_id` (and, on POST, without `voice`) is given. */
export const DEFAULT_VOICE_NAME = 'default';

/** The voice a request of `orgId` that names `voice` (null: none) speaks with: {@link DEFAULT_VOICE_NAME} for none, when it names a voice. */
export async function voiceOrDefault(store: Store, orgId: string, voice: string | null): Promise<string | null> {
  if (voice !== null) return voice;
  return (await findVoice(store, orgId, DEFAULT_VOICE_NAME)) === undefined ? null : DEFAULT_VOICE_NAME;
}

/** `inner`, with {@link DEFAULT_VOICE_NAME} as the voice of every request of `orgId` that names none. */
export function defaultVoiceTtsEngine(inner: TtsEngine, store: Store, orgId: string): TtsEngine {
  return {
    async open(config, emit) {
      if (config.voiceId !== undefined) return inner.open(config, emit);
      const voice = await voiceOrDefault(store, orgId, null);
      return inner.open(voice === null ? config : { ...config, voiceId: voice }, emit);
    },
  };
}
