/**
 * The STT WebSocket session (docs/api.md §3.2, §4.4) as pure machines, server side and client
 * side: `transition(state, event) → { state, effects }`. Effects are data; a runner
 * ({@link createSttServerSession}, {@link createSttClientSession}) executes them.
 *
 * Server, per request (the socket machine of `multiplex.ts` routes by `client_req_id`):
 *
 * | State      | Event                        | Next        | Effects |
 * |------------|------------------------------|-------------|---------|
 * | connected  | `setup`                      | configured  | engine `open`; `ready` once the engine opened |
 * | connected  | anything else                | closed      | `error` 1008, close 1008 |
 * | configured | `audio`                      | streaming   | engine `audio` (decode, frame, push) |
 * | streaming  | engine text / end_text / step| streaming   | `text`, `end_text`, `step` (step_idx, total_duration_s per request) |
 * | streaming  | `flush`                      | streaming   | engine `flush` (pad, push `delay_in_frames` silent frames); `flushed` when that barrier returns, so after all text before it |
 * | streaming  | `end_of_stream`              | finished    | engine `end`; remaining text and steps, then `end_of_stream` |
 * | finished   | engine ended                 | closed / configured | close 1000 (`close_ws_on_eos` true) or stay open (false) |
 * | any        | failure                      | closed      | `error` (1008 client fault, 1011 engine), close |
 */
import { VoicewireError } from '../util/errors.js';
import type { AudioFormatName } from '../audio/format.js';
import { decodeBase64 } from '../util/base64.js';
import type { SttEngineConfig, SttEngineEvent, SttEngineInfo } from './engine.js';
import type {
  FlushId,
  SttClientMessage,
  SttServerMessage,
  SttSetupMessage,
} from '../protocol/messages.js';
import { readyDelayInFrames } from '../protocol/messages.js';
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
import { parseSttClientMessage, parseSttServerMessage } from '../protocol/parse.js';
import { unsupportedSttConfigIssues } from '../protocol/config.js';
import { describeIssue } from '../protocol/validate.js';
import { PersistentQueue } from './persistent-queue.js';
import {
  clientProtocolError as protocolError,
  defineClientRequestMachine,
  defineServerRequestMachine,
  endRequest,
  failRequest,
  refuse as refuseFor,
  setupWhileActive,
  unexpectedMessage,
  withId,
} from './request-machines.js';

// ---------------------------------------------------------------------------------------------
// Server side
// ---------------------------------------------------------------------------------------------

/** What the STT server machine asks the engine side of the runner to do, per request stream. */
export type SttEngineOp =
  /** Create the input decoder for `config.inputFormat`, open an engine stream, report `opened`. */
  | { op: 'open'; config: SttEngineConfig }
  /** Decode `audio` (bytes in the input format) to 24 kHz PCM, cut 80 ms frames, push them. */
  | { op: 'audio'; audio: Uint8Array }
  /** Pad the partial frame, push `delay_in_frames` silent frames, then report `flush_done`. */
  | { op: 'flush'; flush_id: FlushId }
  /** Drain the decoder, pad, push `delay_in_frames` silent frames, call `end()`, report `ended`. */
  | { op: 'end' }
  /** Close the stream now; drop queued work. */
  | { op: 'close' };

/** Engine events as the STT machine sees them: the model's events plus the runner's barriers. */
export type SttMachineEngineEvent =
  | SttEngineEvent
  | { type: 'opened'; requestId: string; info: SttEngineInfo }
  | { type: 'flush_done'; flush_id: FlushId }
  | { type: 'ended' };

/** Effects of the STT server machine. */
export type SttServerEffect =
  | ServerBaseEffect<SttServerMessage>
  | { type: 'engine'; key: RequestKey; stream: number; op: SttEngineOp };

/** State of one STT request on the server. */
export interface SttServerRequestState {
  readonly key: RequestKey;
  /** §3.2 states (the socket-level `connected` lives in the socket machine). */
  readonly phase: 'configured' | 'streaming' | 'finished' | 'closed';
  readonly setup: SttSetupMessage;
  /** Engine stream of the current request. */
  readonly stream: number;
  /** True after `end_of_stream` with `close_ws_on_eos: false`: the engine stream is closed, the next audio opens a new one. */
  readonly idle: boolean;
  readonly readySent: boolean;
  readonly info: SttEngineInfo | null;
  /** Steps sent in the current request (its timing state). */
  readonly steps: number;
  /**
   * `flush_id`s waiting for their barrier, oldest first, as received: a persistent queue (iterable,
   * with a `length`), so a `flush` and its `flushed` cost O(1), not a copy of the list (issue 11 §3).
   */
  readonly pendingFlushes: PersistentQueue<FlushId>;
}

/** State of an STT server socket. */
export type SttServerState = ServerSessionState<SttServerRequestState>;
/** Events of an STT server socket. */
export type SttServerEvent = ServerSessionEvent<SttMachineEngineEvent>;

type Step = RequestStep<SttServerRequestState, SttServerEffect>;

function engineConfig(setup: SttSetupMessage, key: RequestKey): SttEngineConfig {
  const config: SttEngineConfig = {
    modelName: setup.model_name ?? 'default',
    inputFormat: (setup.input_format ?? 'wav') as AudioFormatName,
    jsonConfig: setup.json_config ?? {},
  };
  if (key !== null) config.clientReqId = key;
  return config;
}

function open(state: SttServerRequestState, stream: number, effects: SttServerEffect[]): SttServerRequestState {
  effects.push({ type: 'engine', key: state.key, stream, op: { op: 'open', config: engineConfig(state.setup, state.key) } });
  return { ...state, stream, idle: false, info: null, steps: 0, pendingFlushes: PersistentQueue.empty() };
}

function unexpected(state: SttServerRequestState, what: string): Step {
  return unexpectedMessage('STT', state, what);
}

function onClient(state: SttServerRequestState, message: Exclude<SttClientMessage, { type: 'end_of_stream' }>, nextStream: number): Step {
  const effects: SttServerEffect[] = [];
  switch (message.type) {
    case 'setup': {
      if (!state.idle) return setupWhileActive('STT', state);
      const next = open({ ...state, setup: message, readySent: false, phase: 'configured' }, nextStream, effects);
      return { state: next, effects, usedStream: true };
    }
    case 'audio': {
      if (state.phase === 'finished') return unexpected(state, "'audio' after end_of_stream");
      let audio: Uint8Array;
      try {
        audio = decodeBase64(message.audio);
      } catch (err) {
        return failRequest(state, new VoicewireError('PROTOCOL_INVALID_AUDIO', `STT: 'audio' is not valid base64: ${(err as Error).message}`, { cause: err }));
      }
      // The first message after end_of_stream (close_ws_on_eos false) opens a new engine stream.
      const usedStream = state.idle;
      const next = usedStream ? open(state, nextStream, effects) : state;
      effects.push({ type: 'engine', key: state.key, stream: next.stream, op: { op: 'audio', audio } });
      return { state: { ...next, phase: 'streaming' }, effects, usedStream };
    }
    case 'flush': {
      if (state.phase === 'finished') return unexpected(state, "'flush' after end_of_stream");
      if (state.idle) {
        // Nothing is outstanding between requests: answer at once.
        effects.push({ type: 'send', message: withId({ type: 'flushed', flush_id: message.flush_id }, state.key) });
        return { state, effects };
      }
      effects.push({ type: 'engine', key: state.key, stream: state.stream, op: { op: 'flush', flush_id: message.flush_id } });
      return { state: { ...state, pendingFlushes: state.pendingFlushes.push(message.flush_id) }, effects };
    }
  }
}

function ended(state: SttServerRequestState, effects: SttServerEffect[]): Step {
  return endRequest(state, effects, (s) => ({ ...s, phase: 'configured', idle: true, steps: 0, pendingFlushes: PersistentQueue.empty() }));
}

function onEngine(state: SttServerRequestState, event: SttMachineEngineEvent): Step {
  const effects: SttServerEffect[] = [];
  const key = state.key;
  switch (event.type) {
    case 'opened': {
      const info = event.info;
      // No json_config key is accepted and ignored (config.ts unsupportedSttConfigIssues).
      const issues = unsupportedSttConfigIssues(state.setup.json_config ?? {}, ['json_config']);
      if (issues.length > 0) {
        return failRequest(state, new VoicewireError('PROTOCOL_INVALID_CONFIG', `Invalid json_config: ${issues.map(describeIssue).join('; ')}`, { details: { issues } }));
      }
      if (!state.readySent) {
        const ready = withId(
          {
            type: 'ready' as const,
            request_id: event.requestId,
            model_name: info.modelName ?? state.setup.model_name ?? 'default',
            sample_rate: info.sampleRate ?? 24000,
            frame_size: info.frameSize ?? 1920,
            delay_in_frames: info.delayInFrames,
          },
          key,
        );
        if (info.textStreamNames !== undefined) (ready as { text_stream_names?: string[] }).text_stream_names = info.textStreamNames.slice();
        effects.push({ type: 'send', message: ready });
      }
      return { state: { ...state, info, readySent: true }, effects };
    }
    case 'text': {
      const msg = withId({ type: 'text' as const, text: event.text, start_s: event.start_s }, key);
      if (event.stream_id !== undefined) (msg as { stream_id?: number | null }).stream_id = event.stream_id;
      effects.push({ type: 'send', message: msg });
      return { state, effects };
    }
    case 'end_text': {
      const msg = withId({ type: 'end_text' as const, stop_s: event.stop_s }, key);
      if (event.stream_id !== undefined) (msg as { stream_id?: number | null }).stream_id = event.stream_id;
      effects.push({ type: 'send', message: msg });
      return { state, effects };
    }
    case 'step': {
      const rate = state.info?.sampleRate ?? 24000;
      const size = state.info?.frameSize ?? 1920;
      const idx = state.steps;
      effects.push({
        type: 'send',
        message: withId(
          {
            type: 'step' as const,
            vad: event.vad.map((v) => ({ horizon_s: v.horizon_s, inactivity_prob: v.inactivity_prob })),
            step_idx: idx,
            step_duration_s: size / rate,
            total_duration_s: ((idx + 1) * size) / rate,
          },
          key,
        ),
      });
      return { state: { ...state, steps: idx + 1 }, effects };
    }
    case 'flush_done': {
      // Barriers come back in order: the head is the flush this barrier answers. Echo it as received.
      if (state.pendingFlushes.length === 0) return { state, effects };
      const head = state.pendingFlushes.peek()!;
      effects.push({ type: 'send', message: withId({ type: 'flushed' as const, flush_id: head }, key) });
      return { state: { ...state, pendingFlushes: state.pendingFlushes.shift() }, effects };
    }
    case 'ended':
      return ended(state, effects);
  }
}

/** The per-request STT server machine (driven by the socket machine). */
export const sttServerRequestMachine: ServerRequestMachine<SttServerRequestState, SttClientMessage, SttMachineEngineEvent, SttServerEffect> = defineServerRequestMachine({
  route: 'STT',
  parse: parseSttClientMessage,
  start(setup, key, stream) {
    const effects: SttServerEffect[] = [];
    const base: SttServerRequestState = {
      key,
      phase: 'configured',
      setup: setup as SttSetupMessage,
      stream,
      idle: true,
      readySent: false,
      info: null,
      steps: 0,
      pendingFlushes: PersistentQueue.empty(),
    };
    return { state: open(base, stream, effects), effects, usedStream: true };
  },
  onClient,
  onEngine,
  ended,
});

/**
 * The STT server socket machine: `sttServerMachine.transition(state, event) → { state, effects }`,
 * starting from `sttServerMachine.initial()`. Events: `receive` (a raw frame), `engine` (an
 * engine event or a runner barrier for a request stream), `engine_failure`, `transport_closed`.
 */
export const sttServerMachine: SessionMachine<SttServerState, SttServerEvent, SttServerEffect> = createServerSessionMachine(sttServerRequestMachine);

// ---------------------------------------------------------------------------------------------
// Client side
// ---------------------------------------------------------------------------------------------

/** What an STT client session reports. Every validated server message comes as `message`. */
export type SttClientEvent =
  | { type: 'message'; message: SttServerMessage; clientReqId?: string }
  | { type: 'error'; error: VoicewireError; clientReqId?: string }
  | { type: 'closed'; code: number; reason: string };

/** Effects of the STT client machine. */
export type SttClientEffect = ClientBaseEffect<SttClientMessage> | { type: 'emit'; event: SttClientEvent };

/** State of one STT request on the client. */
export interface SttClientRequestState {
  readonly key: RequestKey;
  readonly setup: SttSetupMessage;
  /** `ready` received for the current setup. */
  readonly ready: boolean;
  /** The model delay the `ready` announced (`delay_in_frames` or `delay_in_tokens`). */
  readonly delayInFrames: number | undefined;
  /** `end_of_stream` sent, waiting for the server's. */
  readonly eosSent: boolean;
  /** Back in `configured` after the server's `end_of_stream` (`close_ws_on_eos: false`). */
  readonly idle: boolean;
  /** Ended (error, end with close, abandoned): only the socket close is expected. */
  readonly done: boolean;
  readonly abandoned: boolean;
  readonly pendingFlushes: readonly FlushId[];
}

/** State of an STT client socket. */
export type SttClientState = ClientSessionState<SttClientRequestState>;

type CStep = RequestStep<SttClientRequestState, SttClientEffect>;

function emit(event: SttClientEvent): SttClientEffect {
  return { type: 'emit', event };
}

function clientProtocolError(state: SttClientRequestState, what: string): CStep {
  return protocolError('STT', state, what);
}

function refuse(state: SttClientRequestState, what: string): CStep {
  return refuseFor('STT', state, what);
}

/** Client-side checks of a server message (other than `error`) against the request's state. */
function onServer(state: SttClientRequestState, message: Exclude<SttServerMessage, { type: 'error' }>): CStep {
  const forward = (next: SttClientRequestState): CStep => ({
    state: next,
    effects: [emit(state.key === null ? { type: 'message', message } : { type: 'message', message, clientReqId: state.key })],
  });
  switch (message.type) {
    case 'ready':
      if (state.ready) return clientProtocolError(state, "a second 'ready' for one setup");
      return forward({ ...state, ready: true, delayInFrames: readyDelayInFrames(message) });
    case 'text':
    case 'end_text':
    case 'step':
    case 'vad':
      if (!state.ready) return clientProtocolError(state, `'${message.type}' before 'ready'`);
      if (state.idle) return clientProtocolError(state, `'${message.type}' after 'end_of_stream'`);
      return forward(state);
    case 'flushed': {
      let index = state.pendingFlushes.indexOf(message.flush_id);
      // Echoed "as received", but tolerate a server that turned "7" into 7 or back.
      if (index < 0) index = state.pendingFlushes.findIndex((id) => String(id) === String(message.flush_id));
      if (index < 0) return clientProtocolError(state, `'flushed' for flush_id ${JSON.stringify(message.flush_id)}, which was not sent`);
      const pendingFlushes = state.pendingFlushes.filter((_, i) => i !== index);
      return forward({ ...state, pendingFlushes });
    }
    case 'end_of_stream': {
      if (!state.eosSent) return clientProtocolError(state, "'end_of_stream' before the client sent end_of_stream");
      const close = state.setup.close_ws_on_eos !== false;
      const step = forward(close ? { ...state, done: true } : { ...state, idle: true, eosSent: false, pendingFlushes: [] });
      return { ...step, outcome: { kind: 'ended', closeSocket: close, code: 1000, reason: 'end of stream' } };
    }
  }
}

/** A local send on a request that has neither ended nor been abandoned. */
function onSend(state: SttClientRequestState, message: SttClientMessage): CStep {
  const send: SttClientEffect = { type: 'send', message };
  switch (message.type) {
    case 'setup':
      if (!state.idle) return refuse(state, `setup while the request ${state.key === null ? '' : JSON.stringify(state.key) + ' '}is active`);
      return { state: { ...state, setup: message, ready: false, idle: false, delayInFrames: undefined }, effects: [send] };
    case 'audio':
    case 'flush':
      if (state.eosSent) return refuse(state, `cannot send '${message.type}' after end_of_stream`);
      return {
        state: { ...state, idle: false, pendingFlushes: message.type === 'flush' ? [...state.pendingFlushes, message.flush_id] : state.pendingFlushes },
        effects: [send],
      };
    case 'end_of_stream':
      if (state.eosSent) return refuse(state, 'end_of_stream was already sent');
      return { state: { ...state, eosSent: true, idle: false }, effects: [send] };
  }
}

/** The per-request STT client machine. */
export const sttClientRequestMachine: ClientRequestMachine<SttClientRequestState, SttClientMessage, SttServerMessage, SttClientEffect> = defineClientRequestMachine({
  route: 'STT',
  parse: parseSttServerMessage,
  start(setup, key) {
    const state: SttClientRequestState = {
      key,
      setup: setup as SttSetupMessage,
      ready: false,
      delayInFrames: undefined,
      eosSent: false,
      idle: false,
      done: false,
      abandoned: false,
      pendingFlushes: [],
    };
    return { state, effects: [{ type: 'send', message: setup }] };
  },
  onSend,
  onServer,
});

/** The STT client socket machine (`sttClientMachine.transition(state, event)`). */
export const sttClientMachine: SessionMachine<SttClientState, ClientSessionEvent<SttClientMessage>, SttClientEffect> = createClientSessionMachine(sttClientRequestMachine);
