/**
 * The one-shot HTTP routes (docs/api.md §4.2 POST /post/speech/tts, §4.3 POST /post/speech/asr)
 * over the same session runners as the WebSockets, so a server's HTTP and WebSocket answers agree.
 *
 * STT (`createSttHttpResponse`): the request body is audio; its format comes from the query's
 * `input_format` or else from `Content-Type` (protocol-notes.md: `audio/wav` (the default),
 * `audio/pcm` (24 kHz s16le), `audio/ogg` or `audio/opus`). The response is NDJSON (§4.3). The API
 * does not show the event shapes; voicewire's choice is the WebSocket's server messages, one per
 * line, without `ready`:
 *
 * | line | when |
 * |------|------|
 * | `{"type":"step","vad":[…],"step_idx":n,"step_duration_s":0.08,"total_duration_s":t}` | every 80 ms processed |
 * | `{"type":"text","text":"…","start_s":t}` | a transcribed segment |
 * | `{"type":"end_text","stop_s":t}` | the end of the previous segment |
 * | `{"type":"error","message":"…"}` | a failure after the first line (§7.2); the stream ends |
 * | `{"type":"end_of_stream"}` | last line of a successful response |
 *
 * A failure before the first line throws from the iterator (the server then answers HTTP 500 with
 * {@link restErrorResponse}, §7.1).
 *
 * TTS (`createTtsHttpResponse`): `only_audio: true` yields the raw audio bytes of the output
 * format (a streaming `wav` header first, Ogg pages for `opus`); `only_audio: false` yields NDJSON
 * (voicewire's choice, the API does not show it): `{"type":"audio","audio":"<base64>","start_s",
 * "stop_s","stream_id"}`, word timestamps `{"type":"text","text","start_s","stop_s","stream_id"}`
 * (each after the audio that completes it), `{"type":"error","message"}` on failure after the
 * first line, and `{"type":"end_of_stream"}` last.
 *
 * Both honour the consumer's pace: lines wait in a queue of `highWaterMark` (default 16) and the
 * engine is asked for more only as the consumer reads (the runners' backpressure).
 */
import { objectArg } from '../util/args.js';
import { Fifo } from './fifo.js';
import { VoicewireError, toVoicewireError } from '../util/errors.js';
import type { AudioFormatName } from '../audio/format.js';
import { encodeBase64 } from '../util/base64.js';
import type { SttEngine, TtsEngine } from './engine.js';
import { parseAsrQuery, type QueryInput, type TtsRequestBody } from '../protocol/rest.js';
import {
  createSttServerSession,
  createTtsServerSession,
  defaultTtsOutputEncoder,
  type SttServerSessionOptions,
  type TtsOutputEncoder,
  type TtsServerSessionOptions,
} from './server.js';

// ---------------------------------------------------------------------------------------------
// Content-Type of POST /post/speech/asr
// ---------------------------------------------------------------------------------------------

const CONTENT_TYPES: ReadonlyMap<string, AudioFormatName> = new Map<string, AudioFormatName>([
  ['audio/wav', 'wav'],
  // What Python's mimetypes guesses for `.wav` (`audio/x-wav`), and the other registered names.
  ['audio/x-wav', 'wav'],
  ['audio/wave', 'wav'],
  ['audio/vnd.wave', 'wav'],
  ['audio/pcm', 'pcm'],
  ['audio/ogg', 'opus'],
  ['audio/opus', 'opus'],
]);

/** The media types POST /post/speech/asr reads (see {@link sttInputFormatFromContentType}); the OpenAPI document lists them. */
export const STT_CONTENT_TYPES: readonly string[] = Object.freeze([...CONTENT_TYPES.keys()]);

/**
 * The STT input format POST /post/speech/asr reads from a `Content-Type` (protocol-notes.md):
 * `audio/wav` → `wav` (also when the header is absent or empty; `audio/x-wav`, `audio/wave` and
 * `audio/vnd.wave` too: Python guesses `audio/x-wav` for a `.wav` file), `audio/pcm` → `pcm`
 * (24 kHz s16le on STT input), `audio/ogg` and `audio/opus` → `opus`. Case-insensitive; parameters
 * such as `; codecs=opus` or `; rate=24000` are ignored. Nothing else is accepted.
 *
 * @throws VoicewireError `PROTOCOL_UNSUPPORTED_CONTENT_TYPE` (no close code) whose message is the
 *   plain-text body the service answers, `unsupported content type <value>` ({@link
 *   restErrorResponse} sends it as is, the proxy-level form of §7.1).
 */
export function sttInputFormatFromContentType(contentType?: string | null): AudioFormatName {
  if (contentType === undefined || contentType === null) return 'wav';
  if (typeof contentType !== 'string') {
    throw new VoicewireError('INVALID_ARGUMENT', `sttInputFormatFromContentType: expected a string, got ${typeof contentType}`);
  }
  const semi = contentType.indexOf(';');
  const media = (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
  if (media === '') return 'wav';
  const format = CONTENT_TYPES.get(media);
  if (format === undefined) {
    throw new VoicewireError('PROTOCOL_UNSUPPORTED_CONTENT_TYPE', `unsupported content type ${contentType.trim()}`, { details: { contentType } });
  }
  return format;
}

// ---------------------------------------------------------------------------------------------
// A bounded queue between the session (producer) and the HTTP body (consumer)
// ---------------------------------------------------------------------------------------------

/** A body chunk (`stop_s`: the end of the audio it carries), or the error that ends the body. */
type Item<T> = { value: T; stop_s?: number } | { error: VoicewireError; line: T | null };

class BodyQueue<T> {
  private readonly items = new Fifo<Item<T>>();
  private done = false;
  private consumer: (() => void) | null = null;
  private readonly producers: Array<() => void> = [];

  constructor(private readonly highWaterMark: number) {}

  /** Queues an item; a promise while the queue is full (the session's backpressure). */
  push(item: Item<T>): Promise<void> | undefined {
    if (this.done) return undefined;
    this.items.push(item);
    this.wakeConsumer();
    if (this.items.length < this.highWaterMark) return undefined;
    return new Promise<void>((resolve) => this.producers.push(resolve));
  }

  end(): void {
    this.done = true;
    this.wakeConsumer();
    this.wakeProducers();
  }

  private wakeConsumer(): void {
    const c = this.consumer;
    this.consumer = null;
    c?.();
  }

  private wakeProducers(): void {
    for (const p of this.producers.splice(0)) p();
  }

  async next(): Promise<Item<T> | null> {
    for (;;) {
      const item = this.items.shift();
      if (item !== undefined) {
        if (this.items.length < this.highWaterMark) this.wakeProducers();
        return item;
      }
      if (this.done) return null;
      await new Promise<void>((resolve) => (this.consumer = resolve));
    }
  }
}

/**
 * Yields the queue's items; an error item ends the body (thrown when nothing was yielded yet).
 * `taken(stop_s)`: the consumer asked for more after a chunk carrying audio up to `stop_s` (it
 * was written).
 */
async function* drain<T>(queue: BodyQueue<T>, stop: () => void, taken?: (stopS: number) => void): AsyncGenerator<T, void, undefined> {
  let yielded = false;
  try {
    for (;;) {
      const item = await queue.next();
      if (item === null) return;
      if ('error' in item) {
        if (!yielded || item.line === null) throw item.error;
        yield item.line;
        return;
      }
      yielded = true;
      yield item.value;
      if (item.stop_s !== undefined) taken?.(item.stop_s);
    }
  } finally {
    stop();
  }
}

function sessionError(message: { message?: unknown; code?: unknown }): VoicewireError {
  const text = typeof message.message === 'string' ? message.message : 'error';
  return new VoicewireError('PROTOCOL_SERVER_ERROR', text, typeof message.code === 'number' ? { closeCode: message.code } : {});
}

function errorLine(error: VoicewireError): string {
  return JSON.stringify({ type: 'error', message: error.message }) + '\n';
}

// ---------------------------------------------------------------------------------------------
// STT
// ---------------------------------------------------------------------------------------------

/** Options of {@link createSttHttpResponse}. */
export interface SttHttpOptions {
  engine: SttEngine;
  /** The request body: audio bytes in any chunking. */
  body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>;
  /** The request's `Content-Type` (used when the query has no `input_format`). Default `audio/wav`. */
  contentType?: string | null;
  /** The query (§4.3): `model`, `input_format`, `json_config`. Default none. */
  query?: QueryInput;
  /** Decoder factory, as {@link SttServerSessionOptions.createInputDecoder}. */
  createInputDecoder?: SttServerSessionOptions['createInputDecoder'];
  /** Lines queued before the engine waits for the consumer. Default 16. */
  highWaterMark?: number;
}

/**
 * Answers POST /post/speech/asr (§4.3): runs the body through an STT server session and yields
 * NDJSON lines (each ending in `\n`; see the module comment for the shapes).
 *
 * @example
 * // Node http: validate first (422 / plain-text errors), then stream
 * let lines;
 * try { lines = createSttHttpResponse({ engine, body: req, contentType: req.headers['content-type'], query }); }
 * catch (err) { const r = restErrorResponse(err); res.writeHead(r.status, { 'content-type': r.contentType }).end(r.body); return; }
 * res.writeHead(200, { 'content-type': 'application/x-ndjson' });
 * for await (const line of lines) if (!res.write(line)) await once(res, 'drain');
 * res.end();
 *
 * @throws VoicewireError at once (before any line): `VALIDATION_FAILED` for a bad query (422),
 *   `PROTOCOL_UNSUPPORTED_CONTENT_TYPE` (plain text). The iterator throws a `PROTOCOL_SERVER_ERROR`
 *   (with the session's close code) when the session fails before the first line.
 */
export function createSttHttpResponse(options: SttHttpOptions): AsyncIterable<string> {
  objectArg(options, 'createSttHttpResponse: options');
  objectArg(options.engine, 'createSttHttpResponse: options.engine');
  const query = parseAsrQuery(options.query ?? {});
  const inputFormat = query.input_format ?? sttInputFormatFromContentType(options.contentType);
  const queue = new BodyQueue<string>(options.highWaterMark ?? 16);
  const sessionOptions: SttServerSessionOptions = {
    engine: options.engine,
    transport: {
      send: (text) => {
        const m = JSON.parse(text) as { type: string; message?: unknown; code?: unknown };
        if (m.type === 'ready') return undefined;
        if (m.type === 'error') {
          const error = sessionError(m);
          return queue.push({ error, line: errorLine(error) });
        }
        return queue.push({ value: text + '\n' });
      },
      close: () => queue.end(),
    },
  };
  if (options.createInputDecoder !== undefined) sessionOptions.createInputDecoder = options.createInputDecoder;
  const session = createSttServerSession(sessionOptions);
  const setup: Record<string, unknown> = { type: 'setup', model_name: query.model, input_format: inputFormat };
  if (query.json_config !== null) setup['json_config'] = query.json_config;

  const pump = async (): Promise<void> => {
    session.receive(setup);
    try {
      for await (const chunk of options.body) {
        if (session.closed) return;
        if (chunk.byteLength === 0) continue;
        session.receive({ type: 'audio', audio: encodeBase64(chunk) });
        // One body chunk at a time: the engine (and through it the consumer) sets the pace.
        await session.whenIdle();
      }
    } catch (err) {
      // The upload broke off: the request cannot finish.
      session.fail(new VoicewireError('PROTOCOL_CONNECTION_CLOSED', `STT: the request body failed: ${toVoicewireError(err).message}`, { cause: err, closeCode: 1011 }));
      return;
    }
    if (!session.closed) session.receive({ type: 'end_of_stream' });
  };
  return {
    [Symbol.asyncIterator]() {
      void pump();
      return drain(queue, () => {
        if (!session.closed) session.transportClosed();
        queue.end();
      });
    },
  };
}

// ---------------------------------------------------------------------------------------------
// TTS
// ---------------------------------------------------------------------------------------------

/** Options of {@link createTtsHttpResponse}. */
export interface TtsHttpOptions {
  engine: TtsEngine;
  /** The validated body ({@link validateTtsRequestBody}). */
  body: TtsRequestBody;
  /** Encoder factory, as {@link TtsServerSessionOptions.createOutputEncoder}. */
  createOutputEncoder?: TtsServerSessionOptions['createOutputEncoder'];
  /** Options of the tag parser. */
  tags?: TtsServerSessionOptions['tags'];
  /** Items queued before the engine waits for the consumer. Default 16. */
  highWaterMark?: number;
  /**
   * Called when the consumer asks for the next chunk after one carrying audio, with the end of
   * that audio (`stop_s`, seconds from the start of the request): it was taken (a server: written
   * to the socket), so a server can bill what was delivered. Default none.
   */
  onAudioTaken?: (stopS: number) => void;
}

const UTF8 = new TextDecoder();

/**
 * Answers POST /post/speech/tts (§4.2) through a TTS server session: with `only_audio` the raw
 * audio bytes (Uint8Array chunks, one per model frame), else NDJSON lines (strings; see the module
 * comment). A failure after the first chunk: an error line (NDJSON), or the iterator throws (raw
 * audio: the server can only abort the response). Before the first chunk the iterator throws.
 */
export function createTtsHttpResponse(options: TtsHttpOptions): AsyncIterable<Uint8Array | string> {
  objectArg(options, 'createTtsHttpResponse: options');
  objectArg(options.engine, 'createTtsHttpResponse: options.engine');
  objectArg(options.body, 'createTtsHttpResponse: options.body');
  const body = options.body;
  const queue = new BodyQueue<Uint8Array | string>(options.highWaterMark ?? 16);
  const makeEncoder = options.createOutputEncoder ?? defaultTtsOutputEncoder;
  let fullAfterAudio: Promise<void> | undefined;
  // Raw audio: take the encoder's bytes as they are (no base64 round trip through the message).
  const createOutputEncoder = (format: AudioFormatName, rate: number): TtsOutputEncoder => {
    const inner = makeEncoder(format, rate);
    if (!body.only_audio) return inner;
    const capture = <C extends { bytes: Uint8Array; stop_s: number }>(chunk: C): C => {
      // The runner sends this chunk's `audio` message next: that send hands back this wait.
      if (chunk.bytes.byteLength > 0) fullAfterAudio = queue.push({ value: chunk.bytes, stop_s: chunk.stop_s });
      return chunk;
    };
    const enc: TtsOutputEncoder = { push: (pcm) => capture(inner.push(pcm)) };
    if (inner.end) enc.end = () => capture(inner.end!());
    return enc;
  };
  const sessionOptions: TtsServerSessionOptions = {
    engine: options.engine,
    createOutputEncoder,
    transport: {
      send: (text) => {
        const m = JSON.parse(text) as { type: string; message?: unknown; code?: unknown; stop_s?: unknown };
        if (m.type === 'error') {
          const error = sessionError(m);
          return queue.push({ error, line: body.only_audio ? null : errorLine(error) });
        }
        if (body.only_audio) {
          if (m.type !== 'audio') return undefined;
          const wait = fullAfterAudio;
          fullAfterAudio = undefined;
          return wait;
        }
        if (m.type === 'ready' || m.type === 'need_more_text') return undefined;
        if (m.type === 'audio' && typeof m.stop_s === 'number') return queue.push({ value: text + '\n', stop_s: m.stop_s });
        return queue.push({ value: text + '\n' });
      },
      // Audio lines come as their bytes with what they deliver (issue 34): no JSON.parse of each
      // frame's base64 to learn its type (~0.1 ms of CPU per second of audio).
      // Raw audio is the encoder's bytes (captured above): the audio line would go unread.
      audioLines: !body.only_audio,
      sendAudio: (line, span) => {
        if (!body.only_audio) return queue.push({ value: UTF8.decode(line) + '\n', stop_s: span.stop_s });
        const wait = fullAfterAudio;
        fullAfterAudio = undefined;
        return wait;
      },
      close: () => queue.end(),
    },
  };
  if (options.tags !== undefined) sessionOptions.tags = options.tags;
  const session = createTtsServerSession(sessionOptions);
  const setup: Record<string, unknown> = { type: 'setup', model_name: body.model_name, output_format: body.output_format, json_config: body.json_config };
  const voice = body.voice_id ?? body.voice;
  if (voice !== null) setup['voice_id'] = voice;
  if (body.pronunciation_id !== undefined) setup['pronunciation_id'] = body.pronunciation_id;
  return {
    [Symbol.asyncIterator]() {
      session.receive(setup);
      session.receive({ type: 'text', text: body.text });
      session.receive({ type: 'end_of_stream' });
      return drain(
        queue,
        () => {
          if (!session.closed) session.transportClosed();
          queue.end();
        },
        options.onAudioTaken,
      );
    },
  };
}
