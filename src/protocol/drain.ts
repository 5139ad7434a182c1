/**
 * The drain state of an edge instance (docs/api.md §3.1): `serving ⇄ draining`, moved by
 * `POST /drain?enable=true|false` (admin only; `enable` defaults to true). `GET /readyz` answers
 * 200 while serving and 503 while draining, so a load balancer stops sending new sessions while
 * live ones finish.
 *
 * §3.1 prescribes only the readiness answer. voicewire also counts live sessions, so a server can
 * refuse new ones while draining (`PROTOCOL_DRAINING`) and learn when the last one ended
 * (`drained`), which is when the instance can stop.
 */
import { objectArg } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';
import { makeIssue, parseLaxBoolean, type ValidationErrorBody } from './validate.js';

/** State of the drain machine. */
export interface DrainState {
  readonly mode: 'serving' | 'draining';
  /** Live sessions (sockets and streaming HTTP requests) counted by `session_opened` / `session_closed`. */
  readonly sessions: number;
}

/** Events of the drain machine. */
export type DrainEvent =
  /** POST /drain (enable default true). */
  | { type: 'drain'; enable?: boolean }
  | { type: 'session_opened' }
  | { type: 'session_closed' };

/** Effects of the drain machine. */
export type DrainEffect =
  /** The readiness answer changed. */
  | { type: 'readiness'; status: 200 | 503 }
  /** Draining and no session left: the instance may stop. */
  | { type: 'drained' };

/** The initial state: serving, no sessions. */
export function drainInitialState(): DrainState {
  return { mode: 'serving', sessions: 0 };
}

function checkDrainState(state: DrainState): void {
  objectArg(state, 'drain state');
  if ((state.mode !== 'serving' && state.mode !== 'draining') || !Number.isInteger(state.sessions)) {
    throw new VoicewireError('INVALID_ARGUMENT', 'drain state must be { mode: "serving" | "draining", sessions: integer } (from drainInitialState())');
  }
}

/** The drain machine (§3.1). Pure. */
export function drainTransition(state: DrainState, event: DrainEvent): { state: DrainState; effects: DrainEffect[] } {
  checkDrainState(state);
  objectArg(event, 'drainTransition: event');
  const effects: DrainEffect[] = [];
  switch (event.type) {
    case 'drain': {
      const mode = event.enable === false ? 'serving' : 'draining';
      if (mode !== state.mode) effects.push({ type: 'readiness', status: mode === 'serving' ? 200 : 503 });
      if (mode === 'draining' && state.mode !== 'draining' && state.sessions === 0) effects.push({ type: 'drained' });
      return { state: { ...state, mode }, effects };
    }
    case 'session_opened':
      return { state: { ...state, sessions: state.sessions + 1 }, effects };
    case 'session_closed': {
      const sessions = Math.max(0, state.sessions - 1);
      if (state.mode === 'draining' && sessions === 0 && state.sessions > 0) effects.push({ type: 'drained' });
      return { state: { ...state, sessions }, effects };
    }
  }
}

/** The `GET /readyz` answer: 200 while serving, 503 while draining (§3.1, §7.4). */
export function readiness(state: DrainState): { status: 200 | 503; body: { status: 'ready' | 'draining' } } {
  checkDrainState(state);
  return state.mode === 'serving' ? { status: 200, body: { status: 'ready' } } : { status: 503, body: { status: 'draining' } };
}

/**
 * Whether a new session may start. Throws `PROTOCOL_DRAINING` (HTTP 503) while draining, for a
 * server that wants to refuse new sessions rather than rely on the load balancer alone.
 */
export function assertAcceptingSessions(state: DrainState): void {
  checkDrainState(state);
  if (state.mode === 'draining') throw new VoicewireError('PROTOCOL_DRAINING', 'The instance is draining and takes no new sessions');
}

/**
 * Parses the `enable` query parameter of `POST /drain` (§4.1: boolean, optional, default true)
 * like pydantic: `true/false`, `1/0`, `yes/no`, `on/off`, `t/f`, `y/n`, any case.
 *
 * @throws VoicewireError `VALIDATION_FAILED` with the 422 body (`bool_parsing` at `["query", "enable"]`).
 */
export function parseDrainQuery(query: URLSearchParams | Record<string, string | string[] | undefined>): { enable: boolean } {
  objectArg(query, 'parseDrainQuery: query');
  const raw = query instanceof URLSearchParams ? query.get('enable') : query['enable'];
  const value = Array.isArray(raw) ? raw[raw.length - 1] : raw;
  if (value === undefined || value === null) return { enable: true };
  const enable = parseLaxBoolean(value);
  if (enable === undefined) {
    const body: ValidationErrorBody = { detail: [makeIssue(['query', 'enable'], 'bool_parsing', value)] };
    throw new VoicewireError('VALIDATION_FAILED', `query.enable: ${body.detail[0]!.msg}`, { details: body });
  }
  return { enable };
}
