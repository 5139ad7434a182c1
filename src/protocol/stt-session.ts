/**
 * The STT WebSocket session (service-api.md §3.2, §4.4) as pure machines, server side and client
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
import { VoicewireError } from '../errors.js';
import type { AudioFormatName } from '../format.js';
import { decodeBase64 } from './base64.js';
import type { SttEngineConfig, SttEngineEvent, SttEngineInfo } from './engine.js';
import type {
  EndOfStreamMessage,
  FlushId,
  SttClientMessage,
  SttServerMessage,
  SttSetupMessage,
} from './messages.js';
import { readyDelayInFrames } from './messages.js';
import {
  createClientSessionMachine,
  createServerSessionMachine,
  type ClientBaseEffect,
  type ClientRequestMachine,
  type ClientSessionEvent,
  type ClientSessionState,
  type RequestKey,
  type RequestOutcome,
  type RequestStep,
  type ServerBaseEffect,
  type ServerRequestMachine,
  type ServerSessionEvent,
  type ServerSessionState,
  type SessionMachine,
} from './multiplex.js';
import { errorMessageOf, parseSttClientMessage, parseSttServerMessage } from './parse.js';

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
  /** `flush_id`s waiting for their barrier, oldest first, as received. */
  readonly pendingFlushes: readonly FlushId[];
}

/** State of an STT server socket. */
export type SttServerState = ServerSessionState<SttServerRequestState>;
/** Events of an STT server socket. */
export type SttServerEvent = ServerSessionEvent<SttMachineEngineEvent>;

type Step = RequestStep<SttServerRequestState, SttServerEffect>;

function withId<T extends object>(message: T, key: RequestKey): T & { client_req_id?: string } {
  return key === null ? message : { ...message, client_req_id: key };
}

function engineConfig(setup: SttSetupMessage, key: RequestKey): SttEngineConfig {
  const config: SttEngineConfig = {
    modelName: setup.model_name ?? 'default',
    inputFormat: (setup.input_format ?? 'wav') as AudioFormatName,
    jsonConfig: setup.json_config ?? {},
  };
  if (key !== null) config.clientReqId = key;
  return config;
}

function closesOnEos(setup: SttSetupMessage): boolean {
  return setup.close_ws_on_eos !== false;
}

function failStep(state: SttServerRequestState, error: VoicewireError): Step {
  const effects: SttServerEffect[] = [{ type: 'send', message: errorMessageOf(error, state.key ?? undefined) }];
  if (!state.idle) effects.push({ type: 'engine', key: state.key, stream: state.stream, op: { op: 'close' } });
  const code = error.closeCode ?? 1011;
  return { state: { ...state, phase: 'closed' }, effects, outcome: { kind: 'failed', closeSocket: true, code, reason: error.message } };
}

function open(state: SttServerRequestState, stream: number, effects: SttServerEffect[]): SttServerRequestState {
  effects.push({ type: 'engine', key: state.key, stream, op: { op: 'open', config: engineConfig(state.setup, state.key) } });
  return { ...state, stream, idle: false, info: null, steps: 0, pendingFlushes: [] };
}

function unexpected(state: SttServerRequestState, what: string): Step {
  return failStep(state, new VoicewireError('PROTOCOL_UNEXPECTED_MESSAGE', `STT: ${what} (state ${state.phase})`));
}

function onClient(state: SttServerRequestState, message: SttClientMessage, nextStream: number): Step {
  const effects: SttServerEffect[] = [];
  switch (message.type) {
    case 'setup': {
      if (!state.idle) {
        const id = state.key;
        return id === null
          ? unexpected(state, 'setup while a request is active')
          : failStep(state, new VoicewireError('PROTOCOL_DUPLICATE_REQUEST_ID', `STT: client_req_id ${JSON.stringify(id)} is still active; a setup may reuse it only after its end_of_stream`));
      }
      const next = open({ ...state, setup: message, readySent: false, phase: 'configured' }, nextStream, effects);
      return { state: next, effects, usedStream: true };
    }
    case 'audio': {
      if (state.phase === 'finished') return unexpected(state, "'audio' after end_of_stream");
      let audio: Uint8Array;
      try {
        audio = decodeBase64(message.audio);
      } catch (err) {
        return failStep(state, new VoicewireError('PROTOCOL_INVALID_AUDIO', `STT: 'audio' is not valid base64: ${(err as Error).message}`, { cause: err }));
      }
      let next = state;
      let usedStream = false;
      if (state.idle) {
        next = open(state, nextStream, effects);
        usedStream = true;
      }
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
      return { state: { ...state, pendingFlushes: [...state.pendingFlushes, message.flush_id] }, effects };
    }
    case 'end_of_stream': {
      if (state.phase === 'finished') return unexpected(state, "'end_of_stream' twice");
      if (state.idle) return ended(state, effects);
      effects.push({ type: 'engine', key: state.key, stream: state.stream, op: { op: 'end' } });
      return { state: { ...state, phase: 'finished' }, effects };
    }
  }
}

function ended(state: SttServerRequestState, effects: SttServerEffect[]): Step {
  effects.push({ type: 'send', message: withId<EndOfStreamMessage>({ type: 'end_of_stream' }, state.key) });
  if (!state.idle) effects.push({ type: 'engine', key: state.key, stream: state.stream, op: { op: 'close' } });
  const close = closesOnEos(state.setup);
  const outcome: RequestOutcome = { kind: 'ended', closeSocket: close, code: 1000, reason: 'end of stream' };
  // §3.2: close_ws_on_eos false returns to configured, ready for another request.
  const next: SttServerRequestState = close
    ? { ...state, phase: 'closed' }
    : { ...state, phase: 'configured', idle: true, steps: 0, pendingFlushes: [] };
  return { state: next, effects, outcome };
}

function onEngine(state: SttServerRequestState, event: SttMachineEngineEvent): Step {
  const effects: SttServerEffect[] = [];
  const key = state.key;
  switch (event.type) {
    case 'opened': {
      const info = event.info;
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
      const [head, ...rest] = state.pendingFlushes;
      if (head === undefined) return { state, effects };
      effects.push({ type: 'send', message: withId({ type: 'flushed' as const, flush_id: head }, key) });
      return { state: { ...state, pendingFlushes: rest }, effects };
    }
    case 'ended':
      return ended(state, effects);
  }
}

/** The per-request STT server machine (driven by the socket machine). */
export const sttServerRequestMachine: ServerRequestMachine<SttServerRequestState, SttClientMessage, SttMachineEngineEvent, SttServerEffect> = {
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
      pendingFlushes: [],
    };
    return { state: open(base, stream, effects), effects, usedStream: true };
  },
  transition(state, event, nextStream) {
    if (state.phase === 'closed') return { state, effects: [] };
    switch (event.type) {
      case 'client':
        return onClient(state, event.message, nextStream);
      case 'engine':
        // Late events of an older stream, or of a stream closed after end_of_stream: dropped.
        if (event.stream !== state.stream || state.idle) return { state, effects: [] };
        return onEngine(state, event.event);
      case 'failure':
        if (event.stream !== undefined && (event.stream !== state.stream || state.idle)) return { state, effects: [] };
        return failStep(state, event.error);
      case 'abort': {
        const effects: SttServerEffect[] = state.idle ? [] : [{ type: 'engine', key: state.key, stream: state.stream, op: { op: 'close' } }];
        return { state: { ...state, phase: 'closed' }, effects, outcome: { kind: 'aborted', closeSocket: false, code: 1006, reason: 'aborted' } };
      }
    }
  },
  isIdle: (state) => state.idle || state.phase === 'closed',
  keepsSocketOpen: (state) => !closesOnEos(state.setup),
  send: (message) => ({ type: 'send', message }),
};

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

function clientError(key: RequestKey, error: VoicewireError): SttClientEvent {
  return key === null ? { type: 'error', error } : { type: 'error', error, clientReqId: key };
}

function clientProtocolError(state: SttClientRequestState, what: string): CStep {
  const error = new VoicewireError('PROTOCOL_UNEXPECTED_MESSAGE', `STT client: ${what}`);
  return {
    state: { ...state, done: true },
    effects: [emit(clientError(state.key, error)), { type: 'close', code: 1000, reason: 'protocol error' }],
    outcome: { kind: 'failed', closeSocket: true, code: 1008, reason: error.message },
  };
}

function refuse(state: SttClientRequestState, what: string): CStep {
  return { state, effects: [{ type: 'reject', error: new VoicewireError('INVALID_STATE', `STT client: ${what}`) }] };
}

/** Client-side checks of a server message against the request's state. */
function onServer(state: SttClientRequestState, message: SttServerMessage): CStep {
  const forward = (next: SttClientRequestState): CStep => ({
    state: next,
    effects: [emit(state.key === null ? { type: 'message', message } : { type: 'message', message, clientReqId: state.key })],
  });
  if (state.abandoned) {
    // Dropped until the server ends the request (its end_of_stream or error).
    if (message.type === 'end_of_stream' || message.type === 'error') {
      return { state: { ...state, done: true }, effects: [], outcome: { kind: 'ended', closeSocket: false, code: 1000, reason: 'abandoned' } };
    }
    return { state, effects: [] };
  }
  switch (message.type) {
    case 'error': {
      const error = new VoicewireError('PROTOCOL_SERVER_ERROR', message.message, message.code === undefined ? {} : { closeCode: message.code });
      return {
        state: { ...state, done: true },
        effects: [emit(clientError(state.key, error))],
        outcome: { kind: 'failed', closeSocket: state.key === null, code: message.code ?? 1011, reason: message.message },
      };
    }
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

function onSend(state: SttClientRequestState, message: SttClientMessage): CStep {
  if (state.done) return refuse(state, `cannot send '${message.type}': the request has ended`);
  if (state.abandoned) return refuse(state, `cannot send '${message.type}': the request was abandoned`);
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
export const sttClientRequestMachine: ClientRequestMachine<SttClientRequestState, SttClientMessage, SttServerMessage, SttClientEffect> = {
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
  transition(state, event) {
    switch (event.type) {
      case 'send':
        return onSend(state, event.message);
      case 'server':
        if (state.done) return { state, effects: [] };
        return onServer(state, event.message);
      case 'abandon': {
        if (state.done || state.abandoned) return { state, effects: [] };
        const effects: SttClientEffect[] = [];
        if (!state.eosSent && !state.idle) effects.push({ type: 'send', message: state.key === null ? { type: 'end_of_stream' } : { type: 'end_of_stream', client_req_id: state.key } });
        if (state.idle) return { state: { ...state, done: true }, effects, outcome: { kind: 'ended', closeSocket: false, code: 1000, reason: 'abandoned' } };
        return { state: { ...state, abandoned: true, eosSent: true }, effects };
      }
      case 'socket_ending':
        return { state: { ...state, eosSent: true }, effects: [] };
      case 'transport_closed': {
        if (state.done || state.idle || state.abandoned) return { state: { ...state, done: true }, effects: [] };
        const error = new VoicewireError('PROTOCOL_CONNECTION_CLOSED', `STT: the socket closed (${event.code}${event.reason ? ` ${event.reason}` : ''}) before the request ended`, {
          details: { code: event.code, reason: event.reason },
        });
        return { state: { ...state, done: true }, effects: [emit(clientError(state.key, error))] };
      }
    }
  },
  isActive: (state) => !state.done && !state.idle,
  keepsSocketOpen: (state) => state.setup.close_ws_on_eos === false,
  emitError: (error, key) => emit(clientError(key, error)),
  emitClosed: (code, reason) => emit({ type: 'closed', code, reason }),
  emitMessage: (message) => emit({ type: 'message', message }),
};

/** The STT client socket machine (`sttClientMachine.transition(state, event)`). */
export const sttClientMachine: SessionMachine<SttClientState, ClientSessionEvent<SttClientMessage>, SttClientEffect> = createClientSessionMachine(sttClientRequestMachine);
