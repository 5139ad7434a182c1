/**
 * NDJSON (one JSON value per line) for the service's event streams: the STT HTTP response and the
 * TTS HTTP response with `only_audio: false` (docs/api.md §4.2, §4.3), whose in-stream failure
 * is one line `{"type":"error","message":…}` after which the stream ends (§7.2).
 *
 * The decoder takes bytes split anywhere (a streaming UTF-8 `TextDecoder`, so a multi-byte
 * character may straddle chunks), searches for `\n` only in new data, keeps at most one partial
 * line of at most `maxLineLength` code units, and parses each line once. Platform-neutral.
 */
import { describeValue, functionArg, iterableArg, objectArg, optionsArg, shown } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';

/** The in-stream error line of the API (docs/api.md §7.2). */
export interface NdjsonStreamErrorEvent {
  type: 'error';
  message: string;
  [key: string]: unknown;
}

/** Options of {@link createNdjsonDecoder}. */
export interface NdjsonDecoderOptions {
  /**
   * Longest line, in UTF-16 code units of the decoded text (= bytes for ASCII JSON), without its
   * line break. A longer line raises `NDJSON_LINE_TOO_LONG` and is skipped to its end; it is never
   * buffered beyond this limit. Default 1 MiB (1 048 576).
   */
  maxLineLength?: number;
  /**
   * The API's in-stream error line `{"type":"error",…}` ends the stream (§7.2). Default `'throw'`:
   * `push()` throws `NDJSON_STREAM_ERROR` (message = the server's message, `details.value` = the
   * line), so a consumer that only handles the event types it knows cannot miss the failure.
   * `'event'`: the line is returned as the last event. Either way, input after it is ignored.
   */
  streamError?: 'throw' | 'event';
  /**
   * Reject invalid UTF-8 with `NDJSON_INVALID_UTF8` instead of decoding it to U+FFFD. Default
   * false. The lines complete before the bad byte are delivered; the line that holds it is
   * dropped up to its newline (never joined to later input), and decoding resumes after it.
   */
  fatal?: boolean;
  /** Passed to `JSON.parse`. */
  reviver?: (this: unknown, key: string, value: unknown) => unknown;
}

/**
 * `error.details` of a VoicewireError thrown by the decoder's `push()`/`flush()`. The call has
 * consumed its whole input first (a bad line is skipped): `events` are all the values it decoded,
 * so a caller may catch, use them and keep pushing.
 */
export interface NdjsonErrorDetails {
  /** 1-based line number of the failure (blank lines count). */
  line: number;
  /** Every value the throwing call decoded. */
  events: unknown[];
  /** Every error of the call, first one = the thrown one. */
  errors: VoicewireError[];
  /** For `NDJSON_STREAM_ERROR`: the error line's value. */
  value?: NdjsonStreamErrorEvent;
}

/** The incremental NDJSON decoder. */
export interface NdjsonDecoder<T = unknown> {
  /** Decodes the next chunk (bytes, or text that is already decoded). Returns the complete values. */
  push(chunk: Uint8Array | string): T[];
  /** Ends the stream: a final line without a newline is accepted. The decoder is then ready for a new stream. */
  flush(): T[];
  /** Forgets everything without emitting. */
  reset(): void;
  /** Lines seen so far (complete ones, blank lines included). */
  readonly line: number;
  /** True once the stream's error line was seen (further input is ignored until flush/reset). */
  readonly ended: boolean;
}

const EMPTY = new Uint8Array(0);

function concatBytes(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.length === 0) return b;
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/** Length of the UTF-8 sequence a lead byte starts (0: not a valid lead byte). */
function sequenceLength(b: number): number {
  return b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
}

/**
 * The incomplete sequence at the end of `prev` + `bytes` (what a streaming decoder holds back),
 * copied: at most 3 bytes. Only the last 4 bytes are looked at.
 */
function incompleteTail(prev: Uint8Array, bytes: Uint8Array): Uint8Array {
  const last = bytes.length >= 4 ? bytes.subarray(bytes.length - 4) : concatBytes(prev, bytes).subarray(-4);
  for (let i = last.length - 1; i >= 0 && i >= last.length - 4; i--) {
    const b = last[i]!;
    if ((b & 0xc0) === 0x80) continue; // a continuation byte: look further back
    const n = sequenceLength(b);
    return n > last.length - i ? last.slice(i) : EMPTY;
  }
  return EMPTY;
}

/**
 * Offset of the first invalid sequence (WHATWG UTF-8 decode: overlong forms, surrogates and code
 * points above U+10FFFF are invalid), or the length when every byte is valid or the end is only
 * an incomplete sequence.
 */
function firstInvalidUtf8(bytes: Uint8Array): number {
  const n = bytes.length;
  let i = 0;
  while (i < n) {
    const b = bytes[i]!;
    const len = sequenceLength(b);
    if (len === 0) return i;
    if (len === 1) {
      i++;
      continue;
    }
    // The second byte's range depends on the lead (WHATWG Encoding §4.1: lower/upper boundaries).
    const lo = b === 0xe0 ? 0xa0 : b === 0xf0 ? 0x90 : 0x80;
    const hi = b === 0xed ? 0x9f : b === 0xf4 ? 0x8f : 0xbf;
    for (let k = 1; k < len; k++) {
      if (i + k >= n) return n; // incomplete at the end: not (yet) an error
      const c = bytes[i + k]!;
      if (k === 1 ? c < lo || c > hi : (c & 0xc0) !== 0x80) return i;
    }
    i += len;
  }
  return n;
}

/** Default of {@link NdjsonDecoderOptions.maxLineLength}: 1 MiB. */
export const NDJSON_DEFAULT_MAX_LINE_LENGTH = 1 << 20;

function isStreamError(value: unknown): value is NdjsonStreamErrorEvent {
  return typeof value === 'object' && value !== null && (value as { type?: unknown }).type === 'error';
}

function isBlank(line: string): boolean {
  for (let i = 0; i < line.length; i++) {
    const c = line.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d) return false;
  }
  return true;
}

class NdjsonDecoderImpl<T> implements NdjsonDecoder<T> {
  private readonly maxLineLength: number;
  private readonly throwStreamError: boolean;
  private readonly fatal: boolean;
  private readonly reviver: ((this: unknown, key: string, value: unknown) => unknown) | undefined;
  private decoder: TextDecoder;
  /** The partial last line (a rope of pieces; never longer than maxLineLength). */
  private partial = '';
  /** An over-long line is being skipped up to its newline. */
  private skipping = false;
  private lineNo = 0;
  private done = false;
  private events: T[] = [];
  private errors: VoicewireError[] = [];
  private streamErrorValue: NdjsonStreamErrorEvent | undefined;
  /**
   * `fatal`: the incomplete UTF-8 sequence at the end of the bytes decoded so far (≤ 3 bytes, a
   * copy). The streaming decoder holds these too; on an error they are needed to find where the
   * valid text ends.
   */
  private tail: Uint8Array = EMPTY;

  constructor(options: NdjsonDecoderOptions) {
    options = optionsArg(options, 'NDJSON decoder options');
    this.maxLineLength = options.maxLineLength ?? NDJSON_DEFAULT_MAX_LINE_LENGTH;
    if (!(Number.isInteger(this.maxLineLength) && this.maxLineLength > 0)) {
      throw new VoicewireError('INVALID_ARGUMENT', `maxLineLength must be a positive integer, got ${shown(options.maxLineLength)}`);
    }
    const mode = options.streamError ?? 'throw';
    if (mode !== 'throw' && mode !== 'event') {
      throw new VoicewireError('INVALID_ARGUMENT', `streamError must be 'throw' or 'event', got ${shown(mode)}`);
    }
    this.throwStreamError = mode === 'throw';
    this.fatal = options.fatal ?? false;
    this.reviver = options.reviver;
    this.decoder = new TextDecoder('utf-8', { fatal: this.fatal });
  }

  get line(): number {
    return this.lineNo;
  }

  get ended(): boolean {
    return this.done;
  }

  push(chunk: Uint8Array | string): T[] {
    let text: string;
    if (typeof chunk === 'string') {
      text = chunk;
    } else if (chunk instanceof Uint8Array) {
      if (this.fatal) {
        this.pushFatal(chunk);
        return this.finish();
      }
      text = this.decode(chunk, true);
    } else {
      throw new VoicewireError('INVALID_ARGUMENT', `push() takes a Uint8Array or a string, got ${typeof chunk}`);
    }
    if (!this.done && text.length > 0) this.scan(text);
    return this.finish();
  }

  flush(): T[] {
    const errorsBefore = this.errors.length;
    const rest = this.decode(undefined, false);
    this.tail = EMPTY;
    // The final line ended in a truncated character: it is broken, not a shorter line (issue 11 §10).
    if (this.errors.length > errorsBefore) this.partial = '';
    if (!this.done) {
      if (rest.length > 0) this.scan(rest);
      // A final line without a newline.
      if (!this.skipping && this.partial.length > 0) {
        const line = this.partial;
        this.partial = '';
        this.lineNo++;
        if (this.fits(line)) this.handleLine(line);
        else this.tooLong();
      }
    }
    this.partial = '';
    this.skipping = false;
    this.lineNo = 0;
    this.done = false;
    return this.finish();
  }

  reset(): void {
    this.decoder = new TextDecoder('utf-8', { fatal: this.fatal });
    this.tail = EMPTY;
    this.partial = '';
    this.skipping = false;
    this.lineNo = 0;
    this.done = false;
    this.events = [];
    this.errors = [];
    this.streamErrorValue = undefined;
  }

  private decode(chunk: Uint8Array | undefined, stream: boolean): string {
    try {
      return chunk === undefined ? this.decoder.decode() : this.decoder.decode(chunk, { stream });
    } catch (err) {
      // fatal: the decoder's state is undefined after an error; start a fresh one.
      this.decoder = new TextDecoder('utf-8', { fatal: this.fatal });
      this.errors.push(new VoicewireError('NDJSON_INVALID_UTF8', `invalid UTF-8 after line ${this.lineNo}`, { cause: err, details: { line: this.lineNo + 1 } }));
      return '';
    }
  }

  /**
   * `fatal` decoding of bytes (issue 11 §10). The lines complete before the first invalid byte are
   * delivered; the line holding it is dropped up to its newline (nothing of it is joined to later
   * input); decoding resumes after that newline. A newline byte (0x0A) is never part of a
   * multi-byte sequence, so skipping bytes to it is exact.
   */
  private pushFatal(chunk: Uint8Array): void {
    let bytes = chunk;
    while (bytes.length > 0 && !this.done) {
      if (this.skipping) {
        const nl = bytes.indexOf(0x0a);
        // The rest of a broken (or over-long) line: its bytes are dropped undecoded.
        this.decoder = new TextDecoder('utf-8', { fatal: true });
        this.tail = EMPTY;
        if (nl === -1) return;
        this.skipping = false;
        this.lineNo++;
        bytes = bytes.subarray(nl + 1);
        continue;
      }
      let text: string;
      try {
        text = this.decoder.decode(bytes, { stream: true });
      } catch (err) {
        // Where the valid text ends: the held tail of the previous chunk, then this chunk.
        const joined = concatBytes(this.tail, bytes);
        const bad = firstInvalidUtf8(joined);
        const valid = new TextDecoder('utf-8').decode(joined.subarray(0, bad));
        this.decoder = new TextDecoder('utf-8', { fatal: true });
        this.tail = EMPTY;
        if (valid.length > 0) this.scan(valid);
        if (this.done) return;
        this.errors.push(new VoicewireError('NDJSON_INVALID_UTF8', `NDJSON line ${this.lineNo + 1} is not valid UTF-8; skipped`, { cause: err, details: { line: this.lineNo + 1 } }));
        this.partial = '';
        this.skipping = true;
        bytes = joined.subarray(bad);
        continue;
      }
      this.tail = incompleteTail(this.tail, bytes);
      if (text.length > 0) this.scan(text);
      return;
    }
  }

  private finish(): T[] {
    const events = this.events;
    this.events = [];
    if (this.errors.length === 0) return events;
    const errors = this.errors;
    this.errors = [];
    const first = errors[0]!;
    const details: NdjsonErrorDetails = { line: (first.details as { line: number }).line, events, errors };
    if (first.code === 'NDJSON_STREAM_ERROR' && this.streamErrorValue !== undefined) details.value = this.streamErrorValue;
    this.streamErrorValue = undefined;
    throw new VoicewireError(first.code, first.message, { details, cause: first.cause });
  }

  /** Splits new text at '\n'. Only `text` is searched: the partial line is never rescanned. */
  private scan(text: string): void {
    let start = 0;
    if (this.skipping) {
      const nl = text.indexOf('\n');
      if (nl === -1) return;
      this.skipping = false;
      this.lineNo++;
      start = nl + 1;
    }
    const max = this.maxLineLength;
    for (;;) {
      const nl = text.indexOf('\n', start);
      if (nl === -1) break;
      this.lineNo++;
      let line: string;
      if (this.partial.length > 0) {
        if (this.partial.length + (nl - start) > max + 1) {
          this.partial = '';
          this.tooLong();
          start = nl + 1;
          continue;
        }
        line = this.partial + text.slice(start, nl);
        this.partial = '';
      } else {
        line = text.slice(start, nl);
      }
      start = nl + 1;
      if (line.length > max && !this.fits(line)) {
        this.tooLong();
        continue;
      }
      this.handleLine(line);
      if (this.done) return; // the stream's error line: everything after it is ignored (§7.2)
    }
    const rest = text.length - start;
    if (rest > 0) {
      if (this.partial.length + rest > max + 1) {
        // Bounded memory: drop what we have and skip to the end of this line.
        this.partial = '';
        this.skipping = true;
        this.tooLong(this.lineNo + 1);
      } else {
        this.partial += start === 0 ? text : text.slice(start);
      }
    }
  }

  /** Within the limit; the '\r' of "\r\n" may be one unit beyond it (it is JSON whitespace anyway). */
  private fits(line: string): boolean {
    const max = this.maxLineLength;
    return line.length <= max || (line.length === max + 1 && line.charCodeAt(max) === 0x0d);
  }

  private tooLong(line = this.lineNo): void {
    this.errors.push(
      new VoicewireError('NDJSON_LINE_TOO_LONG', `NDJSON line ${line} is longer than ${this.maxLineLength} characters; skipped`, {
        details: { line },
      }),
    );
  }

  private handleLine(line: string): void {
    if (line.length === 0) return; // blank line
    let value: unknown;
    try {
      value = JSON.parse(line, this.reviver);
    } catch (err) {
      if (isBlank(line)) return; // blank lines are skipped
      const excerpt = line.length > 80 ? `${line.slice(0, 80)}…` : line;
      this.errors.push(
        new VoicewireError('NDJSON_INVALID_JSON', `NDJSON line ${this.lineNo} is not valid JSON (${(err as Error).message}): ${excerpt}`, {
          cause: err,
          details: { line: this.lineNo },
        }),
      );
      return;
    }
    if (isStreamError(value)) {
      this.done = true;
      if (this.throwStreamError) {
        this.streamErrorValue = value;
        this.errors.push(
          new VoicewireError('NDJSON_STREAM_ERROR', typeof value.message === 'string' ? value.message : JSON.stringify(value), {
            details: { line: this.lineNo },
          }),
        );
        return;
      }
    }
    this.events.push(value as T);
  }
}

/**
 * Creates an incremental NDJSON decoder. Defaults: `maxLineLength` 1 MiB, `streamError: 'throw'`,
 * `fatal: false`. Accepts `\n` and `\r\n`, skips blank lines, accepts a final line without a
 * newline on `flush()`. A bad line raises a VoicewireError naming its line number
 * (`NDJSON_INVALID_JSON`, `NDJSON_LINE_TOO_LONG`) after the whole chunk has been decoded; the
 * decoder keeps working (see {@link NdjsonErrorDetails}).
 *
 * Added latency: none; a value comes out as soon as its newline arrives.
 */
export function createNdjsonDecoder<T = unknown>(options: NdjsonDecoderOptions = {}): NdjsonDecoder<T> {
  return new NdjsonDecoderImpl<T>(options);
}

/** One-shot decode of a whole NDJSON text or byte array. */
export function decodeNdjson<T = unknown>(input: Uint8Array | string, options: NdjsonDecoderOptions = {}): T[] {
  const decoder = new NdjsonDecoderImpl<T>(options);
  const out = decoder.push(input);
  for (const v of decoder.flush()) out.push(v);
  return out;
}

/** Runs one decoder step; on a throw, `deliver`s the values decoded before rethrowing. */
function step<T>(run: () => T[], deliver: (value: T) => void): void {
  let values: T[];
  try {
    values = run();
  } catch (err) {
    const details = (err as VoicewireError).details as NdjsonErrorDetails | undefined;
    for (const v of (details?.events ?? []) as T[]) deliver(v);
    throw err;
  }
  for (const v of values) deliver(v);
}

/**
 * Web TransformStream: bytes (or strings) in, decoded values out. On an error the values decoded
 * from the failing chunk are enqueued first, then the stream errors with the VoicewireError.
 */
export function createNdjsonDecoderStream<T = unknown>(options: NdjsonDecoderOptions = {}): TransformStream<Uint8Array | string, T> {
  const decoder = createNdjsonDecoder<T>(options);
  return new TransformStream<Uint8Array | string, T>({
    transform: (chunk, controller) => step(() => decoder.push(chunk), (v) => controller.enqueue(v)),
    flush: (controller) => step(() => decoder.flush(), (v) => controller.enqueue(v)),
  });
}

/** The body of a `fetch` Response (or anything shaped like one). */
export interface NdjsonResponseLike {
  body: ReadableStream<Uint8Array> | null;
  ok?: boolean;
  status?: number;
  text?: () => Promise<string>;
}

/**
 * The events of an NDJSON HTTP response (e.g. `fetch('/post/speech/asr', …)`, docs/api.md
 * §4.3) as an async iterable. A non-2xx response (`ok === false`, §7.1: a plain-text body) throws
 * `HTTP_ERROR` with the status and body text; the in-stream error line throws
 * `NDJSON_STREAM_ERROR` (or is yielded, with `streamError: 'event'`). Leaving the loop early
 * cancels the body.
 */
export function ndjsonEvents<T = unknown>(response: NdjsonResponseLike, options?: NdjsonDecoderOptions): AsyncGenerator<T, void, undefined> {
  // Checked here, at the call, rather than at the first next().
  objectArg(response, 'ndjsonEvents response');
  const body: unknown = response.body;
  if (body !== null && typeof (body as { getReader?: unknown } | undefined)?.getReader !== 'function') {
    throw new VoicewireError('INVALID_ARGUMENT', `ndjsonEvents: response.body must be a ReadableStream or null, got ${describeValue(body)}`);
  }
  if (response.text !== undefined) functionArg(response.text, 'ndjsonEvents response.text');
  return events(response, createNdjsonDecoder<T>(options));
}

async function* events<T>(response: NdjsonResponseLike, decoder: NdjsonDecoder<T>): AsyncGenerator<T, void, undefined> {
  if (response.ok === false) {
    const text: unknown = response.text !== undefined ? await Promise.resolve().then(() => response.text!()).catch(() => '') : '';
    const body = typeof text === 'string' ? text : '';
    throw new VoicewireError('HTTP_ERROR', `HTTP ${shown(response.status)}: ${body.slice(0, 1000)}`, {
      details: { status: response.status, body },
    });
  }
  if (response.body === null) return;
  const reader = response.body.getReader();
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      const pending: T[] = [];
      try {
        step(() => (done ? decoder.flush() : decoder.push(value)), (v) => pending.push(v));
      } catch (err) {
        yield* pending;
        throw err;
      }
      yield* pending;
      if (done) {
        finished = true;
        return;
      }
      if (decoder.ended) return; // the error line ends the stream (§7.2)
    }
  } finally {
    if (!finished) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}

// ------------------------------------------------------------------------------------------------
// Encoder
// ------------------------------------------------------------------------------------------------

const utf8 = new TextEncoder();

/**
 * One NDJSON line: `JSON.stringify(value) + '\n'`. JSON.stringify escapes every line break inside
 * strings, so the line holds exactly one `\n`, at its end (checked). Values JSON cannot represent
 * (`undefined`, a function, a symbol, a BigInt, a cycle) raise `INVALID_ARGUMENT`.
 */
export function encodeNdjsonLine(value: unknown): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (err) {
    throw new VoicewireError('INVALID_ARGUMENT', `value cannot be encoded as JSON: ${(err as Error).message}`, { cause: err });
  }
  if (json === undefined) throw new VoicewireError('INVALID_ARGUMENT', `value cannot be encoded as JSON: ${typeof value}`);
  // Cannot happen with JSON.stringify without indentation; an embedded '\n' would split the line.
  if (json.includes('\n')) throw new VoicewireError('INVALID_ARGUMENT', 'encoded JSON contains a line break');
  // U+2028, U+2029 and U+0085 are legal raw in JSON strings, but Unicode-aware line splitters
  // (Python's str.splitlines, some log pipelines) break lines there: write them escaped.
  if (UNICODE_LINE_BREAKS.test(json)) json = json.replace(UNICODE_LINE_BREAKS_G, escapeLineBreak);
  return json + '\n';
}

const UNICODE_LINE_BREAKS = /[\u0085\u2028\u2029]/;
const UNICODE_LINE_BREAKS_G = /[\u0085\u2028\u2029]/g;
const escapeLineBreak = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** {@link encodeNdjsonLine} as UTF-8 bytes. */
export function encodeNdjsonLineBytes(value: unknown): Uint8Array {
  return utf8.encode(encodeNdjsonLine(value));
}

/** Many values as one NDJSON text. */
export function encodeNdjson(values: Iterable<unknown>): string {
  iterableArg(values, 'encodeNdjson: values');
  let out = '';
  for (const v of values) out += encodeNdjsonLine(v);
  return out;
}

/** Web TransformStream: values in, UTF-8 NDJSON lines out (one chunk per value). */
export function createNdjsonEncoderStream(): TransformStream<unknown, Uint8Array> {
  return new TransformStream<unknown, Uint8Array>({
    transform: (value, controller) => controller.enqueue(encodeNdjsonLineBytes(value)),
  });
}
