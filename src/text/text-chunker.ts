/**
 * TTS text chunker: pieces of an LLM token stream in, the strings of the `text` messages a TTS
 * WebSocket should carry out (protocol-notes.md "TTS WebSocket"; docs/api.md §4.5).
 *
 * - Splits on whitespace only, never inside a word: a word goes out as soon as the whitespace
 *   after it arrives (and the message is at least `minChunkLength` long).
 * - Tags are whole tokens: `<flush>` and `<break …/>` are found by the {@link TagScanner}, so a
 *   tag split across pieces is never split across messages (a split `<break>` is read aloud).
 *   A tag is also a word boundary, so a break always has spaces around it once the server joins
 *   the messages.
 * - `<flush>` goes out at once, at the end of the message holding everything before it.
 * - Messages have no leading, trailing or repeated whitespace: the server joins consecutive text
 *   messages with one space, so the joined output equals the input with whitespace normalized.
 */
import { optionsArg, shown, stringArg } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';
import {
  TagScanner,
  createTagParser,
  formatBreakTag,
  isBreakingSpace,
  type TagEvent,
  type TagParser,
  type TagScannerOptions,
} from './tags.js';
import { toWebTransformStream } from '../util/web.js';

/** Options of {@link createTextChunker}. */
export interface TextChunkerOptions {
  /**
   * A message goes out only once it is at least this many UTF-16 code units long (a `<flush>` and
   * `end()` send shorter ones). Default 0: every word goes out as soon as it is complete; the
   * service joins messages itself and keeps a few words of look-ahead, so client batching only
   * adds latency. Raise it (e.g. 40–80) for a service that synthesizes each message on its own.
   */
  minChunkLength?: number;
  /**
   * false (default): tags pass through exactly as written (whitespace inside them normalized).
   * true: text goes through {@link createTagParser} with its `'repair'` defaults first, so breaks
   * are valid and canonical (`<break time="0.5s" />`) and malformed ones are repaired or dropped.
   */
  repairTags?: boolean;
  /** Longest tag held back waiting for its `>` (see TagParserOptions.maxTagLength). Default 64. */
  maxTagLength?: number;
  /**
   * A "word" (run without whitespace) longer than this is sent in pieces of this length, so the
   * buffer stays bounded; the joined output then has a space inside that run. Default 4096.
   */
  maxWordLength?: number;
  /** With `repairTags`, called with a warning for every repair. */
  onRepair?: (warning: VoicewireError) => void;
}

/** The incremental chunker. */
export interface TextChunker {
  /** Takes the next piece of text; returns the messages that are ready. */
  push(text: string): string[];
  /** Ends the input and returns the rest. The chunker is then ready for a new stream. */
  end(): string[];
  /** Alias of {@link TextChunker.end}, so the chunker is an `Incremental<string, string>`. */
  flush(): string[];
  /** Forgets everything buffered without emitting it. */
  reset(): void;
}

/** Runs of breaking whitespace: JS `\s` without the no-break spaces U+00A0, U+2007, U+202F, U+FEFF (see isBreakingSpace). */
const SPACE_RUNS = /[\t\n\v\f\r \u1680\u2000-\u2006\u2008-\u200a\u2028\u2029\u205f\u3000]+/;

/** Replaces each whitespace run by one space (tags are bounded, so this is cheap). */
function collapseSpaces(s: string): string {
  let out = '';
  let spaced = false;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    if (isBreakingSpace(s.charCodeAt(i))) {
      if (!spaced) out += s.slice(start, i) + ' ';
      spaced = true;
      start = i + 1;
    } else {
      spaced = false;
    }
  }
  return out + s.slice(start);
}

class TextChunkerImpl implements TextChunker {
  private readonly minChunkLength: number;
  private readonly maxWordLength: number;
  private readonly scanner: TagScanner | undefined;
  private readonly parser: TagParser | undefined;
  private word = '';
  private message = '';
  private out: string[] = [];

  constructor(options: TextChunkerOptions) {
    options = optionsArg(options, 'text chunker options');
    this.minChunkLength = options.minChunkLength ?? 0;
    this.maxWordLength = options.maxWordLength ?? 4096;
    if (!(Number.isInteger(this.minChunkLength) && this.minChunkLength >= 0)) {
      throw new VoicewireError('INVALID_ARGUMENT', `minChunkLength must be a non-negative integer, got ${shown(options.minChunkLength)}`);
    }
    if (!(Number.isInteger(this.maxWordLength) && this.maxWordLength >= 16)) {
      throw new VoicewireError('INVALID_ARGUMENT', `maxWordLength must be an integer >= 16, got ${shown(options.maxWordLength)}`);
    }
    if (options.repairTags) {
      this.parser = createTagParser({
        ...(options.maxTagLength !== undefined ? { maxTagLength: options.maxTagLength } : {}),
        ...(options.onRepair !== undefined ? { onRepair: options.onRepair } : {}),
      });
    } else {
      // Malformed `<break …>` tags are held whole too: split across messages they would be read aloud.
      const scannerOptions: TagScannerOptions = { holdMalformed: true };
      if (options.maxTagLength !== undefined) scannerOptions.maxTagLength = options.maxTagLength;
      // A handler of its own: ontext/onflush/onbreak are the scanner's, not the chunker's API.
      this.scanner = new TagScanner({ ontext: (text) => this.ontext(text), onflush: (source) => this.onflush(source), onbreak: (source) => this.onbreak(source) }, scannerOptions);
    }
  }

  push(text: string): string[] {
    if (typeof text !== 'string') throw new VoicewireError('INVALID_ARGUMENT', `push() takes a string, got ${typeof text}`);
    if (this.parser !== undefined) this.feedEvents(this.parser.push(text));
    else this.scanner!.write(text);
    if (this.message.length > 0 && this.message.length >= this.minChunkLength) this.emit();
    return this.take();
  }

  end(): string[] {
    if (this.parser !== undefined) this.feedEvents(this.parser.flush());
    else this.scanner!.end();
    this.endWord();
    if (this.message.length > 0) this.emit();
    return this.take();
  }

  flush(): string[] {
    return this.end();
  }

  reset(): void {
    this.parser?.reset();
    this.scanner?.reset();
    this.word = '';
    this.message = '';
    this.out = [];
  }

  private take(): string[] {
    const out = this.out;
    this.out = [];
    return out;
  }

  private emit(): void {
    this.out.push(this.message);
    this.message = '';
  }

  private addToken(token: string): void {
    this.message = this.message.length === 0 ? token : this.message + ' ' + token;
  }

  private endWord(): void {
    if (this.word.length > this.maxWordLength) this.cutWord();
    if (this.word.length > 0) {
      this.addToken(this.word);
      this.word = '';
    }
  }

  private feedEvents(events: readonly TagEvent[]): void {
    for (const e of events) {
      if (e.type === 'text') this.ontext(e.text);
      else if (e.type === 'flush') this.onflush('<flush>');
      else this.onTag(formatBreakTag(e.seconds));
    }
  }

  private ontext(text: string): void {
    // Words are the runs between whitespace; the first continues the buffered word, the last may
    // continue in the next piece. Short pieces (LLM tokens) take a char loop; long ones a native
    // split, which beats charCodeAt over a sliced string.
    if (text.length < 64) {
      this.scanWords(text);
      return;
    }
    const parts = text.split(SPACE_RUNS);
    const last = parts.length - 1;
    if (last === 0) {
      this.word += text;
      if (this.word.length > this.maxWordLength) this.cutWord();
      return;
    }
    this.word += parts[0]!;
    this.endWord();
    for (let k = 1; k < last; k++) {
      const w = parts[k]!; // never empty between two whitespace runs
      if (w.length > this.maxWordLength) {
        this.word = w;
        this.endWord();
      } else {
        this.addToken(w);
      }
    }
    this.word = parts[last]!;
    if (this.word.length > this.maxWordLength) this.cutWord();
  }

  private scanWords(text: string): void {
    let start = 0;
    const n = text.length;
    for (let i = 0; i < n; i++) {
      if (isBreakingSpace(text.charCodeAt(i))) {
        if (i > start) this.word += text.slice(start, i);
        this.endWord();
        start = i + 1;
      }
    }
    if (n > start) {
      this.word += start === 0 ? text : text.slice(start);
      if (this.word.length > this.maxWordLength) this.cutWord();
    }
  }

  /** Bounds the buffer: sends an over-long run in maxWordLength pieces (never halving a surrogate pair). */
  private cutWord(): void {
    let w = this.word;
    while (w.length > this.maxWordLength) {
      let cut = this.maxWordLength;
      const c = w.charCodeAt(cut - 1);
      if (c >= 0xd800 && c <= 0xdbff) cut--;
      this.addToken(w.slice(0, cut));
      this.emit();
      w = w.slice(cut);
    }
    this.word = w;
  }

  private onflush(source: string): void {
    this.onTag(collapseSpaces(source));
    this.emit(); // <flush> forces out everything before it, whatever minChunkLength says
  }

  private onbreak(source: string): void {
    this.onTag(collapseSpaces(source));
  }

  private onTag(token: string): void {
    this.endWord(); // a tag is a word boundary
    this.addToken(token);
  }
}

/**
 * Creates a TTS text chunker. Defaults: `minChunkLength: 0`, `repairTags: false`,
 * `maxTagLength: 64`, `maxWordLength: 4096`.
 *
 * Added latency: a word waits for the whitespace after it (it could still grow); a possible tag
 * waits for its `>` (at most `maxTagLength` code units); with `minChunkLength`, words wait until
 * the message is long enough.
 *
 * @example
 * const c = createTextChunker();
 * c.push('Hello wor');            // ['Hello']
 * c.push('ld! <flush> How');      // ['world! <flush>']
 * c.end();                        // ['How']
 */
export function createTextChunker(options: TextChunkerOptions = {}): TextChunker {
  return new TextChunkerImpl(options);
}

/** One-shot {@link createTextChunker}: the messages for a whole text. */
export function chunkText(text: string, options: TextChunkerOptions = {}): string[] {
  stringArg(text, 'chunkText: text');
  const chunker = new TextChunkerImpl(options);
  const out = chunker.push(text);
  for (const m of chunker.end()) out.push(m);
  return out;
}

/** Web TransformStream: text pieces in, `text` message strings out. */
export function createTextChunkerStream(options: TextChunkerOptions = {}): TransformStream<string, string> {
  return toWebTransformStream(createTextChunker(options));
}
