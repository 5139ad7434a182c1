/**
 * The WebSocket side of the routes: authenticate on the upgraded socket (frames wait: the socket
 * is paused until the session is attached, so a client that pipelines setup and data before
 * `ready` loses nothing), count the session, attach the runner (src/node/ws-session.ts), and
 * enforce the per-socket limits: session duration, idle time, pings for dead peers, unsent bytes
 * of a peer that does not read (§5.6, §7.3).
 */
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import { VoicewireError, toVoicewireError } from '../util/errors.js';
import { errorMessageOf, serializeSttServerMessage } from '../protocol/parse.js';
import type { ServerSession, ServerSessionOptions } from '../sessions/server.js';
import { sendAudioLine, type AudioLineSpan } from '../sessions/server-session.js';
import { attachWebSocketSession, type WebSocketTransport, type WsFrameData } from '../node/ws-session.js';
import type { Principal } from './auth.js';
import type { RequestScope } from './context.js';
import { FirstOutputStages } from './first-output-stages.js';
import { jsonDepthExceededAt, jsonTooDeepReason } from '../protocol/json-depth.js';
import { restErrorResponse } from '../protocol/rest.js';

/** Sends `error` (code from the error, 1011 when none) and closes with that code (§7.3). */
export function failSocket(ws: WebSocket, error: unknown): void {
  const e = toVoicewireError(error);
  const msg = errorMessageOf(e);
  if (ws.readyState !== ws.OPEN) return;
  ws.send(serializeSttServerMessage(msg), () => ws.close(msg.code, e.message.slice(0, 120)));
}

/**
 * Refuses a WebSocket upgrade with an HTTP answer instead of the 101 (the REST form of the error,
 * §7.1: `PROTOCOL_DRAINING` is 503), then closes the connection. Before the 101 a load balancer
 * can still retry the request on another instance (HAProxy `retry-on 503` with `option
 * redispatch`); after it, an in-band `error` 1013 reached the client as a failed call (issue 36).
 */
export function refuseUpgrade(socket: Duplex, error: unknown): void {
  const r = restErrorResponse(toVoicewireError(error));
  const head = [
    `HTTP/1.1 ${r.status} ${STATUS_CODES[r.status] ?? ''}`,
    `content-type: ${r.contentType}`,
    `content-length: ${Buffer.byteLength(r.body)}`,
    'connection: close',
  ];
  socket.end(`${head.join('\r\n')}\r\n\r\n${r.body}`);
}

/** Options of {@link serveWebSocketSession}. */
export interface WsSessionOptions {
  /** Route label for metrics, logs and /statusz (`tts_ws`, `stt_ws`). */
  route: string;
  /** `tts` accepts `?token=`. */
  credentials: 'tts' | 'stt';
  /** Creates the runner with the common options (transport, request ids, notices → logs); its engine reports to `stages`. */
  create(who: Principal, common: ServerSessionOptions, stages: FirstOutputStages): ServerSession<unknown>;
  /** The first message of this type (after setup) is timed: `audio` (TTS) or `text` (STT). */
  firstOutput: 'audio' | 'text';
  /**
   * Whether a text line the session sends is its first output; default: a line of type
   * `firstOutput` (`{"type":"audio"` / `{"type":"text"`). Doors with other event names say theirs.
   */
  isFirstOutput?: (line: string) => boolean;
  /** Answers a refused session (credentials, drain, per-key limit) before closing. Default {@link failSocket} (§7.3). */
  refuse?: (ws: WebSocket, error: VoicewireError) => void;
}

/**
 * A session's deadline in a {@link DueList}: a link of a doubly linked list, so that a session
 * that closes leaves it at once (nothing of it lingers until its deadline).
 */
class Due {
  at = 0;
  prev: Due | null = null;
  next: Due | null = null;
  listed = false;

  constructor(readonly guard: SessionGuard) {}
}

/**
 * Sessions waiting for a deadline, every one the same delay after its start: they are added in
 * deadline order, so one timer, armed for the head, serves them all (issue 22: a Node timer per
 * socket, two per session with their closures, was ~0.5 KiB of an idle session). Exact as
 * per-socket timers are: each deadline fires at its own time, not on a sweep's tick. A repeating
 * deadline is re-added when it fires, `now + delay` (as Node reschedules a setInterval), still
 * the latest of the list.
 */
class DueList {
  private head: Due | null = null;
  private tail: Due | null = null;
  private timer: NodeJS.Timeout | undefined;
  /** When the timer fires (Infinity: none armed). */
  private timerAt = Infinity;

  constructor(
    readonly delayMs: number,
    private readonly fire: (guard: SessionGuard) => void,
  ) {}

  /** Adds `d` to fire `delayMs` from now. */
  add(d: Due): void {
    d.at = performance.now() + this.delayMs;
    d.prev = this.tail;
    d.next = null;
    d.listed = true;
    if (this.tail !== null) this.tail.next = d;
    else this.head = d;
    this.tail = d;
    if (this.head === d) this.arm();
  }

  /**
   * Moves `d` (listed) to fire `delayMs` from now, in O(1): every deadline is the same delay after
   * its last move, so the moved one is the latest and goes to the tail. No timer is re-armed: one
   * armed for an earlier deadline fires first, finds the head not yet due and re-arms for it.
   */
  touch(d: Due): void {
    if (!d.listed) return;
    if (d === this.tail) d.at = performance.now() + this.delayMs;
    else {
      // Not the tail, so the list keeps another deadline: the removal leaves the timer armed.
      this.remove(d);
      this.add(d);
    }
  }

  remove(d: Due): void {
    if (!d.listed) return;
    d.listed = false;
    if (d.prev !== null) d.prev.next = d.next;
    else this.head = d.next;
    if (d.next !== null) d.next.prev = d.prev;
    else this.tail = d.prev;
    d.prev = d.next = null;
    // The head left: the timer waits for the new one (none: no timer at all).
    if (this.head === null) this.disarm();
  }

  private disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private arm(): void {
    if (this.head === null) return this.disarm();
    // A timer set for an earlier head fires first and re-arms for the head it then finds.
    if (this.timer !== undefined && this.timerAt <= this.head.at) return;
    this.disarm();
    this.timerAt = this.head.at;
    this.timer = setTimeout(this.run, Math.max(1, this.head.at - performance.now()));
    // Sessions' deadlines never keep the process alive (as their per-socket timers did not).
    this.timer.unref();
  }

  private readonly run = (): void => {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = performance.now();
    // Up to what is due now: a deadline re-added while running is later than now.
    while (this.head !== null && this.head.at <= now) {
      const d = this.head;
      this.remove(d);
      try {
        this.fire(d.guard);
      } catch (err) {
        // One session's failure must not stop the others' deadlines (nor reach the process).
        d.guard.scope.log.error({ route: d.guard.options.route, error: (err as Error).message }, 'session deadline failed');
      }
    }
    this.arm();
  };
}

/** The deadlines of one server's WebSocket sessions: pings, idleness and the session limit. */
interface Deadlines {
  ping: DueList;
  /** idleSeconds after the last frame either way: a session's deadline moves on each frame. */
  idle: DueList;
  end: DueList;
}

/** Per server (its context), created with its first WebSocket session. */
const deadlinesOf = new WeakMap<RequestScope['ctx'], Deadlines>();

function deadlines(ctx: RequestScope['ctx']): Deadlines {
  let d = deadlinesOf.get(ctx);
  if (d === undefined) {
    const limits = ctx.config.limits;
    d = {
      ping: new DueList(limits.pingSeconds * 1000, (g) => g.pingTick()),
      // Its own deadline, not a check on the ping tick: that closed an idle socket up to a ping
      // interval late (at 75 s for the documented 60 s, issue 31 §6).
      idle: new DueList(limits.idleSeconds * 1000, (g) => g.idleTimeout()),
      end: new DueList(limits.sessionSeconds * 1000, (g) => g.session.fail(new VoicewireError('LIMIT_EXCEEDED', `session longer than ${limits.sessionSeconds} s`))),
    };
    deadlinesOf.set(ctx, d);
  }
  return d;
}

/** Where a socket's {@link SessionGuard} is (the socket's listeners are shared functions: `this` is the socket). */
const GUARD = Symbol('voicewire.sessionGuard');
const guardOf = (ws: WebSocket): SessionGuard => (ws as unknown as Record<symbol, SessionGuard>)[GUARD]!;

/**
 * One WebSocket session's limits and measures: idle time, pings for dead peers, the ping rate,
 * the session's length, unsent bytes, the time to first output. One object per session with
 * shared methods and listeners, not a closure for each (issue 22).
 */
class SessionGuard {
  session!: ServerSession<unknown>;
  /** A pong or a frame arrived since the last ping. */
  alive = true;
  firstFrameAt = 0;
  timedFirst = false;
  pingWindowStart = 0;
  pingsInWindow = 0;
  readonly pingDue = new Due(this);
  readonly endDue = new Due(this);
  readonly idleDue = new Due(this);
  /** This server's deadlines (looked up once: the idle deadline moves on every frame). */
  readonly due: Deadlines;

  constructor(
    readonly ws: WebSocket,
    readonly scope: RequestScope,
    readonly options: WsSessionOptions,
    readonly stages: FirstOutputStages,
    readonly release: () => void,
  ) {
    this.due = deadlines(scope.ctx);
  }

  /** A frame from the peer, before the session sees it: limits first (false drops it). */
  onFrame(data: WsFrameData, isBinary: boolean): boolean {
    const limits = this.scope.ctx.config.limits;
    this.due.idle.touch(this.idleDue);
    // A frame proves the peer lives as well as a pong does: its pong may wait behind
    // megabytes it sent before it (300 multiplexed STT requests on a loaded machine, issue 25).
    this.alive = true;
    if (this.firstFrameAt === 0) this.firstFrameAt = performance.now();
    this.stages.frame();
    const size = Array.isArray(data) ? data.reduce((n, b) => n + b.length, 0) : data instanceof ArrayBuffer ? data.byteLength : data.length;
    if (size > limits.maxFrameBytes) {
      // An error message first (the Python client cannot see close codes), then the close.
      this.session.fail(new VoicewireError('LIMIT_EXCEEDED', `message of ${size} bytes is over the limit of ${limits.maxFrameBytes}`));
      return false;
    }
    // Before any parse (issue 20); the protocol parsers also refuse past MAX_JSON_DEPTH.
    if (!isBinary && !Array.isArray(data) && jsonDepthExceededAt(data instanceof ArrayBuffer ? new Uint8Array(data) : data, limits.maxJsonDepth) >= 0) {
      this.session.fail(new VoicewireError('PROTOCOL_INVALID_MESSAGE', `the message is ${jsonTooDeepReason(limits.maxJsonDepth)}`));
      return false;
    }
    return true;
  }

  /** A text the session sends: activity, the first output's time, and the unsent-bytes cap. */
  sent(text: string): void {
    this.due.idle.touch(this.idleDue);
    if (!this.timedFirst && (this.options.isFirstOutput ? this.options.isFirstOutput(text) : text.startsWith(this.options.firstOutput === 'audio' ? '{"type":"audio"' : '{"type":"text"'))) this.firstOutput();
  }

  /** An `audio` line the session sends as bytes ({@link GuardedTransport.sendAudio}). */
  sentAudio(): void {
    this.due.idle.touch(this.idleDue);
    if (!this.timedFirst && this.options.firstOutput === 'audio') this.firstOutput();
  }

  /** The session's first output: its time to first audio (or text) is observed. */
  private firstOutput(): void {
    const { scope, options } = this;
    this.timedFirst = true;
    const histogram = options.firstOutput === 'audio' ? scope.ctx.metrics.timeToFirstAudio : scope.ctx.metrics.timeToFirstText;
    histogram.observe({ route: options.route }, (performance.now() - this.firstFrameAt) / 1000);
    this.stages.sent();
  }

  /** After a send: a peer that does not read (TCP window full) is cut past the cap. */
  checkBuffered(): void {
    const { ws, scope, options } = this;
    const limits = scope.ctx.config.limits;
    // The engine's output would pile up here: past the cap it is cut (no close frame: it would
    // queue behind what the peer does not read).
    if (ws.bufferedAmount > limits.maxBufferedBytes && ws.readyState === ws.OPEN) {
      scope.log.info({ route: options.route, buffered: ws.bufferedAmount }, 'peer does not read: terminated');
      scope.ctx.metrics.errors.inc({ code: 'LIMIT_EXCEEDED' });
      ws.terminate();
    }
  }

  /** Dead peers: a ping every pingSeconds; no pong and no frame since the last one → terminate. */
  pingTick(): void {
    const { ws, scope, options } = this;
    this.due.ping.add(this.pingDue);
    // While the server does not read (its engines are behind: backpressure), the peer's pong and
    // frames wait unread: that is not the peer's silence. A loaded server cut such live sockets
    // with a bare 1006 (300 multiplexed requests beside other work, issue 25).
    if (ws.isPaused) {
      this.alive = true;
      return;
    }
    if (!this.alive) {
      // Timers run before the poll phase: after the event loop was held up (a loaded machine),
      // a pong already received waits unread. Judge after one poll (setImmediate) has read it.
      setImmediate(() => {
        // Closing counts too: a peer that does not read never answers the close frame of an
        // idle or failed session either, and ws would wait 30 s for it.
        if (this.alive || ws.readyState === ws.CLOSED) return;
        scope.log.info({ route: options.route }, 'peer did not answer a ping: terminated');
        ws.terminate();
      });
      return;
    }
    this.alive = false;
    ws.ping();
  }

  /** No frame either way for idleSeconds (§7.3). */
  idleTimeout(): void {
    // Paused, the server is not reading (backpressure, as in pingTick): the peer's frames wait
    // unread, which is not its silence.
    if (this.ws.isPaused) return this.due.idle.add(this.idleDue);
    const limits = this.scope.ctx.config.limits;
    this.session.fail(new VoicewireError('LIMIT_EXCEEDED', `idle for more than ${limits.idleSeconds} s`));
  }
}

/** The server answers pings itself (ws's autoPong is off, src/server/server.ts): ws's own guard cut a flood with a bare 1006 (issue 20); past maxPingsPerSecond the peer gets its §7.3 error. */
function onPing(this: WebSocket, data: Buffer): void {
  const g = guardOf(this);
  const limits = g.scope.ctx.config.limits;
  if (g.session.closed || this.readyState !== this.OPEN) return;
  const now = Date.now();
  if (now - g.pingWindowStart >= 1000) {
    g.pingWindowStart = now;
    g.pingsInWindow = 0;
  }
  if (++g.pingsInWindow > limits.maxPingsPerSecond) {
    g.scope.ctx.metrics.errors.inc({ code: 'LIMIT_EXCEEDED' });
    g.scope.log.info({ route: g.options.route }, 'ping flood: closed');
    g.session.fail(new VoicewireError('LIMIT_EXCEEDED', `more than ${limits.maxPingsPerSecond} pings per second`));
    return;
  }
  this.pong(data);
}

function onPong(this: WebSocket): void {
  guardOf(this).alive = true;
}

function onClose(this: WebSocket, code: number): void {
  const g = guardOf(this);
  const d = deadlines(g.scope.ctx);
  d.ping.remove(g.pingDue);
  d.idle.remove(g.idleDue);
  d.end.remove(g.endDue);
  g.release();
  g.scope.log.info({ route: g.options.route, code }, 'session closed');
}

/**
 * The transport the runner gets: the socket's, with the session's measures on each send. A class
 * (shared methods), where a spread copy and a closure per session were.
 */
export class GuardedTransport implements WebSocketTransport {
  constructor(
    private readonly inner: WebSocketTransport,
    private readonly guard: SessionGuard,
  ) {}

  send(text: string): unknown {
    this.guard.sent(text);
    const r = this.inner.send(text);
    this.guard.checkBuffered();
    return r;
  }

  sendAudio(line: Uint8Array, span: AudioLineSpan): unknown {
    this.guard.sentAudio();
    const r = sendAudioLine(this.inner, line, span);
    this.guard.checkBuffered();
    return r;
  }

  close(code: number, reason: string): void {
    this.inner.close(code, reason);
  }

  drained(): Promise<void> {
    return this.inner.drained ? this.inner.drained() : Promise.resolve();
  }

  pauseReading(): void {
    this.inner.pauseReading();
  }

  resumeReading(): void {
    this.inner.resumeReading();
  }
}

export async function serveWebSocketSession(scope: RequestScope, ws: WebSocket, req: IncomingMessage, options: WsSessionOptions): Promise<void> {
  const { ctx, log } = scope;
  const upgradedAt = performance.now();
  const stages = new FirstOutputStages((stage, seconds) => ctx.metrics.firstOutputStages.observe({ route: options.route, stage }, seconds));
  ws.pause();
  let who: Principal;
  let release: () => void;
  // Admitted now, at its 101 (server.ts refuses an upgrade while draining): a drain that begins
  // while it authenticates must not refuse it in band (issue 36).
  const admitted = ctx.sessions.admit();
  try {
    who = await ctx.auth(req, { route: options.credentials });
    release = ctx.sessions.open(options.route, who.key.id, admitted !== null);
  } catch (err) {
    const e = toVoicewireError(err);
    ctx.metrics.errors.inc({ code: e.code });
    log.info({ route: options.route, code: e.code }, 'websocket refused');
    // A paused socket would not read the peer's close frame.
    ws.resume();
    (options.refuse ?? failSocket)(ws, e.code === 'RESIDENCY_DENIED' ? new VoicewireError('RESIDENCY_DENIED', e.message, { closeCode: 1008 }) : e);
    return;
  } finally {
    admitted?.();
  }
  stages.authenticated(performance.now() - upgradedAt);
  log.info({ route: options.route, org: who.org.name, key_id: who.key.id }, 'session opened');
  const guard = new SessionGuard(ws, scope, options, stages, release);
  (ws as unknown as Record<symbol, SessionGuard>)[GUARD] = guard;

  guard.session = attachWebSocketSession(
    ws,
    (transport: WebSocketTransport) => {
      const common: ServerSessionOptions = {
        transport: new GuardedTransport(transport, guard),
        requestId: requestIds(scope.requestId),
        onEvent: (notice) => {
          if (notice.type === 'request_ended') {
            if (notice.error) ctx.metrics.errors.inc({ code: notice.error.code });
            log.info({ route: options.route, client_req_id: notice.clientReqId, outcome: notice.outcome, error: notice.error?.message }, 'request ended');
          } else if (notice.type === 'request_started') log.info({ route: options.route, client_req_id: notice.clientReqId }, 'request started');
        },
      };
      return options.create(who, common, stages);
    },
    {
      onFrame: (data, isBinary) => guard.onFrame(data, isBinary),
      oversizeFrameError: () => new VoicewireError('LIMIT_EXCEEDED', `message is over the limit of ${ctx.config.limits.maxFrameBytes} bytes`),
    },
  );

  ws.on('ping', onPing);
  ws.on('pong', onPong);
  const d = deadlines(ctx);
  d.ping.add(guard.pingDue);
  d.idle.add(guard.idleDue);
  d.end.add(guard.endDue);
  // 'close' comes once: `on`, not `once` (its wrapper is two more objects per session).
  ws.on('close', onClose);
  ws.resume();
}

/** Makes the `request_id` of each `ready` on a socket: the connection's id, then `<id>.2`, `<id>.3`, … (multiplexing). */
export function requestIds(connectionId: string): () => string {
  let n = 0;
  return () => (++n === 1 ? connectionId : `${connectionId}.${n}`);
}
