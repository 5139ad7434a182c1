/**
 * The TTS WebSocket session (docs/api.md §4.5, protocol-notes.md "TTS WebSocket") as pure
 * machines, server side and client side.
 *
 * Server, per request:
 *
 * | State      | Event                 | Next        | Effects |
 * |------------|-----------------------|-------------|---------|
 * | connected  | `setup`               | configured  | engine `open`; `ready` once the engine opened |
 * | connected  | anything else         | closed      | `error` 1008, close 1008 |
 * | configured | `text`                | streaming   | engine `text` (pieces joined with one space, then split by the tag parser) |
 * | streaming  | engine audio / word   | streaming   | `audio` (encoded by the runner, stamped with the encoded chunk's `start_s`/`stop_s`), `text` word timestamps (held by the runner until the audio completing them is sent), `need_more_text` |
 * | streaming  | `end_of_stream`       | finished    | engine `end`: remaining audio, the encoder's tail, held words, then `end_of_stream` |
 * | finished   | engine ended          | closed / configured | close 1000 (`close_ws_on_eos` true) or stay open |
 * | any        | failure               | closed      | `error`, close |
 *
 * Audio encoding stays out of the machine: it emits model frames (`audio` effects, Int16Array at
 * the model rate) and the runner encodes them to the setup's `output_format`.
 */
import { VoicewireError } from '../util/errors.js';
import { isAudioFormatName, parseAudioFormat, type AudioFormatName } from '../audio/format.js';
import { decodeBase64 } from '../util/base64.js';
import type { TtsEngineConfig, TtsEngineEvent, TtsEngineInfo } from './engine.js';
import type { TtsClientMessage, TtsServerMessage, TtsSetupMessage, TtsWordMessage } from '../protocol/messages.js';
import {
  createClientSessionMachine,
  createServerSessionMachine,
  type ClientBaseEffect,
  type ClientRequestMachine,
  type ClientSessionEvent,
  type ClientSessionState,
  type RequestKey,
  type RequestStep,
  type ServerBaseEffect,
  type ServerRequestMachine,
  type ServerSessionEvent,
  type ServerSessionState,
  type SessionMachine,
} from './multiplex.js';
import { parseTtsClientMessage, parseTtsServerMessage } from '../protocol/parse.js';
import { textJoiner, unfinishedTag } from '../text/tags.js';
import {
  clientProtocolError as protocolError,
  defineClientRequestMachine,
  defineServerRequestMachine,
  endRequest,
  refuse as refuseFor,
  setupWhileActive,
  unexpectedMessage,
  withId,
} from './request-machines.js';

// ---------------------------------------------------------------------------------------------
// Server side
// ---------------------------------------------------------------------------------------------

/** What the TTS server machine asks the engine side of the runner to do, per request stream. */
export type TtsEngineOp =
  /** Create the output encoder and the tag parser, open an engine stream, report `opened`. */
  | { op: 'open'; config: TtsEngineConfig }
  /** Feed text through the tag parser; call `text`, `flush`, `pause` on the stream. */
  | { op: 'text'; text: string }
  /** Flush the tag parser, call `end()`, report `ended`. */
  | { op: 'end' }
  /** Close the stream now; drop queued work. */
  | { op: 'close' };

/** Engine events as the TTS machine sees them: the model's events plus the runner's barriers. */
export type TtsMachineEngineEvent =
  | TtsEngineEvent
  | { type: 'opened'; requestId: string; info: TtsEngineInfo }
  /** A `<flush>` returned from the engine: the audio of all text so far was emitted. */
  | { type: 'flushed' }
  | { type: 'ended' };

/** An audio frame to encode and send (the transport's job: it knows the output format). */
export interface TtsAudioEffect {
  type: 'audio';
  key: RequestKey;
  stream: number;
  /** Model frame, s16 mono at the model rate (48 kHz). */
  pcm: Int16Array;
  /**
   * The model frame's span (samples sent so far / model rate). The runner stamps the `audio`
   * message with the span its encoder reports for the encoded chunk instead (resampler and Opus
   * delays shift it); these are the values for an encoder that adds no delay.
   */
  start_s: number;
  stop_s: number;
  stream_id: number | null;
}

/**
 * A word timestamp to send (issue 7: word timestamps stay aligned with the audio). The runner holds
 * it until the `audio` message whose `stop_s` reaches the word's `stop_s` has been sent (after
 * resampling and Opus pre-skip that is often the chunk after the word's model frame), so a client
 * never sees a word before the audio that completes it; {@link TtsAudioEndEffect} releases the rest.
 */
export interface TtsWordEffect {
  type: 'word';
  key: RequestKey;
  stream: number;
  /** The `text` message, times in seconds from the start of the request (the engine's, on its 80 ms grid). */
  message: TtsWordMessage;
}

/** The end of a request's audio: the runner sends what the encoder still holds (e.g. the Ogg EOS page), then every held word. */
export interface TtsAudioEndEffect {
  type: 'audio_end';
  key: RequestKey;
  stream: number;
  /** Where the audio ended, in seconds (the times of a trailing `audio` message). */
  at_s: number;
}

/**
 * A `<flush>` is through the engine: the runner sends what its encoder holds back for whole
 * chunks (not the resampler's look-ahead), so the audio of the text before the flush goes out now.
 */
export interface TtsAudioDrainEffect {
  type: 'audio_drain';
  key: RequestKey;
  stream: number;
}

/** Effects of the TTS server machine. */
export type TtsServerEffect =
  | ServerBaseEffect<TtsServerMessage>
  | { type: 'engine'; key: RequestKey; stream: number; op: TtsEngineOp }
  | TtsAudioEffect
  | TtsWordEffect
  | TtsAudioEndEffect
  | TtsAudioDrainEffect;

/** State of one TTS request on the server. */
export interface TtsServerRequestState {
  readonly key: RequestKey;
  readonly phase: 'configured' | 'streaming' | 'finished' | 'closed';
  readonly setup: TtsSetupMessage;
  readonly stream: number;
  readonly idle: boolean;
  readonly readySent: boolean;
  readonly info: TtsEngineInfo | null;
  /** Samples of audio sent in the current request (its timing state). */
  readonly samples: number;
  /** Text pieces received in the current request (pieces after the first get a joining space). */
  readonly pieces: number;
  /** The unfinished tag the text so far ends in (`<br`), `''` when none: no joining space inside it. */
  readonly tagTail: string;
}

/** State of a TTS server socket. */
export type TtsServerState = ServerSessionState<TtsServerRequestState>;
/** Events of a TTS server socket. */
export type TtsServerEvent = ServerSessionEvent<TtsMachineEngineEvent>;

type Step = RequestStep<TtsServerRequestState, TtsServerEffect>;

function engineConfig(setup: TtsSetupMessage, key: RequestKey): TtsEngineConfig {
  const config: TtsEngineConfig = {
    modelName: setup.model_name ?? 'default',
    outputFormat: (setup.output_format ?? 'wav') as AudioFormatName,
    jsonConfig: setup.json_config ?? {},
  };
  if (setup.voice_id !== undefined) config.voiceId = setup.voice_id;
  if (setup.pronunciation_id !== undefined) config.pronunciationId = setup.pronunciation_id;
  if (key !== null) config.clientReqId = key;
  return config;
}

function open(state: TtsServerRequestState, stream: number, effects: TtsServerEffect[]): TtsServerRequestState {
  effects.push({ type: 'engine', key: state.key, stream, op: { op: 'open', config: engineConfig(state.setup, state.key) } });
  return { ...state, stream, idle: false, info: null, samples: 0, pieces: 0, tagTail: '' };
}

/** The sample rate of a TTS `output_format` (`wav` when absent), or undefined for a name that is not one. */
function outputRate(format: string | undefined): number | undefined {
  const name = format ?? 'wav';
  return isAudioFormatName(name) ? (parseAudioFormat(name).sampleRate ?? undefined) : undefined;
}

function unexpected(state: TtsServerRequestState, what: string): Step {
  return unexpectedMessage('TTS', state, what);
}

function ended(state: TtsServerRequestState, effects: TtsServerEffect[]): Step {
  if (!state.idle) {
    const rate = state.info?.sampleRate ?? 48000;
    effects.push({ type: 'audio_end', key: state.key, stream: state.stream, at_s: state.samples / rate });
  }
  return endRequest(state, effects, (s) => ({ ...s, phase: 'configured', idle: true, samples: 0, pieces: 0, tagTail: '' }));
}

function onClient(state: TtsServerRequestState, message: Exclude<TtsClientMessage, { type: 'end_of_stream' }>, nextStream: number): Step {
  const effects: TtsServerEffect[] = [];
  switch (message.type) {
    case 'setup': {
      if (!state.idle) return setupWhileActive('TTS', state);
      return { state: open({ ...state, setup: message, readySent: false, phase: 'configured' }, nextStream, effects), effects, usedStream: true };
    }
    case 'text': {
      if (state.phase === 'finished') return unexpected(state, "'text' after end_of_stream");
      // The first message after end_of_stream (close_ws_on_eos false) opens a new engine stream.
      const usedStream = state.idle;
      const next = usedStream ? open(state, nextStream, effects) : state;
      if (message.text === '') return { state: { ...next, phase: 'streaming' }, effects, usedStream };
      // protocol-notes.md: consecutive text messages are joined with one space, except inside a
      // tag split across them (`"<br"` + `"eak …"`): the tag parser holds the unfinished tag back.
      const text = (next.pieces > 0 ? textJoiner(next.tagTail, message.text) : '') + message.text;
      effects.push({ type: 'engine', key: state.key, stream: next.stream, op: { op: 'text', text } });
      return { state: { ...next, phase: 'streaming', pieces: next.pieces + 1, tagTail: unfinishedTag(next.tagTail + text) }, effects, usedStream };
    }
  }
}

function onEngine(state: TtsServerRequestState, event: TtsMachineEngineEvent): Step {
  const effects: TtsServerEffect[] = [];
  const key = state.key;
  switch (event.type) {
    case 'opened': {
      const info = event.info;
      if (!state.readySent) {
        const rate = outputRate(state.setup.output_format) ?? info.sampleRate ?? 48000;
        const ready = withId(
          {
            type: 'ready' as const,
            request_id: event.requestId,
            model_name: info.modelName ?? state.setup.model_name ?? 'default',
            // The rate of the audio the client receives (protocol-notes.md: the client reports it as
            // the audio's rate): the output format's, not the model's.
            sample_rate: rate,
            // The same step at that rate (issue 35): 80 ms is 640 samples at 8 kHz, 1280 at 16 kHz.
            frame_size: Math.round(((info.frameSize ?? 3840) * rate) / (info.sampleRate ?? 48000)),
          },
          key,
        );
        if (info.audioStreamNames !== undefined) (ready as { audio_stream_names?: string[] }).audio_stream_names = info.audioStreamNames.slice();
        if (info.textStreamNames !== undefined) (ready as { text_stream_names?: string[] }).text_stream_names = info.textStreamNames.slice();
        effects.push({ type: 'send', message: ready });
      }
      return { state: { ...state, info, readySent: true }, effects };
    }
    case 'audio': {
      const rate = state.info?.sampleRate ?? 48000;
      const samples = state.samples + event.pcm.length;
      effects.push({
        type: 'audio',
        key,
        stream: state.stream,
        pcm: event.pcm,
        start_s: state.samples / rate,
        stop_s: samples / rate,
        stream_id: event.stream_id === undefined ? 0 : event.stream_id,
      });
      return { state: { ...state, samples }, effects };
    }
    case 'word':
      effects.push({
        type: 'word',
        key,
        stream: state.stream,
        message: withId({ type: 'text' as const, text: event.text, start_s: event.start_s, stop_s: event.stop_s, stream_id: event.stream_id === undefined ? 0 : event.stream_id }, key),
      });
      return { state, effects };
    case 'need_more_text':
      effects.push({ type: 'send', message: withId({ type: 'need_more_text' as const }, key) });
      return { state, effects };
    case 'flushed':
      effects.push({ type: 'audio_drain', key, stream: state.stream });
      return { state, effects };
    case 'ended':
      return ended(state, effects);
  }
}

/** The per-request TTS server machine (driven by the socket machine). */
export const ttsServerRequestMachine: ServerRequestMachine<TtsServerRequestState, TtsClientMessage, TtsMachineEngineEvent, TtsServerEffect> = defineServerRequestMachine({
  route: 'TTS',
  parse: parseTtsClientMessage,
  start(setup, key, stream) {
    const effects: TtsServerEffect[] = [];
    const base: TtsServerRequestState = {
      key,
      phase: 'configured',
      setup: setup as TtsSetupMessage,
      stream,
      idle: true,
      readySent: false,
      info: null,
      samples: 0,
      pieces: 0,
      tagTail: '',
    };
    return { state: open(base, stream, effects), effects, usedStream: true };
  },
  onClient,
  onEngine,
  ended,
});

/** The TTS server socket machine (`ttsServerMachine.transition(state, event)`). */
export const ttsServerMachine: SessionMachine<TtsServerState, TtsServerEvent, TtsServerEffect> = createServerSessionMachine(ttsServerRequestMachine);

// ---------------------------------------------------------------------------------------------
// Client side
// ---------------------------------------------------------------------------------------------

/** What a TTS client session reports. `audio` holds the decoded bytes of an `audio` message. */
export type TtsClientEvent =
  | { type: 'message'; message: TtsServerMessage; clientReqId?: string; audio?: Uint8Array }
  | { type: 'error'; error: VoicewireError; clientReqId?: string }
  | { type: 'closed'; code: number; reason: string };

/** Effects of the TTS client machine. */
export type TtsClientEffect = ClientBaseEffect<TtsClientMessage> | { type: 'emit'; event: TtsClientEvent };

/** State of one TTS request on the client. */
export interface TtsClientRequestState {
  readonly key: RequestKey;
  readonly setup: TtsSetupMessage;
  readonly ready: boolean;
  readonly eosSent: boolean;
  readonly idle: boolean;
  readonly done: boolean;
  readonly abandoned: boolean;
}

/** State of a TTS client socket. */
export type TtsClientState = ClientSessionState<TtsClientRequestState>;

type CStep = RequestStep<TtsClientRequestState, TtsClientEffect>;

function emit(event: TtsClientEvent): TtsClientEffect {
  return { type: 'emit', event };
}

function clientProtocolError(state: TtsClientRequestState, what: string, cause?: unknown): CStep {
  return protocolError('TTS', state, what, cause);
}

function refuse(state: TtsClientRequestState, what: string): CStep {
  return refuseFor('TTS', state, what);
}

/** Client-side checks of a server message (other than `error`) against the request's state. */
function onServer(state: TtsClientRequestState, message: Exclude<TtsServerMessage, { type: 'error' }>): CStep {
  const event = (audio?: Uint8Array): TtsClientEvent => {
    const e: TtsClientEvent = { type: 'message', message };
    if (state.key !== null) e.clientReqId = state.key;
    if (audio !== undefined) e.audio = audio;
    return e;
  };
  switch (message.type) {
    case 'ready':
      if (state.ready) return clientProtocolError(state, "a second 'ready' for one setup");
      return { state: { ...state, ready: true }, effects: [emit(event())] };
    case 'audio': {
      if (!state.ready) return clientProtocolError(state, "'audio' before 'ready'");
      if (state.idle) return clientProtocolError(state, "'audio' after 'end_of_stream'");
      let audio: Uint8Array;
      try {
        audio = decodeBase64(message.audio);
      } catch (err) {
        return clientProtocolError(state, "'audio' is not valid base64", err);
      }
      return { state, effects: [emit(event(audio))] };
    }
    case 'text':
    case 'need_more_text':
      if (!state.ready) return clientProtocolError(state, `'${message.type}' before 'ready'`);
      if (state.idle) return clientProtocolError(state, `'${message.type}' after 'end_of_stream'`);
      return { state, effects: [emit(event())] };
    case 'end_of_stream': {
      if (!state.eosSent) return clientProtocolError(state, "'end_of_stream' before the client sent end_of_stream");
      const close = state.setup.close_ws_on_eos !== false;
      return {
        state: close ? { ...state, done: true } : { ...state, idle: true, eosSent: false },
        effects: [emit(event())],
        outcome: { kind: 'ended', closeSocket: close, code: 1000, reason: 'end of stream' },
      };
    }
  }
}

/** A local send on a request that has neither ended nor been abandoned. */
function onSend(state: TtsClientRequestState, message: TtsClientMessage): CStep {
  switch (message.type) {
    case 'setup':
      if (!state.idle) return refuse(state, `setup while the request ${state.key === null ? '' : JSON.stringify(state.key) + ' '}is active`);
      return { state: { ...state, setup: message, ready: false, idle: false }, effects: [{ type: 'send', message }] };
    case 'text':
      if (state.eosSent) return refuse(state, "cannot send 'text' after end_of_stream");
      return { state: { ...state, idle: false }, effects: [{ type: 'send', message }] };
    case 'end_of_stream':
      if (state.eosSent) return refuse(state, 'end_of_stream was already sent');
      return { state: { ...state, eosSent: true, idle: false }, effects: [{ type: 'send', message }] };
  }
}

/** The per-request TTS client machine. */
export const ttsClientRequestMachine: ClientRequestMachine<TtsClientRequestState, TtsClientMessage, TtsServerMessage, TtsClientEffect> = defineClientRequestMachine({
  route: 'TTS',
  parse: parseTtsServerMessage,
  start(setup, key) {
    const state: TtsClientRequestState = {
      key,
      setup: setup as TtsSetupMessage,
      ready: false,
      eosSent: false,
      idle: false,
      done: false,
      abandoned: false,
    };
    return { state, effects: [{ type: 'send', message: setup }] };
  },
  onSend,
  onServer,
});

/** The TTS client socket machine (`ttsClientMachine.transition(state, event)`). */
export const ttsClientMachine: SessionMachine<TtsClientState, ClientSessionEvent<TtsClientMessage>, TtsClientEffect> = createClientSessionMachine(ttsClientRequestMachine);
