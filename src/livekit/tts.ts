/**
 * `TTS` for LiveKit Agents over the service's TTS WebSocket (docs/api.md §4.5): the LLM's text goes
 * out as it comes (the SDK's client session cuts it at word boundaries and never inside a tag), a
 * `flush()` becomes the protocol's `<flush>` (audio for everything so far, now), and the audio
 * comes back as `AudioFrame`s the moment each `audio` message arrives, with the service's word
 * timestamps as LiveKit's aligned transcripts (`TimedString`, seconds from the request's start).
 * Every stream of one `TTS` is a request on the instance's one multiplexed socket.
 */
import type { APIConnectOptions, TimedString } from '@livekit/agents';
import type { AudioFrame } from '@livekit/rtc-node';
import { VoicewireError } from '../util/errors.js';
import { decodeBase64 } from '../util/base64.js';
import type { TtsJsonConfig } from '../protocol/config.js';
import type { TtsSetupMessage } from '../protocol/messages.js';
import { createTtsClientSession, type TtsClientSession } from '../sessions/client.js';
import type { TtsClientEvent } from '../sessions/tts-session.js';
import { agents } from './agents.js';
import { connectionContext, type ConnectionOptions } from './connection.js';
import { PcmFramer } from './frames.js';
import { runRequest } from './request.js';
import { SharedSocket } from './shared-socket.js';

/** Rates of the `pcm` output formats (docs/api.md §4.2): 48000 is `pcm`, the others `pcm_N`. */
export const TTS_SAMPLE_RATES = [8000, 16000, 22050, 24000, 44100, 48000] as const;
/** An output rate of {@link TTS_SAMPLE_RATES}. */
export type TtsSampleRate = (typeof TTS_SAMPLE_RATES)[number];

/** Options of {@link TTS}. */
export interface TTSOptions extends ConnectionOptions {
  /** A voice `uid` (GET /voices/). Default: the service's default voice. */
  voiceId?: string;
  /** Rate of the frames, Hz (the service resamples its 48 kHz output). Default 48000, a room's rate. */
  sampleRate?: TtsSampleRate;
  /** Default: the service's `default` model. */
  modelName?: string;
  /** A pronunciation dictionary `uid`. */
  pronunciationId?: string;
  /** §2.8 settings (`padding_bonus`, `temp`, `cfg_coef`, `rewrite_rules`). */
  jsonConfig?: TtsJsonConfig;
  /**
   * How long the newest frame is held for the word timestamps that come right after it, ms, so
   * that the last frame of a request can carry `final: true`. Default 30.
   */
  holdMs?: number;
}

type SynthesizedAudio = import('@livekit/agents').tts.SynthesizedAudio;
type Socket = SharedSocket<TtsClientSession, TtsClientEvent>;

/** Where a request's text comes from: `attach` starts sending; its result detaches. */
type TextSource = (send: (text: string) => void, end: () => void) => () => void;

/** What a stream gives its request: where frames go, its connection options, its abort signal. */
interface RequestSink {
  put(audio: SynthesizedAudio): void;
  connOptions: APIConnectOptions;
  signal: AbortSignal;
  onFirstText(): void;
}

/** Frames go out one behind, so that the last one can be marked `final` and carry late words. */
class HeldFrame {
  private held: AudioFrame | undefined;
  private words: TimedString[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly put: (frame: AudioFrame, final: boolean, words: TimedString[] | undefined) => void,
    private readonly holdMs: number,
  ) {}

  word(word: TimedString): void {
    this.words.push(word);
  }

  frame(frame: AudioFrame): void {
    this.release(false);
    this.held = frame;
    this.timer = setTimeout(() => this.release(false), this.holdMs);
  }

  release(final: boolean): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const frame = this.held;
    if (frame === undefined) return;
    this.held = undefined;
    const words = this.words.length > 0 ? this.words : undefined;
    this.words = [];
    this.put(frame, final, words);
  }
}

/** A LiveKit TTS over the voice service's streaming TTS WebSocket. */
export class TTS extends agents.tts.TTS {
  override label = 'voicewire.TTS';
  readonly #socket: Socket;
  readonly #setup: Omit<TtsSetupMessage, 'type'>;
  readonly #modelName: string;
  readonly #holdMs: number;

  /**
   * @param options `baseUrl` (ending in `/api`) and `apiKey` (default `VOICEWIRE_API_KEY`) are
   *   required; `voiceId`, `sampleRate` (default 48000) and the rest are optional.
   * @throws VoicewireError `INVALID_ARGUMENT` for a missing key, a bad URL or rate.
   */
  constructor(options: TTSOptions) {
    const rate = options?.sampleRate ?? 48000;
    if (!(TTS_SAMPLE_RATES as readonly number[]).includes(rate)) throw new VoicewireError('INVALID_ARGUMENT', `voicewire TTS: sampleRate must be one of ${TTS_SAMPLE_RATES.join(', ')}, got ${String(rate)}`);
    super(rate, 1, { streaming: true, alignedTranscript: true });
    const ctx = connectionContext(options, 'voicewire TTS');
    this.#socket = new SharedSocket(ctx, 'speech/tts', createTtsClientSession, 'tts');
    const setup: Omit<TtsSetupMessage, 'type'> = { output_format: rate === 48000 ? 'pcm' : (`pcm_${rate}` as NonNullable<TtsSetupMessage['output_format']>) };
    if (options.voiceId !== undefined) setup.voice_id = options.voiceId;
    if (options.modelName !== undefined) setup.model_name = options.modelName;
    if (options.pronunciationId !== undefined) setup.pronunciation_id = options.pronunciationId;
    if (options.jsonConfig !== undefined) setup.json_config = options.jsonConfig;
    this.#setup = setup;
    this.#modelName = options.modelName ?? 'default';
    this.#holdMs = options.holdMs ?? 30;
  }

  override get model(): string {
    return this.#modelName;
  }

  override get provider(): string {
    return 'voicewire';
  }

  /** Synthesizes a whole text (one request on the shared socket). */
  synthesize(text: string, connOptions?: APIConnectOptions, abortSignal?: AbortSignal): ChunkedStream {
    return new ChunkedStream(this, text, connOptions, abortSignal);
  }

  /** A stream: `pushText` the LLM's text as it comes, `flush()` for `<flush>`, `endInput()` at the end. */
  stream(options?: { connOptions?: APIConnectOptions }): SynthesizeStream {
    return new SynthesizeStream(this, options?.connOptions);
  }

  /** Closes the shared socket (its open streams fail with `APIConnectionError`). */
  override async close(): Promise<void> {
    this.#socket.close();
  }

  /** Open requests on the shared socket (for tests). @internal */
  get _openRequests(): number {
    return this.#socket.size;
  }

  /**
   * One attempt: a request on the shared socket, text from `source`, frames to `sink`. Resolves at
   * the request's `end_of_stream`; rejects with a LiveKit API error.
   * @internal
   */
  async _runRequest(source: TextSource, sink: RequestSink): Promise<void> {
    let requestId = '';
    const framer = new PcmFramer(this.sampleRate);
    const held = new HeldFrame((frame, final, words) => {
      const audio: SynthesizedAudio = { requestId, segmentId: requestId, frame, final };
      if (words !== undefined) audio.timedTranscripts = words;
      sink.put(audio);
    }, this.#holdMs);
    try {
      await runRequest(this.#socket, {
        what: 'TTS setup',
        connOptions: sink.connOptions,
        signal: sink.signal,
        start: (handle, over) => {
          requestId = handle.id;
          handle.session.setup({ ...this.#setup, client_req_id: handle.id, close_ws_on_eos: false });
          let first = true;
          return source(
            (text) => {
              if (over()) return;
              if (first) sink.onFirstText();
              first = false;
              handle.session.sendText(text, handle.id);
            },
            () => {
              if (!over()) handle.session.endOfStream(handle.id);
            },
          );
        },
        onMessage: (event) => {
          const m = event.message;
          switch (m.type) {
            case 'ready':
              if (m.request_id) requestId = m.request_id;
              return;
            case 'audio': {
              const frame = framer.push(event.audio ?? decodeBase64(m.audio));
              if (frame !== undefined) held.frame(frame);
              return;
            }
            case 'text':
              held.word(agents.createTimedString({ text: `${m.text} `, startTime: m.start_s ?? 0, endTime: m.stop_s ?? m.start_s ?? 0 }));
              return;
            case 'end_of_stream':
              held.release(true);
              return;
          }
        },
      });
    } finally {
      held.release(false);
    }
  }
}

/** The text of a stream, kept until the first audio so a failed connection can be retried. */
class TextLog {
  private readonly pieces: string[] = [];
  private ended = false;
  private replayable = true;
  private sink: { send(text: string): void; end(): void } | undefined;

  add(text: string): void {
    if (this.replayable) this.pieces.push(text);
    this.sink?.send(text);
  }

  end(): void {
    this.ended = true;
    this.sink?.end();
  }

  /** The request got audio: a retry would repeat it, so the log is no longer needed. */
  noReplay(): void {
    this.replayable = false;
    this.pieces.length = 0;
  }

  attach: TextSource = (send, end) => {
    const sink = { send, end };
    this.sink = sink;
    for (const p of this.pieces) send(p);
    if (this.ended) end();
    return () => {
      if (this.sink === sink) this.sink = undefined;
    };
  };
}

/** A streaming synthesis: LLM text in, frames with aligned words out, one request per stream. */
export class SynthesizeStream extends agents.tts.SynthesizeStream {
  override label = 'voicewire.SynthesizeStream';
  readonly #tts: TTS;
  readonly #log = new TextLog();
  #reader: Promise<void> | undefined;

  constructor(tts: TTS, connOptions?: APIConnectOptions) {
    super(tts, connOptions);
    this.#tts = tts;
  }

  /** Reads the stream's input once for all attempts: text, `<flush>` for a flush, the end. */
  #read(): Promise<void> {
    return (this.#reader ??= (async () => {
      // A flush is the protocol's <flush> tag; the SDK's chunker sends it after the text before it.
      for await (const item of this.input) this.#log.add(item === SynthesizeStream.FLUSH_SENTINEL ? ' <flush> ' : item);
      this.#log.end();
    })());
  }

  protected override async run(): Promise<void> {
    void this.#read().catch(() => {});
    await this.#tts._runRequest(this.#log.attach, {
      put: (audio) => {
        this.#log.noReplay();
        if (!this.queue.closed) this.queue.put(audio);
      },
      connOptions: this.connOptions,
      signal: this.abortSignal,
      onFirstText: () => this.markStarted(),
    });
    if (!this.queue.closed) this.queue.put(SynthesizeStream.END_OF_STREAM);
  }
}

/** A whole text synthesized as one request; frames come as the server sends them. */
export class ChunkedStream extends agents.tts.ChunkedStream {
  override label = 'voicewire.ChunkedStream';
  readonly #tts: TTS;
  readonly #connOptions: APIConnectOptions;

  constructor(tts: TTS, text: string, connOptions?: APIConnectOptions, abortSignal?: AbortSignal) {
    super(text, tts, connOptions, abortSignal);
    this.#tts = tts;
    this.#connOptions = connOptions ?? agents.DEFAULT_API_CONNECT_OPTIONS;
  }

  protected override async run(): Promise<void> {
    const text = this.inputText;
    await this.#tts._runRequest(
      (send, end) => {
        send(text);
        end();
        return () => {};
      },
      {
        put: (audio) => {
          if (!this.queue.closed) this.queue.put(audio);
        },
        connOptions: this.#connOptions,
        signal: this.abortSignal,
        onFirstText: () => {},
      },
    );
  }
}
