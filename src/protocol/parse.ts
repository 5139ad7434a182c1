/**
 * Parsing and serializing the WebSocket messages of docs/api.md §4.4 (STT) and §4.5 (TTS).
 *
 * Parsers take the raw frame (a JSON string, its UTF-8 bytes, or an already parsed value) and
 * return a fresh typed message holding only the known fields: unknown fields are ignored, a known
 * field of the wrong type is an error. Optional fields set to `null` count as absent (except
 * `stream_id`, which is "integer or null" and keeps its null).
 *
 * Every parser THROWS a {@link VoicewireError} (never returns one), with the close code the API
 * prescribes (§7.3): 1008 for a malformed message, a malformed setup (`PROTOCOL_INVALID_SETUP`),
 * an audio format the route does not take (`PROTOCOL_INVALID_AUDIO_FORMAT`) or a bad
 * `json_config` (`PROTOCOL_INVALID_CONFIG`). `error.details` is a {@link ProtocolErrorDetails}:
 * the message's `client_req_id` when it had a valid one (so a multiplexing server can answer the
 * right request), its `type`, and the issues.
 */
import { objectArg, stringArg } from '../util/args.js';
import { VoicewireError, type ErrorCode } from '../util/errors.js';
import { AUDIO_FORMAT_NAMES, STT_INPUT_FORMATS, type AudioFormatName } from '../audio/format.js';
import { encodeBase64 } from '../util/base64.js';
import { checkSttJsonConfig, checkTtsJsonConfig } from './config.js';
import { MAX_JSON_DEPTH, jsonDepthExceededAt, jsonTooDeepReason } from './json-depth.js';
import type {
  EndOfStreamMessage,
  ErrorMessage,
  FlushId,
  SttClientMessage,
  SttServerMessage,
  SttStepMessage,
  TtsClientMessage,
  TtsServerMessage,
  VadPrediction,
} from './messages.js';
import { FieldReader, describeIssue, isRecord, makeIssue, own, type ValidationIssue } from './validate.js';

/** `details` of every error a protocol parser throws. */
export interface ProtocolErrorDetails {
  /** The message's `client_req_id`, when it had a valid one. */
  clientReqId?: string;
  /** The message's `type`, when it had a string one. */
  type?: string;
  /** What is wrong, pydantic-style (`loc` is relative to the message). */
  issues: ValidationIssue[];
}

/** A raw WebSocket frame: text, the bytes of a text frame, or an already parsed JSON value. */
export type RawMessage = string | Uint8Array | ArrayBuffer | unknown;

const UTF8 = new TextDecoder('utf-8', { fatal: true });

function fail(code: ErrorCode, message: string, details: ProtocolErrorDetails): never {
  throw new VoicewireError(code, message, { details });
}

/** Turns a raw frame into a JSON object, or throws `PROTOCOL_INVALID_MESSAGE`. */
function toRecord(raw: RawMessage, route: string): Record<string, unknown> {
  let value: unknown = raw;
  if (raw instanceof ArrayBuffer) value = new Uint8Array(raw);
  if (value instanceof Uint8Array) {
    try {
      value = UTF8.decode(value);
    } catch {
      fail('PROTOCOL_INVALID_MESSAGE', `${route}: the frame is not valid UTF-8`, { issues: [makeIssue([], 'json_invalid', undefined, { error: 'invalid UTF-8' })] });
    }
  }
  if (typeof value === 'string') {
    // Before parsing (issue 20): a message nested thousands deep parses, then overflows every recursive walk.
    if (jsonDepthExceededAt(value, MAX_JSON_DEPTH) >= 0) {
      const error = jsonTooDeepReason(MAX_JSON_DEPTH);
      fail('PROTOCOL_INVALID_MESSAGE', `${route}: the message is ${error}`, { issues: [makeIssue([], 'json_invalid', undefined, { error })] });
    }
    try {
      value = JSON.parse(value);
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      fail('PROTOCOL_INVALID_MESSAGE', `${route}: the message is not valid JSON (${error})`, { issues: [makeIssue([], 'json_invalid', undefined, { error })] });
    }
  }
  if (!isRecord(value)) {
    fail('PROTOCOL_INVALID_MESSAGE', `${route}: a message must be a JSON object`, { issues: [makeIssue([], 'model_attributes_type', undefined)] });
  }
  return value;
}

/** Reading context of one message: its record, its id, its type, and the issues found so far. */
class MessageReader extends FieldReader {
  readonly clientReqId: string | undefined;
  readonly type: string;
  constructor(
    obj: Record<string, unknown>,
    readonly route: string,
  ) {
    super(obj, []);
    const id = own(obj, 'client_req_id');
    this.clientReqId = typeof id === 'string' ? id : undefined;
    const type = own(obj, 'type');
    this.type = typeof type === 'string' ? type : '';
    if (id !== undefined && id !== null && typeof id !== 'string') this.fail('client_req_id', 'string_type', id);
    if (type === undefined) this.fail('type', 'missing', undefined);
    else if (typeof type !== 'string') this.fail('type', 'string_type', type);
  }

  /** The reader of a raw frame of `route`, its `type` and `client_req_id` checked. */
  static of(raw: RawMessage, route: string): MessageReader {
    const r = new MessageReader(toRecord(raw, route), route);
    r.check();
    return r;
  }

  details(): ProtocolErrorDetails {
    const d: ProtocolErrorDetails = { issues: this.issues };
    if (this.clientReqId !== undefined) d.clientReqId = this.clientReqId;
    if (this.type !== '') d.type = this.type;
    return d;
  }

  /** Throws when issues were found; `code` picks the error code from the first issue. */
  check(code: (first: ValidationIssue) => ErrorCode = () => 'PROTOCOL_INVALID_MESSAGE'): void {
    if (this.issues.length === 0) return;
    const what = this.type === '' ? 'message' : `'${this.type}' message`;
    fail(code(this.issues[0]!), `${this.route}: invalid ${what}: ${this.issues.map(describeIssue).join('; ')}`, this.details());
  }

  unknownType(known: readonly string[]): never {
    this.fail('type', 'literal_error', this.type, { expected: known.map((k) => `'${k}'`).join(', ') });
    this.check();
    throw new Error('unreachable');
  }

  /** Base object `{ type, client_req_id? }` of the result. */
  base<T extends string>(type: T): { type: T; client_req_id?: string } {
    return this.clientReqId === undefined ? { type } : { type, client_req_id: this.clientReqId };
  }

  /** The fields every `ready` has (STT §4.4, TTS §4.5); the route adds its own. */
  ready(): { type: 'ready'; client_req_id?: string; request_id: string; model_name: string; sample_rate: number; frame_size: number } {
    return {
      ...this.base('ready'),
      request_id: this.string('request_id', { required: true })!,
      model_name: this.string('model_name', { required: true })!,
      sample_rate: this.integer('sample_rate', { required: true, ge: 1 })!,
      frame_size: this.integer('frame_size', { required: true, ge: 1 })!,
    };
  }

  flushId(key: string): FlushId | undefined {
    const value = own(this.obj, key);
    if (value === undefined || value === null) return this.fail(key, 'missing', undefined);
    if (typeof value === 'string') return value;
    if (typeof value === 'number' && Number.isSafeInteger(value)) return value;
    return this.fail(key, typeof value === 'number' ? 'int_from_float' : 'int_type', value);
  }

  streamId(): number | null | undefined {
    const value = own(this.obj, 'stream_id');
    if (value === null) return null;
    return this.integer('stream_id');
  }
}

function setupCode(first: ValidationIssue): ErrorCode {
  if (first.loc[0] === 'input_format' || first.loc[0] === 'output_format') return 'PROTOCOL_INVALID_AUDIO_FORMAT';
  if (first.loc[0] === 'json_config') return 'PROTOCOL_INVALID_CONFIG';
  return 'PROTOCOL_INVALID_SETUP';
}

function set<T extends object, K extends string, V>(target: T, key: K, value: V | undefined): void {
  if (value !== undefined) (target as Record<string, unknown>)[key] = value;
}

const STT_CLIENT_TYPES = ['setup', 'audio', 'flush', 'end_of_stream'] as const;
const STT_SERVER_TYPES = ['ready', 'text', 'end_text', 'step', 'vad', 'flushed', 'end_of_stream', 'error'] as const;
const TTS_CLIENT_TYPES = ['setup', 'text', 'end_of_stream'] as const;
const TTS_SERVER_TYPES = ['ready', 'audio', 'text', 'need_more_text', 'end_of_stream', 'error'] as const;

/**
 * Parses a message a client sends on the STT WebSocket (§4.4 "Client messages"): `setup`,
 * `audio`, `flush`, `end_of_stream`.
 *
 * `setup.input_format` must be one of the STT input formats (`PROTOCOL_INVALID_AUDIO_FORMAT`),
 * `json_config` (object or JSON string) is validated by {@link validateSttJsonConfig}
 * (`PROTOCOL_INVALID_CONFIG`), any other setup problem is `PROTOCOL_INVALID_SETUP`. `flush_id`
 * may be an integer or a string and is kept as received. `audio` is checked to be a string; its
 * base64 is decoded by the session, not here.
 *
 * @throws VoicewireError with close code 1008 (see the module comment).
 */
export function parseSttClientMessage(raw: RawMessage): SttClientMessage {
  const r = MessageReader.of(raw, 'STT');
  switch (r.type) {
    case 'setup': {
      const msg = r.base('setup') as Extract<SttClientMessage, { type: 'setup' }>;
      set(msg, 'model_name', r.string('model_name'));
      set(msg, 'input_format', r.literal<AudioFormatName>('input_format', STT_INPUT_FORMATS));
      const config = own(r.obj, 'json_config');
      if (config !== undefined && config !== null) set(msg, 'json_config', checkSttJsonConfig(config, ['json_config'], r.issues));
      set(msg, 'close_ws_on_eos', r.boolean('close_ws_on_eos'));
      set(msg, 'retry_for_s', r.number('retry_for_s', { ge: 0 }));
      r.check(setupCode);
      return msg;
    }
    case 'audio': {
      const audio = r.string('audio', { required: true });
      r.check();
      return { ...r.base('audio'), audio: audio! };
    }
    case 'flush': {
      const flushId = r.flushId('flush_id');
      r.check();
      return { ...r.base('flush'), flush_id: flushId! };
    }
    case 'end_of_stream':
      return r.base('end_of_stream');
    default:
      return r.unknownType(STT_CLIENT_TYPES);
  }
}

function parseVad(r: MessageReader): VadPrediction[] | undefined {
  const value = own(r.obj, 'vad');
  if (value === undefined || value === null) return r.fail('vad', 'missing', undefined);
  if (!Array.isArray(value)) return r.fail('vad', 'list_type', value);
  const out: VadPrediction[] = [];
  const before = r.issues.length;
  value.forEach((entry, i) => {
    if (!isRecord(entry)) {
      r.issues.push(makeIssue(['vad', i], 'model_attributes_type', entry));
      return;
    }
    const e = new FieldReader(entry, ['vad', i], 'strict', r.issues);
    const horizon = e.number('horizon_s', { required: true });
    const prob = e.number('inactivity_prob', { required: true });
    if (horizon !== undefined && prob !== undefined) out.push({ horizon_s: horizon, inactivity_prob: prob });
  });
  return r.issues.length === before ? out : undefined;
}

function parseError(r: MessageReader): ErrorMessage {
  const message = r.string('message', { required: true });
  const code = r.integer('code');
  r.check();
  const msg: ErrorMessage = { ...r.base('error'), message: message! };
  set(msg, 'code', code);
  return msg;
}

/**
 * Parses a message the STT server sends (§4.4 "Server messages"): `ready`, `text`, `end_text`,
 * `step` (or its legacy type `vad`, kept as received), `flushed`, `end_of_stream`, `error`.
 * `ready` may carry `delay_in_frames` or `delay_in_tokens`.
 *
 * @throws VoicewireError `PROTOCOL_INVALID_MESSAGE` for a malformed message.
 */
export function parseSttServerMessage(raw: RawMessage): SttServerMessage {
  const r = MessageReader.of(raw, 'STT');
  switch (r.type) {
    case 'ready': {
      const msg = r.ready();
      set(msg, 'delay_in_frames', r.integer('delay_in_frames', { ge: 0 }));
      set(msg, 'delay_in_tokens', r.integer('delay_in_tokens', { ge: 0 }));
      set(msg, 'text_stream_names', r.stringArray('text_stream_names'));
      r.check();
      return msg;
    }
    case 'text': {
      const msg = { ...r.base('text'), text: r.string('text', { required: true })!, start_s: r.number('start_s', { required: true })! };
      set(msg, 'stream_id', r.streamId());
      r.check();
      return msg;
    }
    case 'end_text': {
      const msg = { ...r.base('end_text'), stop_s: r.number('stop_s', { required: true })! };
      set(msg, 'stream_id', r.streamId());
      r.check();
      return msg;
    }
    case 'step':
    case 'vad': {
      const msg: SttStepMessage = {
        ...r.base(r.type),
        vad: parseVad(r)!,
        step_idx: r.integer('step_idx', { required: true, ge: 0 })!,
        step_duration_s: r.number('step_duration_s', { required: true })!,
        total_duration_s: r.number('total_duration_s', { required: true })!,
      };
      r.check();
      return msg;
    }
    case 'flushed': {
      const flushId = r.flushId('flush_id');
      r.check();
      return { ...r.base('flushed'), flush_id: flushId! };
    }
    case 'end_of_stream':
      return r.base('end_of_stream');
    case 'error':
      return parseError(r);
    default:
      return r.unknownType(STT_SERVER_TYPES);
  }
}

/**
 * Parses a message a client sends on the TTS WebSocket: `setup`, `text`, `end_of_stream`
 * (protocol-notes.md "TTS WebSocket, message shapes"). `output_format` may be any name of §4.2
 * (§4.5 "Same values as 4.2"); `json_config` is validated by {@link validateTtsJsonConfig}.
 *
 * @throws VoicewireError with close code 1008 (see the module comment).
 */
export function parseTtsClientMessage(raw: RawMessage): TtsClientMessage {
  const r = MessageReader.of(raw, 'TTS');
  switch (r.type) {
    case 'setup': {
      const msg = r.base('setup') as Extract<TtsClientMessage, { type: 'setup' }>;
      set(msg, 'model_name', r.string('model_name'));
      set(msg, 'voice_id', r.string('voice_id'));
      set(msg, 'output_format', r.literal<AudioFormatName>('output_format', AUDIO_FORMAT_NAMES));
      set(msg, 'pronunciation_id', r.string('pronunciation_id'));
      const config = own(r.obj, 'json_config');
      if (config !== undefined && config !== null) set(msg, 'json_config', checkTtsJsonConfig(config, ['json_config'], r.issues));
      set(msg, 'close_ws_on_eos', r.boolean('close_ws_on_eos'));
      r.check(setupCode);
      return msg;
    }
    case 'text': {
      const text = r.string('text', { required: true });
      r.check();
      return { ...r.base('text'), text: text! };
    }
    case 'end_of_stream':
      return r.base('end_of_stream');
    default:
      return r.unknownType(TTS_CLIENT_TYPES);
  }
}

/**
 * Parses a message the TTS server sends: `ready`, `audio` (times optional, §4.5 only promises
 * `audio`), `text` (a word timestamp: `text`, `start_s`, `stop_s`), `need_more_text`,
 * `end_of_stream`, `error`.
 *
 * @throws VoicewireError `PROTOCOL_INVALID_MESSAGE` for a malformed message.
 */
export function parseTtsServerMessage(raw: RawMessage): TtsServerMessage {
  const r = MessageReader.of(raw, 'TTS');
  switch (r.type) {
    case 'ready': {
      const msg = r.ready();
      set(msg, 'audio_stream_names', r.stringArray('audio_stream_names'));
      set(msg, 'text_stream_names', r.stringArray('text_stream_names'));
      r.check();
      return msg;
    }
    case 'audio': {
      const msg = { ...r.base('audio'), audio: r.string('audio', { required: true })! };
      set(msg, 'start_s', r.number('start_s'));
      set(msg, 'stop_s', r.number('stop_s'));
      set(msg, 'stream_id', r.streamId());
      r.check();
      return msg;
    }
    case 'text': {
      const msg = {
        ...r.base('text'),
        text: r.string('text', { required: true })!,
        start_s: r.number('start_s', { required: true })!,
        stop_s: r.number('stop_s', { required: true })!,
      };
      set(msg, 'stream_id', r.streamId());
      r.check();
      return msg;
    }
    case 'need_more_text':
      return r.base('need_more_text');
    case 'end_of_stream':
      return r.base('end_of_stream');
    case 'error':
      return parseError(r);
    default:
      return r.unknownType(TTS_SERVER_TYPES);
  }
}

// ---------------------------------------------------------------------------------------------
// Serializers
// ---------------------------------------------------------------------------------------------

function jsonNumber(n: number): string {
  return Number.isFinite(n) ? String(n) : 'null';
}

/** Fields of a TTS `audio` message besides the payload. */
export interface TtsAudioFields {
  start_s?: number;
  stop_s?: number;
  stream_id?: number | null;
  client_req_id?: string;
}

/**
 * Serializes a TTS `audio` message without `JSON.stringify` scanning the payload: base64 never
 * needs escaping, so the line is built by hand (protocol-notes.md "Performance facts": ~10× less
 * than stringify for an 80 ms frame). The output is byte-identical to
 * `JSON.stringify({ type: 'audio', audio, start_s, stop_s, stream_id, client_req_id })`.
 *
 * @param audio - the encoded bytes (base64-encoded here) or a base64 string (trusted as is).
 */
export function serializeTtsAudioMessage(audio: Uint8Array | string, fields: TtsAudioFields = {}): string {
  if (fields === null || typeof fields !== 'object') throw new VoicewireError('INVALID_ARGUMENT', 'serializeTtsAudioMessage: fields must be an object');
  const b64 = handBuiltBase64('serializeTtsAudioMessage', audio);
  return TTS_AUDIO_HEAD + b64 + ttsAudioTail(fields);
}

/** What a serialized TTS `audio` message starts with, up to its base64. */
export const TTS_AUDIO_HEAD = '{"type":"audio","audio":"';

/**
 * The end of a TTS `audio` line after its base64: the closing quote, the fields in
 * `JSON.stringify`'s order, the closing brace (shared by {@link serializeTtsAudioMessage} and
 * the one-buffer encoder, src/protocol/audio-line.ts).
 */
export function ttsAudioTail(fields: TtsAudioFields): string {
  if (fields === null || typeof fields !== 'object') throw new VoicewireError('INVALID_ARGUMENT', 'ttsAudioTail: fields must be an object');
  let line = '"';
  if (fields.start_s !== undefined) line += ',"start_s":' + jsonNumber(fields.start_s);
  if (fields.stop_s !== undefined) line += ',"stop_s":' + jsonNumber(fields.stop_s);
  if (fields.stream_id !== undefined) line += ',"stream_id":' + (fields.stream_id === null ? 'null' : jsonNumber(fields.stream_id));
  if (fields.client_req_id !== undefined) line += ',"client_req_id":' + JSON.stringify(fields.client_req_id);
  return line + '}';
}

/**
 * Serializes an STT `audio` client message by hand (same reason as {@link serializeTtsAudioMessage});
 * identical to `JSON.stringify({ type: 'audio', audio, client_req_id })`.
 */
export function serializeSttAudioMessage(audio: Uint8Array | string, clientReqId?: string): string {
  if (clientReqId !== undefined && typeof clientReqId !== 'string') throw new VoicewireError('INVALID_ARGUMENT', 'serializeSttAudioMessage: clientReqId must be a string');
  const b64 = handBuiltBase64('serializeSttAudioMessage', audio);
  const line = '{"type":"audio","audio":"' + b64 + '"';
  return clientReqId === undefined ? line + '}' : line + ',"client_req_id":' + JSON.stringify(clientReqId) + '}';
}

/** The base64 a hand-built line splices in: bytes are encoded; a string must already be base64 (it is not escaped). */
function handBuiltBase64(fn: string, audio: Uint8Array | string): string {
  if (typeof audio !== 'string') return encodeBase64(audio);
  if (!isBase64Text(audio)) throw new VoicewireError('INVALID_ARGUMENT', `${fn}: a string audio must be base64`);
  return audio;
}

function isBase64Text(value: string): boolean {
  // Hand-built lines splice the string in unescaped: only do it when it cannot need escaping.
  return /^[A-Za-z0-9+/]*={0,2}$/.test(value);
}

/** A message to serialize: an object with a string `type`. */
function messageArg(message: { type: string }): void {
  objectArg(message, 'message');
  stringArg(message.type, 'message.type');
}

/** Serializes an STT server message (one JSON text frame). */
export function serializeSttServerMessage(message: SttServerMessage): string {
  messageArg(message);
  return JSON.stringify(message);
}

/** Serializes a TTS server message; `audio` messages take the hand-built fast path. */
export function serializeTtsServerMessage(message: TtsServerMessage): string {
  messageArg(message);
  if (message.type === 'audio' && isBase64Text(message.audio)) return serializeTtsAudioMessage(message.audio, message);
  return JSON.stringify(message);
}

/** Serializes an STT client message; `audio` messages take the hand-built fast path. */
export function serializeSttClientMessage(message: SttClientMessage): string {
  messageArg(message);
  if (message.type === 'audio' && isBase64Text(message.audio)) return serializeSttAudioMessage(message.audio, message.client_req_id);
  return JSON.stringify(message);
}

/** Serializes a TTS client message. */
export function serializeTtsClientMessage(message: TtsClientMessage): string {
  messageArg(message);
  return JSON.stringify(message);
}

/** An `error` message for a {@link VoicewireError}: its message, its close code (1011 when it has none), its request. */
export function errorMessageOf(error: VoicewireError, clientReqId?: string): ErrorMessage {
  objectArg(error, 'errorMessageOf: error');
  if (clientReqId !== undefined) stringArg(clientReqId, 'errorMessageOf: clientReqId');
  const msg: ErrorMessage = { type: 'error', message: error.message, code: error.closeCode ?? 1011 };
  if (clientReqId !== undefined) msg.client_req_id = clientReqId;
  return msg;
}

/** An `end_of_stream` message, with `client_req_id` when given. */
export function endOfStreamMessage(clientReqId?: string): EndOfStreamMessage {
  return clientReqId === undefined ? { type: 'end_of_stream' } : { type: 'end_of_stream', client_req_id: clientReqId };
}
