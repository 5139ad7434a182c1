/**
 * The TTS server session runner (§4): parses `<flush>` and `<break>` tags, feeds the engine text
 * in bounded pieces behind the transport, encodes its frames to the `output_format`, and holds
 * each word timestamp until the audio that completes it was sent (issue 7).
 */
import { objectArg } from '../util/args.js';
import type { VoicewireError } from '../util/errors.js';
import type { AudioFormatName } from '../audio/format.js';
import { createTtsAudioEncoder, type TtsAudioEncoder } from '../pipelines/tts-audio-encoder.js';
import { createTagParser, type TagEvent, type TagParser, type TagParserOptions } from '../text/tags.js';
import type { TtsWordMessage } from '../protocol/messages.js';
import { serializeTtsAudioMessage, serializeTtsServerMessage } from '../protocol/parse.js';
import { encodeTtsAudioLine } from '../protocol/audio-line.js';
import type { MaybePromise, TtsEngine, TtsEngineStream } from './engine.js';
import { after, sequence } from './maybe-promise.js';
import { createServerSessionMachine } from './multiplex.js';
import { clientFault, engineFault, Runner } from './server-runner.js';
import { NO_AUDIO_LINE, type ServerSession, type ServerSessionOptions } from './server-session.js';
import type { TaskQueue } from './task-queue.js';
import { ttsServerMachine, ttsServerRequestMachine, type TtsEngineOp, type TtsServerEffect, type TtsServerEvent, type TtsServerState } from './tts-session.js';

/**
 * One encoded TTS chunk and the span of decoded output audio its bytes add, in seconds from the
 * start of the request (issue 7). Chunks are contiguous: each `start_s` is the previous `stop_s`.
 */
export interface TtsOutputChunk {
  /** Bytes of the output format; empty means nothing to send yet. */
  readonly bytes: Uint8Array;
  /** Where the audio these bytes add begins on the output timeline (the previous chunk's `stop_s`). */
  readonly start_s: number;
  /** Up to where the bytes sent so far carry decoded audio (resampler and Opus delays included). */
  readonly stop_s: number;
}

/**
 * Turns model frames (s16 mono at the model rate, 48 kHz) into chunks of a TTS `output_format`
 * with their timing. The runner stamps each `audio` message with the chunk's `start_s`/`stop_s`
 * and holds each word timestamp until a sent chunk's `stop_s` reaches the word's `stop_s`. A chunk
 * may be empty (nothing to send yet). The default is the audio pipeline's encoder
 * ({@link createTtsOutputEncoder}).
 */
export interface TtsOutputEncoder {
  push(pcm: Int16Array): TtsOutputChunk;
  /** End of the request: the trailing chunk (resampler tail, the last Opus packet and EOS page). Optional. */
  end?(): TtsOutputChunk;
  /** A `<flush>`: the bytes held back for whole chunks, as a (shorter) chunk, without ending the stream. Optional. */
  drain?(): TtsOutputChunk;
}

/** Options of {@link createTtsServerSession}. */
export interface TtsServerSessionOptions extends ServerSessionOptions {
  engine: TtsEngine;
  /** Encoder factory for the setup's `output_format`. Default: {@link defaultTtsOutputEncoder}. */
  createOutputEncoder?: (format: AudioFormatName, sampleRate: number) => TtsOutputEncoder;
  /** Options of the tag parser each request gets (default: tags.ts defaults, which repair bad breaks). */
  tags?: TagParserOptions;
}

/**
 * The default TTS output encoder: the audio pipeline's {@link createTtsOutputEncoder} for every
 * output format of §4.2 (one chunk per model frame; Ogg header pages first, EOS page on `end`).
 */
export function defaultTtsOutputEncoder(format: AudioFormatName, sampleRate: number): TtsOutputEncoder {
  const enc = createTtsAudioEncoder(format, { sampleRate });
  const f = enc.format;
  // Raw PCM and G.711 at another rate than the model's: whole 80 ms chunks (issue 35).
  if (f.container === 'raw' && f.bytesPerSample !== null && enc.outputRate !== sampleRate) {
    return new WholeFrameOutputEncoder(enc, f.bytesPerSample, Math.round(enc.outputRate * 0.08));
  }
  return new DefaultTtsOutputEncoder(enc);
}

/** {@link createTtsOutputEncoder}'s encoder with shared methods instead of two closures (issue 22: one per request). */
class DefaultTtsOutputEncoder implements TtsOutputEncoder {
  constructor(private readonly enc: TtsAudioEncoder) {}

  push(pcm: Int16Array): TtsOutputChunk {
    return this.enc.encode(pcm);
  }

  end(): TtsOutputChunk {
    return this.enc.end();
  }
}

/**
 * Raw PCM or G.711 resampled from the model's rate, in chunks of exactly 80 ms at the output rate
 * (issue 35: the first `ulaw_8000` chunk covered 74 ms, the resampler's look-ahead short). The
 * resampler emits output `k` once it has input up to `k` plus its look-ahead, so each frame's
 * bytes are carried until 80 ms of output is there: a chunk goes out with the next frame (the
 * stream's first chunk one model frame later than before), and a `<flush>` or the end sends the
 * rest, shorter.
 */
class WholeFrameOutputEncoder implements TtsOutputEncoder {
  /** Bytes encoded and not yet sent, in pieces (no copy per frame). */
  private readonly pending: Uint8Array[] = [];
  private pendingBytes = 0;
  /** Output samples sent so far. */
  private sent = 0;
  private readonly frameBytes: number;

  constructor(
    private readonly enc: TtsAudioEncoder,
    private readonly bytesPerSample: number,
    frameSamples: number,
  ) {
    this.frameBytes = frameSamples * bytesPerSample;
  }

  push(pcm: Int16Array): TtsOutputChunk {
    this.add(this.enc.encode(pcm).bytes);
    return this.take(Math.floor(this.pendingBytes / this.frameBytes) * this.frameBytes);
  }

  end(): TtsOutputChunk {
    this.add(this.enc.end().bytes);
    const last = this.take(this.pendingBytes);
    this.sent = 0;
    return last;
  }

  drain(): TtsOutputChunk {
    return this.take(this.pendingBytes);
  }

  private add(bytes: Uint8Array): void {
    if (bytes.byteLength === 0) return;
    this.pending.push(bytes);
    this.pendingBytes += bytes.byteLength;
  }

  /** The first `n` pending bytes as one chunk, timed by the samples they hold. */
  private take(n: number): TtsOutputChunk {
    const start = this.sent / this.enc.outputRate;
    if (n === 0) return { bytes: new Uint8Array(0), start_s: start, stop_s: start };
    const out = new Uint8Array(n);
    let o = 0;
    while (o < n) {
      const head = this.pending[0]!;
      const k = Math.min(head.byteLength, n - o);
      out.set(head.subarray(0, k), o);
      o += k;
      if (k === head.byteLength) this.pending.shift();
      else this.pending[0] = head.subarray(k);
    }
    this.pendingBytes -= n;
    this.sent += n / this.bytesPerSample;
    return { bytes: out, start_s: start, stop_s: this.sent / this.enc.outputRate };
  }
}

interface TtsDriver {
  queue: TaskQueue;
  closed: boolean;
  stream: TtsEngineStream | null;
  encoder: TtsOutputEncoder | null;
  /** Made at the request's first text (null until then) when the session's tag options are the defaults. */
  tags: TagParser | null;
  clientReqId: string | undefined;
  /** `stream_id` of the last model frame (the trailing chunk of `end()` carries it too). */
  streamId: number | null;
  /** `stop_s` of the audio sent so far. */
  sentStop: number;
  /** Word timestamps waiting for the audio that completes them, in the engine's order. */
  held: TtsWordMessage[];
}

/** Slack when comparing a word's `stop_s` with the audio's (float sums of 0.08; far below one sample at 48 kHz). */
const TIME_EPSILON = 1e-6;

class TtsServerRunner extends Runner<TtsServerState, TtsServerEvent, TtsServerEffect, TtsDriver> {
  protected readonly route = 'TTS';

  constructor(private readonly tts: TtsServerSessionOptions) {
    super(tts?.maxRequests === undefined ? ttsServerMachine : createServerSessionMachine(ttsServerRequestMachine, { maxRequests: tts.maxRequests }), tts);
  }

  protected serialize(message: unknown): string {
    return serializeTtsServerMessage(message as never);
  }

  protected executeOther(effect: TtsServerEffect): void {
    switch (effect.type) {
      case 'audio': {
        const d = this.drivers.get(effect.stream);
        if (d === undefined || d.closed || d.encoder === null) return;
        let chunk: TtsOutputChunk;
        try {
          chunk = d.encoder.push(effect.pcm);
        } catch (err) {
          this.failStream(effect.key, effect.stream, engineFault(err, 'TTS output encoder'));
          return;
        }
        d.streamId = effect.stream_id;
        this.sendChunk(d, chunk);
        return;
      }
      case 'word': {
        const d = this.drivers.get(effect.stream);
        if (d === undefined || d.closed) return;
        // Issue 7: a word goes out once the audio reaching its stop_s has been sent, never before.
        if (d.held.length === 0 && effect.message.stop_s <= d.sentStop + TIME_EPSILON) this.send(this.serialize(effect.message));
        else d.held.push(effect.message);
        return;
      }
      case 'audio_drain': {
        const d = this.drivers.get(effect.stream);
        if (d === undefined || d.closed || d.encoder === null || !d.encoder.drain) return;
        let chunk: TtsOutputChunk;
        try {
          chunk = d.encoder.drain();
        } catch (err) {
          this.failStream(effect.key, effect.stream, engineFault(err, 'TTS output encoder'));
          return;
        }
        this.sendChunk(d, chunk);
        return;
      }
      case 'audio_end': {
        const d = this.drivers.get(effect.stream);
        if (d === undefined || d.closed) return;
        if (d.encoder !== null && d.encoder.end) {
          let chunk: TtsOutputChunk;
          try {
            chunk = d.encoder.end();
          } catch (err) {
            this.failStream(effect.key, effect.stream, engineFault(err, 'TTS output encoder'));
            return;
          }
          this.sendChunk(d, chunk);
        }
        // The end of the audio: every word still held goes out, before end_of_stream.
        for (const w of d.held.splice(0)) this.send(this.serialize(w));
        return;
      }
      case 'engine': {
        const { key, stream } = effect;
        this.engineEffect(
          key,
          stream,
          effect.op,
          (queue) => ({
            queue,
            closed: false,
            stream: null,
            encoder: null,
            // Default options cannot fail: the parser waits for the first text (an idle request
            // holds none, issue 22). Options of the caller's are checked here, as ever.
            tags: this.tts.tags === undefined ? null : createTagParser(this.tts.tags),
            clientReqId: key ?? undefined,
            streamId: 0,
            sentStop: 0,
            held: [],
          }),
          (d, op) => this.runOp(d, key, stream, op),
        );
        return;
      }
      default:
        return;
    }
  }

  /** Sends a non-empty chunk as an `audio` message stamped with its own span, then the words it completes. */
  private sendChunk(d: TtsDriver, chunk: TtsOutputChunk): void {
    if (chunk.bytes.byteLength === 0) return;
    const fields: { start_s: number; stop_s: number; stream_id: number | null; client_req_id?: string } = { start_s: chunk.start_s, stop_s: chunk.stop_s, stream_id: d.streamId };
    if (d.clientReqId !== undefined) fields.client_req_id = d.clientReqId;
    // Written once into one buffer where the transport takes bytes (issue 34), else the string.
    // A transport that reads no lines (POST only_audio) gets none built.
    const transport = this.tts.transport;
    if (transport.sendAudio !== undefined) this.sendAudio(transport.audioLines === false ? NO_AUDIO_LINE : encodeTtsAudioLine(chunk.bytes, fields), { clientReqId: d.clientReqId ?? null, stop_s: chunk.stop_s });
    else this.send(serializeTtsAudioMessage(chunk.bytes, fields));
    if (chunk.stop_s > d.sentStop) d.sentStop = chunk.stop_s;
    let n = 0;
    while (n < d.held.length && d.held[n]!.stop_s <= d.sentStop + TIME_EPSILON) n++;
    if (n > 0) for (const w of d.held.splice(0, n)) this.send(this.serialize(w));
  }

  private failStream(key: string | null, stream: number, error: VoicewireError): void {
    this.dispatch({ type: 'engine_failure', key, stream, error });
  }

  private runTags(d: TtsDriver, key: string | null, stream: number, events: readonly TagEvent[]): MaybePromise<void> {
    // A long text goes to the engine in pieces cut at spaces, each a call of its own behind the
    // gate: an engine emits a call's audio at once, so without the cut one long message would be
    // synthesized whole however slowly the client reads (memory linear in the text, not bounded).
    if (events.some((e) => e.type === 'text' && e.text.length > ENGINE_TEXT_PIECE)) {
      events = events.flatMap((e) => (e.type === 'text' && e.text.length > ENGINE_TEXT_PIECE ? splitAtSpaces(e.text, ENGINE_TEXT_PIECE).map((text) => ({ type: 'text' as const, text })) : [e]));
    }
    const s = d.stream!;
    const run = (e: TagEvent): MaybePromise<void> => {
      if (d.closed) return undefined;
      if (e.type === 'text') return e.text === '' ? undefined : s.text(e.text);
      // The flush's barrier comes after every event the engine emitted for it (they were queued first).
      if (e.type === 'flush') return after(s.flush(), () => this.report(d, key, stream, { type: 'flushed' }));
      return s.pause(e.seconds);
    };
    // Each tag event is an engine call: each waits for the transport too.
    return sequence(events, (e, i) => (i === 0 ? run(e) : after(this.gate(), () => run(e))));
  }

  private runOp(d: TtsDriver, key: string | null, stream: number, op: Exclude<TtsEngineOp, { op: 'close' }>): MaybePromise<void> {
    switch (op.op) {
      case 'open': {
        return this.openStream(d, key, stream, (emit) => this.tts.engine.open(op.config, emit), (s) => {
          d.stream = s;
          try {
            d.encoder = (this.tts.createOutputEncoder ?? defaultTtsOutputEncoder)(op.config.outputFormat, s.info.sampleRate ?? 48000);
          } catch (err) {
            throw clientFault(err, 'PROTOCOL_INVALID_AUDIO', `TTS: output_format '${op.config.outputFormat}'`);
          }
        });
      }
      case 'text': {
        let events: TagEvent[];
        try {
          events = (d.tags ??= createTagParser({})).push(op.text);
        } catch (err) {
          // An 'error' tag policy: the parser consumed the whole piece; report the tag as the client's fault.
          throw clientFault(err, 'PROTOCOL_INVALID_MESSAGE', 'TTS: invalid tag in text');
        }
        return this.runTags(d, key, stream, events);
      }
      case 'end': {
        let events: TagEvent[];
        try {
          events = d.tags === null ? [] : d.tags.flush();
        } catch (err) {
          throw clientFault(err, 'PROTOCOL_INVALID_MESSAGE', 'TTS: invalid tag in text');
        }
        const s = d.stream!;
        return after(this.runTags(d, key, stream, events), () =>
          after(d.closed ? undefined : s.end(), () => this.report(d, key, stream, { type: 'ended' })),
        );
      }
    }
  }
}

/**
 * Runs a TTS server session over one socket: validates every client message, joins text pieces,
 * parses `<flush>` and `<break>` tags, drives one engine stream per request, encodes its frames to
 * the requested `output_format`, and answers with `ready`, `audio`, `text` (word timestamps),
 * `need_more_text`, `end_of_stream` and `error`.
 */
export function createTtsServerSession(options: TtsServerSessionOptions): ServerSession<TtsServerState> {
  objectArg(options, 'createTtsServerSession: options');
  objectArg(options.engine, 'createTtsServerSession: options.engine');
  return new TtsServerRunner(options);
}

/** Longest text handed to a TTS engine in one call, characters (a longer message is cut at spaces). */
const ENGINE_TEXT_PIECE = 256;

/** `text` in pieces of at most `max` characters, each ending after a space where one is near (a word longer than `max` is cut). */
function splitAtSpaces(text: string, max: number): string[] {
  const pieces: string[] = [];
  let at = 0;
  while (text.length - at > max) {
    const space = text.lastIndexOf(' ', at + max - 1);
    const end = space > at ? space + 1 : at + max;
    pieces.push(text.slice(at, end));
    at = end;
  }
  if (at < text.length) pieces.push(text.slice(at));
  return pieces;
}
