/**
 * An OpenAI Realtime transcription session as an adapter over the STT server session (§4.4,
 * src/sessions/stt-server-session.ts): it translates client events into the STT session's own
 * messages (`setup`, `audio`, `flush`) and the STT session's messages (`ready`, `text`, `step`,
 * `flushed`, `error`) into Realtime server events. Nothing here decodes audio or runs an engine.
 *
 * - Items: the audio since the last commit is one item. `input_audio_buffer.commit` (or the server
 *   VAD's end of speech) commits it and sends the STT session a `flush`; the item's words are the
 *   `text` messages that arrive before that flush's `flushed` (the STT session answers in order),
 *   and `flushed` completes it. A `clear` flushes too, and the words before that `flushed` are dropped.
 * - Deltas: each word is a `…transcription.delta` once its item was announced (`speech_started`
 *   or `committed`); words heard before are held and sent together at the announcement.
 * - Server VAD (`turn_detection.type: "server_vad"`): read from the `step` predictions. Speech
 *   starts on the first step whose 0.5 s horizon gives a speech probability (1 − inactivity)
 *   above `threshold`; it stops once the turn-taking detector (src/sessions/turn-taking.ts, on
 *   the horizon nearest `silence_duration_ms`: 0.5 s up to 500 ms, 1 s up to 1000 ms, else 2 s,
 *   with threshold 1 − `threshold`) says the turn ended and `silence_duration_ms` of steps
 *   without speech passed. `audio_start_ms` is the speech step's start less `prefix_padding_ms`
 *   (not before the item's start).
 * - The STT session opens at the first `session.update` (or append), so the engine is warm when
 *   the first words come, and is reopened by an update that changes the format or the language
 *   before any audio.
 * - The STT session ending with an error (an engine failure, credits, an unsupported language)
 *   is an `error` event; pending items get `…transcription.failed`, and the next append opens a
 *   new STT session: the socket stays open, as OpenAI keeps it open for a failed transcription.
 */
import { randomUUID } from 'node:crypto';
import { VoicewireError, toVoicewireError } from '../../../util/errors.js';
import { isRecord } from '../../../protocol/validate.js';
import { createTurnTaking, type TurnTaking } from '../../../sessions/turn-taking.js';
import type { ServerSession, ServerTransport } from '../../../sessions/server-session.js';
import {
  applySessionUpdate,
  defaultRealtimeConfig,
  errorEventBody,
  formatRate,
  nativeInputFormat,
  parseRealtimeClientEvent,
  realtimeEventError,
  sessionObject,
  type RealtimeClientCommand,
  type RealtimeTranscriptionConfig,
} from './realtime-events.js';
import { RealtimeTimeline } from './realtime-timeline.js';

/** Least audio a commit takes (OpenAI's `input_audio_buffer_commit_empty`: "at least 100ms"). */
export const MIN_COMMIT_MS = 100;

/** Options of {@link RealtimeTranscriptionSession}. */
export interface RealtimeTranscriptionSessionOptions {
  /** The client's socket. */
  transport: ServerTransport;
  /** Creates an STT server session writing to `transport` (createSttServerSession with the server's engine). */
  createSttSession(transport: ServerTransport): ServerSession<unknown>;
  /** The URL's `model` (default `gpt-4o-transcribe`). */
  model?: string;
  /** When the session ends at the latest (`expires_at`, Unix seconds). */
  expiresAt: number;
  /** Makes ids (`sess_…`, `item_…`, `event_…`). Default: random. */
  newId?: (prefix: string) => string;
}

/** An item: the audio between two commits (or clears). */
interface Item {
  id: string;
  words: string[];
  /** Words sent as deltas so far (the rest wait for the announcement). */
  sent: number;
  announced: boolean;
  /** Cleared: its words are dropped. */
  discard: boolean;
  /** Client time where its audio starts, ms. */
  startMs: number;
  /** Audio committed, s (the usage). */
  seconds: number;
}

/** The STT session of the moment (one per run of audio; a failed one is replaced). */
interface SttRun {
  session: ServerSession<unknown>;
  timeline: RealtimeTimeline;
  delayFrames: number;
  /** Items flushed and waiting for their `flushed`, by flush id. */
  pending: Map<number, Item>;
  dead: boolean;
}

/** A server VAD's state. */
interface VadState {
  speaking: boolean;
  silentMs: number;
  turn: TurnTaking;
}

const defaultId = (prefix: string): string => `${prefix}_${randomUUID().replace(/-/g, '').slice(0, 20)}`;

/** Horizon read for a `silence_duration_ms` (see the module comment). */
const horizonFor = (silenceMs: number): number => (silenceMs <= 500 ? 0 : silenceMs <= 1000 ? 1 : 2);

/** One Realtime transcription session over one socket (see the module comment). */
export class RealtimeTranscriptionSession implements ServerSession<RealtimeTranscriptionConfig> {
  private config: RealtimeTranscriptionConfig;
  private readonly sessionId: string;
  private readonly newId: (prefix: string) => string;
  private run: SttRun | null = null;
  private open: Item | null = null;
  /** Client audio in the buffer (since the last commit or clear), ms. */
  private bufferMs = 0;
  private lastCommitted: string | null = null;
  private flushSeq = 0;
  private vad: VadState | null;
  private isClosed = false;
  /** Audio went to the current STT session (its format and language are then fixed). */
  private heard = false;

  constructor(private readonly options: RealtimeTranscriptionSessionOptions) {
    this.newId = options.newId ?? defaultId;
    this.config = defaultRealtimeConfig(options.model);
    this.sessionId = this.newId('sess');
    this.vad = this.newVad();
    this.emit({ type: 'session.created', session: sessionObject(this.sessionId, this.config, options.expiresAt) });
  }

  get state(): RealtimeTranscriptionConfig {
    return this.config;
  }

  get closed(): boolean {
    return this.isClosed;
  }

  whenIdle(): Promise<void> {
    return this.run?.session.whenIdle() ?? Promise.resolve();
  }

  /** A frame from the client: every bad event is an `error` event, and the session goes on. */
  receive(data: unknown): void {
    if (this.isClosed) return;
    let command: RealtimeClientCommand;
    try {
      if (typeof data !== 'string') throw realtimeEventError('invalid_type', null, 'Invalid event: binary frames are not events; send JSON text frames.', null, 'PROTOCOL_INVALID_MESSAGE');
      command = parseRealtimeClientEvent(data);
      this.handle(command);
    } catch (err) {
      this.emitError(toVoicewireError(err));
    }
  }

  transportClosed(): void {
    this.isClosed = true;
    this.endRun();
  }

  /** A failure the server decided on (a limit, drain, idle): `error` event, then the socket closes. */
  fail(error: VoicewireError): void {
    if (this.isClosed) return;
    this.emitError(error);
    this.isClosed = true;
    this.options.transport.close(error.closeCode ?? 1011, error.message.slice(0, 120));
    this.endRun();
  }

  private handle(c: RealtimeClientCommand): void {
    switch (c.type) {
      case 'session.update': {
        const next = applySessionUpdate(this.config, c.update);
        const reopen = next.format.type !== this.config.format.type || next.transcription.language !== this.config.transcription.language;
        if (this.heard && reopen) {
          // The STT session decodes one format in one language from its setup on.
          if (next.format.type !== this.config.format.type) throw realtimeEventError('invalid_value', 'session.audio.input.format', 'Invalid value: the audio format cannot change once audio was appended; open a new session for another format.', c.eventId);
          if (next.transcription.language !== this.config.transcription.language) throw realtimeEventError('invalid_value', 'session.audio.input.transcription.language', 'Invalid value: the language cannot change once audio was appended; open a new session for another language.', c.eventId);
        }
        const vadChanged = JSON.stringify(next.turnDetection) !== JSON.stringify(this.config.turnDetection);
        this.config = next;
        if (vadChanged) this.vad = this.newVad();
        this.emit({ type: 'session.updated', session: sessionObject(this.sessionId, this.config, this.options.expiresAt) });
        // The engine opens at the first update (clients send it first), not at the first append:
        // an agent's first words would otherwise wait for a decoder to load (bench/agent-clock.ts:
        // seconds on a busy machine). Before any audio, a new format or language reopens it.
        if (reopen && this.run !== null) this.endRun();
        this.ensureRun();
        return;
      }
      case 'input_audio_buffer.append': {
        const run = this.ensureRun();
        const { sampleRate, bytesPerSample } = formatRate(this.config.format);
        const samples = Math.floor(c.bytes / bytesPerSample);
        this.open ??= this.newItem(run.timeline.clientMs);
        this.heard = true;
        run.timeline.appended(samples);
        this.bufferMs += (samples * 1000) / sampleRate;
        run.session.receive({ type: 'audio', audio: c.audio });
        return;
      }
      case 'input_audio_buffer.commit': {
        if (this.open === null || this.bufferMs < MIN_COMMIT_MS) {
          throw realtimeEventError('input_audio_buffer_commit_empty', null, `Error committing input audio buffer: buffer too small. Expected at least ${MIN_COMMIT_MS}ms of audio, but buffer only has ${this.bufferMs.toFixed(2)}ms of audio.`, c.eventId);
        }
        this.commit();
        return;
      }
      case 'input_audio_buffer.clear': {
        if (this.open !== null && this.run !== null) {
          this.open.discard = true;
          this.flush(this.run, this.open);
        }
        this.open = null;
        this.bufferMs = 0;
        this.vad = this.newVad();
        this.emit({ type: 'input_audio_buffer.cleared' });
        return;
      }
    }
  }

  private newVad(): VadState | null {
    const td = this.config.turnDetection;
    if (td === null) return null;
    return { speaking: false, silentMs: 0, turn: createTurnTaking({ threshold: 1 - td.threshold, horizonIndex: horizonFor(td.silence_duration_ms) }) };
  }

  private newItem(startMs: number): Item {
    return { id: this.newId('item'), words: [], sent: 0, announced: false, discard: false, startMs, seconds: 0 };
  }

  /** Commits the open item: `committed`, its held words, and a flush to the STT session. */
  private commit(): void {
    const item = this.open!;
    const run = this.run!;
    this.open = null;
    item.seconds = this.bufferMs / 1000;
    this.bufferMs = 0;
    this.emit({ type: 'input_audio_buffer.committed', previous_item_id: this.lastCommitted, item_id: item.id });
    this.lastCommitted = item.id;
    this.announce(item);
    this.flush(run, item);
  }

  private flush(run: SttRun, item: Item): void {
    const id = ++this.flushSeq;
    run.pending.set(id, item);
    run.timeline.flushed(run.delayFrames);
    run.session.receive({ type: 'flush', flush_id: id });
  }

  /** The item may now get deltas: the words held so far go out as one. */
  private announce(item: Item): void {
    item.announced = true;
    this.sendDeltas(item);
  }

  private sendDeltas(item: Item): void {
    if (!item.announced || item.discard || item.sent === item.words.length) return;
    const delta = (item.sent === 0 ? '' : ' ') + item.words.slice(item.sent).join(' ');
    item.sent = item.words.length;
    this.emit({ type: 'conversation.item.input_audio_transcription.delta', item_id: item.id, content_index: 0, delta });
  }

  /** The STT session, opened with the session's format and language on the first append. */
  private ensureRun(): SttRun {
    if (this.run !== null && !this.run.dead) return this.run;
    const transport = new SttSide(this);
    const session = this.options.createSttSession(transport);
    const run: SttRun = { session, timeline: new RealtimeTimeline(formatRate(this.config.format).sampleRate), delayFrames: 0, pending: new Map(), dead: false };
    transport.run = run;
    this.run = run;
    this.heard = false;
    // A new STT session starts a new timeline: the open item (if any) starts with it.
    const language = this.config.transcription.language;
    session.receive({ type: 'setup', input_format: nativeInputFormat(this.config.format), ...(language === null ? {} : { json_config: { language } }) });
    return run;
  }

  private endRun(): void {
    const run = this.run;
    this.run = null;
    if (run !== null && !run.dead) {
      run.dead = true;
      run.session.transportClosed();
    }
  }

  /** A message of the STT session (§4.4 server messages). */
  sttMessage(run: SttRun, m: Record<string, unknown>): unknown {
    if (run.dead || this.isClosed) return undefined;
    switch (m['type']) {
      case 'ready':
        run.delayFrames = typeof m['delay_in_frames'] === 'number' ? m['delay_in_frames'] : typeof m['delay_in_tokens'] === 'number' ? m['delay_in_tokens'] : 0;
        return undefined;
      case 'text': {
        // The oldest flushed item still waiting takes the word; else the open item.
        const first = run.pending.values().next();
        const item = first.done === true ? (this.open ??= this.newItem(run.timeline.clientMs)) : first.value;
        if (item.discard || typeof m['text'] !== 'string' || m['text'] === '') return undefined;
        item.words.push(m['text']);
        this.sendDeltas(item);
        return undefined;
      }
      case 'step':
      case 'vad':
        return this.step(run, m);
      case 'flushed': {
        const id = m['flush_id'] as number;
        const item = run.pending.get(id);
        run.pending.delete(id);
        if (item === undefined || item.discard) return undefined;
        this.sendDeltas(item);
        return this.emit({
          type: 'conversation.item.input_audio_transcription.completed',
          item_id: item.id,
          content_index: 0,
          transcript: item.words.join(' '),
          usage: { type: 'duration', seconds: Math.round(item.seconds * 1000) / 1000 },
        });
      }
      case 'error': {
        run.dead = true;
        const error = new VoicewireError(m['code'] === 1008 ? 'PROTOCOL_INVALID_MESSAGE' : 'PROTOCOL_SERVER_ERROR', typeof m['message'] === 'string' ? m['message'] : 'transcription failed', { closeCode: m['code'] === 1008 ? 1008 : 1011 });
        for (const item of run.pending.values()) {
          if (item.discard) continue;
          const body = errorEventBody(error);
          this.emit({ type: 'conversation.item.input_audio_transcription.failed', item_id: item.id, content_index: 0, error: { type: body.type, code: body.code, message: body.message, param: null } });
        }
        run.pending.clear();
        // The open item's audio went to the failed session: it is gone with it.
        this.open = null;
        this.bufferMs = 0;
        this.vad = this.newVad();
        return this.emitError(error);
      }
      default:
        return undefined;
    }
  }

  /** A `step`: the server VAD, when on. */
  private step(run: SttRun, m: Record<string, unknown>): unknown {
    const vad = this.vad;
    const td = this.config.turnDetection;
    if (vad === null || td === null || !Array.isArray(m['vad'])) return undefined;
    const end = typeof m['total_duration_s'] === 'number' ? m['total_duration_s'] : 0;
    const stepS = typeof m['step_duration_s'] === 'number' ? m['step_duration_s'] : 0.08;
    const at = run.timeline.clientTimeOf(end);
    // The silence the server added behind a flush is no one's speech.
    if (at.added) return undefined;
    const p0 = (m['vad'][0] as { inactivity_prob?: unknown } | undefined)?.inactivity_prob;
    const speech = typeof p0 === 'number' && 1 - p0 > td.threshold;
    if (!vad.speaking) {
      if (!speech) return undefined;
      vad.speaking = true;
      vad.silentMs = 0;
      vad.turn.reset();
      const item = (this.open ??= this.newItem(at.ms - stepS * 1000));
      const start = Math.max(item.startMs, at.ms - stepS * 1000 - td.prefix_padding_ms);
      const r = this.emit({ type: 'input_audio_buffer.speech_started', audio_start_ms: Math.round(start), item_id: item.id });
      this.announce(item);
      return r;
    }
    vad.silentMs = speech ? 0 : vad.silentMs + stepS * 1000;
    vad.turn.step({ vad: m['vad'] as never });
    if (!vad.turn.turnEnded || vad.silentMs < td.silence_duration_ms || this.open === null) return undefined;
    vad.speaking = false;
    this.emit({ type: 'input_audio_buffer.speech_stopped', audio_end_ms: Math.round(at.ms), item_id: this.open.id });
    this.commit();
    return undefined;
  }

  private emitError(error: VoicewireError): unknown {
    const body = errorEventBody(error);
    return this.emit({ type: 'error', error: body });
  }

  /** Sends one server event (its `event_id` added); returns the transport's answer (backpressure). */
  private emit(event: Record<string, unknown> & { type: string }): unknown {
    if (this.isClosed) return undefined;
    return this.options.transport.send(JSON.stringify({ event_id: this.newId('event'), ...event }));
  }

  /** Backpressure and reading, passed through to the client's socket. */
  get clientTransport(): ServerTransport {
    return this.options.transport;
  }
}

/** The transport the STT session writes to: its messages go to the Realtime session, never to the socket. */
class SttSide implements ServerTransport {
  run!: SttRun;

  constructor(private readonly owner: RealtimeTranscriptionSession) {}

  send(text: string): unknown {
    let m: unknown;
    try {
      m = JSON.parse(text);
    } catch {
      return undefined;
    }
    return isRecord(m) ? this.owner.sttMessage(this.run, m) : undefined;
  }

  /** The STT session closing ends that run only (an error was already translated). */
  close(): void {
    this.run.dead = true;
  }

  drained(): Promise<void> {
    return this.owner.clientTransport.drained?.() ?? Promise.resolve();
  }

  pauseReading(): void {
    this.owner.clientTransport.pauseReading?.();
  }

  resumeReading(): void {
    this.owner.clientTransport.resumeReading?.();
  }
}
