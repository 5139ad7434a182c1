/**
 * The WebSocket side of the routes: authenticate on the upgraded socket (frames wait: the socket
 * is paused until the session is attached, so a client that pipelines setup and data before
 * `ready` loses nothing), count the session, attach the runner (src/node/ws-session.ts), and
 * enforce the per-socket limits: session duration, idle time, pings for dead peers, unsent bytes
 * of a peer that does not read (§5.6, §7.3).
 */
import type { IncomingMessage } from 'node:http';
import type { WebSocket } from 'ws';
import { VoicewireError, toVoicewireError } from '../util/errors.js';
import { errorMessageOf, serializeSttServerMessage } from '../protocol/parse.js';
import type { ServerSession, ServerSessionOptions } from '../sessions/server.js';
import { attachWebSocketSession, type WebSocketTransport } from '../node/ws-session.js';
import type { Principal } from './auth.js';
import type { RequestScope } from './context.js';
import { FirstOutputStages } from './first-output-stages.js';
import { jsonDepthExceededAt, jsonTooDeepReason } from '../protocol/json-depth.js';

/** Sends `error` (code from the error, 1011 when none) and closes with that code (§7.3). */
export function failSocket(ws: WebSocket, error: unknown): void {
  const e = toVoicewireError(error);
  const msg = errorMessageOf(e);
  if (ws.readyState !== ws.OPEN) return;
  ws.send(serializeSttServerMessage(msg), () => ws.close(msg.code, e.message.slice(0, 120)));
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
}

export async function serveWebSocketSession(scope: RequestScope, ws: WebSocket, req: IncomingMessage, options: WsSessionOptions): Promise<void> {
  const { ctx, log } = scope;
  const limits = ctx.config.limits;
  const upgradedAt = performance.now();
  const stages = new FirstOutputStages((stage, seconds) => ctx.metrics.firstOutputStages.observe({ route: options.route, stage }, seconds));
  ws.pause();
  let who: Principal;
  let release: () => void;
  try {
    who = await ctx.auth(req, { route: options.credentials });
    release = ctx.sessions.open(options.route, who.key.id);
  } catch (err) {
    const e = toVoicewireError(err);
    ctx.metrics.errors.inc({ code: e.code });
    log.info({ route: options.route, code: e.code }, 'websocket refused');
    // A paused socket would not read the peer's close frame.
    ws.resume();
    failSocket(ws, e.code === 'RESIDENCY_DENIED' ? new VoicewireError('RESIDENCY_DENIED', e.message, { closeCode: 1008 }) : e);
    return;
  }
  stages.authenticated(performance.now() - upgradedAt);
  log.info({ route: options.route, org: who.org.name, key_id: who.key.id }, 'session opened');
  let lastActivity = Date.now();
  /** A pong or a frame arrived since the last ping. */
  let alive = true;
  let firstFrameAt = 0;
  let timedFirst = false;
  const marker = options.firstOutput === 'audio' ? '{"type":"audio"' : '{"type":"text"';
  const histogram = options.firstOutput === 'audio' ? ctx.metrics.timeToFirstAudio : ctx.metrics.timeToFirstText;

  const session = attachWebSocketSession(
    ws,
    (transport: WebSocketTransport) => {
      const t: WebSocketTransport = {
        ...transport,
        send: (text) => {
          lastActivity = Date.now();
          if (!timedFirst && text.startsWith(marker)) {
            timedFirst = true;
            histogram.observe({ route: options.route }, (performance.now() - firstFrameAt) / 1000);
            stages.sent();
          }
          const r = transport.send(text);
          // A peer that does not read (TCP window full) would have the engine's output pile up
          // here: past the cap it is cut (no close frame: it would queue behind what it does not read).
          if (ws.bufferedAmount > limits.maxBufferedBytes && ws.readyState === ws.OPEN) {
            log.info({ route: options.route, buffered: ws.bufferedAmount }, 'peer does not read: terminated');
            ctx.metrics.errors.inc({ code: 'LIMIT_EXCEEDED' });
            ws.terminate();
          }
          return r;
        },
      };
      const common: ServerSessionOptions = {
        transport: t,
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
      onFrame: (data, isBinary) => {
        lastActivity = Date.now();
        // A frame proves the peer lives as well as a pong does: its pong may wait behind
        // megabytes it sent before it (300 multiplexed STT requests on a loaded machine, issue 25).
        alive = true;
        if (firstFrameAt === 0) firstFrameAt = performance.now();
        stages.frame();
        const size = Array.isArray(data) ? data.reduce((n, b) => n + b.length, 0) : data instanceof ArrayBuffer ? data.byteLength : data.length;
        if (size > limits.maxFrameBytes) {
          // An error message first (the Python client cannot see close codes), then the close.
          session.fail(new VoicewireError('LIMIT_EXCEEDED', `message of ${size} bytes is over the limit of ${limits.maxFrameBytes}`));
          return false;
        }
        // Before any parse (issue 20); the protocol parsers also refuse past MAX_JSON_DEPTH.
        if (!isBinary && !Array.isArray(data) && jsonDepthExceededAt(data instanceof ArrayBuffer ? new Uint8Array(data) : data, limits.maxJsonDepth) >= 0) {
          session.fail(new VoicewireError('PROTOCOL_INVALID_MESSAGE', `the message is ${jsonTooDeepReason(limits.maxJsonDepth)}`));
          return false;
        }
        return true;
      },
      oversizeFrameError: () => new VoicewireError('LIMIT_EXCEEDED', `message is over the limit of ${limits.maxFrameBytes} bytes`),
    },
  );

  // The server answers pings itself (ws's autoPong is off, src/server/server.ts): ws's own guard
  // cut a flood with a bare 1006 (issue 20); past maxPingsPerSecond the peer gets its §7.3 error.
  let pingWindowStart = 0;
  let pingsInWindow = 0;
  ws.on('ping', (data: Buffer) => {
    if (session.closed || ws.readyState !== ws.OPEN) return;
    const now = Date.now();
    if (now - pingWindowStart >= 1000) {
      pingWindowStart = now;
      pingsInWindow = 0;
    }
    if (++pingsInWindow > limits.maxPingsPerSecond) {
      ctx.metrics.errors.inc({ code: 'LIMIT_EXCEEDED' });
      log.info({ route: options.route }, 'ping flood: closed');
      session.fail(new VoicewireError('LIMIT_EXCEEDED', `more than ${limits.maxPingsPerSecond} pings per second`));
      return;
    }
    ws.pong(data);
  });

  // Dead peers: a ping every pingSeconds; no pong and no frame since the last one → terminate.
  ws.on('pong', () => {
    alive = true;
  });
  const ping = setInterval(() => {
    // While the server does not read (its engines are behind: backpressure), the peer's pong and
    // frames wait unread: that is not the peer's silence. A loaded server cut such live sockets
    // with a bare 1006 (300 multiplexed requests beside other work, issue 25).
    if (ws.isPaused) {
      alive = true;
      lastActivity = Date.now();
      return;
    }
    if (!alive) {
      // Timers run before the poll phase: after the event loop was held up (a loaded machine),
      // a pong already received waits unread. Judge after one poll (setImmediate) has read it.
      setImmediate(() => {
        if (alive || ws.readyState !== ws.OPEN) return;
        log.info({ route: options.route }, 'peer did not answer a ping: terminated');
        ws.terminate();
      });
      return;
    }
    alive = false;
    ws.ping();
    if (Date.now() - lastActivity > limits.idleSeconds * 1000) {
      session.fail(new VoicewireError('LIMIT_EXCEEDED', `idle for more than ${limits.idleSeconds} s`));
    }
  }, Math.min(limits.pingSeconds, limits.idleSeconds) * 1000);
  const duration = setTimeout(() => {
    session.fail(new VoicewireError('LIMIT_EXCEEDED', `session longer than ${limits.sessionSeconds} s`));
  }, limits.sessionSeconds * 1000);
  ping.unref();
  duration.unref();
  ws.once('close', (code: number) => {
    clearInterval(ping);
    clearTimeout(duration);
    release();
    log.info({ route: options.route, code }, 'session closed');
  });
  ws.resume();
}

/** Makes the `request_id` of each `ready` on a socket: the connection's id, then `<id>.2`, `<id>.3`, … (multiplexing). */
export function requestIds(connectionId: string): () => string {
  let n = 0;
  return () => (++n === 1 ? connectionId : `${connectionId}.${n}`);
}
