/**
 * Socket-level session machines, shared by STT and TTS, server and client side: they own the
 * requests of one WebSocket, keyed by `client_req_id` (docs/api.md §4.4 "Multiplexing",
 * protocol-notes.md), and delegate each message to that request's own machine.
 *
 * Rules (pure data in, pure data out; see the README's protocol section for the diagram):
 * - The first message must be a `setup` (§3.2); otherwise `error` 1008 and close.
 * - A request is keyed by its `client_req_id`, or by `null` (the anonymous request of a socket
 *   that does not multiplex). Each request has its own machine and its own timing state.
 * - A `setup` for a new id starts a request; for an id whose request is still active it is an
 *   error for that id (`PROTOCOL_DUPLICATE_REQUEST_ID`); for an idle request (after its
 *   `end_of_stream` with `close_ws_on_eos: false`) it configures it again.
 * - Every server message of a request carries its id. Engine events of a finished request or of
 *   an older stream of the same id are dropped.
 * - The socket is *multiplexed* once a request with an id and `close_ws_on_eos: false` started.
 *   Until then a message without an id (other than `setup`) goes to the single live request, even
 *   when its setup named an id (§4.4: `client_req_id` is required only when multiplexed); the
 *   server's messages for that request still carry its id.
 *   On a multiplexed socket an error that names an id ends only that request; an error that names
 *   no id (unparseable message, message without id that no request owns) ends the socket.
 * - A named request is forgotten once it ended; the anonymous request returns to `configured`
 *   (§3.2 `close_ws_on_eos` false) and takes audio (or a new setup) again.
 * - `end_of_stream` without an id on a multiplexed socket (no anonymous request) ends the socket:
 *   every active request is ended as if it had sent `end_of_stream`, and once all have answered,
 *   the server sends `end_of_stream` (no id) and closes with 1000.
 * - At most `maxRequests` requests live on one socket (default {@link DEFAULT_MAX_REQUESTS_PER_SOCKET}).
 *   A setup for one more id is answered with `error` `PROTOCOL_TOO_MANY_REQUESTS` (1008, §7.3)
 *   carrying that id; on a multiplexed socket the other requests go on, otherwise the socket
 *   closes (as for any error of a socket that does not multiplex).
 *
 * Cost (issue 11 §2): the requests are a persistent map ({@link RequestMap}), so a message costs
 * O(log n) in the number of open requests, and opening, closing and ending n requests O(n log n).
 */
import { functionArg, objectArg, optionsArg, shown } from '../util/args.js';
import { VoicewireError, toVoicewireError, type ErrorCode } from '../util/errors.js';
import type { ErrorMessage } from '../protocol/messages.js';
import { endOfStreamMessage, errorMessageOf, type ProtocolErrorDetails, type RawMessage } from '../protocol/parse.js';
import { RequestMap } from './request-map.js';

/** The key of a request on a socket: its `client_req_id`, or `null` for the anonymous request. */
export type RequestKey = string | null;

/** How a request ended, as its machine reports it to the socket machine. */
export interface RequestOutcome {
  /** `ended`: `end_of_stream` was sent. `failed`: `error` was sent. `aborted`: the socket went away. */
  kind: 'ended' | 'failed' | 'aborted';
  /** The request asks the socket to close (`close_ws_on_eos` true, or an error of a non-multiplexed request). */
  closeSocket: boolean;
  /** Close code when the socket closes: 1000 after `end_of_stream`, the error's code after an error. */
  code: number;
  reason: string;
}

/** What a request machine returns. */
export interface RequestStep<RS, E> {
  state: RS;
  effects: E[];
  /** Set when the request ended by this step. */
  outcome?: RequestOutcome;
  /** True when the step opened a new engine stream with the `nextStream` number it was given. */
  usedStream?: boolean;
}

/** Events a server-side request machine takes. */
export type ServerRequestEvent<CM, EE> =
  | { type: 'client'; message: CM }
  | { type: 'engine'; stream: number; event: EE }
  | { type: 'failure'; stream?: number; error: VoicewireError }
  | { type: 'abort' };

/** Lifecycle notices a server session emits (for logs and metrics). */
export type ServerSessionNotice =
  | { type: 'request_started'; clientReqId: RequestKey }
  | { type: 'request_ended'; clientReqId: RequestKey; outcome: RequestOutcome['kind']; error?: VoicewireError }
  | { type: 'session_closed'; code: number; reason: string };

/** Effects every server session produces, whatever the route. */
export type ServerBaseEffect<SM> =
  | { type: 'send'; message: SM }
  | { type: 'close'; code: number; reason: string }
  | { type: 'emit'; event: ServerSessionNotice };

/** A server-side request machine (one per request), as {@link createServerSessionMachine} drives it. */
export interface ServerRequestMachine<RS, CM extends { type: string; client_req_id?: string }, EE, E> {
  /** `STT` or `TTS`, for messages. */
  readonly route: string;
  parse(raw: RawMessage): CM;
  /** Starts a request from its `setup`, with engine stream number `stream`. */
  start(setup: CM, key: RequestKey, stream: number): RequestStep<RS, E>;
  transition(state: RS, event: ServerRequestEvent<CM, EE>, nextStream: number): RequestStep<RS, E>;
  /** True when the request is idle (back in `configured` after `end_of_stream`). */
  isIdle(state: RS): boolean;
  /** True when the setup asked to keep the socket open after end of stream. */
  keepsSocketOpen(state: RS): boolean;
  send(message: ErrorMessage | { type: 'end_of_stream'; client_req_id?: string }): E;
}

/** Default of {@link ServerSessionMachineOptions.maxRequests}: requests live at once on one socket. */
export const DEFAULT_MAX_REQUESTS_PER_SOCKET = 256;

/** Options of {@link createServerSessionMachine}. */
export interface ServerSessionMachineOptions {
  /**
   * Most requests live at once on one socket (each holds an engine stream and its buffers). A
   * setup beyond it gets `error` `PROTOCOL_TOO_MANY_REQUESTS` with its id. Default 256
   * ({@link DEFAULT_MAX_REQUESTS_PER_SOCKET}).
   */
  maxRequests?: number;
}

/** State of a server socket. Treat as immutable. */
export interface ServerSessionState<RS> {
  /** `connected` until the first setup, `open` while serving, `ending` after a socket-level `end_of_stream`, then `closed`. */
  readonly phase: 'connected' | 'open' | 'ending' | 'closed';
  readonly requests: ReadonlyMap<RequestKey, RS>;
  /** Sticky: a request with an id and `close_ws_on_eos: false` was accepted on this socket. */
  readonly multiplexed: boolean;
  /** Next engine stream number (unique per socket, so late events of any old stream are recognised). */
  readonly nextStream: number;
  /** Requests that are not idle (kept so that the end of a socket-level end_of_stream is O(1) to see). */
  readonly activeRequests?: number;
}

/** Events a server socket takes. */
export type ServerSessionEvent<EE> =
  | { type: 'receive'; data: RawMessage }
  | { type: 'engine'; key: RequestKey; stream: number; event: EE }
  | { type: 'engine_failure'; key: RequestKey; stream: number; error: VoicewireError }
  /**
   * The server application ends a request or the socket with an error (`session.fail`): with the
   * id of a live request on a multiplexed socket, only that request fails (`error` with its id);
   * otherwise `error` (with the single request's id, if it has one) and close with the error's code.
   */
  | { type: 'server_failure'; clientReqId?: string; error: VoicewireError }
  | { type: 'transport_closed' };

/** A socket-level machine: `transition(state, event) → { state, effects }`. */
export interface SessionMachine<S, Ev, E> {
  initial(): S;
  transition(state: S, event: Ev): { state: S; effects: E[] };
}

/**
 * Builds the socket-level server machine over a request machine (see the module comment for the
 * rules). The STT and TTS server machines are this over their request machines.
 */
export function createServerSessionMachine<RS, CM extends { type: string; client_req_id?: string }, EE, E>(
  request: ServerRequestMachine<RS, CM, EE, E>,
  options: ServerSessionMachineOptions = {},
): SessionMachine<ServerSessionState<RS>, ServerSessionEvent<EE>, E | ServerBaseEffect<never>> {
  checkRequestMachine(request, 'createServerSessionMachine');
  options = optionsArg(options, 'createServerSessionMachine: options');
  type Eff = E | ServerBaseEffect<never>;
  type S = ServerSessionState<RS>;
  const maxRequests = options.maxRequests ?? DEFAULT_MAX_REQUESTS_PER_SOCKET;
  if (!(Number.isInteger(maxRequests) && maxRequests >= 1)) {
    throw new VoicewireError('INVALID_ARGUMENT', `maxRequests must be a positive integer, got ${shown(options.maxRequests)}`);
  }

  const active = (state: S): number => state.activeRequests ?? countActive(state.requests, (rs) => !request.isIdle(rs));

  const notice = (event: ServerSessionNotice): Eff => ({ type: 'emit', event });
  const errorFor = (key: RequestKey, error: VoicewireError): Eff => request.send(errorMessageOf(error, key ?? undefined));

  /** Closes the socket: every live request is aborted (its engine stream closed), no more sends. */
  function closeSocket(state: S, effects: Eff[], code: number, reason: string): S {
    for (const rs of state.requests.values()) pushAll(effects, request.transition(rs, { type: 'abort' }, state.nextStream).effects);
    effects.push({ type: 'close', code, reason }, notice({ type: 'session_closed', code, reason }));
    return { ...state, phase: 'closed', requests: RequestMap.empty(), activeRequests: 0 };
  }

  function withRequest(state: S, key: RequestKey, rs: RS | null): S {
    const map = requestMap(state.requests);
    const old = map.get(key);
    const delta = (rs !== null && !request.isIdle(rs) ? 1 : 0) - (old !== undefined && !request.isIdle(old) ? 1 : 0);
    const requests = rs === null ? map.delete(key) : map.set(key, rs);
    return { ...state, requests, activeRequests: active(state) + delta };
  }

  /** Applies a request step: stores the state, forwards effects, handles the outcome. */
  function applyStep(state: S, key: RequestKey, step: RequestStep<RS, E>, effects: Eff[]): S {
    pushAll(effects, step.effects);
    let next: S = step.usedStream ? { ...state, nextStream: state.nextStream + 1 } : state;
    const outcome = step.outcome;
    if (outcome === undefined) return withRequest(next, key, step.state);
    const error = outcome.kind === 'failed' ? new VoicewireError('PROTOCOL_SERVER_ERROR', outcome.reason, { closeCode: outcome.code }) : undefined;
    effects.push(notice(error ? { type: 'request_ended', clientReqId: key, outcome: outcome.kind, error } : { type: 'request_ended', clientReqId: key, outcome: outcome.kind }));
    const keep = outcome.kind === 'ended' && key === null && !outcome.closeSocket;
    next = withRequest(next, key, keep ? step.state : null);
    const closes = outcome.kind === 'failed' ? key === null || !next.multiplexed : outcome.closeSocket;
    if (closes) return closeSocket(next, effects, outcome.kind === 'failed' ? outcome.code : 1000, outcome.reason);
    return maybeFinishEnding(next, effects);
  }

  function maybeFinishEnding(state: S, effects: Eff[]): S {
    if (state.phase !== 'ending' || active(state) > 0) return state;
    effects.push(request.send(endOfStreamMessage()));
    return closeSocket(state, effects, 1000, 'end of stream');
  }

  /** An error not owned by any live request: answered with `error`; closes unless it names an id on a multiplexed socket. */
  function orphanError(state: S, key: RequestKey, error: VoicewireError, effects: Eff[]): S {
    effects.push(errorFor(key, error));
    if (key === null || !state.multiplexed) return closeSocket(state, effects, error.closeCode ?? 1008, error.message);
    return state;
  }

  function startRequest(state: S, key: RequestKey, setup: CM, effects: Eff[]): S {
    const step = request.start(setup, key, state.nextStream);
    let next: S = { ...state, phase: state.phase === 'connected' ? 'open' : state.phase, nextStream: state.nextStream + 1 };
    if (key !== null && request.keepsSocketOpen(step.state)) next = { ...next, multiplexed: true };
    effects.push(notice({ type: 'request_started', clientReqId: key }));
    return applyStep(next, key, { ...step, usedStream: false }, effects);
  }

  /**
   * §4.4: `client_req_id` is required only when a request is multiplexed. On a socket that is not
   * multiplexed, a message without an id (other than `setup`) belongs to its single live request,
   * whether or not that request's setup named an id.
   */
  function routeKey(state: S, message: CM): RequestKey {
    const id = message.client_req_id;
    if (id !== undefined) return id;
    if (state.multiplexed || message.type === 'setup' || state.requests.size !== 1 || state.requests.has(null)) return null;
    return requestMap(state.requests).first() ?? null;
  }

  function receive(state: S, data: RawMessage, effects: Eff[]): S {
    let message: CM;
    try {
      message = request.parse(data);
    } catch (err) {
      const error = toVoicewireError(err, 'PROTOCOL_INVALID_MESSAGE');
      const id = (error.details as ProtocolErrorDetails | undefined)?.clientReqId;
      const key: RequestKey = id ?? null;
      if (state.phase === 'connected') {
        effects.push(errorFor(key, error));
        return closeSocket(state, effects, error.closeCode ?? 1008, error.message);
      }
      const rs = state.requests.get(key);
      if (rs !== undefined && !request.isIdle(rs)) {
        return applyStep(state, key, request.transition(rs, { type: 'failure', error }, state.nextStream), effects);
      }
      return orphanError(state, key, error, effects);
    }
    const key: RequestKey = routeKey(state, message);
    if (state.phase === 'connected') {
      if (message.type !== 'setup') {
        const error = new VoicewireError('PROTOCOL_SETUP_REQUIRED', `${request.route}: the first message must be 'setup', got '${message.type}' (docs/api.md §3.2)`);
        effects.push(errorFor(key, error));
        return closeSocket(state, effects, 1008, error.message);
      }
      return startRequest(state, key, message, effects);
    }
    if (state.phase === 'ending') {
      const error = new VoicewireError('PROTOCOL_UNEXPECTED_MESSAGE', `${request.route}: '${message.type}' after the socket-level end_of_stream`);
      effects.push(errorFor(key, error));
      return closeSocket(state, effects, 1008, error.message);
    }
    const rs = state.requests.get(key);
    if (rs !== undefined) {
      return applyStep(state, key, request.transition(rs, { type: 'client', message }, state.nextStream), effects);
    }
    if (message.type === 'setup') {
      if (state.requests.size >= maxRequests) {
        const error = new VoicewireError('PROTOCOL_TOO_MANY_REQUESTS', `${request.route}: this socket already has ${state.requests.size} requests open, the most it takes; end one before starting another`, {
          details: { limit: maxRequests },
        });
        return orphanError(state, key, error, effects);
      }
      return startRequest(state, key, message, effects);
    }
    if (key === null && message.type === 'end_of_stream') {
      // protocol-notes.md: end_of_stream without client_req_id on a multiplexed socket ends the socket.
      let next: S = { ...state, phase: 'ending' };
      for (const [k, r] of state.requests) {
        if (request.isIdle(r)) continue;
        const eos = { type: 'end_of_stream', client_req_id: k ?? undefined } as unknown as CM;
        const step = request.transition(r, { type: 'client', message: eos }, next.nextStream);
        next = applyStep(next, k, step, effects);
        if (next.phase === 'closed') return next;
      }
      return maybeFinishEnding(next, effects);
    }
    const code: ErrorCode = 'PROTOCOL_UNKNOWN_REQUEST_ID';
    const error =
      key === null
        ? new VoicewireError(code, `${request.route}: '${message.type}' has no client_req_id, and this socket carries only multiplexed requests`)
        : new VoicewireError(code, `${request.route}: '${message.type}' names client_req_id ${JSON.stringify(key)}, which has no active request (send its setup first)`);
    return orphanError(state, key, error, effects);
  }

  return {
    initial: () => ({ phase: 'connected', requests: RequestMap.empty<RS>(), multiplexed: false, nextStream: 1, activeRequests: 0 }),
    transition(state, event) {
      const effects: Eff[] = [];
      if (state.phase === 'closed') return { state, effects };
      switch (event.type) {
        case 'receive':
          return { state: receive(state, event.data, effects), effects };
        case 'engine':
        case 'engine_failure': {
          const rs = state.requests.get(event.key);
          if (rs === undefined) return { state, effects }; // late event of a finished request: dropped
          const reqEvent: ServerRequestEvent<CM, EE> =
            event.type === 'engine' ? { type: 'engine', stream: event.stream, event: event.event } : { type: 'failure', stream: event.stream, error: event.error };
          return { state: applyStep(state, event.key, request.transition(rs, reqEvent, state.nextStream), effects), effects };
        }
        case 'server_failure': {
          const error = event.error;
          const key: RequestKey = event.clientReqId ?? routeKey(state, { type: 'error' } as CM);
          const rs = state.requests.get(key);
          if (rs !== undefined && state.phase !== 'connected') {
            return { state: applyStep(state, key, request.transition(rs, { type: 'failure', error }, state.nextStream), effects), effects };
          }
          if (event.clientReqId !== undefined && state.multiplexed) return { state, effects }; // that request already ended
          effects.push(errorFor(null, error));
          return { state: closeSocket(state, effects, error.closeCode ?? 1011, error.message), effects };
        }
        case 'transport_closed': {
          for (const rs of state.requests.values()) pushAll(effects, request.transition(rs, { type: 'abort' }, state.nextStream).effects);
          effects.push(notice({ type: 'session_closed', code: 1006, reason: 'transport closed' }));
          return { state: { ...state, phase: 'closed', requests: RequestMap.empty(), activeRequests: 0 }, effects };
        }
      }
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Client side
// ---------------------------------------------------------------------------------------------

/** Events a client-side request machine takes. */
export type ClientRequestEvent<CM, SM> =
  | { type: 'send'; message: CM }
  | { type: 'server'; message: SM }
  | { type: 'abandon' }
  /** The client sent `end_of_stream` without an id: every request is ending. */
  | { type: 'socket_ending' }
  | { type: 'transport_closed'; code: number; reason: string };

/** Events a client session reports to the application. */
export type ClientBaseEvent =
  | { type: 'error'; error: VoicewireError; clientReqId?: string }
  | { type: 'closed'; code: number; reason: string };

/** Effects every client session produces. */
export type ClientBaseEffect<CM> =
  | { type: 'send'; message: CM }
  | { type: 'close'; code: number; reason: string }
  /** A local call was refused (wrong state): the runner throws this error to the caller. */
  | { type: 'reject'; error: VoicewireError };

/** A client-side request machine. */
export interface ClientRequestMachine<RS, CM extends { type: string; client_req_id?: string }, SM extends { type: string; client_req_id?: string }, E> {
  readonly route: string;
  parse(raw: RawMessage): SM;
  /** Starts a request by sending its setup. */
  start(setup: CM, key: RequestKey): RequestStep<RS, E>;
  transition(state: RS, event: ClientRequestEvent<CM, SM>): RequestStep<RS, E>;
  /** True while the request may still receive messages (not idle, not finished). */
  isActive(state: RS): boolean;
  /** True when this request keeps the socket open after its end (`close_ws_on_eos: false`). */
  keepsSocketOpen(state: RS): boolean;
  emitError(error: VoicewireError, key: RequestKey): E;
  emitClosed(code: number, reason: string): E;
  /** The event for a socket-level server message (the final `end_of_stream` without id). */
  emitMessage(message: SM): E;
}

/** State of a client socket. */
export interface ClientSessionState<RS> {
  /** `idle` before the first setup, `open`, `ending` after a socket-level end_of_stream, `closed`. */
  readonly phase: 'idle' | 'open' | 'ending' | 'closed';
  readonly requests: ReadonlyMap<RequestKey, RS>;
}

/** Events a client socket takes: local sends, received frames, abandon, transport close. */
export type ClientSessionEvent<CM> =
  | { type: 'send'; message: CM }
  | { type: 'receive'; data: RawMessage }
  | { type: 'abandon'; clientReqId: string }
  | { type: 'transport_closed'; code: number; reason: string };

/**
 * Builds the socket-level client machine. Server messages are routed by `client_req_id`; messages
 * for an id the client no longer tracks (abandoned or finished) are dropped. A server `error`
 * without an id fails every request; a server protocol violation makes the client report an error
 * and close the socket (code 1000: browsers may only close with 1000 or 3000–4999).
 */
export function createClientSessionMachine<RS, CM extends { type: string; client_req_id?: string }, SM extends { type: string; client_req_id?: string }, E>(
  request: ClientRequestMachine<RS, CM, SM, E>,
): SessionMachine<ClientSessionState<RS>, ClientSessionEvent<CM>, E | ClientBaseEffect<CM>> {
  checkRequestMachine(request, 'createClientSessionMachine');
  type Eff = E | ClientBaseEffect<CM>;
  type S = ClientSessionState<RS>;

  function withRequest(state: S, key: RequestKey, rs: RS | null): S {
    const map = requestMap(state.requests);
    return { ...state, requests: rs === null ? map.delete(key) : map.set(key, rs) };
  }

  function fail(state: S, effects: Eff[], error: VoicewireError, closeCode: number): S {
    let anyActive = false;
    for (const [key, rs] of state.requests) {
      if (!request.isActive(rs)) continue;
      anyActive = true;
      effects.push(request.emitError(error, key));
    }
    if (!anyActive) effects.push(request.emitError(error, null));
    effects.push({ type: 'close', code: closeCode, reason: 'protocol error' });
    return { ...state, requests: RequestMap.empty(), phase: 'closed' };
  }

  function apply(state: S, key: RequestKey, step: RequestStep<RS, E>, effects: Eff[]): S {
    pushAll(effects, step.effects);
    if (step.outcome === undefined) return withRequest(state, key, step.state);
    const keep = step.outcome.kind === 'ended' && !step.outcome.closeSocket && key === null;
    let next = withRequest(state, key, keep ? step.state : null);
    if (step.outcome.kind === 'failed' && step.outcome.closeSocket) {
      // The server closes the socket after an error that ends it; every other request dies with it.
      for (const [k, rs] of next.requests) {
        if (request.isActive(rs)) effects.push(request.emitError(new VoicewireError('PROTOCOL_CONNECTION_CLOSED', `The server ended the socket: ${step.outcome.reason}`), k));
      }
      next = { ...next, requests: RequestMap.empty(), phase: 'closed' };
    }
    return next;
  }

  /** Mirrors the server's routing (§4.4): without an id, a message goes to the single live request of a socket that does not multiplex. */
  function clientRouteKey(state: S, message: CM): RequestKey {
    const id = message.client_req_id;
    if (id !== undefined || message.type === 'setup' || state.requests.size !== 1 || state.requests.has(null)) return id ?? null;
    const k = requestMap(state.requests).first() ?? null;
    return request.keepsSocketOpen(state.requests.get(k)!) ? null : k;
  }

  function refuse(effects: Eff[], message: string): void {
    effects.push({ type: 'reject', error: new VoicewireError('INVALID_STATE', message) });
  }

  return {
    initial: () => ({ phase: 'idle', requests: RequestMap.empty<RS>() }),
    transition(state, event) {
      const effects: Eff[] = [];
      switch (event.type) {
        case 'send': {
          const message = event.message;
          const key: RequestKey = clientRouteKey(state, message);
          if (state.phase === 'closed' || state.phase === 'ending') {
            refuse(effects, `${request.route}: cannot send '${message.type}': the session is ${state.phase}`);
            return { state, effects };
          }
          const rs = state.requests.get(key);
          if (rs !== undefined) return { state: apply(state, key, request.transition(rs, { type: 'send', message }), effects), effects };
          if (message.type === 'setup') return { state: apply({ ...state, phase: 'open' }, key, request.start(message, key), effects), effects };
          if (key === null && message.type === 'end_of_stream' && state.phase === 'open') {
            // protocol-notes.md: end_of_stream without client_req_id on a multiplexed socket ends the socket.
            effects.push({ type: 'send', message });
            let next: S = { ...state, phase: 'ending' };
            for (const [k, r] of state.requests) {
              if (request.isActive(r)) next = apply(next, k, request.transition(r, { type: 'socket_ending' }), effects);
            }
            return { state: next, effects };
          }
          refuse(effects, `${request.route}: cannot send '${message.type}' for ${key === null ? 'the socket' : `client_req_id ${JSON.stringify(key)}`}: send its setup first`);
          return { state, effects };
        }
        case 'receive': {
          if (state.phase === 'closed') return { state, effects };
          let message: SM;
          try {
            message = request.parse(event.data);
          } catch (err) {
            return { state: fail(state, effects, toVoicewireError(err, 'PROTOCOL_INVALID_MESSAGE'), 1000), effects };
          }
          const key: RequestKey = message.client_req_id ?? null;
          const rs = state.requests.get(key);
          if (rs !== undefined) return { state: apply(state, key, request.transition(rs, { type: 'server', message }), effects), effects };
          if (key !== null) return { state, effects }; // late message of an abandoned or finished request: dropped
          if (message.type === 'error') {
            const m = message as unknown as ErrorMessage;
            const error = new VoicewireError('PROTOCOL_SERVER_ERROR', m.message, m.code === undefined ? {} : { closeCode: m.code });
            let anyActive = false;
            for (const [k, r] of state.requests) {
              if (!request.isActive(r)) continue;
              anyActive = true;
              effects.push(request.emitError(error, k));
            }
            if (!anyActive) effects.push(request.emitError(error, null));
            return { state: { ...state, requests: RequestMap.empty(), phase: 'closed' }, effects };
          }
          if (message.type === 'end_of_stream' && state.phase === 'ending') {
            effects.push(request.emitMessage(message));
            return { state: { ...state, phase: 'closed' }, effects };
          }
          const error = new VoicewireError('PROTOCOL_UNEXPECTED_MESSAGE', `${request.route}: the server sent '${message.type}' without client_req_id, and no request on this socket is anonymous`);
          return { state: fail(state, effects, error, 1000), effects };
        }
        case 'abandon': {
          const rs = state.requests.get(event.clientReqId);
          if (rs === undefined) return { state, effects };
          return { state: apply(state, event.clientReqId, request.transition(rs, { type: 'abandon' }), effects), effects };
        }
        case 'transport_closed': {
          for (const rs of state.requests.values()) pushAll(effects, request.transition(rs, { type: 'transport_closed', code: event.code, reason: event.reason }).effects);
          effects.push(request.emitClosed(event.code, event.reason));
          return { state: { ...state, requests: RequestMap.empty(), phase: 'closed' }, effects };
        }
      }
    },
  };
}

/** `effects.push(...more)` without spreading (a spread of a long array can overflow the stack). */
function pushAll<T>(effects: T[], more: readonly T[]): void {
  for (const e of more) effects.push(e);
}

/** The state's requests as a {@link RequestMap} (a state built by hand may hold a plain Map: converted once). */
function requestMap<RS>(requests: ReadonlyMap<RequestKey, RS>): RequestMap<RS> {
  if (requests instanceof RequestMap) return requests as RequestMap<RS>;
  let map = RequestMap.empty<RS>();
  for (const [k, v] of requests) map = map.set(k, v);
  return map;
}

function countActive<RS>(requests: ReadonlyMap<RequestKey, RS>, isActive: (rs: RS) => boolean): number {
  let n = 0;
  for (const rs of requests.values()) if (isActive(rs)) n++;
  return n;
}

function checkRequestMachine(request: { parse: unknown; start: unknown; transition: unknown }, what: string): void {
  objectArg(request, `${what}: request`);
  for (const k of ['parse', 'start', 'transition'] as const) functionArg(request[k], `${what}: request.${k}`);
}
