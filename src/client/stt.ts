/**
 * STT for the SDK: `stt()` (a whole recording → text and words) and `sttStream()` (write audio as
 * it is captured, read words as they are recognized), over the STT WebSocket (docs/api.md
 * §4.4) or, with `http: true`, POST /post/speech/asr (§4.3) and its NDJSON events.
 *
 * A stream reads `step` predictions through the library's turn-taking (§4.4 "Turn-taking
 * guidance"): when the speaker's turn ends it emits a `turn` event and, unless told not to, sends
 * `delay_in_frames` silent frames at once so the last words arrive without waiting for real time.
 */
import { socketFailure } from './server-error.js';
import { VoicewireError } from '../util/errors.js';
import { describeValue } from '../util/args.js';
import type { AudioFormatName } from '../audio/format.js';
import type { SttJsonConfig } from '../protocol/config.js';
import type { SttSetupMessage, SttStepMessage } from '../protocol/messages.js';
import { ndjsonEvents } from '../text/ndjson.js';
import { createSttClientSession } from '../sessions/client.js';
import { createTurnTaking, type TurnTakingOptions } from '../sessions/turn-taking.js';
import { EventQueue } from './event-queue.js';
import { abortError } from './retry.js';
import type { ClientContext } from './context.js';
import type { Word } from './tts.js';

/** What an STT request sends. */
export interface SttOptions {
  /** Default `wav` (§4.4); `pcm` is 24 kHz s16le. */
  inputFormat?: AudioFormatName;
  /** `en`, `fr`, `de`, `es`, `pt` (sent as `json_config.language`). */
  language?: string;
  /** Other §4.4 `json_config` keys. */
  jsonConfig?: SttJsonConfig;
  modelName?: string;
  /** POST /post/speech/asr instead of the WebSocket (for `stt()`). Default false. */
  http?: boolean;
  /** Bytes per `audio` message when `stt()` sends a whole recording. Default 4096 (as the service's Python client). */
  chunkBytes?: number;
  signal?: AbortSignal;
}

/** Options of a stream. */
export interface SttStreamOptions extends SttOptions {
  /** Turn-taking on `step` messages (default options), or `false` for none. */
  turnTaking?: TurnTakingOptions | false;
  /** On an end of turn, send the model delay's silent frames at once. Default true. */
  silenceFlush?: boolean;
}

/** An event of an STT stream. */
export type SttStreamEvent =
  | { type: 'text'; text: string; start_s: number }
  | { type: 'end_text'; stop_s: number }
  | { type: 'step'; step: SttStepMessage; probability: number | null }
  | { type: 'turn'; step_idx: number; total_duration_s: number };

/** A streaming STT request. */
export interface SttStream extends AsyncIterable<SttStreamEvent> {
  /** Sends audio bytes in the request's input format. */
  write(chunk: Uint8Array): void;
  /** Sends everything a ReadableStream or an async iterable (a Node stream) yields; resolves when it ends. */
  writeFrom(source: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>): Promise<void>;
  /** Resolves when the server has returned the text of all audio written before the flush. */
  flush(): Promise<void>;
  /** No more audio: the iteration ends after the remaining text. */
  end(): void;
}

/** The result of `stt()`. */
export interface SttResult {
  /** The words joined by spaces. */
  text: string;
  words: Word[];
}

function setupOf(options: SttOptions): Omit<SttSetupMessage, 'type'> {
  const setup: Omit<SttSetupMessage, 'type'> = { input_format: options.inputFormat ?? 'wav' };
  const config: Record<string, unknown> = { ...(options.jsonConfig ?? {}) };
  if (options.language !== undefined) config['language'] = options.language;
  if (Object.keys(config).length > 0) setup.json_config = config as SttJsonConfig;
  if (options.modelName !== undefined) setup.model_name = options.modelName;
  return setup;
}

/** Content-Type of POST /post/speech/asr per format (protocol-notes.md); `input_format` names the rest. */
const CONTENT_TYPES: Partial<Record<string, string>> = { wav: 'audio/wav', pcm: 'audio/pcm', opus: 'audio/ogg' };

/** Words from `text` (start) and `end_text` (stop of the previous text) events. */
class WordCollector {
  readonly words: Word[] = [];
  private open = false;

  add(event: SttStreamEvent): void {
    if (event.type === 'text') {
      this.close(event.start_s);
      this.words.push({ text: event.text, start_s: event.start_s, stop_s: event.start_s });
      this.open = true;
    } else if (event.type === 'end_text' && this.open) {
      this.words[this.words.length - 1]!.stop_s = event.stop_s;
      this.open = false;
    } else if (event.type === 'step') {
      this.last = event.step.total_duration_s;
    }
  }

  private last = 0;

  /** A text without its end_text ends where the next begins, or where the audio ends. */
  close(at = this.last): void {
    if (this.open) this.words[this.words.length - 1]!.stop_s = Math.max(at, this.words[this.words.length - 1]!.start_s);
    this.open = false;
  }

  result(): SttResult {
    this.close();
    return { text: this.words.map((w) => w.text).join(' ').replace(/\s+/g, ' ').trim(), words: this.words };
  }
}

/** The STT half of a client. */
export class SttApi {
  constructor(private readonly ctx: ClientContext) {}

  stream(options: SttStreamOptions = {}): SttStream {
    if (options.signal?.aborted) throw abortError(options.signal);
    const queue = new EventQueue<SttStreamEvent>();
    const flushes = new Map<string, { resolve(): void; reject(e: unknown): void }>();
    let nextFlush = 0;
    const turn = options.turnTaking === false ? undefined : createTurnTaking({ ...(options.turnTaking ?? {}), inputFormat: options.inputFormat ?? 'wav' });
    const silenceFlush = options.silenceFlush ?? true;
    const failAll = (error: unknown): void => {
      queue.fail(error);
      for (const f of flushes.values()) f.reject(error);
      flushes.clear();
    };
    let socket: ReturnType<ClientContext['openSocket']> | undefined;
    let ended = false;
    const session = createSttClientSession({
      transport: { send: (t) => socket!.send(t), close: (c, r) => socket!.close(c, r) },
      onEvent: (event) => {
        if (event.type === 'error') return failAll(socketFailure(event.error));
        if (event.type === 'closed') {
          if (!queue.closed) failAll(new VoicewireError('PROTOCOL_CONNECTION_CLOSED', `the socket closed before the end of the request (${event.code})`, { details: { code: event.code, reason: event.reason } }));
          return;
        }
        const m = event.message;
        switch (m.type) {
          case 'ready':
            turn?.ready(m);
            return;
          case 'text':
            queue.push({ type: 'text', text: m.text, start_s: m.start_s });
            return;
          case 'end_text':
            queue.push({ type: 'end_text', stop_s: m.stop_s });
            return;
          case 'step':
          case 'vad': {
            const decision = turn?.step(m);
            queue.push({ type: 'step', step: m, probability: decision?.probability ?? null });
            if (decision?.endOfTurn) {
              queue.push({ type: 'turn', step_idx: m.step_idx, total_duration_s: m.total_duration_s });
              if (silenceFlush && !ended && turn!.delayInFrames !== undefined) {
                for (const frame of turn!.silenceFrames()) session.sendAudio(frame);
              }
            }
            return;
          }
          case 'flushed': {
            const f = flushes.get(String(m.flush_id));
            flushes.delete(String(m.flush_id));
            f?.resolve();
            return;
          }
          case 'end_of_stream':
            queue.end();
            socket?.close(1000, 'done');
            return;
        }
      },
    });
    socket = this.ctx.openSocket('speech/asr', (text) => session.receive(text), (code, reason) => session.transportClosed(code, reason), failAll);
    session.setup(setupOf(options));
    options.signal?.addEventListener(
      'abort',
      () => {
        if (queue.closed) return;
        failAll(abortError(options.signal!));
        socket!.close(1000, 'aborted');
      },
      { once: true },
    );
    const write = (chunk: Uint8Array): void => {
      if (!(chunk instanceof Uint8Array)) throw new VoicewireError('INVALID_ARGUMENT', 'sttStream.write: chunk must be a Uint8Array');
      if (chunk.length > 0) session.sendAudio(chunk);
    };
    return {
      write,
      async writeFrom(source) {
        const readable = typeof (source as ReadableStream<Uint8Array> | undefined)?.getReader === 'function';
        if (!readable && typeof (source as AsyncIterable<Uint8Array> | undefined)?.[Symbol.asyncIterator] !== 'function' && typeof (source as unknown as Iterable<Uint8Array> | undefined)?.[Symbol.iterator] !== 'function') {
          throw new VoicewireError('INVALID_ARGUMENT', `sttStream.writeFrom: source must be a ReadableStream or an (async) iterable of Uint8Array, got ${describeValue(source)}`);
        }
        if (readable) {
          const reader = (source as ReadableStream<Uint8Array>).getReader();
          for (;;) {
            const { done, value } = await reader.read();
            if (done) return;
            write(value);
          }
        }
        for await (const chunk of source as AsyncIterable<Uint8Array>) write(chunk);
      },
      flush() {
        const id = ++nextFlush;
        return new Promise<void>((resolve, reject) => {
          flushes.set(String(id), { resolve, reject });
          try {
            session.flush(id);
          } catch (err) {
            flushes.delete(String(id));
            reject(err);
          }
        });
      },
      end() {
        ended = true;
        session.endOfStream();
      },
      [Symbol.asyncIterator]: () => queue[Symbol.asyncIterator](),
    };
  }

  async transcribe(audio: Uint8Array, options: SttOptions = {}): Promise<SttResult> {
    if (!(audio instanceof Uint8Array)) throw new VoicewireError('INVALID_ARGUMENT', 'stt: audio must be a Uint8Array');
    const words = new WordCollector();
    const events = options.http ? this.overHttp(audio, options) : this.overSocket(audio, options);
    for await (const e of events) words.add(e);
    return words.result();
  }

  private overSocket(audio: Uint8Array, options: SttOptions): AsyncIterable<SttStreamEvent> {
    const stream = this.stream({ ...options, turnTaking: false });
    const size = Math.max(1, Math.floor(options.chunkBytes ?? 4096));
    for (let i = 0; i < audio.length; i += size) stream.write(audio.subarray(i, i + size));
    stream.end();
    return stream;
  }

  private async *overHttp(audio: Uint8Array, options: SttOptions): AsyncGenerator<SttStreamEvent> {
    const query: Record<string, string | undefined> = { input_format: options.inputFormat ?? 'wav' };
    const config = setupOf(options).json_config;
    if (config !== undefined) query['json_config'] = JSON.stringify(config);
    const response = await this.ctx.request('POST', 'post/speech/asr', { query, body: audio as unknown as BodyInit, headers: { 'content-type': CONTENT_TYPES[options.inputFormat ?? 'wav'] ?? 'audio/wav' }, signal: options.signal });
    for await (const line of ndjsonEvents<Record<string, unknown>>(response)) {
      if (line['type'] === 'text') yield { type: 'text', text: String(line['text']), start_s: Number(line['start_s']) };
      else if (line['type'] === 'end_text') yield { type: 'end_text', stop_s: Number(line['stop_s']) };
      else if (line['type'] === 'step') yield { type: 'step', step: line as unknown as SttStepMessage, probability: null };
    }
  }
}
