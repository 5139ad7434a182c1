/**
 * The OpenAPI 3.1 document of the server (served at /api/openapi.json): every HTTP route with its
 * body, query, answers and error forms, the WebSocket routes described in text (OpenAPI has no
 * WebSocket operations: each is a GET whose answer is `101 Switching Protocols`, marked
 * `x-websocket: true`), and the OpenAI-compatible `/v1` routes. Paths are the full URL paths
 * (`/api/...`, `/v1/...`, `/metrics`) under the server `/`.
 */
import type { ServerLimits } from '../config.js';
import type { FieldReader } from '../../protocol/validate.js';
import { describeReader } from '../../protocol/describe.js';
import { readAsrQuery, readPronunciationsListQuery, readVoicesListQuery } from '../../protocol/rest.js';
import { STT_CONTENT_TYPES } from '../../sessions/http.js';
import { componentSchemas, PRONUNCIATIONS_DEFAULT_LIMIT, WS_FORMATS, type Schema } from './schemas.js';
import { FFMPEG_SPEECH_FORMATS } from '../routes/openai/ffmpeg-encoder.js';
import { NATIVE_SPEECH_FORMATS } from '../routes/openai/speech.js';
import { FORWARDED_METHODS } from '../routes/forward.js';

/** Options of {@link buildOpenApiDocument}. */
export interface OpenApiDocumentOptions {
  /** The server's limits (bounds such as the longest text come from them). */
  limits: ServerLimits;
  /** voicewire's version, named in `info.description` (`info.version` is the API's, {@link EDGE_API_VERSION}). */
  version: string;
}

/**
 * `info.version`: §9 "The edge description carries version 1.0.0" (the public one 0.1.0). The
 * server is an edge deployment (§1: it serves the Endpoints and forwards the rest to a core API),
 * so its description is the edge's.
 */
export const EDGE_API_VERSION = '1.0.0';

type Operation = Record<string, unknown>;
type Responses = Record<string, unknown>;

const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: Schema): Record<string, unknown> => ({ 'application/json': { schema } });
const ok = (description: string, content?: Record<string, unknown>): Responses => ({ '200': content ? { description, content } : { description } });

/** §7.1 errors of the native REST routes. */
const REST_ERRORS: Responses = {
  '422': { description: 'The body or query failed validation (§2.7).', content: json(ref('ValidationError')) },
  '500': {
    description:
      'Proxy-level errors (§7.1) as plain text: `error from server 1008: …` for an invalid, revoked or expired key, no credits left or a limit passed; the raw string for an invalid voice ID.',
    content: { 'text/plain': { schema: { type: 'string' } } },
  },
  '403': { description: 'The organization is pinned to another region (RESIDENCY_DENIED), plain text.', content: { 'text/plain': { schema: { type: 'string' } } } },
  '503': { description: 'Draining, or the store is unavailable, plain text.', content: { 'text/plain': { schema: { type: 'string' } } } },
};
const NOT_FOUND: Responses = { '404': { description: 'No such resource: `{"detail": "…"}`.', content: json(ref('NotFound')) } };

/** OpenAI-form errors of the `/v1` routes. */
const OPENAI_ERRORS: Responses = Object.fromEntries(
  (
    [
      ['400', 'A bad field (`param` names it), an unreadable file, or a format that needs ffmpeg where it is missing.'],
      ['401', 'Missing or invalid key (`invalid_api_key`).'],
      ['403', 'Residency: the organization is pinned to another region.'],
      ['404', 'Unknown route or model.'],
      ['413', 'A file over the server limit.'],
      ['429', 'Credits exhausted (`insufficient_quota`; nothing is spent), or the key holds its share of live sessions, upload bytes or ffmpeg children (`rate_limit_exceeded`).'],
      ['500', 'Server error.'],
      ['503', 'Draining, store or engine unavailable, or a process-wide budget is full (`ENGINE_BUSY`: decoders, upload bytes, ffmpeg children); retry later.'],
    ] as const
  ).map(([status, description]) => [status, { description, content: json(ref('OpenAIError')) }]),
);

const KEY = [{ apiKey: [] }];
const KEY_OR_TOKEN = [{ apiKey: [] }, { token: [] }];
const ADMIN = [{ apiKey: [] }];
const BEARER = [{ bearer: [] }, { apiKey: [] }];

const query = (name: string, schema: Schema, description?: string): Record<string, unknown> => ({ name, in: 'query', required: false, schema, ...(description ? { description } : {}) });

/**
 * The query parameters a validator reads (issue 21: from the validator, not a copy): each field
 * it reads is a parameter; a JSON-string field (`json_config`) is its string form, whose
 * `contentSchema` refers to the named component.
 */
function queryParameters(read: (r: FieldReader) => unknown, extra: Record<string, Schema> = {}): Array<Record<string, unknown>> {
  // Named objects are described once among the components (schemas.ts): not collected again here.
  const s = describeReader(read, { coercion: 'lax', showNull: false, components: {} });
  const required = new Set((s['required'] as string[] | undefined) ?? []);
  return Object.entries(s['properties'] as Record<string, Schema>).map(([name, field]) => {
    const { description, ...rest } = field;
    const choices = rest['anyOf'] as Schema[] | undefined;
    const schema = { ...(choices?.find((c) => c['type'] === 'string') ?? rest), ...(extra[name] ?? {}) };
    return { ...query(name, schema, typeof description === 'string' ? description : undefined), required: required.has(name) };
  });
}
const pathParam = (name: string): Record<string, unknown> => ({ name, in: 'path', required: true, schema: { type: 'string' } });

function wsOperation(summary: string, description: string, security: unknown[]): Operation {
  return {
    tags: ['WebSocket'],
    summary,
    description,
    security,
    'x-websocket': true,
    responses: { '101': { description: 'Switching Protocols: the WebSocket is open; errors come as an `error` message then a close (§7.3).' } },
  };
}

/**
 * The forwarding route (§4.13): a request no other route matches, forwarded to the core API when
 * the server runs with `--core-url` (routes/forward.ts), else 404. `path` may span segments.
 */
function forwardOperation(method: string): Operation {
  return {
    tags: ['Forwarding'],
    summary: `Forwarded to the core API (§4.13): ${method}`,
    description:
      'Any request that matches no other route, after its key is checked: method, path, query, headers (not hop-by-hop ones) and body go to the core API given with `serve --core-url`, and its answer comes back as it is. Without a core: 404. `path` is the rest of the path after /api/ and may hold several segments; one that decodes to `.` or `..` or holds a slash is 404.',
    security: KEY,
    parameters: [{ ...pathParam('path'), description: 'The rest of the path, forwarded as it is (normalised).' }],
    ...(method === 'GET' || method === 'DELETE' ? {} : { requestBody: { required: false, content: { '*/*': { schema: {} } }, description: 'Passed on as it is.' } }),
    responses: {
      default: { description: "The core API's answer, passed on (status, headers without hop-by-hop ones, body)." },
      '401': { description: 'A missing or bad key (§5.6: the forwarding route answers 401): `{"detail": "…"}`.', content: json(ref('NotFound')) },
      '403': REST_ERRORS['403'],
      '404': { description: 'No core API configured, or a path segment that decodes to `.`, `..` or holds a slash.', content: json(ref('NotFound')) },
      '502': { description: 'The core API could not be reached (FORWARD_FAILED), plain text.', content: { 'text/plain': { schema: { type: 'string' } } } },
      '504': { description: 'The core API did not answer in time (FORWARD_TIMEOUT), plain text.', content: { 'text/plain': { schema: { type: 'string' } } } },
    },
  };
}

/** The document for a server with these limits. */
export function buildOpenApiDocument(options: OpenApiDocumentOptions): Record<string, unknown> {
  const { limits } = options;
  const ttsPost: Operation = {
    tags: ['Speech'],
    summary: 'Text to speech in one request (§4.2)',
    description: '`only_audio: true` answers the raw audio of `output_format`; otherwise NDJSON events. `?token=` is accepted (§5.2).',
    security: KEY_OR_TOKEN,
    requestBody: { required: true, content: json(ref('TtsRequest')) },
    responses: {
      ...ok('Audio bytes (`only_audio`) or NDJSON events.', {
        'application/x-ndjson': { schema: ref('TtsEvent') },
        'audio/wav': { schema: { type: 'string', contentMediaType: 'audio/wav' } },
        'audio/ogg; codecs=opus': { schema: { type: 'string', contentMediaType: 'audio/ogg' } },
        'audio/pcm': { schema: { type: 'string', contentMediaType: 'audio/pcm' } },
        'audio/basic': { schema: { type: 'string', contentMediaType: 'audio/basic' } },
        'audio/x-alaw-basic': { schema: { type: 'string', contentMediaType: 'audio/x-alaw-basic' } },
      }),
      ...REST_ERRORS,
    },
  };
  const asrPost: Operation = {
    tags: ['Speech'],
    summary: 'Speech to text in one request (§4.3)',
    description: `The body is audio (at most ${limits.maxAudioBytes} bytes); its format is \`input_format\` or else the Content-Type (audio/wav by default, and its other names; audio/pcm = 24 kHz s16le; audio/ogg or audio/opus). Any other Content-Type: 500 plain text \`unsupported content type …\`.`,
    security: KEY,
    parameters: queryParameters(readAsrQuery),
    requestBody: {
      required: true,
      content: Object.fromEntries(STT_CONTENT_TYPES.map((t) => [t, { schema: { type: 'string', contentMediaType: t } }])),
    },
    responses: { ...ok('NDJSON events.', { 'application/x-ndjson': { schema: ref('SttEvent') } }), ...REST_ERRORS },
  };
  const paths: Record<string, Record<string, Operation>> = {
    '/api/post/speech/tts': { post: ttsPost },
    '/api/speech/tts': {
      post: { ...ttsPost, summary: 'Alias of POST /api/post/speech/tts' },
      get: wsOperation(
        'TTS WebSocket (§4.5)',
        `Client: \`setup\` {model_name, voice_id, output_format (${WS_FORMATS.ttsOutput.join(', ')}), pronunciation_id, json_config (TtsJsonConfig), client_req_id, close_ws_on_eos}, \`text\` {text}, \`end_of_stream\`. Server: \`ready\` {request_id, model_name, sample_rate, frame_size}, \`audio\` {audio (base64), start_s, stop_s}, \`text\` (word timestamps), \`need_more_text\`, \`end_of_stream\`, \`error\` {message, code}. Several requests may share a socket (client_req_id). Messages up to ${limits.maxFrameBytes} bytes; sessions up to ${limits.sessionSeconds} s, idle ${limits.idleSeconds} s. \`?token=\` accepted.`,
        KEY_OR_TOKEN,
      ),
    },
    '/api/post/speech/asr': { post: asrPost },
    '/api/speech/asr': {
      post: { ...asrPost, summary: 'Alias of POST /api/post/speech/asr' },
      get: wsOperation(
        'STT WebSocket (§4.4)',
        `Client: \`setup\` {model_name, input_format (${WS_FORMATS.sttInput.join(', ')}), json_config (SttJsonConfig), client_req_id, close_ws_on_eos}, \`audio\` {audio (base64)}, \`flush\` {flush_id}, \`end_of_stream\`. Server: \`ready\` {request_id, model_name, sample_rate, frame_size, delay_in_frames}, \`step\` {vad, step_idx, …}, \`text\` {text, start_s}, \`end_text\` {stop_s}, \`flushed\`, \`end_of_stream\`, \`error\`. \`?token=\` accepted (voicewire's extension for browsers).`,
        KEY_OR_TOKEN,
      ),
    },
    '/api/speech/s2s': {
      get: wsOperation(
        'Speech-to-speech WebSocket',
        'Client: `setup` {model_name, stt_model_name, tts_model_name, input_format (default pcm), output_format (default pcm), voice_id, json_config (STT keys language, delay_in_frames; TTS keys padding_bonus, temp, cfg_coef, rewrite_rules; target_language must equal the source language: no translation engine, error 1008), client_req_id, close_ws_on_eos}, `audio`, `end_of_stream`. Server: `ready` {request_id, model_name, sample_rate and frame_size of the output, delay_in_frames}, `text` {text, start_s, stop_s, stream_id} for each word heard, `audio` of the words re-spoken, `end_of_stream`, `error`.',
        KEY,
      ),
    },
    '/api/voices': {
      get: {
        tags: ['Voices'],
        summary: 'List voices (§4.10)',
        security: KEY_OR_TOKEN,
        // include_catalog is read by the route itself (routes/voices.ts), not by the library's query validator.
        parameters: [...queryParameters(readVoicesListQuery), query('include_catalog', { type: 'boolean', default: true })],
        responses: { ...ok('Voices, catalog first.', json({ type: 'array', items: ref('Voice') })), ...REST_ERRORS },
      },
      post: {
        tags: ['Voices'],
        summary: 'Create a voice from a sample (core route; served without --core-url)',
        security: KEY,
        requestBody: { required: true, content: { 'multipart/form-data': { schema: ref('VoiceUpload') } } },
        responses: { ...ok('The voice.', json(ref('Voice'))), ...REST_ERRORS },
      },
    },
    '/api/voices/{uid}': {
      get: { tags: ['Voices'], summary: 'A voice (core route)', security: KEY, parameters: [pathParam('uid')], responses: { ...ok('The voice.', json(ref('Voice'))), ...NOT_FOUND, ...REST_ERRORS } },
      put: {
        tags: ['Voices'],
        summary: 'Rename, describe or tag a voice (core route)',
        security: KEY,
        parameters: [pathParam('uid')],
        requestBody: { required: true, content: json(ref('VoicePatch')) },
        responses: { ...ok('The voice.', json(ref('Voice'))), ...NOT_FOUND, ...REST_ERRORS },
      },
      delete: { tags: ['Voices'], summary: 'Delete a voice (core route)', security: KEY, parameters: [pathParam('uid')], responses: { ...ok('Deleted.', json(ref('Deleted'))), ...NOT_FOUND, ...REST_ERRORS } },
    },
    '/api/voice-generator/generate': {
      post: {
        tags: ['Voice design'],
        summary: 'Voice candidates from a description (§4.7)',
        security: KEY,
        requestBody: { required: true, content: json(ref('VoiceGenerationRequest')) },
        responses: { ...ok('Candidates.', json(ref('VoiceGenerationResponse'))), ...REST_ERRORS },
      },
    },
    '/api/voices/from-embedding': {
      post: {
        tags: ['Voice design'],
        summary: 'Keep a candidate as a voice (§4.8)',
        security: KEY,
        requestBody: { required: true, content: json(ref('VoiceFromEmbeddingRequest')) },
        responses: { ...ok('The voice.', json(ref('CreatedVoice'))), ...NOT_FOUND, ...REST_ERRORS },
      },
    },
    '/api/voice-generator/embeddings/{id}': {
      delete: { tags: ['Voice design'], summary: 'Delete a candidate (§4.9)', security: KEY, parameters: [pathParam('id')], responses: { ...ok('Deleted.', json(ref('EmbeddingDeleted'))), ...NOT_FOUND, ...REST_ERRORS } },
    },
    '/api/pronunciations': {
      get: {
        tags: ['Pronunciations'],
        summary: 'List pronunciation dictionaries (§4.11)',
        security: KEY,
        // The route's default page (routes/pronunciations.ts) is the default of `limit`.
        parameters: queryParameters(readPronunciationsListQuery, { limit: { default: PRONUNCIATIONS_DEFAULT_LIMIT } }),
        responses: { ...ok('A page.', json(ref('PronunciationList'))), ...REST_ERRORS },
      },
      post: {
        tags: ['Pronunciations'],
        summary: 'Create a dictionary (core route)',
        security: KEY,
        requestBody: { required: true, content: json(ref('DictionaryCreate')) },
        responses: { ...ok('The dictionary.', json(ref('PronunciationDictionary'))), ...REST_ERRORS },
      },
    },
    '/api/pronunciations/{uid}': {
      get: { tags: ['Pronunciations'], summary: 'A dictionary (core route)', security: KEY, parameters: [pathParam('uid')], responses: { ...ok('The dictionary.', json(ref('PronunciationDictionary'))), ...NOT_FOUND, ...REST_ERRORS } },
      delete: { tags: ['Pronunciations'], summary: 'Delete a dictionary (core route)', security: KEY, parameters: [pathParam('uid')], responses: { ...ok('Deleted.', json(ref('Deleted'))), ...NOT_FOUND, ...REST_ERRORS } },
    },
    '/api/pronunciations/{uid}/rules': {
      post: {
        tags: ['Pronunciations'],
        summary: 'Add rules; a rule for a word already there replaces it (core route)',
        security: KEY,
        parameters: [pathParam('uid')],
        requestBody: { required: true, content: json(ref('RulesAppend')) },
        responses: { ...ok('The dictionary.', json(ref('PronunciationDictionary'))), ...NOT_FOUND, ...REST_ERRORS },
      },
    },
    '/api/usages/credits': { get: { tags: ['Account'], summary: 'Credit balance (§4.12)', security: KEY, responses: { ...ok('The balance.', json(ref('CreditBalance'))), ...REST_ERRORS } } },
    '/api/usages/summary': { get: { tags: ['Account'], summary: 'Usage in the billing period (core route)', security: KEY, responses: { ...ok('The summary.', json(ref('UsageSummary'))), ...REST_ERRORS } } },
    '/api/api-keys/token': { get: { tags: ['Account'], summary: 'A temporary token (§4.6)', security: KEY, responses: { ...ok('The token.', json(ref('TemporaryToken'))), ...REST_ERRORS } } },
    '/api/healthz': {
      get: { tags: ['Operations'], summary: 'Liveness', security: [], responses: ok('Alive.', json(ref('Health'))) },
      head: { tags: ['Operations'], summary: 'Liveness, for load balancers: GET without the body', security: [], responses: { '200': { description: 'Alive.' } } },
    },
    '/api/readyz': {
      get: {
        tags: ['Operations'],
        summary: 'Readiness (§3.1)',
        security: [],
        responses: { ...ok('Ready.', json(ref('Health'))), '503': { description: '`{"status":"draining"}` or `{"status":"store_unavailable"}`.', content: json(ref('Health')) } },
      },
      head: { tags: ['Operations'], summary: 'Readiness, for load balancers: GET without the body', security: [], responses: { '200': { description: 'Ready.' }, '503': { description: 'Draining, or the store is unavailable.' } } },
    },
    '/api/statusz': { get: { tags: ['Operations'], summary: 'Status (admin key)', security: ADMIN, responses: { ...ok('Status.', json(ref('Status'))), ...REST_ERRORS } } },
    '/api/drain': {
      post: {
        tags: ['Operations'],
        summary: 'Start or stop draining (admin key)',
        security: ADMIN,
        parameters: [query('enable', { type: 'boolean', default: true })],
        responses: { ...ok('The drain state.', json(ref('DrainResult'))), ...REST_ERRORS },
      },
    },
    '/api/openapi.json': { get: { tags: ['Operations'], summary: 'This document', security: [], responses: ok('OpenAPI 3.1.', json({ type: 'object' })) } },
    '/api/docs': { get: { tags: ['Operations'], summary: 'A readable reference made from this document', security: [], responses: ok('HTML.', { 'text/html': { schema: { type: 'string' } } }) } },
    '/api/{path}': Object.fromEntries(FORWARDED_METHODS.map((m) => [m.toLowerCase(), forwardOperation(m)])),
    '/metrics': { get: { tags: ['Operations'], summary: 'Prometheus metrics (no key)', security: [], responses: { ...ok('Prometheus text.', { 'text/plain': { schema: { type: 'string' } } }), '503': { description: 'Metrics unavailable.' } } } },
    '/v1/audio/speech': {
      post: {
        tags: ['OpenAI-compatible'],
        summary: "OpenAI's speech endpoint",
        description: `Native formats: ${Object.keys(NATIVE_SPEECH_FORMATS).join(', ')}; through ffmpeg: ${Object.keys(FFMPEG_SPEECH_FORMATS).join(', ')}.`,
        security: BEARER,
        requestBody: { required: true, content: json(ref('OpenAISpeechRequest')) },
        responses: {
          ...ok(
            'The audio.',
            Object.fromEntries(
              [
                ...[...Object.values(NATIVE_SPEECH_FORMATS), ...Object.values(FFMPEG_SPEECH_FORMATS)].map((f) => [f.contentType, { schema: { type: 'string', contentMediaType: f.contentType.split(';')[0] } }]),
                // stream_format "sse" (docs/api.md §10.2).
                ['text/event-stream', { schema: { type: 'string', description: '`data: {"type":"speech.audio.delta","audio":"<base64>"}` events, then `speech.audio.done` {usage}.' } }],
              ],
            ),
          ),
          ...OPENAI_ERRORS,
        },
      },
    },
    '/v1/audio/transcriptions': {
      post: {
        tags: ['OpenAI-compatible'],
        summary: "OpenAI's transcription endpoint",
        description: `WAV and Ogg Opus files are read natively, other formats through ffmpeg; at most ${limits.maxAudioBytes} bytes.`,
        security: BEARER,
        requestBody: { required: true, content: { 'multipart/form-data': { schema: ref('OpenAITranscriptionRequest') } } },
        responses: {
          ...ok('The transcription in `response_format`.', {
            'application/json': { schema: { anyOf: [ref('OpenAITranscription'), ref('OpenAIVerboseTranscription')] } },
            'text/plain': { schema: { type: 'string' } },
            'text/vtt': { schema: { type: 'string' } },
            'text/event-stream': { schema: { type: 'string', description: '`stream: true`: `transcript.text.delta` events, then `transcript.text.done` (or `error`).' } },
          }),
          ...OPENAI_ERRORS,
        },
      },
    },
    '/v1/realtime': {
      get: {
        ...wsOperation(
          'OpenAI Realtime transcription sessions (docs/api.md §10.1)',
          "`?intent=transcription&model=` (gpt-realtime-whisper, gpt-4o-transcribe, gpt-4o-mini-transcribe, whisper-1, voicewire-stt). Client: `session.update` {session: {type: 'transcription', audio.input: {format (audio/pcm 24 kHz, audio/pcmu, audio/pcma), transcription {model, language, prompt}, turn_detection (server_vad or null)}}}, `input_audio_buffer.append` {audio (base64)}, `.commit`, `.clear`. Server: `session.created`, `session.updated`, `input_audio_buffer.speech_started` / `speech_stopped` / `committed` / `cleared`, `conversation.item.input_audio_transcription.delta` / `completed` (usage) / `failed`, `error` {error: {type, code, message, param, event_id}} (the socket stays open for a bad event). Bearer key, or a temporary token as the `openai-insecure-api-key.` subprotocol.",
          BEARER,
        ),
        tags: ['OpenAI-compatible'],
      },
    },
    '/v1/models': { get: { tags: ['OpenAI-compatible'], summary: 'Models', security: BEARER, responses: { ...ok('The models.', json(ref('OpenAIModelList'))), ...OPENAI_ERRORS } } },
    '/v1/models/{model}': { get: { tags: ['OpenAI-compatible'], summary: 'A model', security: BEARER, parameters: [pathParam('model')], responses: { ...ok('The model.', json(ref('OpenAIModel'))), ...OPENAI_ERRORS } } },
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'voicewire',
      version: EDGE_API_VERSION,
      description: `The voicewire reference server, voicewire version ${options.version} (info.version is the API's: the edge description, §9): the voice service API (docs/api.md; § numbers in the summaries), its WebSocket routes (GET operations answering 101, described in text), and OpenAI-compatible routes at /v1. The request schemas of the native routes are made by the routes' own validators.`,
    },
    servers: [{ url: '/' }],
    tags: ['Speech', 'WebSocket', 'Voices', 'Voice design', 'Pronunciations', 'Account', 'Forwarding', 'Operations', 'OpenAI-compatible'].map((name) => ({ name })),
    paths,
    components: {
      schemas: componentSchemas(limits),
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' },
        token: { type: 'apiKey', in: 'query', name: 'token', description: 'A temporary token (§4.6), on the TTS routes, the STT WebSocket and GET /voices.' },
        bearer: { type: 'http', scheme: 'bearer', description: 'An API key as a Bearer token (the /v1 routes).' },
      },
    },
  };
}
