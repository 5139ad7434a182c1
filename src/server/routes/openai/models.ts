/**
 * The model ids the `/v1` routes accept (GET /v1/models lists them). Every TTS id runs the
 * server's TTS engine and every STT id its STT engine: the ids exist so that tools configured for
 * OpenAI's models work unchanged, not to choose between engines.
 */
import { invalidParam } from './errors.js';

/** Model ids of POST /v1/audio/speech. */
export const OPENAI_TTS_MODELS = ['tts-1', 'tts-1-hd', 'gpt-4o-mini-tts', 'voicewire-tts'] as const;
/** Model ids of POST /v1/audio/transcriptions. */
export const OPENAI_STT_MODELS = ['whisper-1', 'gpt-4o-transcribe', 'gpt-4o-mini-transcribe', 'voicewire-stt'] as const;
/**
 * Model ids of /v1/realtime transcription sessions (the URL's `model` and
 * `audio.input.transcription.model`): OpenAI's Realtime-only `gpt-realtime-whisper` (the default
 * of LiveKit's OpenAI plugin) and every id of /v1/audio/transcriptions.
 */
export const OPENAI_REALTIME_STT_MODELS = ['gpt-realtime-whisper', ...OPENAI_STT_MODELS] as const;

/** One entry of GET /v1/models (OpenAI's `model` object). */
export interface OpenAIModel {
  id: string;
  object: 'model';
  /** Unix seconds: fixed (2026-01-01), so listings are stable. */
  created: number;
  owned_by: 'voicewire';
}

const CREATED = Date.UTC(2026, 0, 1) / 1000;

/** Every model, TTS first, then STT (the Realtime-only id last). */
export function openAIModels(): OpenAIModel[] {
  return [...OPENAI_TTS_MODELS, ...OPENAI_STT_MODELS, 'gpt-realtime-whisper'].map((id) => ({ id, object: 'model', created: CREATED, owned_by: 'voicewire' }));
}

/**
 * Checks a request's `model` against the ids of its kind.
 * @throws VoicewireError `INVALID_ARGUMENT` (400, param `model`) naming the accepted ids.
 */
export function checkModel(model: unknown, kind: 'tts' | 'stt'): string {
  const ids: readonly string[] = kind === 'tts' ? OPENAI_TTS_MODELS : OPENAI_STT_MODELS;
  if (typeof model !== 'string' || model === '') throw invalidParam('model', `model is required: one of ${ids.join(', ')}`);
  if (!ids.includes(model)) throw invalidParam('model', `model ${JSON.stringify(model)} is not served here for ${kind === 'tts' ? 'speech' : 'transcriptions'}; use one of ${ids.join(', ')}`);
  return model;
}
