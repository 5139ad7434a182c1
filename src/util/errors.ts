/**
 * The one error type of voicewire, and the single table of its codes.
 *
 * Every failure any module reports is a {@link VoicewireError} whose `code` is a key of
 * {@link ERROR_CODES}. Codes are stable strings: match on `err.code`, never on the message.
 * Protocol errors also carry the WebSocket close code the service API prescribes
 * (docs/api.md §7.3: 1008 policy violation, 1011 internal error).
 */

/** What a code means, and the WebSocket close code it maps to when it ends a session. */
export interface ErrorCodeInfo {
  readonly description: string;
  /** WebSocket close code (docs/api.md §7.3) when this error ends a session. */
  readonly closeCode?: 1008 | 1011;
  /** HTTP status when this error answers a REST request. */
  readonly httpStatus?: number;
}

/**
 * Every error code, grouped by module. Add a code here (and only here) when a module needs a new
 * kind of failure, and a row to the README's table (`test/util/errors.test.ts` checks that every code is there).
 */
export const ERROR_CODES = {
  // --- general ----------------------------------------------------------------------------
  INVALID_ARGUMENT: { description: 'An argument has the wrong type or an out-of-range value.' },
  INVALID_STATE: { description: 'The object was used after flush(), destroy() or an earlier fatal error.' },

  // --- pcm --------------------------------------------------------------------------------
  PCM_PARTIAL_SAMPLE: { description: 'PCM byte length is not a whole number of samples (times channels).' },
  PCM_UNSUPPORTED_ENCODING: { description: 'Unknown PCM sample encoding.' },

  // --- wav --------------------------------------------------------------------------------
  WAV_NOT_RIFF: { description: 'Input does not start with a RIFF/RF64 "WAVE" header.' },
  WAV_TRUNCATED: { description: 'Input ended inside the WAV header or before a chunk the header announced.' },
  WAV_MISSING_FMT: { description: 'The data chunk came before any fmt chunk, or there is no fmt chunk.' },
  WAV_MISSING_DATA: { description: 'The file has no data chunk.' },
  WAV_INVALID_FMT: { description: 'The fmt chunk is malformed: zero channels or sample rate, bad block align or size.' },
  WAV_UNSUPPORTED_FORMAT: { description: 'The WAV format tag or bit depth is not supported.' },
  WAV_SIZE_MISMATCH: { description: 'A chunk size is larger than the input (or than RF64 ds64 allows).' },

  // --- format registry ----------------------------------------------------------------------
  FORMAT_UNKNOWN: { description: 'Unknown audio format name; the message lists the valid ones.', closeCode: 1008 },

  // --- resampler / framer -------------------------------------------------------------------
  RESAMPLER_INVALID_RATE: { description: 'A sample rate is not a positive integer (at most 2^31 - 1), or the ratio exceeds 1024:1.' },
  RESAMPLER_NON_FINITE: { description: 'Input holds NaN or Infinity samples.' },

  // --- ogg --------------------------------------------------------------------------------
  OGG_CRC_MISMATCH: { description: 'An Ogg page failed its CRC-32 check (RFC 3533 §6).' },
  OGG_INVALID_PAGE: { description: 'No valid Ogg page within the reader\'s maxGarbage bytes: the input is not an Ogg stream.' },
  OGG_TRUNCATED: { description: 'The stream ended inside a page or a packet, or a followed logical stream ended without its EOS page (unless allowTruncated).' },
  OGG_CORRUPT: { description: 'Bytes after the first Ogg page are not a valid page (a damaged capture pattern or version, or junk between pages); strict mode only.' },
  OGG_SEQUENCE_GAP: { description: 'A followed Ogg stream\'s page sequence number jumped: pages were lost (RFC 3533 §6); strict mode only.' },
  OGG_NO_OPUS_STREAM: { description: 'No logical stream starting with OpusHead was found.' },
  OGG_PACKET_TOO_LARGE: { description: 'A packet reassembled across Ogg pages exceeds the reader\'s maxPacketSize.' },

  // --- opus -------------------------------------------------------------------------------
  OPUS_INVALID_HEADER: { description: 'OpusHead or OpusTags is malformed (RFC 7845 §5).' },
  OPUS_INVALID_PACKET: { description: 'An Opus packet is malformed (RFC 6716 §3).' },
  OPUS_ENCODER_ERROR: { description: 'libopus rejected an encoder call.' },
  OPUS_DECODER_ERROR: { description: 'libopus rejected a decoder call.' },
  OPUS_UNSUPPORTED: { description: 'The Opus stream needs the multistream decoder this libopus build lacks (more than one stream or more than 2 channels).' },
  OPUS_CAPACITY: { description: 'The process holds its limit of live Opus encoders and decoders (setOpusLimits maxInstances, default 4096), or libopus could not allocate one: the server is busy, not the client at fault; retry later.', closeCode: 1011 },

  // --- external tools (ffmpeg bridge) -------------------------------------------------------
  FFMPEG_NOT_FOUND: { description: 'This input needs ffmpeg, and ffmpeg is not installed.' },
  FFMPEG_FAILED: { description: 'ffmpeg exited with an error while converting the input.' },

  // --- audio pipelines ----------------------------------------------------------------------
  AUDIO_LIMIT_EXCEEDED: { description: 'A request decoded more audio than its cap (the STT decoder\'s maxDecodedSeconds, the Ogg Opus decoder\'s maxDecodedSamples; the server sets it from the session-duration limit).', closeCode: 1008 },
  AUDIO_FORMAT_UNDETECTED: { description: 'No format was named and the bytes start with neither RIFF/RF64 (WAV) nor OggS (Ogg Opus); name the format (in Node, other containers go through ffmpeg).' },

  // --- text tags --------------------------------------------------------------------------
  TAG_BREAK_INVALID_TIME: { description: 'A <break> tag has a time that is not "<seconds>s" (e.g. "abc", "500ms").' },
  TAG_BREAK_OUT_OF_RANGE: { description: 'A <break> time is outside 0.1 to 2.0 seconds.' },
  TAG_BREAK_MISSING_SPACE: { description: 'A <break> tag is not preceded and followed by a space.' },
  TAG_BREAK_MALFORMED: { description: 'A <break …> tag is not of the form <break time="<seconds>s" /> (no or unknown attribute, unquoted value, no "/>").' },

  // --- ndjson -----------------------------------------------------------------------------
  NDJSON_LINE_TOO_LONG: { description: 'An NDJSON line is longer than the configured maximum.' },
  NDJSON_INVALID_JSON: { description: 'An NDJSON line is not valid JSON; the message names the line number.' },
  NDJSON_STREAM_ERROR: { description: 'The stream carried an in-stream {"type":"error"} line (docs/api.md §7.2).' },
  NDJSON_INVALID_UTF8: { description: 'The NDJSON bytes are not valid UTF-8 (only with the decoder option fatal: true).' },

  // --- protocol ---------------------------------------------------------------------------
  PROTOCOL_SETUP_REQUIRED: { description: 'A message other than setup came first.', closeCode: 1008 },
  PROTOCOL_INVALID_MESSAGE: { description: 'A WebSocket message is not JSON, has no known type, or has a field of the wrong type.', closeCode: 1008 },
  PROTOCOL_INVALID_SETUP: { description: 'The setup message is malformed.', closeCode: 1008 },
  PROTOCOL_INVALID_AUDIO_FORMAT: { description: 'The setup names an audio format the route does not accept.', closeCode: 1008 },
  PROTOCOL_INVALID_CONFIG: { description: 'json_config is not valid for the route.', closeCode: 1008 },
  PROTOCOL_UNAUTHORIZED: { description: 'Missing, invalid, revoked or expired API key (docs/api.md §5).', closeCode: 1008 },
  PROTOCOL_DUPLICATE_REQUEST_ID: { description: 'A client_req_id that is still active was reused.', closeCode: 1008 },
  PROTOCOL_UNKNOWN_REQUEST_ID: { description: 'A message names a client_req_id with no active request.', closeCode: 1008 },
  PROTOCOL_TOO_MANY_REQUESTS: { description: 'A setup would open more requests on one socket than the server allows (maxRequests, default 256); answered for that client_req_id.', closeCode: 1008 },
  PROTOCOL_QUEUE_FULL: { description: 'A request queued more input before its engine than the server allows (maxQueuedBytes / maxQueuedMessages) and its transport cannot pause reading.', closeCode: 1011 },
  PROTOCOL_UNEXPECTED_MESSAGE: { description: 'A message is not allowed in the session\'s current state.', closeCode: 1008 },
  PROTOCOL_SERVER_ERROR: { description: 'The server sent an error message (its code is kept as closeCode).' },
  PROTOCOL_INTERNAL: { description: 'An unexpected failure inside the server (the engine threw).', closeCode: 1011 },
  PROTOCOL_DRAINING: { description: 'The instance is draining and takes no new sessions.', httpStatus: 503 },
  PROTOCOL_INVALID_AUDIO: { description: 'The audio of a message is not valid base64 or cannot be decoded in the setup\'s input_format.', closeCode: 1008 },
  PROTOCOL_CONNECTION_CLOSED: { description: 'The socket closed before the session ended (details hold the close code and reason).' },
  PROTOCOL_UNSUPPORTED_CONTENT_TYPE: { description: 'POST /post/speech/asr got a Content-Type other than audio/wav (or audio/x-wav, audio/wave, audio/vnd.wave), audio/pcm, audio/ogg or audio/opus (answered as the plain-text proxy-level error).', httpStatus: 500 },
  RESOURCE_INVALID: { description: 'A REST resource (voice, dictionary, credits, token…) does not match docs/api.md §2; details hold the issues.' },

  // --- client SDK -----------------------------------------------------------------------
  CLIENT_CONNECT_FAILED: { description: 'The SDK could not reach the service (connection refused or closed before it opened), after its retries.' },
  CLIENT_ABORTED: { description: 'The caller aborted the request with its AbortSignal.' },
  CLIENT_DEPENDENCY_MISSING: { description: 'An optional peer dependency an entry needs is not installed (voicewire/livekit needs @livekit/agents); the message names the npm packages to install.' },

  // --- server ---------------------------------------------------------------------------
  STORE_UNAVAILABLE: { description: 'The server\'s store (SQLite file or Postgres) did not answer; the request is refused, nothing was spent.', closeCode: 1011, httpStatus: 503 },
  CREDITS_EXHAUSTED: { description: 'The organization has fewer credits left than the request needs; what was refused costs nothing (REST: 500 `error from server 1008: …` before any audio; WebSocket: the text already paid for is spoken and sent, then error 1008).', closeCode: 1008 },
  LIMIT_EXCEEDED: { description: 'A server limit was reached (text length, audio bytes, session duration, idle time, connections per key); the message names it.', closeCode: 1008 },
  VOICE_NOT_FOUND: { description: 'The voice_id (or pronunciation_id) names no catalog voice and no voice of the organization.', closeCode: 1008 },
  NOT_FOUND: { description: 'No such route or resource (404 JSON `{"detail":"Not Found"}`).', httpStatus: 404 },
  RESIDENCY_DENIED: { description: 'The organization is pinned to another region than this server\'s --region (403, before the body is read).', httpStatus: 403 },
  FORWARD_FAILED: { description: 'The core API (--core-url) could not be reached (502).', httpStatus: 502 },
  FORWARD_TIMEOUT: { description: 'The core API (--core-url) did not answer within the upstream timeout (504).', httpStatus: 504 },
  ENGINE_TIMEOUT: { description: 'A speech engine call (open, text, flush, end, push) took longer than the engine timeout; that request ends, the others go on.', closeCode: 1011 },

  // --- engines --------------------------------------------------------------------------
  ENGINE_UNAVAILABLE: { description: 'A speech engine is not installed here (the message names the npm or Debian package to install).', closeCode: 1011, httpStatus: 503 },
  ENGINE_BUSY: { description: 'The process holds its budget of live engine instances (limits.sttDecoders: pocketsphinx decoders, ~95 MB each, in use or idle), of ffmpeg children (limits.ffmpegChildren) or of upload bytes in memory (limits.uploadBytes), or an espeak-ng has 64 syntheses waiting (ESPEAK_SYSTEM_QUEUE, ESPEAK_WASM_QUEUE): the server is busy, not the client at fault; retry later (WebSocket error 1011 for that request; POST 503 plain text; 503 on /v1).', closeCode: 1011, httpStatus: 503 },
  MODEL_INVALID: { description: 'A model folder or file given to the server (--tts-model, --stt-model, --vad-model) cannot be loaded: a file or metadata key is missing, tokens.txt is malformed, the ONNX file is corrupt or has another signature; the message names the folder or file and the cause, and the server does not start.' },
  TTS_UNKNOWN_VOICE: { description: 'The TTS setup names a voice_id that does not exist for the caller (docs/api.md §7).', closeCode: 1008 },
  TTS_UNKNOWN_PRONUNCIATION: { description: 'The TTS setup names a pronunciation_id that is unknown or belongs to another organization.', closeCode: 1008 },
  TTS_TEXT_TOO_LONG: { description: 'One TTS request sent more text than the engine was set to take (the espeak engine\'s `maxTextChars`; none by default: the server refuses text over its limit with `LIMIT_EXCEEDED` first).', closeCode: 1008 },
  STT_LANGUAGE_UNSUPPORTED: { description: 'The STT setup asks for a language without an installed model; the message names the installed ones.', closeCode: 1008 },

  // --- REST -------------------------------------------------------------------------------
  VALIDATION_FAILED: { description: 'A REST body or query failed validation; details hold the 422 body.', httpStatus: 422 },
  HTTP_ERROR: { description: 'A REST call answered with a non-2xx status.' },

  // --- cli --------------------------------------------------------------------------------
  CLI_USAGE: { description: 'Bad command-line arguments.' },
  ADDRESS_IN_USE: { description: 'serve: the host and port are taken by another program (or not allowed): pick another with --port.' },
  IO_ERROR: { description: 'A file could not be read or written.' },
} as const satisfies Record<string, ErrorCodeInfo>;

/** A stable error code: one of the keys of {@link ERROR_CODES}. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** Brand shared by every copy of the package (ESM and CJS builds, two installs). */
const BRAND: unique symbol = Symbol.for('voicewire.VoicewireError') as never;

/** Options of {@link VoicewireError}. */
export interface VoicewireErrorOptions {
  /** The underlying error, if any. */
  cause?: unknown;
  /** WebSocket close code; defaults to the code's entry in {@link ERROR_CODES}. */
  closeCode?: number;
  /** Structured details (e.g. the 422 `detail` array, the offending line number). */
  details?: unknown;
}

/**
 * The error every voicewire function throws or reports.
 *
 * `instanceof VoicewireError` holds across two copies of the package (an ESM and a CJS build
 * loaded side by side), because it checks a `Symbol.for` brand rather than the prototype chain.
 */
export class VoicewireError extends Error {
  /** Stable machine-readable code. */
  readonly code: ErrorCode;
  /** WebSocket close code (1008, 1011, or a server's code), when the error ends a session. */
  readonly closeCode: number | undefined;
  /** Structured details, when the code documents them. */
  readonly details: unknown;
  declare readonly [BRAND]: true;

  constructor(code: ErrorCode, message: string, options: VoicewireErrorOptions = {}) {
    // Issue 11 §13: misuse is INVALID_ARGUMENT, never a TypeError from the table lookup below.
    const known = typeof code === 'string' && Object.prototype.hasOwnProperty.call(ERROR_CODES, code);
    const options_ = options === null || typeof options !== 'object' ? undefined : options;
    if (!known || options_ === undefined) {
      throw new VoicewireError('INVALID_ARGUMENT', !known ? `VoicewireError: unknown code ${typeof code === 'string' ? JSON.stringify(code.slice(0, 64)) : typeof code}` : 'VoicewireError: options must be an object');
    }
    super(typeof message === 'string' ? message : safeString(message), options_.cause === undefined ? undefined : { cause: options_.cause });
    this.name = 'VoicewireError';
    this.code = code;
    const info: ErrorCodeInfo = ERROR_CODES[code];
    this.closeCode = options.closeCode ?? info.closeCode;
    this.details = options.details;
    Object.defineProperty(this, BRAND, { value: true });
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
  }
}

/** True when `value` is a {@link VoicewireError} (from any copy of the package), optionally of `code`. */
export function isVoicewireError(value: unknown, code?: ErrorCode): value is VoicewireError {
  return value instanceof VoicewireError && (code === undefined || value.code === code);
}

/** Wraps anything thrown into a {@link VoicewireError}; a VoicewireError passes through unchanged. */
export function toVoicewireError(value: unknown, code: ErrorCode = 'PROTOCOL_INTERNAL'): VoicewireError {
  if (value instanceof VoicewireError) return value;
  const message = value instanceof Error ? safeString(value.message) : safeString(value);
  return new VoicewireError(code, message, { cause: value });
}

/** `String(value)` that cannot throw (a value whose `toString` is not a function, a null-prototype object). */
function safeString(value: unknown): string {
  try {
    return String(value);
  } catch {
    return value === null || typeof value !== 'object' ? typeof value : 'an object';
  }
}
