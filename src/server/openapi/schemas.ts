/**
 * JSON Schemas (2020-12, as OpenAPI 3.1 uses) of the bodies, queries and answers of the routes.
 *
 * The request schemas of the routes the library validates — the TTS body and its `json_config`,
 * the STT query and its `json_config`, the voice-design bodies, the list queries — are not
 * written here: {@link validatorSchemas} runs the validators themselves against a describing
 * reader (src/protocol/describe.ts, issue 21), so a field, bound or enum exists in the document
 * exactly when the route checks it. What follows by hand is only what no FieldReader-based
 * validator reads: the answers and event shapes, the error forms, the core routes' inline
 * bodies (voices, dictionaries), and the OpenAI `/v1` bodies (checked by their own code in
 * routes/openai/); their enums and bounds still come from the constants the routes check
 * against, and test/server/openapi.test.ts feeds each schema's edges to the route's validator.
 */
import { STT_INPUT_FORMATS, TTS_STREAMING_OUTPUT_FORMATS } from '../../audio/format.js';
import { readSttEngineSupport } from '../../protocol/config.js';
import { describeReader } from '../../protocol/describe.js';
import { PROTOCOL_LANGUAGES } from '../../protocol/validate.js';
import { PRONUNCIATIONS_LIMIT_MAX, readTtsRequestBody, readVoiceFromEmbeddingBody, readVoiceGenerationBody } from '../../protocol/rest.js';
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

/**
 * The request schemas made by the validators (see the module comment), and the named objects
 * they read (`TtsJsonConfig`, `SttJsonConfig`, `VoiceGenerationJsonConfig`). `SttJsonConfig` is
 * the server's: the documented keys in their ranges and no other key (the pass every STT route
 * runs, config.ts `readSttEngineSupport`).
 */
export function validatorSchemas(limits: ServerLimits): Record<string, Schema> {
  const components: Record<string, Schema> = {};
  components['SttJsonConfig'] = describeReader(
    (r) => readSttEngineSupport(r),
    { description: "STT settings as this server takes them: each key is honoured or refused (422 on POST, error 1008 on the WebSocket), none ignored. Sent as an object or a JSON string." },
  );
  const lax = { coercion: 'lax' as const, components };
  const tts = describeReader(readTtsRequestBody, lax);
  // The longest text is the server's limit (ServerLimits.maxTextChars), checked when the request runs.
  (tts['properties'] as Record<string, Schema>)['text'] = { ...(tts['properties'] as Record<string, Schema>)['text'], maxLength: limits.maxTextChars };
  components['TtsRequest'] = tts;
  components['VoiceGenerationRequest'] = describeReader(readVoiceGenerationBody, lax);
  components['VoiceFromEmbeddingRequest'] = describeReader(readVoiceFromEmbeddingBody, lax);
  const tc = components['TtsJsonConfig'];
  if (tc !== undefined) tc['description'] = 'TTS settings (§2.8): only these four keys (any other is refused, 422 `extra_forbidden` on POST, error 1008 on the WebSocket). Sent as an object or a JSON string.';
  return components;
}

/** The component schemas, for a server with these limits. */
export function componentSchemas(limits: ServerLimits): Record<string, Schema> {
  return {
    ...validatorSchemas(limits),
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
    VoiceCandidate: obj({ embedding_id: str(), ready: bool(), expires_at: str({ format: 'date-time' }) }, ['embedding_id', 'ready'], { description: '§2.2' }),
    VoiceGenerationResponse: obj({ embeddings: arr(ref('VoiceCandidate')) }, ['embeddings']),
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
        stream_format: str({ enum: ['audio', 'sse'] }),
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
        stream: bool({ default: false, description: 'Server-sent events (json and text formats only): transcript.text.delta per word, then transcript.text.done.' }),
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
