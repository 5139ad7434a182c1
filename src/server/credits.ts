/**
 * Credits (docs/api.md §2.5), reserve then settle (issue 20 §6 "billing is exact"): a request
 * holds credits before the engine works (`store.reserveCredits`: atomic, never below zero, never
 * twice), and at its end pays for what it delivered, the rest going back (`store.settleCredits`,
 * one usage line per request). A refused hold spends nothing and produces nothing more:
 * `CREDITS_EXHAUSTED` (code 1008).
 *
 * - TTS, `rates.ttsPerChar` per character of text handed to the engine (tags excluded). Held as
 *   text arrives (a POST holds its whole text up front, {@link MeteredTtsEngine.prepay}); paid for
 *   the characters whose audio was sent to the client: the text up to the last word (or flush, or
 *   end) whose audio was sent. A request whose client got everything pays for all its text.
 * - STT, `rates.sttPerSecond` per started second of the client's audio handed to the engine (not
 *   the silence the server pads it with): held before the frame that reaches a second, paid as
 *   held (every second held was processed).
 *
 * The same wrappers enforce the per-request text limit (`limits.maxTextChars`), before the engine
 * sees the text that passes it. Refused text (limit or credits) first has the paid text spoken
 * (a flush), so nothing paid for is lost. A hold is a usage line until settled, so the books
 * balance at every moment. An open hold names this instance and records what its request
 * delivered each time it grows and at every heartbeat (open-holds.ts): if the instance dies before
 * settling (`kill -9`, a crash), another instance's sweep settles it to that checkpoint (issue 36).
 * A settlement the store refused is retried at every heartbeat until it is written.
 *
 * Holds run ahead (issue 22: a store write per word was 11 % of a loaded server's CPU, on the
 * event loop): a hold that must grow takes, beyond what is needed, as much again as held so far,
 * at least {@link HOLD_AHEAD_MIN} and at most {@link HOLD_AHEAD_MAX} units (TTS: never past the
 * text limit), so a request makes a handful of store writes, not one per message. When the
 * balance cannot cover the ahead part, exactly what is needed is held; settlement charges only
 * what was delivered either way. What a request holds ahead is out of its organization's balance
 * until it ends: another request of an organization within that margin of zero may be refused.
 */
import { VoicewireError } from '../util/errors.js';
import type { MaybePromise, SttEngine, SttEngineStream, TtsEngine, TtsEngineConfig, TtsEngineEvent, TtsEngineStream } from '../sessions/engine.js';
import type { Principal } from './auth.js';
import type { ServerContext } from './context.js';
import type { OpenHold } from './open-holds.js';
import type { HoldCheckpoint } from './store/store.js';

/** Units (TTS characters, STT seconds) a growing hold takes at least beyond what is needed. */
export const HOLD_AHEAD_MIN = { tts: 256, stt: 5 } as const;
/** Units a growing hold takes at most beyond what is needed. */
export const HOLD_AHEAD_MAX = { tts: 1024, stt: 60 } as const;

/** Slack when comparing the audio sent with a mark's time (as the runner's, far below a sample). */
const TIME_EPSILON = 1e-6;

/** One request's credits: held as it goes (one hold, grown as needed), settled once at its end. */
class Bill implements OpenHold {
  /** Credits and units held so far, and the store's id of the hold. */
  private held = 0;
  private heldUnits = 0;
  private holdId: string | undefined;
  private settled = false;
  /** The hold being taken (holds of one request never overlap). */
  private pending: Promise<void> = Promise.resolve();
  /** Units delivered as last recorded in the store (a hold's growth or a heartbeat). */
  private checkpointed = 0;

  constructor(
    private readonly ctx: ServerContext,
    private readonly who: Principal,
    private readonly kind: 'tts' | 'stt',
    private readonly deliveredSoFar: () => number = () => 0,
  ) {}

  /** Units delivered so far: what a sweep charges should this instance die now. */
  protected deliveredUnits(): number {
    return this.deliveredSoFar();
  }

  /** What is delivered now, as a settlement would charge it (never more than is held). */
  private delivery(): { units: number; credits: number } {
    const units = Math.min(this.deliveredUnits(), this.heldUnits);
    return { units, credits: Math.min(this.held, this.price(units)) };
  }

  checkpoint(): HoldCheckpoint | undefined {
    if (this.holdId === undefined || this.settled) return undefined;
    const d = this.delivery();
    return d.units > this.checkpointed ? { holdId: this.holdId, ...d } : undefined;
  }

  recorded(c: HoldCheckpoint): void {
    this.checkpointed = Math.max(this.checkpointed, c.units);
  }

  /** Credits for `units` at this kind's rate. */
  price(units: number): number {
    const rate = this.kind === 'tts' ? this.ctx.config.rates.ttsPerChar : this.ctx.config.rates.sttPerSecond;
    return Math.ceil(units * rate);
  }

  /**
   * Holds enough for `units` in all (and, when the balance allows, some ahead, up to `cap` units
   * in all); CREDITS_EXHAUSTED (nothing more held) when the balance is short of `units`.
   */
  hold(units: number, cap = Infinity): Promise<void> {
    // A request already settled takes nothing more (an engine call that outlived its client).
    if (this.settled) return Promise.reject(new VoicewireError('PROTOCOL_CONNECTION_CLOSED', 'the request ended'));
    const next = this.pending.then(() => this.take(units, cap));
    this.pending = next.catch(() => undefined);
    return next;
  }

  private async take(units: number, cap: number): Promise<void> {
    if (this.price(units) <= this.held) return;
    const ahead = Math.min(HOLD_AHEAD_MAX[this.kind], Math.max(HOLD_AHEAD_MIN[this.kind], this.heldUnits));
    const target = Math.max(units, Math.min(units + ahead, cap));
    if (target > units && (await this.reserve(target))) return;
    if (await this.reserve(units)) return;
    const { ctx, who, kind } = this;
    ctx.metrics.errors.inc({ code: 'CREDITS_EXHAUSTED' });
    throw new VoicewireError('CREDITS_EXHAUSTED', `not enough credits left for organization ${who.org.name} (${kind}: ${this.price(units) - this.held} more needed)`);
  }

  /** Grows the hold to `units` in all; false (nothing held) when the balance is short. */
  private async reserve(units: number): Promise<boolean> {
    const amount = this.price(units) - this.held;
    const { ctx, who, kind } = this;
    // What was delivered so far rides on the same statement (no write of its own).
    const delivered = this.delivery();
    const r = await ctx.store.reserveCredits(who.org.id, amount, { keyId: who.key.id, kind, units: units - this.heldUnits }, this.holdId, { holder: ctx.holds.instanceId, delivered });
    if (r === null) return false;
    if (this.holdId === undefined) ctx.holds.open(this);
    this.holdId = r.holdId;
    this.held += amount;
    this.heldUnits = units;
    this.recorded({ holdId: r.holdId, ...delivered });
    return true;
  }

  /** Ends the bill (once): `units` are paid (at most what is held), the rest goes back. */
  async settle(units: number): Promise<void> {
    if (this.settled) return;
    this.settled = true;
    await this.pending;
    if (this.holdId === undefined) return;
    const credits = Math.min(this.held, this.price(units));
    const { ctx, who, kind, holdId } = this;
    const charge = { units: Math.min(units, this.heldUnits), credits };
    const write = async (): Promise<void> => {
      await ctx.store.settleCredits(who.org.id, holdId, charge, ctx.holds.instanceId);
      if (credits > 0) ctx.metrics.credits.inc({ kind }, credits);
    };
    try {
      await write();
    } catch (err) {
      // The hold stays spent (its usage line says so) until the retry, at every heartbeat, is written
      // (or, should this instance die first, a sweep settles it to its checkpoint).
      ctx.log.error({ org: who.org.name, kind, held: this.held, charged: credits, error: (err as Error).message }, 'credits not settled: retried at every heartbeat');
      ctx.holds.retry(write);
    } finally {
      ctx.holds.close(this);
    }
  }
}

/** Code points of `s` (what `maxTextChars` and the rates count). */
function codePoints(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/**
 * One TTS request's ledger: the text the engine was given, and marks that say "once the audio up to
 * `stop` seconds was sent, `chars` characters were delivered": one per word timestamp (found in the
 * text from where the previous one ended: engines name the words as they were sent, tone and
 * espeak do), one per flush and end (everything given before it).
 */
class TtsBill extends Bill {
  /** Text given to the engine, and its length in code points. */
  private text = '';
  chars = 0;
  /** Where the last word found ends: UTF-16 index and code points. */
  private cursor = 0;
  private cursorChars = 0;
  /** Audio the engine emitted, seconds. */
  emitted = 0;
  private readonly marks: Array<{ stop: number; chars: number }> = [];
  private delivered = 0;

  protected override deliveredUnits(): number {
    return this.delivered;
  }
  /** Audio sent to the client so far, seconds. */
  private sentStop = 0;
  /** The engine's end() resolved: every character given has its audio. */
  ended = false;
  /** Opened by the engine (a prepaid bill waits for its stream). */
  opened = false;

  given(text: string, n: number): void {
    this.text += text;
    this.chars += n;
  }

  word(text: string, stop: number): void {
    const at = text === '' ? -1 : this.text.indexOf(text, this.cursor);
    if (at < 0) return;
    const end = at + text.length;
    this.cursorChars += codePoints(this.text.slice(this.cursor, end));
    this.cursor = end;
    this.mark(stop, this.cursorChars);
  }

  /** Everything given so far is spoken once the audio emitted so far was sent. */
  barrier(): void {
    this.mark(this.emitted, this.chars);
  }

  private mark(stop: number, chars: number): void {
    this.marks.push({ stop, chars });
    // Audio sent before the mark was made (a flush that had nothing left to say) counts too.
    this.sent(this.sentStop);
  }

  sent(stop: number): void {
    if (stop > this.sentStop) this.sentStop = stop;
    while (this.marks.length > 0 && this.marks[0]!.stop <= stop + TIME_EPSILON) this.delivered = Math.max(this.delivered, this.marks.shift()!.chars);
  }

  /** The request is over: `complete` when its client took everything the engine produced. */
  finish(complete: boolean): Promise<void> {
    return this.settle(complete && this.ended ? this.chars : this.delivered);
  }
}

/**
 * A metered TTS engine for one route invocation (a POST, or a WebSocket with its requests). The
 * route reports what reached the client ({@link sent}) and when each request is over ({@link finish}).
 */
export interface MeteredTtsEngine extends TtsEngine {
  /**
   * Holds the credits of `chars` characters for the next request opened without a
   * `client_req_id` (a POST: its whole text, before any work). Throws `CREDITS_EXHAUSTED`.
   */
  prepay(chars: number): Promise<void>;
  /** The audio of request `key` (its `client_req_id`, null without one) up to `stopS` seconds was sent to the client. */
  sent(key: string | null, stopS: number): void;
  /** Request `key` is over; `complete` when its client took all of it (end of stream sent). Settles its bill. */
  finish(key: string | null, complete: boolean): Promise<void>;
  /** Every request is over (the response ended, the socket closed): settles the bills still open as incomplete. */
  finishAll(): Promise<void>;
}

const refusedText = (max: number): VoicewireError => new VoicewireError('LIMIT_EXCEEDED', `text is over the limit of ${max} characters per request`);

/**
 * One request's metered TTS stream. A class, as {@link MeteredTts}: an open, idle request holds
 * its fields, not closures (issue 22).
 */
class MeteredTtsStream implements TtsEngineStream {
  info!: TtsEngineStream['info'];
  stream!: TtsEngineStream;
  /** The inner stream's sample rate, once open (48 kHz until then). */
  rate = 48000;

  constructor(
    private readonly ctx: ServerContext,
    private readonly b: TtsBill,
  ) {}

  /** An engine event: audio and words are marked on the bill before they go on. */
  onEvent(event: TtsEngineEvent, emit: (event: TtsEngineEvent) => void): void {
    if (event.type === 'audio') this.b.emitted += event.pcm.length / this.rate;
    else if (event.type === 'word') this.b.word(event.text, event.stop_s);
    emit(event);
  }

  /** Speaks what was paid, then refuses: the client hears everything it pays for. */
  private async refuse(err: unknown): Promise<never> {
    await this.stream.flush();
    this.b.barrier();
    throw err;
  }

  async text(text: string): Promise<void> {
    const b = this.b;
    const max = this.ctx.config.limits.maxTextChars;
    const n = codePoints(text);
    if (b.chars + n > max) return this.refuse(refusedText(max));
    try {
      await b.hold(b.chars + n, max);
    } catch (err) {
      return this.refuse(err);
    }
    b.given(text, n);
    return this.stream.text(text);
  }

  pause(seconds: number): MaybePromise<void> {
    return this.stream.pause(seconds);
  }

  async flush(): Promise<void> {
    await this.stream.flush();
    this.b.barrier();
  }

  async end(): Promise<void> {
    await this.stream.end();
    this.b.barrier();
    this.b.ended = true;
  }

  close(): void {
    this.stream.close();
  }
}

/** {@link meteredTtsEngine}'s engine: the bills of one caller's requests, by `client_req_id`. */
class MeteredTts implements MeteredTtsEngine {
  private readonly bills = new Map<string | null, TtsBill>();

  constructor(
    private readonly ctx: ServerContext,
    private readonly who: Principal,
    private readonly inner: TtsEngine,
  ) {}

  async prepay(chars: number): Promise<void> {
    const max = this.ctx.config.limits.maxTextChars;
    if (chars > max) throw refusedText(max);
    await this.finish(null, false);
    const bill = new TtsBill(this.ctx, this.who, 'tts');
    this.bills.set(null, bill);
    // A POST's text is whole: nothing to hold ahead.
    await bill.hold(chars, chars);
  }

  sent(key: string | null, stopS: number): void {
    this.bills.get(key)?.sent(stopS);
  }

  async finish(key: string | null, complete: boolean): Promise<void> {
    const bill = this.bills.get(key);
    if (bill === undefined) return;
    this.bills.delete(key);
    await bill.finish(complete);
  }

  async finishAll(): Promise<void> {
    await Promise.all([...this.bills.keys()].map((k) => this.finish(k, false)));
  }

  async open(config: TtsEngineConfig, emit: (event: TtsEngineEvent) => void): Promise<TtsEngineStream> {
    const key = config.clientReqId ?? null;
    let bill = this.bills.get(key);
    if (bill === undefined || bill.opened) {
      // A new request on the same key: the previous one is over.
      if (bill !== undefined) await this.finish(key, false);
      bill = new TtsBill(this.ctx, this.who, 'tts');
      this.bills.set(key, bill);
    }
    bill.opened = true;
    const metered = new MeteredTtsStream(this.ctx, bill);
    const stream = await this.inner.open(config, (event) => metered.onEvent(event, emit));
    metered.stream = stream;
    metered.info = stream.info;
    metered.rate = stream.info.sampleRate ?? 48000;
    return metered;
  }
}

/** A TTS engine that holds credits and checks the text limit before each piece of text, and settles each request for what was sent. */
export function meteredTtsEngine(ctx: ServerContext, who: Principal, inner: TtsEngine): MeteredTtsEngine {
  return new MeteredTts(ctx, who, inner);
}

/** Options of {@link meteredSttEngine}. */
export interface SttBillOptions {
  /**
   * Whether the request's answer reached its client, known only after its streams closed (a
   * one-shot answer such as `/v1/audio/transcriptions` is sent once the transcription ended): each
   * stream's bill waits for it and charges nothing when it resolves false (a refused, failed or
   * abandoned request delivered nothing; issue 31 §5). The holds stay out of the balance until
   * then, so the route must settle it on every ending. A number is the seconds of audio whose
   * transcript was delivered (a streamed answer its client left: its last word's end): the started
   * seconds up to it are paid, never more than were held. Default: paid at the stream's close
   * (text streamed to the client as it came).
   */
  delivered?: Promise<boolean | number>;
  /** Told the started seconds held so far each time the hold grows: what the request costs once delivered (a streamed answer's `usage`). Default none. */
  held?: (seconds: number) => void;
}

/**
 * An STT engine that holds each started second of the client's audio before the frame that starts
 * it, and settles at the stream's close (or once `options.delivered` says). The silence the runner
 * adds (the padded last frame, the `delay_in_frames` frames behind a flush and at the end: `push`'s
 * `audioSamples`) is not audio the client sent, and costs nothing (issue 35: 0.96 s cost 2
 * credits, 5 with three flushes).
 */
export function meteredSttEngine(ctx: ServerContext, who: Principal, inner: SttEngine, options: SttBillOptions = {}): SttEngine {
  return {
    async open(config, emit) {
      const stream = await inner.open(config, emit);
      const rate = stream.info.sampleRate ?? 24000;
      let samples = 0;
      let seconds = 0;
      // Paid at close (every second held was processed) unless the route says when it is delivered:
      // then nothing counts as delivered before it does.
      const bill = new Bill(ctx, who, 'stt', () => (options.delivered === undefined ? seconds : 0));
      const metered: SttEngineStream = {
        info: stream.info,
        async push(frame, audioSamples = frame.length) {
          const audio = Math.max(0, Math.min(frame.length, audioSamples));
          // Every second the client's audio reaches, this frame's included, is held before the engine hears it.
          const second = Math.ceil((samples + audio) / rate);
          if (second > seconds) {
            await bill.hold(second);
            seconds = second;
            options.held?.(seconds);
          }
          samples += audio;
          return stream.push(frame, audioSamples);
        },
        close: () => {
          stream.close();
          if (options.delivered === undefined) void bill.settle(seconds);
          else void options.delivered.then((d) => bill.settle(d === true ? seconds : d === false ? 0 : Math.min(seconds, Math.max(0, Math.ceil(d - TIME_EPSILON)))), () => bill.settle(0));
        },
      };
      if (stream.end) metered.end = () => stream.end!();
      return metered;
    },
  };
}
