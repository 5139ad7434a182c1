/**
 * Every WebSocket message of the streaming STT (docs/api.md §4.4) and TTS (§4.5) routes, both
 * directions, as discriminated unions on `type`. Field names are the wire names (snake_case), so
 * a parsed message serializes back to the same JSON.
 *
 * `client_req_id` appears on every message that can belong to a multiplexed request (§4.4
 * "Multiplexing", protocol-notes.md "TTS WebSocket"): absent on a socket that carries a single
 * request.
 */
import { objectArg } from '../util/args.js';
import type { AudioFormatName } from '../audio/format.js';
import type { SttJsonConfig, TtsJsonConfig } from './config.js';

/** The id a client gives a multiplexed request (§4.4 `client_req_id`). */
export type ClientReqId = string;

/** A `flush_id`: an integer from most clients, a string from some; echoed back as received. */
export type FlushId = number | string;

/** Fields every message that can belong to a multiplexed request carries. */
export interface MultiplexedFields {
  /** The request this message belongs to; absent on a single-request socket. */
  client_req_id?: ClientReqId;
}

// ---------------------------------------------------------------------------------------------
// Shared by both routes
// ---------------------------------------------------------------------------------------------

/** `end_of_stream`, both directions (§6): the client is done sending; the server is done answering. */
export interface EndOfStreamMessage extends MultiplexedFields {
  type: 'end_of_stream';
}

/**
 * `error`, server to client (§7.3): `code` is the WebSocket close code (1008 policy violation,
 * 1011 internal error). The socket closes after it, except on a multiplexed socket where an error
 * that names a `client_req_id` ends only that request. `code` is optional when parsing because the
 * NDJSON form (§7.2) has none; servers built on voicewire always send it.
 */
export interface ErrorMessage extends MultiplexedFields {
  type: 'error';
  message: string;
  code?: number;
}

// ---------------------------------------------------------------------------------------------
// STT, client to server (§4.4 "Client messages")
// ---------------------------------------------------------------------------------------------

/** STT `setup`, which must be the first message (§3.2). */
export interface SttSetupMessage extends MultiplexedFields {
  type: 'setup';
  /** Default `default`. */
  model_name?: string;
  /** Default `wav`; one of the STT input formats (§4.4). */
  input_format?: AudioFormatName;
  /** Advanced settings; a string form is parsed and validated into this object. */
  json_config?: SttJsonConfig;
  /** Default true: the socket closes after `end_of_stream`. false keeps it open (§3.2). */
  close_ws_on_eos?: boolean;
  /** Setup retry window in seconds. */
  retry_for_s?: number;
}

/** STT `audio`: a base64 chunk in the setup's `input_format`. */
export interface SttAudioMessage extends MultiplexedFields {
  type: 'audio';
  audio: string;
}

/** STT `flush`: answered by `flushed` with the same id once the audio before it is transcribed. */
export interface SttFlushMessage extends MultiplexedFields {
  type: 'flush';
  flush_id: FlushId;
}

/** Every STT client message. */
export type SttClientMessage = SttSetupMessage | SttAudioMessage | SttFlushMessage | EndOfStreamMessage;

// ---------------------------------------------------------------------------------------------
// STT, server to client (§4.4 "Server messages")
// ---------------------------------------------------------------------------------------------

/**
 * STT `ready`, the reply to `setup`. Servers send `delay_in_frames`; some deployments name it
 * `delay_in_tokens` (protocol-notes.md), so parsing accepts either (at least one is present);
 * read it with {@link readyDelayInFrames}.
 */
export interface SttReadyMessage extends MultiplexedFields {
  type: 'ready';
  request_id: string;
  model_name: string;
  /** Typically 24000. */
  sample_rate: number;
  /** Samples per model step, typically 1920 (80 ms at 24 kHz). */
  frame_size: number;
  /** Model delay in 80 ms frames. */
  delay_in_frames?: number;
  /** Older name of `delay_in_frames`. */
  delay_in_tokens?: number;
  text_stream_names?: string[];
}

/** STT `text`: a transcribed segment starting at `start_s`. */
export interface SttTextMessage extends MultiplexedFields {
  type: 'text';
  text: string;
  start_s: number;
  stream_id?: number | null;
}

/** STT `end_text`: the stop time of the previous segment, known late (just before the next one). */
export interface SttEndTextMessage extends MultiplexedFields {
  type: 'end_text';
  stop_s: number;
  stream_id?: number | null;
}

/** One turn-taking prediction: the probability that speech has ended by `horizon_s`. */
export interface VadPrediction {
  horizon_s: number;
  inactivity_prob: number;
}

/** STT `step` (legacy type name `vad`): one per 80 ms frame processed. */
export interface SttStepMessage extends MultiplexedFields {
  type: 'step' | 'vad';
  vad: VadPrediction[];
  step_idx: number;
  /** Usually 0.08. */
  step_duration_s: number;
  /** Audio processed so far, in seconds. */
  total_duration_s: number;
}

/** STT `flushed`: the `flush_id` of the `flush` it answers, exactly as the client sent it. */
export interface SttFlushedMessage extends MultiplexedFields {
  type: 'flushed';
  flush_id: FlushId;
}

/** Every STT server message. */
export type SttServerMessage =
  | SttReadyMessage
  | SttTextMessage
  | SttEndTextMessage
  | SttStepMessage
  | SttFlushedMessage
  | EndOfStreamMessage
  | ErrorMessage;

// ---------------------------------------------------------------------------------------------
// TTS, client to server (§4.5, protocol-notes.md "TTS WebSocket, message shapes")
// ---------------------------------------------------------------------------------------------

/** TTS `setup`, first on the socket (and first for each multiplexed request). */
export interface TtsSetupMessage extends MultiplexedFields {
  type: 'setup';
  /** Default `default`. */
  model_name?: string;
  /** Voice identifier (§2.1 `uid`). The server picks its default voice when absent. */
  voice_id?: string;
  /** Default `wav`; any name of §4.2 (§4.5 says "same values as 4.2"). */
  output_format?: AudioFormatName;
  /** Pronunciation dictionary uid (§2.4). */
  pronunciation_id?: string;
  /** Advanced settings (§2.8); a string form is parsed and validated into this object. */
  json_config?: TtsJsonConfig;
  /** Default true; false enables multiplexing / several requests per socket. */
  close_ws_on_eos?: boolean;
}

/** TTS `text`, client to server: a piece of text (may hold `<flush>` and `<break>` tags). */
export interface TtsTextMessage extends MultiplexedFields {
  type: 'text';
  text: string;
}

/** Every TTS client message. */
export type TtsClientMessage = TtsSetupMessage | TtsTextMessage | EndOfStreamMessage;

// ---------------------------------------------------------------------------------------------
// TTS, server to client
// ---------------------------------------------------------------------------------------------

/** TTS `ready`, the reply to `setup`. */
export interface TtsReadyMessage extends MultiplexedFields {
  type: 'ready';
  request_id: string;
  model_name: string;
  /** Model rate, 48000. */
  sample_rate: number;
  /** Samples per model frame, 3840 (80 ms at 48 kHz). */
  frame_size: number;
  audio_stream_names?: string[];
  text_stream_names?: string[];
}

/**
 * TTS `audio`: a base64 chunk in the setup's `output_format`, covering `start_s`..`stop_s` of the
 * request's audio. §4.5 only promises `audio` (and `client_req_id`), so the times are optional
 * when parsing; voicewire servers always send them.
 */
export interface TtsAudioMessage extends MultiplexedFields {
  type: 'audio';
  audio: string;
  start_s?: number;
  stop_s?: number;
  stream_id?: number | null;
}

/** TTS `text`, server to client: one word and when it is spoken (on the 80 ms grid). */
export interface TtsWordMessage extends MultiplexedFields {
  type: 'text';
  text: string;
  start_s: number;
  stop_s: number;
  stream_id?: number | null;
}

/** TTS `need_more_text`: the model waits for look-ahead words before it can go on. */
export interface TtsNeedMoreTextMessage extends MultiplexedFields {
  type: 'need_more_text';
}

/** Every TTS server message. */
export type TtsServerMessage =
  | TtsReadyMessage
  | TtsAudioMessage
  | TtsWordMessage
  | TtsNeedMoreTextMessage
  | EndOfStreamMessage
  | ErrorMessage;

/** Any message of either route, either direction. */
export type ProtocolMessage = SttClientMessage | SttServerMessage | TtsClientMessage | TtsServerMessage;

/**
 * The model delay a `ready` announces, in 80 ms frames: `delay_in_frames`, else `delay_in_tokens`
 * (protocol-notes.md: some servers use the older name), else `undefined`.
 */
export function readyDelayInFrames(ready: { delay_in_frames?: number; delay_in_tokens?: number }): number | undefined {
  objectArg(ready, 'readyDelayInFrames: ready');
  return ready.delay_in_frames ?? ready.delay_in_tokens;
}
