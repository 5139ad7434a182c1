/**
 * JSON Schemas (2020-12, as OpenAPI 3.1 uses) of the bodies, queries and answers of the routes.
 * Every enum and bound comes from the constant the validator itself checks against (the format
 * tables, TTS_CONFIG_LIMITS, VOICE_GENERATION_LIMITS, PRONUNCIATIONS_LIMIT_MAX, the OpenAI
 * tables, the server's limits), and test/server/openapi.test.ts feeds each schema's edges to
 * the validator, so the document cannot drift from what the routes accept.
 */
import { AUDIO_FORMAT_NAMES, STT_INPUT_FORMATS, TTS_STREAMING_OUTPUT_FORMATS } from '../../audio/format.js';
import { TTS_CONFIG_LIMITS } from '../../protocol/config.js';
import { PROTOCOL_LANGUAGES } from '../../protocol/validate.js';
import { PRONUNCIATIONS_LIMIT_MAX, VOICE_GENERATION_LIMITS } from '../../protocol/rest.js';
import type { ServerLimits } from '../config.js';
import { OPENAI_STT_MODELS, OPENAI_TTS_MODELS } from '../routes/openai/models.js';
import { OPENAI_VOICES } from '../routes/openai/voices.js';
import { OPENAI_SPEECH_FORMATS, OPENAI_SPEED } from '../routes/openai/speech.js';
import { OPENAI_TIMESTAMP_GRANULARITIES, OPENAI_TRANSCRIPTION_FORMATS } from '../routes/openai/transcriptions.js';

/** A JSON Schema object. */
export type Schema = Record<string, unknown>;

/** Pronunciation rule kinds (routes/pronunciations.ts `readRules`). */
export const RULE_KINDS = ['respelling', 'phonemes'] as const;
/** Default page of GET /pronunciations/ (routes/pronunciations.ts). */
export const PRONUNCIATIONS_DEFAULT_LIMIT = 100;

const str = (extra: Schema = {}): Schema => ({ type: 'string', ...extra });
const int = (extra: Schema = {}): Schema => ({ type: 'integer', ...extra });
const num = (extra: Schema = {}): Schema => ({ type: 'number', ...extra });
const bool = (extra: Schema = {}): Schema => ({ type: 'boolean', ...extra });
const arr = (items: Schema, extra: Schema = {}): Schema => ({ type: 'array', items, ...extra });
const obj = (properties: Record<string, Schema>, required: string[] = [], extra: Schema = {}): Schema => ({
  type: 'object',
  properties,
  ...(required.length > 0 ? { required } : {}),
  ...extra,
});
const nullable = (s: Schema): Schema => ({ anyOf: [s, { type: 'null' }] });
const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const binary = (mediaType: string): Schema => ({ type: 'string', contentMediaType: mediaType });

/** The component schemas, for a server with these limits. */
export function componentSchemas(limits: ServerLimits): Record<string, Schema> {
  const P = TTS_CONFIG_LIMITS;
  const G = VOICE_GENERATION_LIMITS;
  return {
    TtsJsonConfig: obj(
      {
        padding_bonus: num({ minimum: P.paddingBonus.min, maximum: P.paddingBonus.max, default: P.paddingBonus.default, description: `Speech speed (§2.8): negative faster, positive slower; 0 or an absolute value of at least ${P.paddingBonus.deadZone}.` }),
        temp: num({ minimum: P.temp.min, maximum: P.temp.max, default: P.temp.default }),
        cfg_coef: num({ minimum: P.cfgCoef.min, maximum: P.cfgCoef.max, default: P.cfgCoef.default }),
        rewrite_rules: str({ enum: [...PROTOCOL_LANGUAGES], description: 'A language enables all its rewrite rules.' }),
      },
      [],
      { description: 'TTS settings (§2.8); sent as an object or a JSON string. Unknown keys are ignored.' },
    ),
    SttJsonConfig: obj(
      { language: str({ enum: [...PROTOCOL_LANGUAGES] }), delay_in_frames: int({ minimum: 0 }), temp: num({ minimum: 0 }), padding_bonus: num() },
      [],
      { description: 'STT settings; sent as an object or a JSON string.' },
    ),
    TtsRequest: obj(
      {
        text: str({ maxLength: limits.maxTextChars, description: 'Text with optional <break time="…s" /> and <flush> tags.' }),
        voice: nullable(str({ description: 'A voice uid or name, or "default".' })),
        voice_id: nullable(str()),
        output_format: str({ enum: [...AUDIO_FORMAT_NAMES], default: 'wav' }),
        model_name: str({ default: 'default' }),
        json_config: nullable(ref('TtsJsonConfig')),
        only_audio: bool({ default: false, description: 'true: raw audio bytes; false: NDJSON events.' }),
      },
      ['text'],
    ),
    TtsEvent: {
      description: 'One NDJSON line of POST /post/speech/tts with only_audio false.',
      oneOf: [
        obj({ type: str({ const: 'audio' }), audio: str({ contentEncoding: 'base64' }), start_s: num(), stop_s: num(), stream_id: nullable(int()) }, ['type', 'audio']),
        obj({ type: str({ const: 'text' }), text: str(), start_s: num(), stop_s: num(), stream_id: nullable(int()) }, ['type', 'text']),
        ref('StreamError'),
        obj({ type: str({ const: 'end_of_stream' }) }, ['type']),
      ],
    },
    SttEvent: {
      description: 'One NDJSON line of POST /post/speech/asr (the WebSocket server messages without ready).',
      oneOf: [
        obj({ type: str({ const: 'step' }), vad: arr(obj({ horizon_s: num(), inactivity_prob: num() })), step_idx: int(), step_duration_s: num(), total_duration_s: num() }, ['type']),
        obj({ type: str({ const: 'text' }), text: str(), start_s: num(), stream_id: nullable(int()) }, ['type', 'text']),
        obj({ type: str({ const: 'end_text' }), stop_s: num(), stream_id: nullable(int()) }, ['type']),
        ref('StreamError'),
        obj({ type: str({ const: 'end_of_stream' }) }, ['type']),
      ],
    },
    StreamError: obj({ type: str({ const: 'error' }), message: str() }, ['type', 'message'], { description: 'An in-stream error line (§7.2): the stream ends.' }),
    ValidationError: obj(
      { detail: arr(obj({ type: str(), loc: arr({ anyOf: [str(), int()] }), msg: str(), input: {}, ctx: obj({}) }, ['type', 'loc', 'msg'])) },
      ['detail'],
      { description: '§2.7: a 422 body.' },
    ),
    NotFound: obj({ detail: str() }, ['detail']),
    Voice: obj(
      { uid: str(), name: str(), is_catalog: bool(), is_pro_clone: bool(), description: str(), filename: str(), start_s: num(), language: str(), tags: arr(str()) },
      ['uid'],
      { description: '§2.1' },
    ),
    VoiceUpload: obj(
      {
        audio_file: binary('application/octet-stream'),
        name: str({ minLength: 1 }),
        start_s: num({ minimum: 0 }),
        description: str(),
        input_format: str({ enum: [...STT_INPUT_FORMATS] }),
      },
      ['audio_file', 'name'],
    ),
    VoicePatch: obj({ name: str({ minLength: 1 }), description: str(), tags: arr(str()) }),
    Deleted: obj({ uid: str(), deleted: bool({ const: true }) }, ['uid', 'deleted']),
    VoiceGenerationRequest: obj(
      {
        prompt: str({ minLength: G.promptMinLength, maxLength: G.promptMaxLength, description: 'Not only spaces.' }),
        n_samples: int({ minimum: G.nSamplesMin, maximum: G.nSamplesMax, default: 1 }),
        language: str({ enum: [...PROTOCOL_LANGUAGES], default: 'en' }),
        json_config: obj({}, [], { description: '§2.9 voice-generation settings.' }),
      },
      ['prompt'],
    ),
    VoiceCandidate: obj({ embedding_id: str(), ready: bool(), expires_at: str({ format: 'date-time' }) }, ['embedding_id', 'ready'], { description: '§2.2' }),
    VoiceGenerationResponse: obj({ embeddings: arr(ref('VoiceCandidate')) }, ['embeddings']),
    VoiceFromEmbeddingRequest: obj({ voice_embedding_id: str({ minLength: 1 }), name: str({ minLength: 1 }), description: str({ default: '' }) }, ['voice_embedding_id', 'name']),
    CreatedVoice: obj({ uid: str(), name: str(), description: str(), language: str() }, ['uid'], { description: '§2.3' }),
    EmbeddingDeleted: obj({ embedding_id: str(), deleted: bool({ const: true }) }, ['embedding_id', 'deleted']),
    PronunciationRule: obj({ word: str({ minLength: 1 }), replacement: str({ minLength: 1 }), kind: str({ enum: [...RULE_KINDS], default: 'respelling' }) }, ['word', 'replacement']),
    PronunciationDictionary: obj(
      { uid: str(), name: str(), language: str(), org_uid: str(), created_at: str({ format: 'date-time' }), description: str(), rules: arr(ref('PronunciationRule')) },
      ['uid'],
      { description: '§2.4' },
    ),
    PronunciationList: obj({ dictionaries: arr(ref('PronunciationDictionary')), total: int({ minimum: 0 }) }, ['dictionaries', 'total']),
    DictionaryCreate: obj({ name: str({ minLength: 1 }), language: str({ enum: [...PROTOCOL_LANGUAGES] }), description: str(), rules: arr(ref('PronunciationRule')) }, ['name', 'language']),
    RulesAppend: obj({ rules: arr(ref('PronunciationRule')) }, ['rules']),
    CreditBalance: obj(
      { remaining_credits: num(), allocated_credits: num(), billing_period: str(), next_rollover_date: str({ format: 'date' }), plan_name: str() },
      ['remaining_credits', 'allocated_credits', 'plan_name'],
      { description: '§2.5' },
    ),
    UsageSummary: obj({
      since: str({ format: 'date-time' }),
      remaining_credits: num(),
      allocated_credits: num(),
      tts: obj({ units: num(), credits: num(), requests: int() }),
      stt: obj({ units: num(), credits: num(), requests: int() }),
    }),
    TemporaryToken: obj({ token: str(), expires_at: str({ format: 'date-time' }) }, ['token', 'expires_at'], { description: '§2.6' }),
    Health: obj({ status: str() }, ['status']),
    Status: obj({
      version: str(), environment: str(), uptime_s: int(), draining: bool(), pid: int(), store: str({ enum: ['up', 'unavailable'] }),
      live_sessions: int(), sessions_per_route: obj({}, [], { additionalProperties: int() }), engines: obj({ tts: str(), stt: str() }), region: nullable(str()),
    }),
    DrainResult: obj({ draining: bool(), live_sessions: int() }, ['draining', 'live_sessions']),
    // ------------------------------------------------------------------ OpenAI-compatible (/v1)
    OpenAIError: obj({ error: obj({ message: str(), type: str(), param: nullable(str()), code: nullable(str()) }, ['message', 'type', 'param', 'code']) }, ['error']),
    OpenAISpeechRequest: obj(
      {
        model: str({ enum: [...OPENAI_TTS_MODELS] }),
        input: str({ minLength: 1, maxLength: limits.maxTextChars }),
        voice: {
          anyOf: [str({ enum: Object.keys(OPENAI_VOICES) }), str({ description: 'A voicewire voice uid or name.' }), obj({ id: str() }, ['id'])],
        },
        response_format: str({ enum: [...OPENAI_SPEECH_FORMATS], default: 'mp3', description: 'mp3, flac and aac need ffmpeg on the server (default wav without it).' }),
        speed: num({ minimum: OPENAI_SPEED.min, maximum: OPENAI_SPEED.max, default: OPENAI_SPEED.default }),
        stream_format: str({ enum: ['audio'] }),
        instructions: str({ description: 'Accepted and ignored.' }),
      },
      ['model', 'input', 'voice'],
    ),
    OpenAITranscriptionRequest: obj(
      {
        file: binary('application/octet-stream'),
        model: str({ enum: [...OPENAI_STT_MODELS] }),
        language: str({ enum: [...PROTOCOL_LANGUAGES] }),
        response_format: str({ enum: [...OPENAI_TRANSCRIPTION_FORMATS], default: 'json' }),
        'timestamp_granularities[]': arr(str({ enum: [...OPENAI_TIMESTAMP_GRANULARITIES] }), { description: 'verbose_json only.' }),
        prompt: str({ description: 'Accepted and ignored.' }),
        temperature: num({ description: 'Accepted and ignored.' }),
      },
      ['file', 'model'],
    ),
    OpenAITranscription: obj({ text: str() }, ['text']),
    OpenAIVerboseTranscription: obj(
      {
        task: str({ const: 'transcribe' }),
        language: str(),
        duration: num(),
        text: str(),
        words: arr(obj({ word: str(), start: num(), end: num() }, ['word', 'start', 'end'])),
        segments: arr(obj({ id: int(), seek: int(), start: num(), end: num(), text: str(), tokens: arr(int()), temperature: num(), avg_logprob: num(), compression_ratio: num(), no_speech_prob: num() })),
      },
      ['task', 'language', 'duration', 'text'],
    ),
    OpenAIModel: obj({ id: str(), object: str({ const: 'model' }), created: int(), owned_by: str() }, ['id', 'object', 'created', 'owned_by']),
    OpenAIModelList: obj({ object: str({ const: 'list' }), data: arr(ref('OpenAIModel')) }, ['object', 'data']),
  };
}

/** The enums the WebSocket descriptions quote. */
export const WS_FORMATS = { ttsOutput: TTS_STREAMING_OUTPUT_FORMATS, sttInput: STT_INPUT_FORMATS };
/** Re-exported for the document's query parameters. */
export { PRONUNCIATIONS_LIMIT_MAX, STT_INPUT_FORMATS };
