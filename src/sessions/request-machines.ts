/**
 * The request-lifecycle rules the STT and TTS request machines share (docs/api.md §3.2, §4.4,
 * protocol-notes.md): failing and ending a server request, the server request machine's event
 * dispatch, and the client request machine's refusals, server errors, abandon and transport close.
 * Each route keeps only what differs: its engine ops, its messages and its timing state.
 *
 * Internal to the protocol layer (not exported from the package): `stt-session.ts` and
 * `tts-session.ts` build their request machines with {@link defineServerRequestMachine} and
 * {@link defineClientRequestMachine}.
 */
import { VoicewireError } from '../util/errors.js';
import type { EndOfStreamMessage, ErrorMessage } from '../protocol/messages.js';
import type {
  ClientBaseEffect,
  ClientBaseEvent,
  ClientRequestMachine,
  RequestKey,
  RequestOutcome,
  RequestStep,
  ServerBaseEffect,
  ServerRequestMachine,
} from './multiplex.js';
import { errorMessageOf, type RawMessage } from '../protocol/parse.js';

/** What a setup says about the socket after end of stream. */
interface EosSetup {
  readonly close_ws_on_eos?: boolean;
}

/** Anything effects can be pushed to (a route's own, wider, effect array). */
export interface EffectSink<E> {
  push(...effects: E[]): unknown;
}

/** `message` with the request's `client_req_id` (§4.4: every message of a named request carries it). */
export function withId<T extends object>(message: T, key: RequestKey): T & { client_req_id?: string } {
  return key === null ? message : { ...message, client_req_id: key };
}

/** §3.2: `close_ws_on_eos` defaults to true. */
export function closesOnEos(setup: EosSetup): boolean {
  return setup.close_ws_on_eos !== false;
}

// ---------------------------------------------------------------------------------------------
// Server side
// ---------------------------------------------------------------------------------------------

/** The fields every server request state has. */
export interface ServerRequestBase {
  readonly key: RequestKey;
  /** §3.2 states (the socket-level `connected` lives in the socket machine). */
  readonly phase: 'configured' | 'streaming' | 'finished' | 'closed';
  readonly setup: EosSetup;
  /** Engine stream of the current request. */
  readonly stream: number;
  /** True after `end_of_stream` with `close_ws_on_eos: false`: no engine stream is open. */
  readonly idle: boolean;
}

/** Ends (`end`: drain, then report `ended`) or closes (`close`: drop queued work) a request's engine stream; every route has both ops. */
export interface EngineLifecycleEffect {
  type: 'engine';
  key: RequestKey;
  stream: number;
  op: { op: 'end' } | { op: 'close' };
}

/** The effects the shared server rules produce. */
export type ServerSharedEffect = ServerBaseEffect<ErrorMessage | EndOfStreamMessage> | EngineLifecycleEffect;

function closeEngine(state: ServerRequestBase): EngineLifecycleEffect {
  return { type: 'engine', key: state.key, stream: state.stream, op: { op: 'close' } };
}

/** Ends a request with `error`: its engine stream closes and the socket is asked to close with the error's code (1011 by default). */
export function failRequest<S extends ServerRequestBase>(state: S, error: VoicewireError): RequestStep<S, ServerSharedEffect> {
  const effects: ServerSharedEffect[] = [{ type: 'send', message: errorMessageOf(error, state.key ?? undefined) }];
  if (!state.idle) effects.push(closeEngine(state));
  const code = error.closeCode ?? 1011;
  return { state: { ...state, phase: 'closed' }, effects, outcome: { kind: 'failed', closeSocket: true, code, reason: error.message } };
}

/** A client message the request's state does not allow: `PROTOCOL_UNEXPECTED_MESSAGE`. */
export function unexpectedMessage<S extends ServerRequestBase>(route: string, state: S, what: string): RequestStep<S, ServerSharedEffect> {
  return failRequest(state, new VoicewireError('PROTOCOL_UNEXPECTED_MESSAGE', `${route}: ${what} (state ${state.phase})`));
}

/** A `setup` while the request is active: unexpected for the anonymous request, a duplicate id otherwise (§4.4). */
export function setupWhileActive<S extends ServerRequestBase>(route: string, state: S): RequestStep<S, ServerSharedEffect> {
  return state.key === null
    ? unexpectedMessage(route, state, 'setup while a request is active')
    : failRequest(state, new VoicewireError('PROTOCOL_DUPLICATE_REQUEST_ID', `${route}: client_req_id ${JSON.stringify(state.key)} is still active; a setup may reuse it only after its end_of_stream`));
}

/**
 * Ends a request with `end_of_stream` (after the effects already in `effects`) and closes its
 * engine stream. §3.2: with `close_ws_on_eos` false the request returns to `configured`, as
 * `idleState` makes it (its timing state reset), ready for another request.
 */
export function endRequest<S extends ServerRequestBase, A extends EffectSink<ServerSharedEffect>>(
  state: S,
  effects: A,
  idleState: (state: S) => S,
): { state: S; effects: A; outcome: RequestOutcome } {
  effects.push({ type: 'send', message: withId<EndOfStreamMessage>({ type: 'end_of_stream' }, state.key) });
  if (!state.idle) effects.push(closeEngine(state));
  const close = closesOnEos(state.setup);
  const outcome: RequestOutcome = { kind: 'ended', closeSocket: close, code: 1000, reason: 'end of stream' };
  return { state: close ? { ...state, phase: 'closed' } : idleState(state), effects, outcome };
}

/** The route-specific parts of a server request machine. */
export interface ServerRequestParts<S, CM, EE, E> {
  readonly route: string;
  parse(raw: RawMessage): CM;
  start(setup: CM, key: RequestKey, stream: number): RequestStep<S, E>;
  /** A client message other than `end_of_stream`, for a request that is not closed. */
  onClient(state: S, message: Exclude<CM, { type: 'end_of_stream' }>, nextStream: number): RequestStep<S, E>;
  /** An engine event of the request's current, open stream. */
  onEngine(state: S, event: EE): RequestStep<S, E>;
  /** Ends the request (after the effects already in `effects`): `end_of_stream` through {@link endRequest}. */
  ended(state: S, effects: E[]): RequestStep<S, E>;
}

/**
 * A server request machine from its route-specific parts. Shared rules: a closed request takes
 * nothing; `end_of_stream` ends the engine stream (`finished` until it reports `ended`), or ends
 * an idle request at once, and a second one is unexpected; engine events and failures of an older stream, or of a stream closed after
 * `end_of_stream`, are dropped; a failure ends the request with `error`; an abort closes the
 * engine stream without a message.
 */
export function defineServerRequestMachine<S extends ServerRequestBase, CM extends { type: string; client_req_id?: string }, EE, E>(
  parts: ServerRequestParts<S, CM, EE, E>,
): ServerRequestMachine<S, CM, EE, E | ServerSharedEffect> {
  const { route, onClient, onEngine, ended } = parts;
  return {
    route,
    parse: parts.parse,
    start: parts.start,
    transition(state, event, nextStream) {
      if (state.phase === 'closed') return { state, effects: [] };
      switch (event.type) {
        case 'client': {
          const message = event.message;
          if (message.type !== 'end_of_stream') return onClient(state, message as Exclude<CM, { type: 'end_of_stream' }>, nextStream);
          if (state.phase === 'finished') return unexpectedMessage(route, state, "'end_of_stream' twice");
          if (state.idle) return ended(state, []);
          const end: EngineLifecycleEffect = { type: 'engine', key: state.key, stream: state.stream, op: { op: 'end' } };
          return { state: { ...state, phase: 'finished' }, effects: [end] };
        }
        case 'engine':
          // Late events of an older stream, or of a stream closed after end_of_stream: dropped.
          if (event.stream !== state.stream || state.idle) return { state, effects: [] };
          return onEngine(state, event.event);
        case 'failure':
          if (event.stream !== undefined && (event.stream !== state.stream || state.idle)) return { state, effects: [] };
          return failRequest(state, event.error);
        case 'abort': {
          const effects: ServerSharedEffect[] = state.idle ? [] : [closeEngine(state)];
          return { state: { ...state, phase: 'closed' }, effects, outcome: { kind: 'aborted', closeSocket: false, code: 1006, reason: 'aborted' } };
        }
      }
    },
    isIdle: (state) => state.idle || state.phase === 'closed',
    keepsSocketOpen: (state) => !closesOnEos(state.setup),
    send: (message) => ({ type: 'send', message }),
  };
}

// ---------------------------------------------------------------------------------------------
// Client side
// ---------------------------------------------------------------------------------------------

/** The fields every client request state has. */
export interface ClientRequestBase {
  readonly key: RequestKey;
  readonly setup: EosSetup;
  /** `ready` received for the current setup. */
  readonly ready: boolean;
  /** `end_of_stream` sent, waiting for the server's. */
  readonly eosSent: boolean;
  /** Back in `configured` after the server's `end_of_stream` (`close_ws_on_eos: false`). */
  readonly idle: boolean;
  /** Ended (error, end with close, abandoned): only the socket close is expected. */
  readonly done: boolean;
  readonly abandoned: boolean;
}

/** An event for the application. */
export interface EmitEffect<Ev> {
  type: 'emit';
  event: Ev;
}

/** The effects the shared client rules produce (`SM`: the route's server messages). */
export type ClientSharedEffect<SM> = EmitEffect<ClientBaseEvent | { type: 'message'; message: SM }> | ClientBaseEffect<EndOfStreamMessage>;

/** The `error` event of a request. */
export function clientError(key: RequestKey, error: VoicewireError): ClientBaseEvent {
  return key === null ? { type: 'error', error } : { type: 'error', error, clientReqId: key };
}

/** The server broke the protocol: report `PROTOCOL_UNEXPECTED_MESSAGE` and close (1000: what browsers may send). */
export function clientProtocolError<S extends ClientRequestBase>(route: string, state: S, what: string, cause?: unknown): RequestStep<S, ClientSharedEffect<never>> {
  const error = new VoicewireError('PROTOCOL_UNEXPECTED_MESSAGE', `${route} client: ${what}`, cause === undefined ? {} : { cause });
  return {
    state: { ...state, done: true },
    effects: [{ type: 'emit', event: clientError(state.key, error) }, { type: 'close', code: 1000, reason: 'protocol error' }],
    outcome: { kind: 'failed', closeSocket: true, code: 1008, reason: error.message },
  };
}

/** A local call the request's state does not allow: the runner throws `INVALID_STATE`. */
export function refuse<S>(route: string, state: S, what: string): RequestStep<S, ClientBaseEffect<never>> {
  return { state, effects: [{ type: 'reject', error: new VoicewireError('INVALID_STATE', `${route} client: ${what}`) }] };
}

/** The route-specific parts of a client request machine. */
export interface ClientRequestParts<S, CM, SM, E> {
  readonly route: string;
  parse(raw: RawMessage): SM;
  start(setup: CM, key: RequestKey): RequestStep<S, E>;
  /** A local send on a request that has neither ended nor been abandoned. */
  onSend(state: S, message: CM): RequestStep<S, E>;
  /** A server message other than `error`, for a live request that was not abandoned. */
  onServer(state: S, message: Exclude<SM, { type: 'error' }>): RequestStep<S, E>;
}

/**
 * A client request machine from its route-specific parts. Shared rules: no send after the
 * request ended or was abandoned; an abandoned request drops every message until the server ends
 * it; a server `error` ends the request (and the socket, for the anonymous request); abandon
 * sends `end_of_stream` (no cancel message exists, protocol-notes.md); a transport close before
 * the end is `PROTOCOL_CONNECTION_CLOSED`.
 */
export function defineClientRequestMachine<
  S extends ClientRequestBase,
  CM extends { type: string; client_req_id?: string },
  SM extends { type: string; client_req_id?: string },
  E,
>(parts: ClientRequestParts<S, CM, SM, E>): ClientRequestMachine<S, CM, SM, E | ClientSharedEffect<SM>> {
  type Eff = E | ClientSharedEffect<SM>;
  const { route, onSend, onServer } = parts;
  const emit = <Ev>(event: Ev): EmitEffect<Ev> => ({ type: 'emit', event });

  function server(state: S, message: SM): RequestStep<S, Eff> {
    if (state.abandoned) {
      // Dropped until the server ends the request (its end_of_stream or error).
      if (message.type === 'end_of_stream' || message.type === 'error') {
        return { state: { ...state, done: true }, effects: [], outcome: { kind: 'ended', closeSocket: false, code: 1000, reason: 'abandoned' } };
      }
      return { state, effects: [] };
    }
    if (message.type !== 'error') return onServer(state, message as Exclude<SM, { type: 'error' }>);
    const m = message as unknown as ErrorMessage;
    const error = new VoicewireError('PROTOCOL_SERVER_ERROR', m.message, m.code === undefined ? {} : { closeCode: m.code });
    return {
      state: { ...state, done: true },
      effects: [emit(clientError(state.key, error))],
      outcome: { kind: 'failed', closeSocket: state.key === null, code: m.code ?? 1011, reason: m.message },
    };
  }

  return {
    route,
    parse: parts.parse,
    start: parts.start,
    transition(state, event) {
      switch (event.type) {
        case 'send':
          if (state.done) return refuse(route, state, `cannot send '${event.message.type}': the request has ended`);
          if (state.abandoned) return refuse(route, state, `cannot send '${event.message.type}': the request was abandoned`);
          return onSend(state, event.message);
        case 'server':
          if (state.done) return { state, effects: [] };
          return server(state, event.message);
        case 'abandon': {
          if (state.done || state.abandoned) return { state, effects: [] };
          const effects: Eff[] = [];
          if (!state.eosSent && !state.idle) effects.push({ type: 'send', message: state.key === null ? { type: 'end_of_stream' } : { type: 'end_of_stream', client_req_id: state.key } });
          if (state.idle) return { state: { ...state, done: true }, effects, outcome: { kind: 'ended', closeSocket: false, code: 1000, reason: 'abandoned' } };
          return { state: { ...state, abandoned: true, eosSent: true }, effects };
        }
        case 'socket_ending':
          return { state: { ...state, eosSent: true }, effects: [] };
        case 'transport_closed': {
          if (state.done || state.idle || state.abandoned) return { state: { ...state, done: true }, effects: [] };
          const error = new VoicewireError('PROTOCOL_CONNECTION_CLOSED', `${route}: the socket closed (${event.code}${event.reason ? ` ${event.reason}` : ''}) before the request ended`, {
            details: { code: event.code, reason: event.reason },
          });
          return { state: { ...state, done: true }, effects: [emit(clientError(state.key, error))] };
        }
      }
    },
    isActive: (state) => !state.done && !state.idle,
    keepsSocketOpen: (state) => !closesOnEos(state.setup),
    emitError: (error, key) => emit(clientError(key, error)),
    emitClosed: (code, reason) => emit({ type: 'closed' as const, code, reason }),
    emitMessage: (message) => emit({ type: 'message' as const, message }),
  };
}
