/**
 * One WebSocket per plugin instance, shared by all its streams (docs/api.md §4.4 "Multiplexing"):
 * each stream is a request with its own `client_req_id` on the library's client session machine,
 * which checks every message against the request's state; this class only routes the machine's
 * events to the stream they belong to. The socket opens with the first request and opens again
 * after it closed (the service's idle timeout, a drain, a network failure), so a plugin instance
 * lives as long as the agent does.
 */
import { VoicewireError } from '../util/errors.js';
import type { ClientContext } from '../client/context.js';
import type { ClientSocket } from '../client/socket.js';
import { socketFailure } from '../client/server-error.js';
import type { ClientTransport } from '../sessions/client.js';

/** The events both client machines emit (sessions/stt-session.ts, tts-session.ts). */
export type MuxEvent = { type: 'message'; message: { type: string }; clientReqId?: string } | { type: 'error'; error: VoicewireError; clientReqId?: string } | { type: 'closed'; code: number; reason: string };

/** The members of a client session the socket needs. */
export interface MuxSession {
  receive(text: string): void;
  transportClosed(code: number, reason?: string): void;
  abandon(clientReqId: string): void;
}

/** A stream's side of its request. */
export interface MuxRequest<E extends MuxEvent> {
  /** A server message of this request. */
  onMessage(event: Extract<E, { type: 'message' }>): void;
  /** The request failed (its `error`, the socket's error or close, or a failed connection); called once. */
  onFailure(error: VoicewireError): void;
}

/** A request opened on the shared socket. */
export interface MuxHandle<S> {
  readonly id: string;
  readonly session: S;
  /** True once the socket heard from the server (the connection works). */
  heardFrom(): boolean;
}

/** The shared socket of one plugin instance. */
export class SharedSocket<S extends MuxSession, E extends MuxEvent> {
  private session: S | undefined;
  private socket: ClientSocket | undefined;
  private readonly requests = new Map<string, MuxRequest<E>>();
  private next = 0;

  constructor(
    private readonly ctx: ClientContext,
    private readonly path: string,
    private readonly createSession: (options: { transport: ClientTransport; onEvent: (event: E) => void }) => S,
    private readonly prefix: string,
  ) {}

  /** Registers a request and returns its id and the session to send on (the socket opens if needed). */
  open(request: MuxRequest<E>): MuxHandle<S> {
    const session = this.ensure();
    const socket = this.socket!;
    const id = `${this.prefix}${++this.next}`;
    this.requests.set(id, request);
    return { id, session, heardFrom: () => socket.heardFrom };
  }

  /** Forgets a request; `abandon`: it has not ended, so tell the server (its remaining messages are dropped). */
  release(id: string, abandon: boolean): void {
    if (!this.requests.delete(id) || !abandon) return;
    try {
      this.session?.abandon(id);
    } catch {
      // the request already ended on the machine
    }
  }

  /** Closes the socket (its requests fail); the next request opens a new one. */
  drop(reason: string): void {
    this.socket?.close(1000, reason);
  }

  /** Closes the socket for good of this instance's current streams. */
  close(): void {
    this.drop('plugin closed');
  }

  /** Number of requests on the socket (for tests). */
  get size(): number {
    return this.requests.size;
  }

  private failAll(error: VoicewireError): void {
    const all = [...this.requests.values()];
    this.requests.clear();
    for (const r of all) r.onFailure(error);
  }

  private ensure(): S {
    if (this.session !== undefined) return this.session;
    let socket: ClientSocket | undefined;
    const session = this.createSession({
      transport: { send: (t) => socket!.send(t), close: (c, r) => socket!.close(c, r) },
      onEvent: (event) => this.route(session, event),
    });
    socket = this.ctx.openSocket(
      this.path,
      (text) => session.receive(text),
      (code, reason) => session.transportClosed(code, reason),
      (error) => this.failAll(error),
    );
    this.session = session;
    this.socket = socket;
    return session;
  }

  private route(session: S, event: E): void {
    if (event.type === 'closed') {
      if (this.session === session) {
        this.session = undefined;
        this.socket = undefined;
      }
      this.failAll(new VoicewireError('PROTOCOL_CONNECTION_CLOSED', `the socket closed before the end of the request (${event.code}${event.reason ? ` ${event.reason}` : ''})`, { details: { code: event.code, reason: event.reason } }));
      return;
    }
    const id = event.clientReqId;
    if (event.type === 'error') {
      const error = socketFailure(event.error);
      if (id === undefined) return this.failAll(error);
      const r = this.requests.get(id);
      this.requests.delete(id);
      r?.onFailure(error);
      return;
    }
    if (id !== undefined) this.requests.get(id)?.onMessage(event as Extract<E, { type: 'message' }>);
  }
}
