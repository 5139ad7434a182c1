/**
 * `STT` for LiveKit Agents over the service's STT WebSocket (docs/api.md §4.4): frames at any rate
 * go down to 24 kHz mono `pcm` through voicewire's resampler; words come back as interim
 * transcripts (the turn so far), and the service's `step` predictions drive the speech events —
 * START_OF_SPEECH when the shortest horizon says someone speaks (or at the first word),
 * END_OF_SPEECH when the library's turn-taking (sessions/turn-taking.ts) says the turn ended. At
 * that point the stream sends `flush`: the server pushes the model delay's silence behind it
 * (protocol-notes.md "STT"), so its `flushed` means every word of the turn is in, and the
 * FINAL_TRANSCRIPT goes out, then END_OF_SPEECH. Every stream of one `STT` is a request on the
 * instance's one multiplexed socket.
 */
import type { APIConnectOptions } from '@livekit/agents';
import type { AudioFrame } from '@livekit/rtc-node';
import type { SttJsonConfig } from '../protocol/config.js';
import type { SttServerMessage, SttSetupMessage } from '../protocol/messages.js';
import { createSttClientSession, type SttClientSession } from '../sessions/client.js';
import type { SttClientEvent } from '../sessions/stt-session.js';
import { createTurnTaking, type TurnTakingOptions } from '../sessions/turn-taking.js';
import { agents } from './agents.js';
import { connectionContext, type ConnectionOptions } from './connection.js';
import { FrameResampler } from './frames.js';
import { runRequest } from './request.js';
import { SharedSocket } from './shared-socket.js';

/** Options of {@link STT}. */
export interface STTOptions extends ConnectionOptions {
  /** `en`, `fr`, `de`, `es` or `pt` (sent as `json_config.language`). Default `en`. */
  language?: string;
  /** Default: the service's `default` model. */
  modelName?: string;
  /** Other §4.4 `json_config` keys. */
  jsonConfig?: SttJsonConfig;
  /**
   * The end-of-turn decision on `step` messages (threshold default 0.5 on the 2 s horizon, as
   * §4.4's guidance; smoothing, warm-up): see `createTurnTaking`.
   */
  turnTaking?: Pick<TurnTakingOptions, 'threshold' | 'horizonIndex' | 'smoothing' | 'warmupSteps'>;
  /** Speech has started when the shortest horizon's `inactivity_prob` is below this. Default 0.5. */
  speechThreshold?: number;
  /** Connection options of `recognize()` (streams take theirs from `stream()`). Default LiveKit's. */
  connOptions?: APIConnectOptions;
}

type SpeechEvent = import('@livekit/agents').stt.SpeechEvent;
type SpeechData = import('@livekit/agents').stt.SpeechData;
type Socket = SharedSocket<SttClientSession, SttClientEvent>;

/** What a request sends: audio bytes, flushes, the end. */
interface AudioSink {
  audio(bytes: Uint8Array): void;
  flush(flushId: number): void;
  end(): void;
}

/** Where a request's audio comes from: `attach` starts sending; its result detaches. */
type AudioSource = (sink: AudioSink) => () => void;

/** One word heard: its text and times (seconds from the request's start). */
interface HeardWord {
  text: string;
  start: number;
  end: number;
}

/** A LiveKit STT over the voice service's streaming STT WebSocket. */
export class STT extends agents.stt.STT {
  override label = 'voicewire.STT';
  readonly #socket: Socket;
  readonly #setup: Omit<SttSetupMessage, 'type'>;
  readonly #modelName: string;
  readonly #language: string;
  readonly #turnTaking: STTOptions['turnTaking'];
  readonly #speechThreshold: number;
  readonly #connOptions: APIConnectOptions;

  /**
   * @param options `baseUrl` (ending in `/api`) and `apiKey` (default `VOICEWIRE_API_KEY`) are
   *   required; `language` defaults to `en`.
   * @throws VoicewireError `INVALID_ARGUMENT` for a missing key or a bad URL.
   */
  constructor(options: STTOptions) {
    super({ streaming: true, interimResults: true, alignedTranscript: 'word' });
    const ctx = connectionContext(options, 'voicewire STT');
    this.#socket = new SharedSocket(ctx, 'speech/asr', createSttClientSession, 'stt');
    this.#language = options.language ?? 'en';
    const setup: Omit<SttSetupMessage, 'type'> = { input_format: 'pcm', json_config: { ...(options.jsonConfig ?? {}), language: this.#language } as SttJsonConfig };
    if (options.modelName !== undefined) setup.model_name = options.modelName;
    this.#setup = setup;
    this.#modelName = options.modelName ?? 'default';
    this.#turnTaking = options.turnTaking;
    this.#speechThreshold = options.speechThreshold ?? 0.5;
    this.#connOptions = options.connOptions ?? agents.DEFAULT_API_CONNECT_OPTIONS;
    // Checked now, so that bad options fail here and not in the middle of a call.
    createTurnTaking({ ...(this.#turnTaking ?? {}), inputFormat: 'pcm' });
  }

  override get model(): string {
    return this.#modelName;
  }

  override get provider(): string {
    return 'voicewire';
  }

  /** A stream: `pushFrame` frames at any rate, read speech events. */
  stream(options?: { connOptions?: APIConnectOptions }): SpeechStream {
    return new SpeechStream(this, options?.connOptions);
  }

  /** Closes the shared socket (its open streams fail with `APIConnectionError`). */
  override async close(): Promise<void> {
    this.#socket.close();
  }

  /** Open requests on the shared socket (for tests). @internal */
  get _openRequests(): number {
    return this.#socket.size;
  }

  /** @internal */
  get _language(): string {
    return this.#language;
  }

  /** @internal */
  get _speechThreshold(): number {
    return this.#speechThreshold;
  }

  /** A new turn-taking detector with this instance's options. @internal */
  _turnTaking(): ReturnType<typeof createTurnTaking> {
    return createTurnTaking({ ...(this.#turnTaking ?? {}), inputFormat: 'pcm' });
  }

  /** A whole recording → one FINAL_TRANSCRIPT, retried on connection failures per `connOptions`. */
  protected override async _recognize(buffer: AudioFrame | AudioFrame[], abortSignal?: AbortSignal): Promise<SpeechEvent> {
    const frames = Array.isArray(buffer) ? buffer : [buffer];
    const resampler = new FrameResampler();
    const pcm: Uint8Array[] = [];
    for (const f of frames) pcm.push(...resampler.push(f));
    pcm.push(...resampler.flush());
    const signal = abortSignal ?? new AbortController().signal;
    for (let attempt = 0; ; attempt++) {
      const words: HeardWord[] = [];
      let requestId = '';
      try {
        await this._runRequest(
          (sink) => {
            for (const chunk of pcm) sink.audio(chunk);
            sink.end();
            return () => {};
          },
          (m) => {
            if (m.type === 'ready') requestId = m.request_id;
            else collectWord(words, m);
          },
          this.#connOptions,
          signal,
        );
        const data = speechData(words, this.#language, 0);
        return { type: agents.stt.SpeechEventType.FINAL_TRANSCRIPT, requestId, alternatives: [data] };
      } catch (error) {
        const retryable = agents.isAPIError(error) && error.retryable && attempt < this.#connOptions.maxRetry;
        if (!retryable) throw error;
        await new Promise((r) => setTimeout(r, agents.intervalForRetry(this.#connOptions, attempt)));
      }
    }
  }

  /**
   * One attempt: a request on the shared socket, audio from `source`, messages to `onMessage`.
   * Resolves at the request's `end_of_stream` (or when `signal` aborts); rejects with a LiveKit
   * API error.
   * @internal
   */
  async _runRequest(source: AudioSource, onMessage: (m: SttServerMessage, sink: AudioSink) => void, connOptions: APIConnectOptions, signal: AbortSignal): Promise<void> {
    let sink: AudioSink | undefined;
    await runRequest(this.#socket, {
      what: 'STT setup',
      connOptions,
      signal,
      start: (handle, over) => {
        const { id, session } = handle;
        // After `end_of_stream` went out the request takes nothing more (the machine would refuse
        // it with INVALID_STATE): a turn that ends while the last audio is processed needs no
        // flush, the end itself brings its words.
        let endSent = false;
        sink = {
          audio: (bytes) => {
            if (!over() && !endSent && bytes.length > 0) session.sendAudio(bytes, id);
          },
          flush: (flushId) => {
            if (!over() && !endSent) session.flush(flushId, id);
          },
          end: () => {
            if (over() || endSent) return;
            endSent = true;
            session.endOfStream(id);
          },
        };
        session.setup({ ...this.#setup, client_req_id: id, close_ws_on_eos: false });
        return source(sink);
      },
      onMessage: (event) => onMessage(event.message, sink!),
    });
  }
}

/** Adds a `text` (a new word) or an `end_text` (the previous word's stop) to `words`. */
function collectWord(words: HeardWord[], m: SttServerMessage): boolean {
  if (m.type === 'text') {
    words.push({ text: m.text, start: m.start_s, end: m.start_s });
    return true;
  }
  if (m.type === 'end_text' && words.length > 0) words[words.length - 1]!.end = Math.max(words[words.length - 1]!.start, m.stop_s);
  return false;
}

/** LiveKit's SpeechData of some words; times shifted by the stream's `offset` (its reconnects). */
function speechData(words: readonly HeardWord[], language: string, offset: number): SpeechData {
  return {
    language: agents.asLanguageCode(language),
    text: words.map((w) => w.text).join(' ').replace(/\s+/g, ' ').trim(),
    startTime: (words[0]?.start ?? 0) + offset,
    endTime: (words.at(-1)?.end ?? 0) + offset,
    confidence: 1,
    words: words.map((w) => agents.createTimedString({ text: w.text, startTime: w.start + offset, endTime: w.end + offset })),
  };
}

/** A streaming recognition: frames in, speech events out, one request per stream. */
export class SpeechStream extends agents.stt.SpeechStream {
  override label = 'voicewire.SpeechStream';
  readonly #stt: STT;
  readonly #connOptions: APIConnectOptions;
  #sink: AudioSink | undefined;
  #reader: Promise<void> | undefined;
  #inputEnded = false;
  #nextFlush = 0;
  readonly #resampler = new FrameResampler();

  constructor(stt: STT, connOptions?: APIConnectOptions) {
    // No sample rate: voicewire's resampler takes any rate here, rather than the base class's.
    super(stt, undefined, connOptions);
    this.#stt = stt;
    this.#connOptions = connOptions ?? agents.DEFAULT_API_CONNECT_OPTIONS;
  }

  /** Reads the input once for all attempts; audio between attempts (a reconnect) is dropped. */
  #read(): Promise<void> {
    return (this.#reader ??= (async () => {
      for await (const item of this.input) {
        if (item === SpeechStream.FLUSH_SENTINEL) {
          for (const b of this.#resampler.flush()) this.#sink?.audio(b);
          this.#sink?.flush(++this.#nextFlush);
          continue;
        }
        for (const b of this.#resampler.push(item)) this.#sink?.audio(b);
      }
      for (const b of this.#resampler.flush()) this.#sink?.audio(b);
      this.#inputEnded = true;
      this.#sink?.end();
    })());
  }

  protected override async run(): Promise<void> {
    void this.#read().catch(() => {});
    const turn = this.#stt._turnTaking();
    const language = this.#stt._language;
    const speechThreshold = this.#stt._speechThreshold;
    const offset = this.startTimeOffset;
    let requestId = '';
    let words: HeardWord[] = [];
    let speaking = false;
    /** The flush of an ended turn, whose `flushed` releases the final transcript. */
    let turnFlush: number | undefined;
    let usageFrom = 0;
    let audioSeconds = 0;
    const put = (event: SpeechEvent): void => {
      if (!this.queue.closed) this.queue.put(event);
    };
    const startSpeech = (): void => {
      if (speaking) return;
      speaking = true;
      put({ type: agents.stt.SpeechEventType.START_OF_SPEECH, requestId });
    };
    const finish = (): void => {
      turnFlush = undefined;
      const data = speechData(words, language, offset);
      if (words.length > 0) {
        if (!speaking) startSpeech();
        put({ type: agents.stt.SpeechEventType.FINAL_TRANSCRIPT, requestId, alternatives: [data] });
      }
      if (speaking) put({ type: agents.stt.SpeechEventType.END_OF_SPEECH, requestId, alternatives: [data] });
      if (audioSeconds > usageFrom) put({ type: agents.stt.SpeechEventType.RECOGNITION_USAGE, requestId, recognitionUsage: { audioDuration: audioSeconds - usageFrom } });
      usageFrom = audioSeconds;
      words = [];
      speaking = false;
    };
    await this.#stt._runRequest(
      (sink) => {
        this.#sink = sink;
        if (this.#inputEnded) sink.end();
        return () => {
          if (this.#sink === sink) this.#sink = undefined;
        };
      },
      (m, sink) => {
        switch (m.type) {
          case 'ready':
            requestId = m.request_id;
            turn.ready(m);
            return;
          case 'text':
            // Words before the turn's `flushed` belong to that turn (the audio before the flush).
            if (!speaking) startSpeech();
            collectWord(words, m);
            put({ type: agents.stt.SpeechEventType.INTERIM_TRANSCRIPT, requestId, alternatives: [speechData(words, language, offset)] });
            return;
          case 'end_text':
            collectWord(words, m);
            return;
          case 'step':
          case 'vad': {
            audioSeconds = m.total_duration_s;
            const decision = turn.step(m);
            if (turnFlush !== undefined) return;
            const now = m.vad[0]?.inactivity_prob;
            if (!speaking && typeof now === 'number' && now < speechThreshold) startSpeech();
            else if (speaking && decision.endOfTurn) {
              turnFlush = ++this.#nextFlush;
              sink.flush(turnFlush);
            }
            return;
          }
          case 'flushed':
            // The turn's flush, or the application's: every word before it is in.
            if (turnFlush === undefined || String(m.flush_id) === String(turnFlush) || Number(m.flush_id) > turnFlush) finish();
            return;
          case 'end_of_stream':
            finish();
            return;
        }
      },
      this.#connOptions,
      this.abortSignal,
    );
  }
}


