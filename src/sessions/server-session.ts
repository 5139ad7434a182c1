/**
 * What a server session runner is to its caller: the transport it writes to (with its
 * backpressure), the running session it hands back, and the options both runners share.
 * server.ts has the overview; stt-server-session.ts and tts-server-session.ts the runners.
 */
import type { RawMessage } from '../protocol/parse.js';
import type { VoicewireError } from '../util/errors.js';
import type { DEFAULT_MAX_REQUESTS_PER_SOCKET, ServerSessionNotice } from './multiplex.js';

/**
 * Where a server session writes: one text frame per message, and the close.
 *
 * Backpressure: `send` may report that the socket is full. Return a promise that settles once the
 * frame is written (e.g. wrap `ws.send(text, cb)`), or `false` when the buffer is full together
 * with {@link ServerTransport.drained}. While sends are pending the runner asks its engine streams
 * for nothing more (each engine call and each tag event waits), so a TTS engine faster than real
 * time cannot fill the socket buffer without bound: at most the messages of one engine call are in
 * flight beyond the transport's own buffer. A rejected promise means the socket broke. Returning
 * nothing (or `true`) means "keep going".
 */
export interface ServerTransport {
  /**
   * Sends one text frame. Meaningful results: a promise (pending until written), `false` (full: wait
   * for {@link drained}); anything else (`undefined`, `true`, or what `array.push` returns in a test)
   * means "keep going". Typed `unknown` so that `(t) => ws.send(t)` and `(t) => out.push(t)` fit.
   */
  send(text: string): unknown;
  /**
   * Optional (issue 34): sends a TTS `audio` message given as the UTF-8 bytes of its text frame,
   * written once into one buffer (src/protocol/audio-line.ts), where `send` would take its string.
   * `span` says what the line delivers (its request and the end of its audio), so that nobody
   * parses the line again. Results as {@link send}'s. Without it, `audio` lines go to `send`.
   */
  sendAudio?(line: Uint8Array, span: AudioLineSpan): unknown;
  /**
   * False where the transport takes the audio another way and never reads the line (POST
   * `only_audio` writes the output encoder's bytes): `sendAudio` then gets {@link NO_AUDIO_LINE},
   * so no line is built (its base64 and JSON: ~0.17 ms of CPU per second of 48 kHz audio, issue
   * 34). Default true.
   */
  audioLines?: boolean;
  close(code: number, reason: string): void;
  /** After `send` returned `false`: resolves once the transport takes frames again. Without it, `false` is ignored. */
  drained?(): Promise<void>;
  /**
   * Stop delivering client frames (e.g. ws's `socket.pause()`): the runner calls it when the input
   * queued before the engine passes its bound ({@link ServerSessionOptions.maxQueuedBytes},
   * {@link ServerSessionOptions.maxQueuedMessages}), so the peer is held back by TCP flow control.
   * Frames already on their way may still arrive. Without it, a request that passes the bound
   * fails with `PROTOCOL_QUEUE_FULL`.
   */
  pauseReading?(): void;
  /** Deliver client frames again (ws's `socket.resume()`): called once the queue is down to half its bound. */
  resumeReading?(): void;
}

/** What a TTS `audio` line handed to {@link ServerTransport.sendAudio} delivers. */
export interface AudioLineSpan {
  /** The request's `client_req_id`, null without one. */
  readonly clientReqId: string | null;
  /** The line's `stop_s`: the end of the audio it completes, s from the request's start. */
  readonly stop_s: number;
}

const UTF8 = new TextDecoder();

/** The empty line {@link ServerTransport.sendAudio} gets from a transport that takes no audio lines ({@link ServerTransport.audioLines} false). */
export const NO_AUDIO_LINE: Uint8Array = new Uint8Array(0);

/** Sends an `audio` line through `transport`: as its bytes where it takes them ({@link ServerTransport.sendAudio}), else as its string. */
export function sendAudioLine(transport: ServerTransport, line: Uint8Array, span: AudioLineSpan): unknown {
  return transport.sendAudio !== undefined ? transport.sendAudio(line, span) : transport.send(UTF8.decode(line));
}

/** A running server session over one socket. */
export interface ServerSession<S> {
  /** A frame from the client (text, its bytes, or a parsed value). */
  receive(data: RawMessage): void;
  /** The socket closed (by the peer or the network): engine streams are closed, nothing more is sent. */
  transportClosed(): void;
  /**
   * Ends a request or the whole session with an error the server decided on (authentication
   * revoked mid-stream, quota, shutdown): sends `error` with the error's close code (1011 when it
   * has none) and closes the socket with it. With the `clientReqId` of a live request on a
   * multiplexed socket (§4.4), only that request ends (its `error` carries the id) and the others
   * go on; an id with no live request there is ignored. Without an id on a socket that is not
   * multiplexed, the error goes to its single request (carrying that request's id, if any).
   */
  fail(error: VoicewireError, clientReqId?: string): void;
  /** The machine state (immutable snapshots). */
  readonly state: S;
  /** True once the session closed the socket or saw it close. */
  readonly closed: boolean;
  /** Resolves once no engine work is pending (every request stream idle). */
  whenIdle(): Promise<void>;
}

/** Options shared by both server runners. */
export interface ServerSessionOptions {
  transport: ServerTransport;
  /** Makes the `request_id` of each `ready`. Default `crypto.randomUUID()` (a counter where there is no `crypto`). */
  requestId?: () => string;
  /** Lifecycle notices (request started/ended, session closed), for logs and metrics. */
  onEvent?: (notice: ServerSessionNotice) => void;
  /**
   * Most requests live at once on the socket (§4.4 multiplexing); a setup beyond it is answered
   * with `error` `PROTOCOL_TOO_MANY_REQUESTS` for its id. Default 256
   * ({@link DEFAULT_MAX_REQUESTS_PER_SOCKET}).
   */
  maxRequests?: number;
  /**
   * Most bytes of client input (decoded base64 audio, UTF-16 text) queued before the engine, over
   * all requests of the socket. Past it the runner pauses reading ({@link ServerTransport.pauseReading})
   * until the queue is down to half; a transport that cannot pause, or input beyond twice the
   * bound while paused, fails the request that passed it with `PROTOCOL_QUEUE_FULL` (1011).
   * Default 4 MiB ({@link DEFAULT_MAX_QUEUED_BYTES}).
   */
  maxQueuedBytes?: number;
  /** Most client messages (audio, text, flush, end) queued before the engine; as {@link maxQueuedBytes}. Default 4096 ({@link DEFAULT_MAX_QUEUED_MESSAGES}). */
  maxQueuedMessages?: number;
}

/** Default of {@link ServerSessionOptions.maxQueuedBytes}: 4 MiB. */
export const DEFAULT_MAX_QUEUED_BYTES = 4 << 20;
/** Default of {@link ServerSessionOptions.maxQueuedMessages}. */
export const DEFAULT_MAX_QUEUED_MESSAGES = 4096;
