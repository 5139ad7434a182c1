/**
 * TTS for the SDK: `tts()` (whole text → audio and word timestamps) and `ttsStream()` (write LLM
 * tokens, read audio as it comes), over the TTS WebSocket (docs/api.md §4.5) or, with
 * `http: true`, POST /post/speech/tts (§4.2) as NDJSON events.
 *
 * Streams run the library's TTS client session: text is cut at word boundaries and never inside a
 * tag (protocol-notes.md: a `<break>` split across messages is read aloud). With `multiplex: true`
 * streams share one socket, each with its own `client_req_id`.
 */
import { socketFailure } from './server-error.js';
import { VoicewireError } from '../util/errors.js';
import { decodeBase64 } from '../util/base64.js';
import { concatChunks } from '../util/bytes.js';
import { parseAudioFormat, type AudioFormatName } from '../audio/format.js';
import type { TtsJsonConfig } from '../protocol/config.js';
import type { TtsSetupMessage } from '../protocol/messages.js';
import { ndjsonEvents } from '../text/ndjson.js';
import { createTtsClientSession, type TtsClientSession } from '../sessions/client.js';
import type { TtsClientEvent } from '../sessions/tts-session.js';
import { EventQueue } from './event-queue.js';
import { openClientSocket } from './socket.js';
import { abortError } from './retry.js';
import type { ClientContext } from './context.js';

/** One word and when it is spoken, seconds from the start of the request. */
export interface Word {
  text: string;
  start_s: number;
  stop_s: number;
}

/** What a TTS request asks for. */
export interface TtsOptions {
  /** The whole text (for `tts()`); a stream gets its text through `write()`. */
  text?: string;
  /** A voice `uid` (GET /voices/). Default: the server's default voice. */
  voiceId?: string;
  /** Default `wav`. */
  outputFormat?: AudioFormatName;
  /** §2.8 settings (`padding_bonus`, `temp`, `cfg_coef`, `rewrite_rules`). */
  jsonConfig?: TtsJsonConfig;
  /** A pronunciation dictionary `uid`. */
  pronunciationId?: string;
  modelName?: string;
  /** Share one socket with the client's other multiplexed TTS streams. Default false. */
  multiplex?: boolean;
  /** POST /post/speech/tts instead of the WebSocket (for `tts()`). Default false. */
  http?: boolean;
  /** Cancels the request: its stream on a multiplexed socket, the socket otherwise. */
  signal?: AbortSignal;
}

/** An event of a TTS stream: audio as it comes, and each word once its timing is known. */
export type TtsStreamEvent = { type: 'audio'; audio: Uint8Array; start_s: number; stop_s: number } | { type: 'word'; word: Word };

/** The result of `tts()`. */
export interface TtsResult {
  /** The audio in the requested format (a `wav` carries exact sizes). */
  audio: Uint8Array;
  sampleRate: number;
  words: Word[];
}

/** A streaming TTS request. */
export interface TtsStream extends AsyncIterable<TtsStreamEvent> {
  /** Sends text (any piece: LLM tokens, words, tags). */
  write(text: string): void;
  /** No more text: held-back text goes out, then `end_of_stream`. */
  end(): void;
  /** The request's `client_req_id` on a multiplexed socket. */
  readonly clientReqId: string | undefined;
}

function setupOf(options: TtsOptions): Omit<TtsSetupMessage, 'type'> {
  const setup: Omit<TtsSetupMessage, 'type'> = { output_format: options.outputFormat ?? 'wav' };
  if (options.voiceId !== undefined) setup.voice_id = options.voiceId;
  if (options.pronunciationId !== undefined) setup.pronunciation_id = options.pronunciationId;
  if (options.jsonConfig !== undefined) setup.json_config = options.jsonConfig;
  if (options.modelName !== undefined) setup.model_name = options.modelName;
  return setup;
}

/** Routes the events of one request into its queue; true when the request is over. */
function deliver(queue: EventQueue<TtsStreamEvent>, event: TtsClientEvent): boolean {
  if (event.type === 'error') {
    queue.fail(socketFailure(event.error));
    return true;
  }
  if (event.type === 'closed') {
    queue.fail(new VoicewireError('PROTOCOL_CONNECTION_CLOSED', `the socket closed before the end of the request (${event.code}${event.reason ? ` ${event.reason}` : ''})`, { details: { code: event.code, reason: event.reason } }));
    return true;
  }
  const m = event.message;
  if (m.type === 'audio') {
    queue.push({ type: 'audio', audio: event.audio ?? decodeBase64(m.audio), start_s: m.start_s ?? 0, stop_s: m.stop_s ?? 0 });
  } else if (m.type === 'text') {
    queue.push({ type: 'word', word: { text: m.text, start_s: m.start_s ?? 0, stop_s: m.stop_s ?? m.start_s ?? 0 } });
  } else if (m.type === 'end_of_stream') {
    queue.end();
    return true;
  }
  return false;
}

/** One shared socket for multiplexed TTS streams. */
class TtsMux {
  private session: TtsClientSession | undefined;
  private socket: ReturnType<typeof openClientSocket> | undefined;
  private readonly streams = new Map<string, EventQueue<TtsStreamEvent>>();
  private next = 0;

  constructor(private readonly ctx: ClientContext) {}

  private ensure(): TtsClientSession {
    if (this.session !== undefined) return this.session;
    const session = createTtsClientSession({
      transport: { send: (t) => this.socket!.send(t), close: (c, r) => this.socket!.close(c, r) },
      onEvent: (event) => {
        if (event.type === 'closed') {
          for (const q of this.streams.values()) deliver(q, event);
          this.streams.clear();
          this.session = undefined;
          return;
        }
        const id = event.clientReqId;
        if (id === undefined) {
          // A socket-level error ends every request on it.
          if (event.type === 'error') for (const q of this.streams.values()) q.fail(socketFailure(event.error));
          return;
        }
        const q = this.streams.get(id);
        if (q !== undefined && deliver(q, event)) this.streams.delete(id);
      },
    });
    this.socket = this.ctx.openSocket(
      'speech/tts',
      (text) => session.receive(text),
      (code, reason) => session.transportClosed(code, reason),
      (error) => {
        for (const q of this.streams.values()) q.fail(error);
      },
    );
    this.session = session;
    return session;
  }

  open(options: TtsOptions): TtsStream {
    const session = this.ensure();
    const id = `r${++this.next}`;
    const queue = new EventQueue<TtsStreamEvent>();
    this.streams.set(id, queue);
    session.setup({ ...setupOf(options), client_req_id: id, close_ws_on_eos: false });
    options.signal?.addEventListener(
      'abort',
      () => {
        if (queue.closed) return;
        try {
          session.abandon(id);
        } catch {
          // the request already ended
        }
        this.streams.delete(id);
        queue.fail(abortError(options.signal!));
      },
      { once: true },
    );
    return {
      clientReqId: id,
      write: (text) => session.sendText(text, id),
      end: () => session.endOfStream(id),
      [Symbol.asyncIterator]: () => queue[Symbol.asyncIterator](),
    };
  }

  close(): void {
    this.socket?.close(1000, 'client closed');
  }
}

/** A TTS stream on a socket of its own (closed by the server after `end_of_stream`). */
function openSingle(ctx: ClientContext, options: TtsOptions): TtsStream {
  const queue = new EventQueue<TtsStreamEvent>();
  let socket: ReturnType<typeof openClientSocket> | undefined;
  const session = createTtsClientSession({
    transport: { send: (t) => socket!.send(t), close: (c, r) => socket!.close(c, r) },
    onEvent: (event) => {
      if (deliver(queue, event) && event.type !== 'closed') socket?.close(1000, 'done');
    },
  });
  socket = ctx.openSocket('speech/tts', (text) => session.receive(text), (code, reason) => session.transportClosed(code, reason), (error) => queue.fail(error));
  session.setup(setupOf(options));
  options.signal?.addEventListener(
    'abort',
    () => {
      if (queue.closed) return;
      queue.fail(abortError(options.signal!));
      socket!.close(1000, 'aborted');
    },
    { once: true },
  );
  return {
    clientReqId: undefined,
    write: (text) => session.sendText(text),
    end: () => session.endOfStream(),
    [Symbol.asyncIterator]: () => queue[Symbol.asyncIterator](),
  };
}

/** The TTS half of a client. */
export class TtsApi {
  private mux: TtsMux | undefined;

  constructor(private readonly ctx: ClientContext) {}

  stream(options: TtsOptions = {}): TtsStream {
    if (options.signal?.aborted) throw abortError(options.signal);
    if (options.multiplex) return (this.mux ??= new TtsMux(this.ctx)).open(options);
    return openSingle(this.ctx, options);
  }

  async synthesize(options: TtsOptions): Promise<TtsResult> {
    if (typeof options?.text !== 'string') throw new VoicewireError('INVALID_ARGUMENT', 'tts: text must be a string');
    const format = options.outputFormat ?? 'wav';
    const sampleRate = parseAudioFormat(format, { direction: 'tts-output' }).sampleRate ?? 48000;
    const events = options.http ? this.overHttp(options) : this.overSocket(options);
    const chunks: Uint8Array[] = [];
    const words: Word[] = [];
    for await (const e of events) {
      if (e.type === 'audio') chunks.push(e.audio);
      else words.push(e.word);
    }
    const audio = concatChunks(chunks, (n) => new Uint8Array(n));
    if (format === 'wav') patchStreamingWavSizes(audio);
    return { audio, sampleRate, words };
  }

  private overSocket(options: TtsOptions): AsyncIterable<TtsStreamEvent> {
    const stream = this.stream(options);
    stream.write(options.text!);
    stream.end();
    return stream;
  }

  private async *overHttp(options: TtsOptions): AsyncGenerator<TtsStreamEvent> {
    const body: Record<string, unknown> = { text: options.text, output_format: options.outputFormat ?? 'wav', only_audio: false };
    if (options.voiceId !== undefined) body['voice_id'] = options.voiceId;
    if (options.jsonConfig !== undefined) body['json_config'] = options.jsonConfig;
    if (options.modelName !== undefined) body['model_name'] = options.modelName;
    if (options.pronunciationId !== undefined) body['pronunciation_id'] = options.pronunciationId;
    const response = await this.ctx.request('POST', 'post/speech/tts', { json: body, signal: options.signal, tokenAllowed: true });
    for await (const line of ndjsonEvents<Record<string, unknown>>(response)) {
      if (line['type'] === 'audio' && typeof line['audio'] === 'string') {
        yield { type: 'audio', audio: decodeBase64(line['audio']), start_s: Number(line['start_s'] ?? 0), stop_s: Number(line['stop_s'] ?? 0) };
      } else if (line['type'] === 'text' && typeof line['text'] === 'string') {
        yield { type: 'word', word: { text: line['text'], start_s: Number(line['start_s'] ?? 0), stop_s: Number(line['stop_s'] ?? 0) } };
      } else if (line['type'] === 'end_of_stream') {
        return;
      }
    }
  }

  close(): void {
    this.mux?.close();
  }
}

/**
 * A WAV streamed over the socket starts with the streaming header (sizes 0xFFFFFFFF,
 * protocol-notes.md); once the whole file is here its sizes are known: write them.
 */
function patchStreamingWavSizes(wav: Uint8Array): void {
  if (wav.length < 44 || wav[0] !== 0x52 || wav[1] !== 0x49 || wav[2] !== 0x46 || wav[3] !== 0x46) return;
  const view = new DataView(wav.buffer, wav.byteOffset, wav.byteLength);
  // The 44-byte canonical header voicewire's encoder writes: "data" at 36, its size at 40.
  if (view.getUint32(36, false) !== 0x64617461) return;
  view.setUint32(4, wav.length - 8, true);
  view.setUint32(40, wav.length - 44, true);
}
