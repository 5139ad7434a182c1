/**
 * Client session runners: the imperative shell around the pure client machines, for SDKs. The
 * runner validates what the application sends (a call in the wrong state throws
 * `INVALID_STATE`), serializes it, and checks every server frame against the session state; the
 * application gets typed events.
 *
 * ```ts
 * const ws = new WebSocket(url);
 * const stt = createSttClientSession({
 *   transport: { send: (t) => ws.send(t), close: (c, r) => ws.close(c, r) },
 *   onEvent: (e) => { if (e.type === 'message' && e.message.type === 'text') console.log(e.message.text); },
 * });
 * ws.onopen = () => { stt.setup({ input_format: 'pcm' }); stt.sendAudio(pcmChunk); stt.endOfStream(); };
 * ws.onmessage = (m) => stt.receive(m.data);
 * ws.onclose = (c) => stt.transportClosed(c.code, c.reason);
 * ```
 */
import { functionArg, objectArg } from '../util/args.js';
import type { VoicewireError } from '../util/errors.js';
import { Fifo } from './fifo.js';
import type { ClientSessionEvent, ClientSessionState, SessionMachine } from './multiplex.js';
import type { FlushId, SttClientMessage, SttSetupMessage, TtsClientMessage, TtsSetupMessage } from '../protocol/messages.js';
import { encodeBase64 } from '../util/base64.js';
import { serializeSttAudioMessage, serializeSttClientMessage, serializeTtsClientMessage, type RawMessage } from '../protocol/parse.js';
import { sttClientMachine, type SttClientEvent, type SttClientRequestState } from './stt-session.js';
import { ttsClientMachine, type TtsClientEvent, type TtsClientRequestState } from './tts-session.js';
import { createTextChunker, type TextChunker, type TextChunkerOptions } from '../text/text-chunker.js';

/** Where a client session writes. */
export interface ClientTransport {
  send(text: string): void;
  close(code: number, reason: string): void;
}

/** Options shared by the client runners. */
export interface ClientSessionOptions<E> {
  transport: ClientTransport;
  /** Every event: validated server messages, errors, the close. */
  onEvent: (event: E) => void;
}

type AnyEffect = { type: 'send'; message: { type: string } } | { type: 'close'; code: number; reason: string } | { type: 'reject'; error: VoicewireError } | { type: 'emit'; event: unknown };

class ClientRunner<RS, CM extends { type: string; client_req_id?: string }, E> {
  state: ClientSessionState<RS>;
  private readonly queue = new Fifo<ClientSessionEvent<CM>>();
  private running = false;
  private closed = false;
  /** An audio message built by the runner itself: its base64 needs no escaping check. */
  trusted: unknown = null;

  constructor(
    private readonly machine: SessionMachine<ClientSessionState<RS>, ClientSessionEvent<CM>, unknown>,
    private readonly options: ClientSessionOptions<E>,
    private readonly serialize: (message: CM, trusted: boolean) => string,
  ) {
    this.state = machine.initial();
  }

  /** Throws what `local(event)` would reject, without running it. */
  check(event: ClientSessionEvent<CM>): void {
    const step = this.machine.transition(this.state, event);
    for (const effect of step.effects as AnyEffect[]) if (effect.type === 'reject') throw effect.error;
  }

  /** Runs one local event now and throws its rejection, if any. */
  local(event: ClientSessionEvent<CM>): void {
    if (this.running) {
      // Called from inside onEvent: queue it (a rejection then surfaces as an error event).
      this.queue.push(event);
      return;
    }
    const step = this.machine.transition(this.state, event);
    this.state = step.state;
    let rejection: VoicewireError | null = null;
    this.running = true;
    try {
      for (const effect of step.effects as AnyEffect[]) {
        if (effect.type === 'reject') rejection = effect.error;
        else this.execute(effect);
      }
      this.drain();
    } finally {
      this.running = false;
    }
    if (rejection !== null) throw rejection;
  }

  dispatch(event: ClientSessionEvent<CM>): void {
    this.queue.push(event);
    if (this.running) return;
    this.running = true;
    try {
      this.drain();
    } finally {
      this.running = false;
    }
  }

  private drain(): void {
    while (this.queue.length > 0) {
      const step = this.machine.transition(this.state, this.queue.shift()!);
      this.state = step.state;
      for (const effect of step.effects as AnyEffect[]) {
        if (effect.type === 'reject') this.options.onEvent({ type: 'error', error: effect.error } as E);
        else this.execute(effect);
      }
    }
  }

  private execute(effect: Exclude<AnyEffect, { type: 'reject' }>): void {
    switch (effect.type) {
      case 'send':
        if (!this.closed) {
          const trusted = effect.message === this.trusted;
          this.options.transport.send(this.serialize(effect.message as CM, trusted));
        }
        return;
      case 'close':
        if (!this.closed) {
          this.closed = true;
          try {
            this.options.transport.close(effect.code, effect.reason);
          } catch {
            // already closed
          }
        }
        return;
      case 'emit':
        this.options.onEvent(effect.event as E);
        return;
    }
  }

  markClosed(): void {
    this.closed = true;
  }
}

function checkClientOptions(options: ClientSessionOptions<never>, what: string): void {
  objectArg(options, `${what}: options`);
  const t = objectArg(options.transport, `${what}: options.transport`);
  functionArg(t.send, `${what}: options.transport.send`);
  functionArg(t.close, `${what}: options.transport.close`);
  functionArg(options.onEvent, `${what}: options.onEvent`);
}

/** Setup fields of an STT request (everything but `type`). */
export type SttSetupOptions = Omit<SttSetupMessage, 'type'>;
/** Setup fields of a TTS request (everything but `type`). */
export type TtsSetupOptions = Omit<TtsSetupMessage, 'type'>;

function withId<T extends object>(message: T, clientReqId: string | undefined): T {
  return clientReqId === undefined ? message : { ...message, client_req_id: clientReqId };
}

/** The members every client session has, whatever the route. */
type CommonMembers = 'send' | 'receive' | 'transportClosed' | 'state';

/** A client session: the route's own `methods` plus the common members, over `runner`. */
function sessionOver<RS, CM extends { type: string; client_req_id?: string }, E, M extends object>(runner: ClientRunner<RS, CM, E>, send: (message: CM) => void, methods: M) {
  return {
    ...methods,
    send,
    receive: (data: RawMessage): void => runner.dispatch({ type: 'receive', data }),
    transportClosed(code: number, reason = ''): void {
      runner.markClosed();
      runner.dispatch({ type: 'transport_closed', code, reason });
    },
    get state(): ClientSessionState<RS> {
      return runner.state;
    },
  };
}

/** A running STT client session. Methods throw `INVALID_STATE` when the call is not allowed now. */
export interface SttClientSession {
  /** Sends `setup` (a new request; with `client_req_id` and `close_ws_on_eos: false` to multiplex). */
  setup(options?: SttSetupOptions): void;
  /** Sends one `audio` chunk (bytes are base64-encoded here; a string is sent as base64 already). */
  sendAudio(audio: Uint8Array | string, clientReqId?: string): void;
  /** Sends `flush`; the `flushed` with the same id comes once the audio before it is transcribed. */
  flush(flushId: FlushId, clientReqId?: string): void;
  /** Sends `end_of_stream` (with an id: ends that request; without, on a multiplexed socket: ends the socket). */
  endOfStream(clientReqId?: string): void;
  /** Drops a request: sends its `end_of_stream` if needed and ignores its remaining messages. */
  abandon(clientReqId: string): void;
  /** Sends any client message (validated against the state like the methods above). */
  send(message: SttClientMessage): void;
  /** A frame from the server. */
  receive(data: RawMessage): void;
  /** The socket closed. */
  transportClosed(code: number, reason?: string): void;
  /** The machine state. */
  readonly state: ClientSessionState<SttClientRequestState>;
}

/** Runs the STT client machine over a transport. */
export function createSttClientSession(options: ClientSessionOptions<SttClientEvent>): SttClientSession {
  checkClientOptions(options, 'createSttClientSession');
  const runner = new ClientRunner<SttClientRequestState, SttClientMessage, SttClientEvent>(sttClientMachine as never, options, (message, trusted) =>
    trusted && message.type === 'audio' ? serializeSttAudioMessage(message.audio, message.client_req_id) : serializeSttClientMessage(message),
  );
  const send = (message: SttClientMessage): void => runner.local({ type: 'send', message });
  const methods: Omit<SttClientSession, CommonMembers> = {
    setup: (setup = {}) => send({ ...setup, type: 'setup' }),
    sendAudio(audio, clientReqId) {
      const message = withId<SttClientMessage>({ type: 'audio', audio: typeof audio === 'string' ? audio : encodeBase64(audio) }, clientReqId);
      runner.trusted = typeof audio === 'string' ? null : message;
      try {
        send(message);
      } finally {
        runner.trusted = null;
      }
    },
    flush: (flushId, clientReqId) => send(withId<SttClientMessage>({ type: 'flush', flush_id: flushId }, clientReqId)),
    endOfStream: (clientReqId) => send(withId<SttClientMessage>({ type: 'end_of_stream' }, clientReqId)),
    abandon: (clientReqId) => runner.local({ type: 'abandon', clientReqId }),
  };
  return sessionOver(runner, send, methods);
}

/** A running TTS client session. Methods throw `INVALID_STATE` when the call is not allowed now. */
export interface TtsClientSession {
  /** Sends `setup`. */
  setup(options?: TtsSetupOptions): void;
  /**
   * Sends text. With word chunking on (the default) the text is a piece of a continuous stream
   * (LLM tokens): only complete words and whole tags go out, the rest waits for more text,
   * a `<flush>`, or {@link TtsClientSession.endOfStream}.
   */
  sendText(text: string, clientReqId?: string): void;
  /** Sends held-back text, then `end_of_stream`. */
  endOfStream(clientReqId?: string): void;
  /** Interrupts a request: sends its `end_of_stream` and drops its remaining audio (no cancel message exists). */
  abandon(clientReqId: string): void;
  /** Sends any client message as is (no chunking), validated against the state. */
  send(message: TtsClientMessage): void;
  receive(data: RawMessage): void;
  transportClosed(code: number, reason?: string): void;
  readonly state: ClientSessionState<TtsClientRequestState>;
}

/** Options of {@link createTtsClientSession}. */
export interface TtsClientSessionOptions extends ClientSessionOptions<TtsClientEvent> {
  /**
   * Split streamed text at word boundaries and never inside a tag before sending (text-chunker.ts):
   * the server joins consecutive `text` messages with one space, so raw LLM tokens would split
   * words, and a `<break>` split across two messages is read aloud (protocol-notes.md). Default
   * true; `false` sends each `sendText` piece as it is.
   */
  chunkWords?: boolean;
  /** Options of the per-request text chunker. */
  chunker?: TextChunkerOptions;
}

/** Runs the TTS client machine over a transport. */
export function createTtsClientSession(options: TtsClientSessionOptions): TtsClientSession {
  checkClientOptions(options, 'createTtsClientSession');
  const chunkers = new Map<string | null, TextChunker>();
  // Issue 11 §11: a request's chunker is freed when the request ends (its end_of_stream or error),
  // when it is abandoned, and when the socket ends; otherwise one chunker per id stays forever.
  const onEvent = (event: TtsClientEvent): void => {
    if (event.type === 'closed' || (event.type === 'error' && event.clientReqId === undefined)) chunkers.clear();
    else if (event.type === 'error') chunkers.delete(event.clientReqId!);
    else if (event.type === 'message' && event.message.type === 'end_of_stream') {
      if (event.clientReqId !== undefined) chunkers.delete(event.clientReqId);
      else if (runner.state.phase === 'closed') chunkers.clear(); // the socket-level end: every request ended
      else chunkers.delete(null); // the anonymous request's end
    }
    options.onEvent(event);
  };
  const runner = new ClientRunner<TtsClientRequestState, TtsClientMessage, TtsClientEvent>(ttsClientMachine as never, { ...options, onEvent }, (message) => serializeTtsClientMessage(message));
  const chunkWords = options.chunkWords ?? true;
  const send = (message: TtsClientMessage): void => runner.local({ type: 'send', message });
  const chunker = (key: string | null): TextChunker => {
    let c = chunkers.get(key);
    if (c === undefined) {
      c = createTextChunker(options.chunker ?? {});
      chunkers.set(key, c);
    }
    return c;
  };
  const methods: Omit<TtsClientSession, CommonMembers> = {
    setup(setup = {}) {
      send({ ...setup, type: 'setup' });
      chunkers.delete(setup.client_req_id ?? null);
    },
    sendText(text, clientReqId) {
      if (!chunkWords) {
        send(withId<TtsClientMessage>({ type: 'text', text }, clientReqId));
        return;
      }
      // Check the state first, so a refused call does not swallow text into the chunker.
      runner.check({ type: 'send', message: withId<TtsClientMessage>({ type: 'text', text: '' }, clientReqId) });
      for (const piece of chunker(clientReqId ?? null).push(text)) send(withId<TtsClientMessage>({ type: 'text', text: piece }, clientReqId));
    },
    endOfStream(clientReqId) {
      const key = clientReqId ?? null;
      if (chunkWords) {
        runner.check({ type: 'send', message: withId<TtsClientMessage>({ type: 'end_of_stream' }, clientReqId) });
        const c = chunkers.get(key);
        if (c !== undefined) for (const piece of c.end()) send(withId<TtsClientMessage>({ type: 'text', text: piece }, clientReqId));
        if (key === null && !runner.state.requests.has(null)) {
          // A socket-level end_of_stream ends every multiplexed request: send their held-back text first.
          for (const [k, other] of chunkers) {
            if (k === null) continue;
            for (const piece of other.end()) {
              const message = withId<TtsClientMessage>({ type: 'text', text: piece }, k);
              try {
                send(message);
              } catch {
                // that request already ended: its text is moot
              }
            }
          }
        }
      }
      send(withId<TtsClientMessage>({ type: 'end_of_stream' }, clientReqId));
    },
    abandon(clientReqId) {
      chunkers.delete(clientReqId);
      runner.local({ type: 'abandon', clientReqId });
    },
  };
  const session = sessionOver(runner, send, methods);
  // For tests (issue 11 §11): how many per-request chunkers are held. Not part of the typed API.
  Object.defineProperty(session, 'chunkerCount', { get: () => chunkers.size, enumerable: false });
  return session;
}

