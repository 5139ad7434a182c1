/**
 * REST bodies, queries and error bodies of the service (docs/api.md §4.2–§4.11, §7).
 *
 * Validators follow FastAPI/pydantic (the service's stack): a body that fails yields HTTP 422 with
 * `{ detail: [{ loc, msg, type, input?, ctx? }] }` (§2.7), `loc` starting with `"body"` or
 * `"query"`, pydantic's `type` names and messages. JSON body fields are read in pydantic's lax
 * mode (an integer field takes `3`, `3.0` or `"3"`; a boolean takes `true`, `"yes"`, `1`); query
 * values always arrive as strings and are parsed the same way. Unknown fields are ignored. For a
 * repeated query parameter the last value wins (FastAPI's rule for scalar parameters).
 *
 * Each body and query is read by a function of a {@link FieldReader} (`read…`): the same code
 * validates here and describes the schema of the OpenAPI document (describe.ts, issue 21).
 *
 * Where the API leaves a name or a default unstated, voicewire chooses and documents it:
 * - voice generation (§4.7): the language field is `language` (optional, default `en`);
 *   `n_samples` is optional, default 1;
 * - create-from-candidate (§4.8): `voice_embedding_id` and `name` are required and non-empty,
 *   `description` is optional (default `""`); no length limits;
 * - voice list (§4.10): `limit` and `offset`, both optional integers ≥ 0;
 * - pronunciation list (§4.11): `limit` (0 to 1000, the bounded one) and `offset` (≥ 0).
 */
import { describeValue, objectArg, optionsArg, shown, stringArg } from '../util/args.js';
import { MAX_JSON_DEPTH, jsonDepthExceededAt, jsonTooDeepReason } from './json-depth.js';
import { VoicewireError } from '../util/errors.js';
import { AUDIO_FORMAT_NAMES, STT_INPUT_FORMATS, type AudioFormatName } from '../audio/format.js';
import {
  readSttJsonConfig,
  readTtsJsonConfig,
  readVoiceGenerationJsonConfig,
  type SttJsonConfig,
  type TtsJsonConfig,
  type VoiceGenerationJsonConfig,
} from './config.js';
import {
  FieldReader,
  PROTOCOL_LANGUAGES,
  readerArg,
  describeIssue,
  isRecord,
  makeIssue,
  type ProtocolLanguage,
  type ValidationErrorBody,
  type ValidationIssue,
} from './validate.js';

/** A query: `URLSearchParams`, or a record as Node frameworks give it (`string | string[]`). */
export type QueryInput = URLSearchParams | Readonly<Record<string, string | readonly string[] | undefined>>;

function failed(issues: ValidationIssue[]): never {
  const body: ValidationErrorBody = { detail: issues };
  throw new VoicewireError('VALIDATION_FAILED', `Validation failed: ${issues.map(describeIssue).join('; ')}`, { details: body });
}

/** The 422 body of a `VALIDATION_FAILED` error (its `details`), or `undefined` for any other error. */
export function validationErrorBody(error: unknown): ValidationErrorBody | undefined {
  if (!(error instanceof VoicewireError) || error.code !== 'VALIDATION_FAILED') return undefined;
  return error.details as ValidationErrorBody;
}

function bodyReader(body: unknown, issues: ValidationIssue[]): FieldReader | undefined {
  if (!isRecord(body)) {
    issues.push(makeIssue(['body'], 'model_attributes_type', body));
    return undefined;
  }
  return new FieldReader(body, ['body'], 'lax', issues);
}

/** Options of {@link parseJsonBody}. */
export interface ParseJsonBodyOptions {
  /** Deepest nesting of arrays and objects accepted. Default {@link MAX_JSON_DEPTH} (64). */
  maxDepth?: number;
}

/**
 * Parses a JSON request body text like FastAPI: invalid JSON gives a `json_invalid` issue at
 * `["body", <offset>]`; so does a body nested deeper than `maxDepth`, checked before parsing
 * (`ctx.error` "JSON nested deeper than 64 levels", the offset of the bracket past the limit).
 * @throws VoicewireError `VALIDATION_FAILED`.
 */
export function parseJsonBody(text: string, options?: ParseJsonBodyOptions): unknown {
  stringArg(text, 'parseJsonBody: text');
  const { maxDepth = MAX_JSON_DEPTH } = optionsArg(options, 'parseJsonBody: options');
  const deep = jsonDepthExceededAt(text, maxDepth);
  if (deep >= 0) return failed([makeIssue(['body', deep], 'json_invalid', {}, { error: jsonTooDeepReason(maxDepth) })]);
  try {
    return JSON.parse(text);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const at = /position (\d+)/.exec(message);
    return failed([makeIssue(['body', at ? Number(at[1]) : 0], 'json_invalid', {}, { error: message })]);
  }
}

/** The validated body of POST /post/speech/tts (§4.2), defaults applied. */
export interface TtsRequestBody {
  text: string;
  voice: string | null;
  voice_id: string | null;
  /** Default `wav`. */
  output_format: AudioFormatName;
  /** Default `default`. */
  model_name: string;
  /** Default `{}`. */
  json_config: TtsJsonConfig;
  /** Default false: the response is a stream of JSON events; true: raw audio bytes. */
  only_audio: boolean;
  /**
   * A pronunciation dictionary uid (§2.4), as the WebSocket's setup takes it (§4.5); absent when
   * not given. §4.2 does not list it: voicewire honours it rather than drop it (issue 35).
   */
  pronunciation_id?: string;
}

/** Runs `read` over a body; throws the 422 when it recorded issues. */
function validateBody<T>(body: unknown, read: (r: FieldReader) => T): T {
  const issues: ValidationIssue[] = [];
  const r = bodyReader(body, issues);
  if (r === undefined) return failed(issues);
  const out = read(r);
  if (issues.length > 0) return failed(issues);
  return out;
}

/** Reads the body of POST /post/speech/tts (§4.2), defaults applied. */
export function readTtsRequestBody(r: FieldReader): TtsRequestBody {
  readerArg(r, 'readTtsRequestBody: r');
  // §2.7: an empty text is refused (it would answer an empty WAV), as pydantic's min_length 1.
  const text = r.string('text', { required: true, minLength: 1, description: 'Text with optional <break time="…s" /> and <flush> tags.' });
  const voice = r.string('voice', { description: 'A voice uid or name, or "default".' });
  const voiceId = r.string('voice_id');
  const format = r.literal<AudioFormatName>('output_format', AUDIO_FORMAT_NAMES, { default: 'wav' });
  const model = r.string('model_name', { default: 'default' });
  const config = r.object('json_config', readTtsJsonConfig, { name: 'TtsJsonConfig', jsonString: true, description: 'TTS settings (§2.8): an object, or a string holding its JSON.' });
  const onlyAudio = r.boolean('only_audio', { default: false, description: 'true: raw audio bytes; false: NDJSON events.' });
  const pronunciation = r.string('pronunciation_id', { description: 'A pronunciation dictionary uid (GET /pronunciations/), as in the WebSocket setup.' });
  const out: TtsRequestBody = {
    text: text!,
    voice: voice ?? null,
    voice_id: voiceId ?? null,
    output_format: format!,
    model_name: model!,
    json_config: config ?? {},
    only_audio: onlyAudio!,
  };
  if (pronunciation !== undefined) out.pronunciation_id = pronunciation;
  return out;
}

/**
 * Validates the body of POST /post/speech/tts (§4.2).
 * @throws VoicewireError `VALIDATION_FAILED` whose `details` is the 422 body (§2.7).
 */
export function validateTtsRequestBody(body: unknown): TtsRequestBody {
  return validateBody(body, readTtsRequestBody);
}

/** The validated body of POST /voice-generator/generate (§4.7). */
export interface VoiceGenerationBody {
  /** Voice description, 1 to 500 characters, not only spaces. */
  prompt: string;
  /** 1 to 5; default 1 (the API does not state it). */
  n_samples: number;
  /** The language the voice speaks; the API does not name this field: voicewire calls it `language`, default `en`. */
  language: ProtocolLanguage;
  json_config?: VoiceGenerationJsonConfig;
}

/** Limits of §4.7 / §8. */
export const VOICE_GENERATION_LIMITS = Object.freeze({ promptMinLength: 1, promptMaxLength: 500, nSamplesMin: 1, nSamplesMax: 5 });

/** Reads the body of POST /voice-generator/generate (§4.7, §8). */
export function readVoiceGenerationBody(r: FieldReader): VoiceGenerationBody {
  readerArg(r, 'readVoiceGenerationBody: r');
  const L = VOICE_GENERATION_LIMITS;
  const prompt = r.string('prompt', { required: true, minLength: L.promptMinLength, maxLength: L.promptMaxLength });
  r.refine('prompt', prompt, (p) => (p.trim() === '' ? 'prompt must contain actual text, not only spaces' : undefined), 'prompt must contain actual text, not only spaces');
  const n = r.integer('n_samples', { ge: L.nSamplesMin, le: L.nSamplesMax, default: 1 });
  const language = r.literal('language', PROTOCOL_LANGUAGES, { default: 'en' });
  const config = r.object('json_config', readVoiceGenerationJsonConfig, { name: 'VoiceGenerationJsonConfig', jsonString: true, description: '§2.9 voice-generation settings: an object, or a string holding its JSON.' });
  const out: VoiceGenerationBody = { prompt: prompt!, n_samples: n!, language: language! };
  if (config !== undefined) out.json_config = config;
  return out;
}

/**
 * Validates the body of POST /voice-generator/generate (§4.7, §8): `prompt` 1–500 characters
 * with actual text (`value_error` when only whitespace), `n_samples` an integer 1–5, `language`
 * one of `en fr de es pt`, `json_config` per §2.9.
 * @throws VoicewireError `VALIDATION_FAILED` whose `details` is the 422 body.
 */
export function validateVoiceGenerationBody(body: unknown): VoiceGenerationBody {
  return validateBody(body, readVoiceGenerationBody);
}

/** The validated body of POST /voices/from-embedding (§4.8). */
export interface VoiceFromEmbeddingBody {
  voice_embedding_id: string;
  name: string;
  /** Default `""`. */
  description: string;
}

/** Reads the body of POST /voices/from-embedding (§4.8). */
export function readVoiceFromEmbeddingBody(r: FieldReader): VoiceFromEmbeddingBody {
  readerArg(r, 'readVoiceFromEmbeddingBody: r');
  const id = r.string('voice_embedding_id', { required: true, minLength: 1 });
  const name = r.string('name', { required: true, minLength: 1 });
  const description = r.string('description', { default: '' });
  return { voice_embedding_id: id!, name: name!, description: description! };
}

/**
 * Validates the body of POST /voices/from-embedding (§4.8): `voice_embedding_id` and `name`
 * required, non-empty strings; `description` an optional string.
 * @throws VoicewireError `VALIDATION_FAILED` whose `details` is the 422 body.
 */
export function validateVoiceFromEmbeddingBody(body: unknown): VoiceFromEmbeddingBody {
  return validateBody(body, readVoiceFromEmbeddingBody);
}

function queryRecord(query: QueryInput): Record<string, string> {
  objectArg(query, 'query');
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  if (query instanceof URLSearchParams) {
    for (const [k, v] of query) out[k] = v; // last value wins
    return out;
  }
  for (const k of Object.keys(query)) {
    const v = query[k];
    if (v === undefined || v === null) continue;
    if (typeof v === 'string') out[k] = v;
    else if (Array.isArray(v) && v.every((x) => typeof x === 'string')) {
      if (v.length > 0) out[k] = v[v.length - 1]!;
    } else throw new VoicewireError('INVALID_ARGUMENT', `query.${k} must be a string or an array of strings, got ${describeValue(v)}`);
  }
  return out;
}

/** Runs `read` over a query; throws the 422 when it recorded issues. */
function validateQuery<T>(query: QueryInput, read: (r: FieldReader) => T): T {
  const issues: ValidationIssue[] = [];
  const out = read(new FieldReader(queryRecord(query), ['query'], 'lax', issues));
  if (issues.length > 0) return failed(issues);
  return out;
}

/** A list query: `limit` (absent = the server's default page) and `offset` (default 0). */
export interface ListQuery {
  limit?: number;
  offset: number;
}

function readListQuery(r: FieldReader, limitMax: number | undefined, limitDescription: string): ListQuery {
  const limit = r.integer('limit', limitMax === undefined ? { ge: 0, description: limitDescription } : { ge: 0, le: limitMax, description: limitDescription });
  const offset = r.integer('offset', { ge: 0, default: 0 });
  const out: ListQuery = { offset: offset! };
  if (limit !== undefined) out.limit = limit;
  return out;
}

/** Reads the query of GET /voices/ (§4.10). */
export function readVoicesListQuery(r: FieldReader): ListQuery {
  readerArg(r, 'readVoicesListQuery: r');
  return readListQuery(r, undefined, 'Absent or 0: every voice.');
}

/**
 * Parses the query of GET /voices/ (§4.10): two optional integers ≥ 0, named by voicewire
 * `limit` and `offset`.
 * @throws VoicewireError `VALIDATION_FAILED` (`int_parsing`, `greater_than_equal` at `["query", name]`).
 */
export function parseVoicesListQuery(query: QueryInput): ListQuery {
  return validateQuery(query, readVoicesListQuery);
}

/** Bound of the pronunciation list's `limit` (§4.11, §8). */
export const PRONUNCIATIONS_LIMIT_MAX = 1000;

/** Reads the query of GET /pronunciations/ (§4.11). */
export function readPronunciationsListQuery(r: FieldReader): ListQuery {
  readerArg(r, 'readPronunciationsListQuery: r');
  return readListQuery(r, PRONUNCIATIONS_LIMIT_MAX, "Absent: the server's default page; 0: only `total`.");
}

/**
 * Parses the query of GET /pronunciations/ (§4.11): `limit` 0–1000 and `offset` ≥ 0, both optional.
 * @throws VoicewireError `VALIDATION_FAILED`.
 */
export function parsePronunciationsListQuery(query: QueryInput): ListQuery {
  return validateQuery(query, readPronunciationsListQuery);
}

/** The validated query of POST /post/speech/asr (§4.3). */
export interface AsrQuery {
  /** Default `default`. */
  model: string;
  /** One of the STT input formats, or null (then the `Content-Type` decides, protocol-notes.md). */
  input_format: AudioFormatName | null;
  json_config: SttJsonConfig | null;
}

/** Reads the query of POST /post/speech/asr (§4.3). */
export function readAsrQuery(r: FieldReader): AsrQuery {
  readerArg(r, 'readAsrQuery: r');
  const model = r.string('model', { default: 'default' });
  const format = r.literal<AudioFormatName>('input_format', STT_INPUT_FORMATS, { description: 'Absent: the Content-Type decides.' });
  const config = r.object('json_config', readSttJsonConfig, { name: 'SttJsonConfig', jsonString: true, description: 'STT settings as a JSON string.' });
  return { model: model!, input_format: format ?? null, json_config: config ?? null };
}

/**
 * Parses the query of POST /post/speech/asr (§4.3): `model`, `input_format`, `json_config` (a JSON
 * string, validated as STT settings).
 * @throws VoicewireError `VALIDATION_FAILED`.
 */
export function parseAsrQuery(query: QueryInput): AsrQuery {
  return validateQuery(query, readAsrQuery);
}

// ---------------------------------------------------------------------------------------------
// REST error bodies (§7.1)
// ---------------------------------------------------------------------------------------------

const UPSTREAM = /^error from server (-?\d+)\s*:\s?([\s\S]*)$/;

/** The upstream error body of §7.1: `error from server <code>: <reason>`. */
export function formatRestError(code: number, reason: string): string {
  if (typeof code !== 'number') throw new VoicewireError('INVALID_ARGUMENT', `formatRestError: code must be a number, got ${describeValue(code)}`);
  stringArg(reason, 'formatRestError: reason');
  return `error from server ${code}: ${reason}`;
}

/** A REST error read back: the numeric code when the body has the upstream form, and the message. */
export interface RestError {
  code?: number;
  message: string;
}

/**
 * Reads any non-2xx body (§7.1): the upstream form `error from server <code>: <reason>` gives
 * `{ code, message: reason }`; the proxy-level form (a raw string) gives `{ message }`; a JSON
 * body with `detail` (a 422 body, or FastAPI's `{"detail": "…"}`) or `message` gives its text; an
 * empty body gives `HTTP <status>`.
 */
export function parseRestError(status: number, bodyText: string): RestError {
  if (typeof status !== 'number') throw new VoicewireError('INVALID_ARGUMENT', `parseRestError: status must be a number, got ${describeValue(status)}`);
  const text = stringArg(bodyText, 'parseRestError: bodyText').trim();
  const m = UPSTREAM.exec(text);
  if (m) return { code: Number(m[1]), message: m[2]!.trim() };
  if (text.startsWith('{')) {
    try {
      const json: unknown = JSON.parse(text);
      if (isRecord(json)) {
        const detail = json['detail'];
        if (typeof detail === 'string') return { message: detail };
        if (Array.isArray(detail)) {
          const parts = detail.map((d) => (isRecord(d) && typeof d['msg'] === 'string' ? describeIssue(d as unknown as ValidationIssue) : JSON.stringify(d)));
          return { message: parts.join('; ') };
        }
        if (typeof json['message'] === 'string') return { message: json['message'] };
      }
    } catch {
      // not JSON after all: the raw text is the message
    }
  }
  return { message: text === '' ? `HTTP ${status}` : text };
}

/** `details` of the `HTTP_ERROR` thrown by {@link throwForResponse}. */
export interface HttpErrorDetails {
  status: number;
  /** The upstream code (e.g. 1008 for an authentication failure, §5.6), when the body carried one. */
  code?: number;
  message: string;
  /** The raw body text. */
  body: string;
  /** The 422 body, when the status is 422 and the body is one (§2.7). */
  validation?: ValidationErrorBody;
}

/** The parts of a fetch `Response` that {@link throwForResponse} reads. */
export interface ResponseLike {
  ok: boolean;
  status: number;
  text(): Promise<string>;
}

/**
 * Returns the response when it is 2xx; otherwise reads its body and throws `HTTP_ERROR` (any
 * non-2xx is fatal for that request, §7.1). The message is `HTTP <status>: <message>`.
 */
export async function throwForResponse<R extends ResponseLike>(response: R): Promise<R> {
  objectArg(response, 'throwForResponse: response');
  if (response.ok) return response;
  let body = '';
  try {
    body = await response.text();
  } catch {
    // the status alone must do
  }
  const parsed = parseRestError(response.status, body);
  const details: HttpErrorDetails = { status: response.status, message: parsed.message, body };
  if (parsed.code !== undefined) details.code = parsed.code;
  if (response.status === 422) {
    try {
      const json: unknown = JSON.parse(body);
      if (isRecord(json) && Array.isArray(json['detail'])) details.validation = json as unknown as ValidationErrorBody;
    } catch {
      // not a 422 body
    }
  }
  const closeCode = parsed.code === 1008 || parsed.code === 1011 ? { closeCode: parsed.code } : {};
  throw new VoicewireError('HTTP_ERROR', `HTTP ${response.status}: ${parsed.message}`, { details, ...closeCode });
}

/** An HTTP answer for a failure, as the service gives it. */
export interface RestErrorResponse {
  status: number;
  contentType: 'application/json' | 'text/plain; charset=utf-8';
  body: string;
}

/**
 * The answer a server gives for an error (§7): `VALIDATION_FAILED` → 422 with the JSON body of
 * §2.7; `PROTOCOL_DRAINING` → 503; an error with a close code (authentication 1008, internal 1011)
 * → 500 `error from server <code>: <message>`; anything else → 500 with the raw message (the
 * proxy-level form).
 */
export function restErrorResponse(error: unknown): RestErrorResponse {
  const body = validationErrorBody(error);
  if (body !== undefined) return { status: 422, contentType: 'application/json', body: JSON.stringify(body) };
  if (error instanceof VoicewireError) {
    if (error.code === 'PROTOCOL_DRAINING') return { status: 503, contentType: 'text/plain; charset=utf-8', body: error.message };
    if (error.closeCode !== undefined) return { status: 500, contentType: 'text/plain; charset=utf-8', body: formatRestError(error.closeCode, error.message) };
  }
  return { status: 500, contentType: 'text/plain; charset=utf-8', body: error instanceof Error ? shown(error.message) : shown(error) };
}

