/**
 * The events of an OpenAI Realtime transcription session (GA API, as the `openai` package's
 * `resources/realtime` types define them): the session's configuration and its validation, the
 * client events read from text frames, and the server events sent back. Pure: no socket, no
 * engine; realtime-session.ts drives them.
 *
 * Only transcription sessions are served (`session.type: "transcription"`); anything the engines
 * cannot honour (noise reduction, semantic VAD, logprobs, a 16 kHz PCM format, …) is refused with
 * an `error` event naming the field, never accepted and silently ignored.
 */
import { VoicewireError } from '../../../util/errors.js';
import { isRecord } from '../../../protocol/validate.js';
import type { AudioFormatName } from '../../../audio/format.js';
import { OPENAI_REALTIME_STT_MODELS } from './models.js';

/** `audio.input.format`: PCM16 at 24 kHz, or G.711 at 8 kHz (OpenAI's `audio/pcmu`, `audio/pcma`). */
export type RealtimeAudioFormat = { type: 'audio/pcm'; rate: 24000 } | { type: 'audio/pcmu' } | { type: 'audio/pcma' };

/** `audio.input.turn_detection` of type `server_vad`, with OpenAI's defaults filled in. */
export interface RealtimeServerVad {
  type: 'server_vad';
  /** Speech probability that starts speech (0–1). Default 0.5. */
  threshold: number;
  /** Audio before the detected start that belongs to the turn, ms. Default 300. */
  prefix_padding_ms: number;
  /** Silence that ends speech, ms. Default 500. */
  silence_duration_ms: number;
}

/** The transcription session's configuration (GA `RealtimeTranscriptionSessionCreateRequest`). */
export interface RealtimeTranscriptionConfig {
  format: RealtimeAudioFormat;
  /** `audio.input.transcription`. */
  transcription: { model: string; language: string | null; prompt: string };
  /** null: the client commits (`input_audio_buffer.commit`). */
  turnDetection: RealtimeServerVad | null;
}

/** OpenAI's server VAD defaults (openai `RealtimeTranscriptionSessionAudioInputTurnDetection.ServerVad`). */
export const SERVER_VAD_DEFAULTS: Readonly<RealtimeServerVad> = Object.freeze({ type: 'server_vad', threshold: 0.5, prefix_padding_ms: 300, silence_duration_ms: 500 });

/** Models OpenAI serves without turn detection (its docs: "must be set to null; VAD is not supported"). */
const NO_VAD_MODELS: ReadonlySet<string> = new Set(['gpt-realtime-whisper']);

/** The configuration a session starts with, for the `model` of the URL (default `gpt-4o-transcribe`). */
export function defaultRealtimeConfig(model = 'gpt-4o-transcribe'): RealtimeTranscriptionConfig {
  return {
    format: { type: 'audio/pcm', rate: 24000 },
    transcription: { model, language: null, prompt: '' },
    turnDetection: NO_VAD_MODELS.has(model) ? null : { ...SERVER_VAD_DEFAULTS },
  };
}

/** The STT `input_format` (§4.4) of a Realtime audio format. */
export function nativeInputFormat(format: RealtimeAudioFormat): AudioFormatName {
  return format.type === 'audio/pcm' ? 'pcm' : format.type === 'audio/pcmu' ? 'ulaw_8000' : 'alaw_8000';
}

/** Samples per second and bytes per sample of a Realtime audio format (for the audio timeline). */
export function formatRate(format: RealtimeAudioFormat): { sampleRate: number; bytesPerSample: number } {
  return format.type === 'audio/pcm' ? { sampleRate: 24000, bytesPerSample: 2 } : { sampleRate: 8000, bytesPerSample: 1 };
}

/** `details` of a refused client event: OpenAI's `error.code` and `error.param`, and the event's own `event_id`. */
export interface RealtimeErrorDetails {
  openaiCode: string;
  param: string | null;
  eventId: string | null;
}

/** A refused client event (`INVALID_ARGUMENT`, or `PROTOCOL_INVALID_MESSAGE` for a frame that is no event). */
export function realtimeEventError(openaiCode: string, param: string | null, message: string, eventId: string | null = null, code: 'INVALID_ARGUMENT' | 'PROTOCOL_INVALID_MESSAGE' = 'INVALID_ARGUMENT'): VoicewireError {
  return new VoicewireError(code, message, { details: { openaiCode, param, eventId } satisfies RealtimeErrorDetails, closeCode: 1008 });
}

/** A client event, validated. */
export type RealtimeClientCommand =
  | { type: 'session.update'; eventId: string | null; update: RealtimeSessionUpdate }
  /** `audio` stays base64 (the STT session decodes it); `bytes` is its decoded length. */
  | { type: 'input_audio_buffer.append'; eventId: string | null; audio: string; bytes: number }
  | { type: 'input_audio_buffer.commit'; eventId: string | null }
  | { type: 'input_audio_buffer.clear'; eventId: string | null };

/** What a `session.update` changes (absent: unchanged). */
export interface RealtimeSessionUpdate {
  format?: RealtimeAudioFormat;
  transcription?: { model?: string; language?: string | null; prompt?: string };
  turnDetection?: RealtimeServerVad | null;
}

/** Client event types of the GA API that a transcription session has no use for. */
const CONVERSATION_EVENTS: ReadonlySet<string> = new Set([
  'conversation.item.create', 'conversation.item.delete', 'conversation.item.retrieve', 'conversation.item.truncate',
  'response.create', 'response.cancel', 'output_audio_buffer.clear',
]);

const CLIENT_EVENTS = ['session.update', 'input_audio_buffer.append', 'input_audio_buffer.commit', 'input_audio_buffer.clear'];

/** Strict base64 (RFC 4648 §4, padded), what OpenAI's clients send. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

const shown = (v: unknown): string => (typeof v === 'string' ? `'${v.slice(0, 64)}'` : JSON.stringify(v)?.slice(0, 64) ?? String(v));

/** Refuses keys of `obj` outside `known` (OpenAI's `unknown_parameter`). */
function onlyKnown(obj: Record<string, unknown>, known: readonly string[], path: string, eventId: string | null): void {
  for (const k of Object.keys(obj)) {
    if (!known.includes(k)) throw realtimeEventError('unknown_parameter', `${path}.${k}`, `Unknown parameter: '${path}.${k}'.`, eventId);
  }
}

function invalidValue(param: string, message: string, eventId: string | null): VoicewireError {
  return realtimeEventError('invalid_value', param, message, eventId);
}

function parseFormat(v: unknown, eventId: string | null): RealtimeAudioFormat {
  const p = 'session.audio.input.format';
  if (!isRecord(v)) throw realtimeEventError('invalid_type', p, `Invalid type for '${p}': expected an object, but got ${shown(v)} instead.`, eventId);
  onlyKnown(v, ['type', 'rate'], p, eventId);
  const type = v['type'] ?? 'audio/pcm';
  if (type === 'audio/pcm') {
    if (v['rate'] !== undefined && v['rate'] !== 24000) throw invalidValue(`${p}.rate`, `Invalid value: ${shown(v['rate'])}. audio/pcm is served at 24000 Hz only (as OpenAI's).`, eventId);
    return { type, rate: 24000 };
  }
  if (type === 'audio/pcmu' || type === 'audio/pcma') {
    if (v['rate'] !== undefined && v['rate'] !== 8000) throw invalidValue(`${p}.rate`, `Invalid value: ${shown(v['rate'])}. ${type} is 8000 Hz G.711.`, eventId);
    return { type };
  }
  throw invalidValue(`${p}.type`, `Invalid value: ${shown(type)}. Supported values are: 'audio/pcm', 'audio/pcmu', and 'audio/pcma'.`, eventId);
}

function parseTranscription(v: unknown, eventId: string | null): NonNullable<RealtimeSessionUpdate['transcription']> {
  const p = 'session.audio.input.transcription';
  if (!isRecord(v)) throw realtimeEventError('invalid_type', p, `Invalid type for '${p}': expected an object, but got ${shown(v)} instead.`, eventId);
  onlyKnown(v, ['model', 'language', 'prompt', 'delay'], p, eventId);
  const out: NonNullable<RealtimeSessionUpdate['transcription']> = {};
  if (v['model'] !== undefined) {
    if (typeof v['model'] !== 'string' || !(OPENAI_REALTIME_STT_MODELS as readonly string[]).includes(v['model'])) {
      throw invalidValue(`${p}.model`, `Invalid value: ${shown(v['model'])}. Supported values are: ${OPENAI_REALTIME_STT_MODELS.map((m) => `'${m}'`).join(', ')}.`, eventId);
    }
    out.model = v['model'];
  }
  if (v['language'] !== undefined) {
    const lang = v['language'];
    if (lang !== null && (typeof lang !== 'string' || !/^[a-z]{2,3}(?:-[A-Za-z0-9]{2,8})?$/.test(lang))) {
      throw invalidValue(`${p}.language`, `Invalid value: ${shown(lang)}. language is an ISO-639-1 code such as 'en'.`, eventId);
    }
    out.language = lang as string | null;
  }
  if (v['prompt'] !== undefined) {
    if (typeof v['prompt'] !== 'string') throw realtimeEventError('invalid_type', `${p}.prompt`, `Invalid type for '${p}.prompt': expected a string.`, eventId);
    out.prompt = v['prompt'];
  }
  // The engines decode as fast as the audio comes: there is no delay to choose.
  if (v['delay'] !== undefined) throw invalidValue(`${p}.delay`, `Invalid value: ${shown(v['delay'])}. transcription.delay is not offered by this server's engines; leave it out.`, eventId);
  return out;
}

function parseTurnDetection(v: unknown, eventId: string | null): RealtimeServerVad | null {
  const p = 'session.audio.input.turn_detection';
  if (v === null) return null;
  if (!isRecord(v)) throw realtimeEventError('invalid_type', p, `Invalid type for '${p}': expected an object or null, but got ${shown(v)} instead.`, eventId);
  if (v['type'] !== 'server_vad') {
    throw invalidValue(`${p}.type`, `Invalid value: ${shown(v['type'])}. Supported values are: 'server_vad' (or turn_detection null for manual commits); semantic_vad is not offered by this server.`, eventId);
  }
  onlyKnown(v, ['type', 'threshold', 'prefix_padding_ms', 'silence_duration_ms', 'create_response', 'interrupt_response', 'idle_timeout_ms'], p, eventId);
  // A transcription session makes no responses: create_response and interrupt_response have nothing to act on.
  for (const k of ['create_response', 'interrupt_response']) {
    if (v[k] !== undefined && typeof v[k] !== 'boolean') throw realtimeEventError('invalid_type', `${p}.${k}`, `Invalid type for '${p}.${k}': expected a boolean.`, eventId);
  }
  if (v['idle_timeout_ms'] !== undefined && v['idle_timeout_ms'] !== null) throw invalidValue(`${p}.idle_timeout_ms`, 'idle_timeout_ms is not offered for transcription sessions; leave it out.', eventId);
  const num = (k: 'threshold' | 'prefix_padding_ms' | 'silence_duration_ms', min: number, max: number, integer: boolean): number => {
    const x = v[k] ?? SERVER_VAD_DEFAULTS[k];
    if (typeof x !== 'number' || !Number.isFinite(x) || x < min || x > max || (integer && !Number.isInteger(x))) {
      throw invalidValue(`${p}.${k}`, `Invalid value: ${shown(x)}. ${k} must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}.`, eventId);
    }
    return x;
  };
  return { type: 'server_vad', threshold: num('threshold', 0, 1, false), prefix_padding_ms: num('prefix_padding_ms', 0, 10_000, true), silence_duration_ms: num('silence_duration_ms', 0, 10_000, true) };
}

function parseSessionUpdate(session: unknown, eventId: string | null): RealtimeSessionUpdate {
  if (!isRecord(session)) throw realtimeEventError('missing_required_parameter', 'session', "Missing required parameter: 'session'.", eventId);
  if (session['type'] !== 'transcription') {
    throw invalidValue('session.type', `Invalid value: ${shown(session['type'])}. This server serves transcription sessions only: session.type must be 'transcription'.`, eventId);
  }
  onlyKnown(session, ['type', 'audio', 'include', 'id', 'object', 'expires_at'], 'session', eventId);
  if (session['include'] !== undefined && session['include'] !== null && !(Array.isArray(session['include']) && session['include'].length === 0)) {
    throw invalidValue('session.include', 'Invalid value: logprobs are not offered by this server\'s engines; leave session.include out.', eventId);
  }
  const update: RealtimeSessionUpdate = {};
  const audio = session['audio'];
  if (audio === undefined) return update;
  if (!isRecord(audio)) throw realtimeEventError('invalid_type', 'session.audio', "Invalid type for 'session.audio': expected an object.", eventId);
  onlyKnown(audio, ['input'], 'session.audio', eventId);
  const input = audio['input'];
  if (input === undefined) return update;
  if (!isRecord(input)) throw realtimeEventError('invalid_type', 'session.audio.input', "Invalid type for 'session.audio.input': expected an object.", eventId);
  onlyKnown(input, ['format', 'transcription', 'turn_detection', 'noise_reduction'], 'session.audio.input', eventId);
  if (input['format'] !== undefined) update.format = parseFormat(input['format'], eventId);
  if (input['transcription'] !== undefined && input['transcription'] !== null) update.transcription = parseTranscription(input['transcription'], eventId);
  if (input['turn_detection'] !== undefined) update.turnDetection = parseTurnDetection(input['turn_detection'], eventId);
  // Refused, not ignored: the engines hear the audio as it is sent.
  if (input['noise_reduction'] !== undefined && input['noise_reduction'] !== null) {
    throw invalidValue('session.audio.input.noise_reduction', 'Invalid value: noise reduction is not offered by this server; set noise_reduction to null or leave it out.', eventId);
  }
  return update;
}

/**
 * Reads one text frame as a client event.
 * @throws VoicewireError `PROTOCOL_INVALID_MESSAGE` (not a JSON object with a `type`) or
 *   `INVALID_ARGUMENT` (a known event with a bad field, or an event a transcription session does
 *   not take), with {@link RealtimeErrorDetails}.
 */
export function parseRealtimeClientEvent(text: string): RealtimeClientCommand {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw realtimeEventError('invalid_json', null, "The server could not parse the event: it is not valid JSON. We expect a JSON object such as {'type': 'input_audio_buffer.append', 'audio': '...'}.", null, 'PROTOCOL_INVALID_MESSAGE');
  }
  if (!isRecord(value)) throw realtimeEventError('invalid_type', null, 'Invalid event: expected a JSON object.', null, 'PROTOCOL_INVALID_MESSAGE');
  const eventId = typeof value['event_id'] === 'string' ? value['event_id'].slice(0, 256) : null;
  const type = value['type'];
  if (typeof type !== 'string') throw realtimeEventError('missing_required_parameter', 'type', "Missing required parameter: 'type'.", eventId);
  switch (type) {
    case 'session.update':
      return { type, eventId, update: parseSessionUpdate(value['session'], eventId) };
    case 'input_audio_buffer.append': {
      const audio = value['audio'];
      if (typeof audio !== 'string') throw realtimeEventError('missing_required_parameter', 'audio', "Missing required parameter: 'audio'.", eventId);
      if (!BASE64.test(audio)) throw invalidValue('audio', 'Invalid value: audio is not valid base64.', eventId);
      const padding = audio.endsWith('==') ? 2 : audio.endsWith('=') ? 1 : 0;
      return { type, eventId, audio, bytes: (audio.length / 4) * 3 - padding };
    }
    case 'input_audio_buffer.commit':
    case 'input_audio_buffer.clear':
      return { type, eventId };
    case 'transcription_session.update':
      throw invalidValue('type', "Invalid value: 'transcription_session.update' is the beta API's event; send 'session.update' with session.type 'transcription' (the GA API).", eventId);
    default:
      if (CONVERSATION_EVENTS.has(type)) throw invalidValue('type', `Invalid value: '${type}' is not available in a transcription session.`, eventId);
      throw invalidValue('type', `Invalid value: ${shown(type)}. Supported values are: ${CLIENT_EVENTS.map((t) => `'${t}'`).join(', ')}.`, eventId);
  }
}

/** Applies a validated update to a configuration (a new object). */
export function applySessionUpdate(config: RealtimeTranscriptionConfig, update: RealtimeSessionUpdate): RealtimeTranscriptionConfig {
  return {
    format: update.format ?? config.format,
    transcription: { ...config.transcription, ...update.transcription },
    turnDetection: update.turnDetection === undefined ? config.turnDetection : update.turnDetection,
  };
}

/** The `session` object of `session.created` / `session.updated` (GA transcription session). */
export function sessionObject(id: string, config: RealtimeTranscriptionConfig, expiresAt: number): Record<string, unknown> {
  return {
    type: 'transcription',
    object: 'realtime.transcription_session',
    id,
    expires_at: expiresAt,
    audio: {
      input: {
        format: config.format,
        transcription: config.transcription,
        noise_reduction: null,
        turn_detection: config.turnDetection,
      },
    },
    include: null,
  };
}

/** OpenAI's `error` event for a failure: `invalid_request_error` for the client's fault, else `server_error`. */
export function errorEventBody(error: VoicewireError): { type: string; code: string | null; message: string; param: string | null; event_id: string | null } {
  const d = (isRecord(error.details) ? error.details : {}) as Partial<RealtimeErrorDetails>;
  const clientFault = error.code === 'INVALID_ARGUMENT' || error.code === 'PROTOCOL_INVALID_MESSAGE' || error.closeCode === 1008 || error.code === 'LIMIT_EXCEEDED' || error.code === 'CREDITS_EXHAUSTED';
  const code = d.openaiCode ?? (error.code === 'CREDITS_EXHAUSTED' ? 'insufficient_quota' : error.code === 'LIMIT_EXCEEDED' ? 'rate_limit_exceeded' : error.code.toLowerCase());
  return { type: clientFault ? 'invalid_request_error' : 'server_error', code, message: error.message, param: d.param ?? null, event_id: d.eventId ?? null };
}
