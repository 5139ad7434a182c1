/**
 * Streaming parser for the two text tags of the TTS API (docs/api.md §4.5, §8):
 * `<flush>` (force audio for everything sent so far) and `<break time="1.5s" />` (a pause of
 * 0.1 to 2.0 s that must have a space before and after it).
 *
 * Two layers, after htmlparser2's Tokenizer/Parser split:
 * - {@link TagScanner}: an explicit state machine (one method per state) that finds tag extents
 *   in a stream of text pieces. Literals are matched with an index that survives a piece boundary,
 *   plain text is handed out at the end of every piece, and only what can still become a tag is
 *   held back (at most `maxTagLength` characters). It never looks at a character twice.
 * - {@link createTagParser} / {@link parseTags}: turn the scanner's output into events and apply
 *   the API's rules (time range, units, spaces around a break) with a repair/error/text policy.
 *   While the scanner holds nothing back, the parser itself takes plain text and the usual
 *   spellings (`<flush>`, `<break time="1.5s" />`) out of each piece (indexOf, one sticky regex),
 *   and hands the scanner only what needs its states: the same events, 1.4-1.6x faster on 4 KB pieces.
 *
 * Positions are UTF-16 code units from the start of the stream. A surrogate pair is never split
 * across two text events.
 */
import { arrayArg, describeValue, functionArg, objectArg, optionsArg, shown, stringArg } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';
import type { ErrorCode } from '../util/errors.js';

// ------------------------------------------------------------------------------------------------
// Events and options
// ------------------------------------------------------------------------------------------------

/** Plain text to be spoken. */
export interface TagTextEvent {
  type: 'text';
  text: string;
}
/** `<flush>`: synthesize everything received so far (docs/api.md §4.5). */
export interface TagFlushEvent {
  type: 'flush';
}
/** `<break time="…s" />`: a pause of `seconds` (0.1 to 2.0, docs/api.md §8). */
export interface TagBreakEvent {
  type: 'break';
  seconds: number;
}
/** What the tag parser emits. */
export type TagEvent = TagTextEvent | TagFlushEvent | TagBreakEvent;

/** What to do with a `<break>` whose time or shape is invalid. */
export type TagInvalidBreakPolicy = 'repair' | 'error' | 'text';
/** What to do with a `<break>` that has no whitespace right before or right after it. */
export type TagBreakSpacingPolicy = 'repair' | 'error' | 'ignore';

/** Options of {@link createTagParser} and {@link parseTags}. */
export interface TagParserOptions {
  /**
   * A `<break>` with an invalid time (`"abc"`, `"500ms"`, `"1.5"`, `"3s"`) or shape
   * (`<break>`, `<break time=1s />`, `<break time="1s">`). Default `'repair'`:
   * - `'repair'`: never read markup aloud, never fail a live conversation. `ms` is converted,
   *   a bare number is taken as seconds, the value is clamped to 0.1–2.0, a time is salvaged from
   *   a malformed tag when one is there; a tag with no usable time is dropped (`<break/>`,
   *   `<break time="abc" />`), except one with words and no attribute at all (`<break from work>`),
   *   which is prose and stays text. Each repair is reported to `onRepair`.
   * - `'error'`: the tag is dropped and `push()` throws a VoicewireError
   *   (`TAG_BREAK_INVALID_TIME`, `TAG_BREAK_OUT_OF_RANGE`, `TAG_BREAK_MALFORMED`) after it has
   *   processed its whole input (see {@link TagParseErrorDetails}).
   * - `'text'`: the tag is kept as text, exactly as written (and the scanner releases a
   *   malformed tag as soon as it cannot become a valid one).
   */
  invalidBreak?: TagInvalidBreakPolicy;
  /**
   * A break not preceded and followed by whitespace (§4.5 "A space must precede and follow the
   * tag"). Start and end of the stream count as whitespace; a neighbouring tag does not.
   * Default `'repair'`: a `' '` is inserted into the text events, so text rendered from the
   * events has the spaces. `'error'`: the break is still emitted and `push()` throws
   * `TAG_BREAK_MISSING_SPACE`. `'ignore'`: nothing is checked.
   */
  breakSpacing?: TagBreakSpacingPolicy;
  /**
   * Longest tag, in UTF-16 code units, the parser will hold back waiting for its end; a longer
   * candidate is text. Bounds the hold-back (latency and memory). Default 64, at least 16.
   */
  maxTagLength?: number;
  /** Called with a warning (not thrown) for every repair made under the `'repair'` policies. */
  onRepair?: (warning: VoicewireError) => void;
}

/**
 * `error.details` of a VoicewireError thrown by `push()`/`flush()` under an `'error'` policy.
 * The call has consumed its whole input first: `events` are everything it produced, so a caller
 * may catch, use them and keep pushing.
 */
export interface TagParseErrorDetails {
  /** Stream offset (UTF-16 code units) of the `<` of the offending tag. */
  position: number;
  /** The tag as written. */
  source: string;
  /** Every event the throwing call produced (text adjacent to the failure included). */
  events: TagEvent[];
  /** Every error of the call, first one = the thrown one. */
  errors: VoicewireError[];
}

/** The incremental tag parser. */
export interface TagParser {
  /**
   * Parses the next piece of text. Returns the events that are certain; a possible tag at the end
   * of the piece is held back (at most `maxTagLength` code units), as is a trailing high surrogate.
   * Plain text comes out as one text event per run, at the end of each piece, so the events of a
   * piece-by-piece parse equal those of a one-shot parse once adjacent text events are merged
   * ({@link mergeTextEvents}).
   */
  push(text: string): TagEvent[];
  /** Ends the stream: held-back text comes out as text. The parser is then ready for a new stream. */
  flush(): TagEvent[];
  /** Forgets all state (held-back text is discarded) without emitting anything. */
  reset(): void;
  /** UTF-16 code units consumed since the start of the stream. */
  readonly position: number;
}

/** Lowest and highest break time the API accepts, in seconds (docs/api.md §4.5, §8). */
export const TAG_BREAK_MIN_SECONDS = 0.1;
/** See {@link TAG_BREAK_MIN_SECONDS}. */
export const TAG_BREAK_MAX_SECONDS = 2.0;
/** Default of {@link TagParserOptions.maxTagLength}. */
export const TAG_DEFAULT_MAX_LENGTH = 64;

// ------------------------------------------------------------------------------------------------
// Scanner
// ------------------------------------------------------------------------------------------------

/** Receives the scanner's output, in stream order. Text pieces are never empty. */
export interface TagScannerHandler {
  /** Plain text (a slice of the input, or a released candidate). */
  ontext(text: string): void;
  /** A `<flush>` (also `<flush/>`, `<flush />`); `source` is the tag as written. */
  onflush(source: string, position: number): void;
  /**
   * A `<break …>` tag. `time` is the raw attribute value when the tag has the expected shape
   * `<break time="…" />` (either quote, any spaces, `/>` or ` />`); `undefined` for a malformed
   * break, which is only reported when the scanner holds malformed tags (`holdMalformed`).
   */
  onbreak(source: string, time: string | undefined, position: number): void;
}

/** Options of {@link TagScanner}. */
export interface TagScannerOptions {
  /** See {@link TagParserOptions.maxTagLength}. Default 64. */
  maxTagLength?: number;
  /**
   * true: a `<break` followed by whitespace, `/` or `>` that then deviates from the expected
   * shape is held until its `>` and reported with `time` undefined. false (default): it is
   * released as text at the first character that makes it invalid.
   */
  holdMalformed?: boolean;
}

// Scanner states. Numeric, switched on in one loop (ws Receiver / htmlparser2 Tokenizer style).
const TEXT = 0;
const TAG_OPEN = 1; // after '<'
const FLUSH_NAME = 2; // inside "<flush", index = next char
const AFTER_FLUSH_NAME = 3; // spaces, then '/' or '>'
const FLUSH_SELF_CLOSE = 4; // after '/', expect '>'
const BREAK_NAME = 5; // inside "<break"
const AFTER_BREAK_NAME = 6; // need whitespace ("<breakfast>" is text)
const BEFORE_ATTR_NAME = 7;
const ATTR_NAME = 8; // inside "time"
const AFTER_ATTR_NAME = 9; // spaces, then '='
const BEFORE_ATTR_VALUE = 10; // spaces, then a quote
const ATTR_VALUE = 11; // until the matching quote
const AFTER_ATTR_VALUE = 12; // spaces, then '/'
const SELF_CLOSE = 13; // after '/', expect '>'
const MALFORMED_BREAK = 14; // a broken <break …>, held until '>'

const LT = 0x3c; // <
const GT = 0x3e; // >
const SLASH = 0x2f;
const EQ = 0x3d;
const DQUOTE = 0x22;
const SQUOTE = 0x27;
const FLUSH_LITERAL = '<flush';
const BREAK_LITERAL = '<break';
const TIME_LITERAL = 'time';

const FLUSH_TAG = '<flush>';
const BREAK_PREFIX = '<break time="';
/**
 * The spellings LLMs and SDKs write: `<flush>`, and `<break time="…s"/>` or `<break time="…s" />`
 * with a time of the API's form (digits, at most one dot, `s`; cf. strictSeconds). Sticky: the
 * parser's fast path tries it at a `<`; every other spelling goes through the scanner's states.
 */
const CANONICAL_TAG = /<(?:flush>|break time="(?:\d+(?:\.\d+)?|\.\d+)s" ?\/>)/y;

/**
 * `literal` occurs in `s` at `at` and ends by `end` (a char loop: faster than startsWith on short
 * sliced strings).
 */
function matchesAt(s: string, at: number, literal: string, end: number): boolean {
  if (at + literal.length > end) return false;
  for (let k = 1; k < literal.length; k++) if (s.charCodeAt(at + k) !== literal.charCodeAt(k)) return false;
  return true;
}

/**
 * Whitespace allowed inside a tag: the same breaking whitespace that separates words (JS `\s`
 * without the no-break spaces). One set for both, so that a text chunker that joins words with a
 * single space can never turn non-tag text into a tag (`<break\v>` is a tag either way).
 */
function isTagSpace(c: number): boolean {
  return isBreakingSpace(c);
}

/**
 * Finds `<flush>` and `<break …/>` tags in a stream of text pieces and hands text and tags to a
 * {@link TagScannerHandler}. Linear: every character is examined once, text runs are skipped with
 * `indexOf('<')`, and only a tag candidate (≤ `maxTagLength` code units) is ever buffered.
 */
export class TagScanner {
  private readonly handler: TagScannerHandler;
  private readonly maxTagLength: number;
  private readonly holdMalformed: boolean;

  private state = TEXT;
  /** Index into the literal being matched (FLUSH_NAME, BREAK_NAME, ATTR_NAME). */
  private index = 0;
  /** Part of the current candidate that arrived in earlier pieces (≤ maxTagLength). */
  private held = '';
  /** Candidate start inside the current piece (0 when it began in an earlier piece). */
  private tagStart = 0;
  /** Start of the pending plain text inside the current piece. */
  private textStart = 0;
  /** Quote that opened the attribute value, and the value's extent relative to the candidate. */
  private quote = 0;
  private valueStart = 0;
  private valueEnd = 0;
  /** Piece index at which the current candidate would exceed maxTagLength. */
  private tagLimit = 0;
  /** Stream offset of the current piece's first code unit. */
  private offset = 0;
  private piece = '';
  /** End (exclusive) of the part of `piece` being scanned. */
  private pieceEnd = 0;

  constructor(handler: TagScannerHandler, options: TagScannerOptions = {}) {
    objectArg(handler, 'TagScanner: handler');
    for (const m of ['ontext', 'onflush', 'onbreak'] as const) functionArg(handler[m], `TagScanner: handler.${m}`);
    options = optionsArg(options, 'TagScanner: options');
    this.handler = handler;
    this.maxTagLength = checkMaxTagLength(options.maxTagLength);
    this.holdMalformed = options.holdMalformed ?? false;
  }

  /** UTF-16 code units consumed since the start of the stream. */
  get position(): number {
    return this.offset;
  }

  /** True when no possible tag is held back: the next piece starts in plain text. */
  get idle(): boolean {
    return this.state === TEXT;
  }

  /**
   * Scans the next piece, or the part `piece.slice(start, end)` of it (the rest of the piece is
   * not looked at; `position` moves by `end - start`).
   *
   * @param start - default 0. @param end - default `piece.length`. Integers with
   *   `0 <= start <= end <= piece.length`, else `INVALID_ARGUMENT`.
   */
  write(piece: string, start = 0, end?: number): void {
    if (typeof piece !== 'string') throw new VoicewireError('INVALID_ARGUMENT', `TagScanner.write: a piece is a string, got ${describeValue(piece)}`);
    if (end === undefined) end = piece.length;
    if (start !== 0 || end !== piece.length) checkSegment(piece, start, end);
    // While scanning, offset + i is the stream position of piece[i].
    this.offset -= start;
    if (this.state === TEXT) {
      const lt = piece.indexOf('<', start);
      if (lt === -1 || lt >= end) {
        // Most pieces are plain text: hand them on whole, touching no other state.
        if (end > start) this.handler.ontext(start === 0 && end === piece.length ? piece : piece.slice(start, end));
        this.offset += end;
        return;
      }
    }
    const n = end;
    this.piece = piece;
    this.pieceEnd = end;
    this.textStart = start;
    this.tagStart = start;
    this.tagLimit = start + this.maxTagLength - this.held.length;
    let i = start;
    while (i < n) {
      if (this.state === TEXT) {
        // Hot path: skip plain text natively; only '<' can start a tag.
        const lt = piece.indexOf('<', i);
        if (lt === -1 || lt >= n) break;
        // The text before '<' is handed out only when a tag is confirmed (or at the end of the
        // piece): a '<' that is not a tag ("3 < 5") does not split the text.
        this.tagStart = lt;
        this.tagLimit = lt + this.maxTagLength;
        const tagEnd = this.wholeTag(piece, lt);
        if (tagEnd !== -1) {
          i = tagEnd;
          continue;
        }
        this.state = TAG_OPEN;
        i = lt + 1;
        continue;
      }
      // The candidate would grow past the bound with this character: it is text (hold-back limit).
      if (i >= this.tagLimit) {
        i = this.notATag(i);
        continue;
      }
      const c = piece.charCodeAt(i);
      switch (this.state) {
        case TAG_OPEN: i = this.stateTagOpen(c, i); break;
        case FLUSH_NAME: i = this.stateFlushName(c, i); break;
        case AFTER_FLUSH_NAME: i = this.stateAfterFlushName(c, i); break;
        case FLUSH_SELF_CLOSE: i = this.stateFlushSelfClose(c, i); break;
        case BREAK_NAME: i = this.stateBreakName(c, i); break;
        case AFTER_BREAK_NAME: i = this.stateAfterBreakName(c, i); break;
        case BEFORE_ATTR_NAME: i = this.stateBeforeAttrName(c, i); break;
        case ATTR_NAME: i = this.stateAttrName(c, i); break;
        case AFTER_ATTR_NAME: i = this.stateAfterAttrName(c, i); break;
        case BEFORE_ATTR_VALUE: i = this.stateBeforeAttrValue(c, i); break;
        case ATTR_VALUE: i = this.stateAttrValue(c, i); break;
        case AFTER_ATTR_VALUE: i = this.stateAfterAttrValue(c, i); break;
        case SELF_CLOSE: i = this.stateSelfClose(c, i); break;
        default: i = this.stateMalformedBreak(c, i); break;
      }
    }
    // End of the piece: hand out plain text now; keep only the open candidate.
    const whole = n === piece.length;
    if (this.state === TEXT) {
      if (n > this.textStart) this.handler.ontext(this.textStart === 0 && whole ? piece : piece.slice(this.textStart, n));
    } else {
      this.textBeforeTag();
      this.held += this.tagStart === 0 && whole ? piece : piece.slice(this.tagStart, n);
    }
    this.offset += n;
    this.piece = '';
  }

  /**
   * Moves `position` past `count` code units that the caller consumed without the scanner (plain
   * text, whole tags it recognised itself; {@link createTagParser} does). Only while
   * {@link idle}, else `INVALID_STATE`; `count` a non-negative integer, else `INVALID_ARGUMENT`.
   */
  advance(count: number): void {
    // `>>> 0` keeps exactly the integers 0 to 2^32 - 1 (a piece is shorter); one test, as it runs per piece.
    if (count >>> 0 !== count || this.state !== TEXT) {
      if (this.state !== TEXT) throw new VoicewireError('INVALID_STATE', 'advance() while a possible tag is held back');
      throw new VoicewireError('INVALID_ARGUMENT', `advance() takes a non-negative integer, got ${shown(count)}`);
    }
    this.offset += count;
  }

  /** Ends the stream: an open candidate is text. The scanner is then ready for a new stream. */
  end(): void {
    if (this.state !== TEXT && this.held.length > 0) this.handler.ontext(this.held);
    this.reset();
  }

  /** Drops all state, including an open candidate. */
  reset(): void {
    this.state = TEXT;
    this.held = '';
    this.index = 0;
    this.offset = 0;
    this.piece = '';
  }

  // --- helpers ----------------------------------------------------------------------------------

  /** Relative position of piece index `i` inside the current candidate. */
  private rel(i: number): number {
    return this.held.length + i - this.tagStart;
  }

  /** The candidate is plain text. Returns `i`: the current character is looked at again in TEXT. */
  private notATag(i: number): number {
    if (this.held.length > 0) {
      // The candidate began in an earlier piece (whose text went out then): text resumes here.
      this.handler.ontext(this.held);
      this.held = '';
      this.textStart = this.tagStart;
    }
    // Otherwise the text since textStart, '<' included, simply continues. The candidate holds no
    // other '<', so nothing is rescanned.
    this.state = TEXT;
    return i;
  }

  /** A `<break` candidate deviates from the expected shape at `i`. */
  private malformed(i: number): number {
    if (!this.holdMalformed) return this.notATag(i);
    this.state = MALFORMED_BREAK;
    return i; // MALFORMED_BREAK looks at this character ('<' aborts, '>' ends the tag)
  }

  /** Hands out the text between the last tag and the current candidate. */
  private textBeforeTag(): void {
    if (this.tagStart > this.textStart) this.handler.ontext(this.piece.slice(this.textStart, this.tagStart));
    this.textStart = this.tagStart;
  }

  /** The candidate ends at `i` (its '>'): returns its source and goes back to TEXT after it. */
  private complete(i: number): string {
    this.textBeforeTag();
    const source = this.held + this.piece.slice(this.tagStart, i + 1);
    this.held = '';
    this.state = TEXT;
    this.textStart = i + 1;
    return source;
  }

  private candidatePosition(): number {
    return this.offset + this.tagStart - this.held.length;
  }

  /**
   * Fast path of TAG_OPEN for the common spellings `<flush>`, `<break time="…"/>` and
   * `<break time="…" />` lying whole inside the piece: matched with native `startsWith`/`indexOf`
   * instead of one state per character. Returns the index after the tag, or -1 to let the states
   * decide (a tag split across pieces, another spelling, or not a tag). Equivalent to the states.
   */
  private wholeTag(piece: string, lt: number): number {
    const end = this.pieceEnd;
    if (lt + 7 > end) return -1; // shorter than any tag (and no charCodeAt past the end below)
    const next = piece.charCodeAt(lt + 1);
    if (next === 0x66 /* f */) {
      if (!matchesAt(piece, lt, FLUSH_TAG, end)) return -1;
      if (lt > this.textStart) this.handler.ontext(piece.slice(this.textStart, lt));
      this.handler.onflush('<flush>', this.offset + lt);
      this.textStart = lt + 7;
      return lt + 7;
    }
    if (next !== 0x62 /* b */ || !matchesAt(piece, lt, BREAK_PREFIX, end)) return -1;
    const q = piece.indexOf('"', lt + 13);
    if (q === -1 || q + 3 > end) return -1;
    let j = q + 1;
    if (piece.charCodeAt(j) === 0x20) j++;
    if (j + 2 > end || j + 2 > this.tagLimit || piece.charCodeAt(j) !== SLASH || piece.charCodeAt(j + 1) !== GT) return -1;
    for (let k = lt + 13; k < q; k++) {
      const c = piece.charCodeAt(k);
      if (c === LT || c === GT) return -1;
    }
    if (lt > this.textStart) this.handler.ontext(piece.slice(this.textStart, lt));
    const source = piece.slice(lt, j + 2);
    this.handler.onbreak(source, source.slice(13, q - lt), this.offset + lt);
    this.textStart = j + 2;
    return j + 2;
  }

  // --- states (one method each) -----------------------------------------------------------------

  private stateTagOpen(c: number, i: number): number {
    if (c === 0x66 /* f */) {
      this.state = FLUSH_NAME;
      this.index = 2;
      return i + 1;
    }
    if (c === 0x62 /* b */) {
      this.state = BREAK_NAME;
      this.index = 2;
      return i + 1;
    }
    return this.notATag(i); // "3 < 5", "<b>", "<<flush>"
  }

  private stateFlushName(c: number, i: number): number {
    if (c !== FLUSH_LITERAL.charCodeAt(this.index)) return this.notATag(i);
    if (++this.index === FLUSH_LITERAL.length) this.state = AFTER_FLUSH_NAME;
    return i + 1;
  }

  private stateAfterFlushName(c: number, i: number): number {
    if (isTagSpace(c)) return i + 1;
    if (c === SLASH) {
      this.state = FLUSH_SELF_CLOSE;
      return i + 1;
    }
    if (c === GT) return this.emitFlush(i);
    return this.notATag(i); // "<flushed>", "<flush now>": unknown tags are text
  }

  private stateFlushSelfClose(c: number, i: number): number {
    if (c === GT) return this.emitFlush(i);
    return this.notATag(i);
  }

  private emitFlush(i: number): number {
    const position = this.candidatePosition();
    this.handler.onflush(this.complete(i), position);
    return i + 1;
  }

  private stateBreakName(c: number, i: number): number {
    if (c !== BREAK_LITERAL.charCodeAt(this.index)) return this.notATag(i); // "<br>", "<b>"
    if (++this.index === BREAK_LITERAL.length) this.state = AFTER_BREAK_NAME;
    return i + 1;
  }

  private stateAfterBreakName(c: number, i: number): number {
    if (isTagSpace(c)) {
      this.state = BEFORE_ATTR_NAME;
      return i + 1;
    }
    if (c === SLASH || c === GT) return this.malformed(i); // "<break/>", "<break>": no time
    return this.notATag(i); // "<breakfast>" is another word
  }

  private stateBeforeAttrName(c: number, i: number): number {
    if (isTagSpace(c)) return i + 1;
    if (c === 0x74 /* t */) {
      this.state = ATTR_NAME;
      this.index = 1;
      return i + 1;
    }
    return this.malformed(i);
  }

  private stateAttrName(c: number, i: number): number {
    if (c !== TIME_LITERAL.charCodeAt(this.index)) return this.malformed(i);
    if (++this.index === TIME_LITERAL.length) this.state = AFTER_ATTR_NAME;
    return i + 1;
  }

  private stateAfterAttrName(c: number, i: number): number {
    if (isTagSpace(c)) return i + 1;
    if (c === EQ) {
      this.state = BEFORE_ATTR_VALUE;
      return i + 1;
    }
    return this.malformed(i);
  }

  private stateBeforeAttrValue(c: number, i: number): number {
    if (isTagSpace(c)) return i + 1;
    if (c === DQUOTE || c === SQUOTE) {
      this.quote = c;
      this.valueStart = this.rel(i) + 1;
      this.state = ATTR_VALUE;
      return i + 1;
    }
    return this.malformed(i); // time=1s (unquoted)
  }

  private stateAttrValue(c: number, i: number): number {
    if (c === this.quote) {
      this.valueEnd = this.rel(i);
      this.state = AFTER_ATTR_VALUE;
      return i + 1;
    }
    if (c === LT || c === GT) return this.malformed(i);
    return i + 1;
  }

  private stateAfterAttrValue(c: number, i: number): number {
    if (isTagSpace(c)) return i + 1; // both "/>" and " />"
    if (c === SLASH) {
      this.state = SELF_CLOSE;
      return i + 1;
    }
    return this.malformed(i); // '>' without '/', a second attribute
  }

  private stateSelfClose(c: number, i: number): number {
    if (c !== GT) return this.malformed(i);
    const position = this.candidatePosition();
    const source = this.complete(i);
    this.handler.onbreak(source, source.slice(this.valueStart, this.valueEnd), position);
    return i + 1;
  }

  private stateMalformedBreak(c: number, i: number): number {
    if (c === LT) return this.notATag(i); // "<break up <flush>": the first part was prose
    if (c !== GT) return i + 1;
    const position = this.candidatePosition();
    this.handler.onbreak(this.complete(i), undefined, position);
    return i + 1;
  }
}

function checkSegment(piece: string, start: number, end: number): void {
  if (!(Number.isInteger(start) && Number.isInteger(end) && start >= 0 && start <= end && end <= piece.length)) {
    throw new VoicewireError('INVALID_ARGUMENT', `write(): need 0 <= start <= end <= ${piece.length}, got ${shown(start)}, ${shown(end)}`);
  }
}

function checkMaxTagLength(value: number | undefined): number {
  if (value === undefined) return TAG_DEFAULT_MAX_LENGTH;
  if (!Number.isInteger(value) || value < 16 || value > 1 << 20) {
    throw new VoicewireError('INVALID_ARGUMENT', `maxTagLength must be an integer from 16 to ${1 << 20}, got ${shown(value)}`);
  }
  return value;
}

// ------------------------------------------------------------------------------------------------
// Break time rules
// ------------------------------------------------------------------------------------------------

/** Exact powers of ten for the decimal fast path (10^k is exact in a double up to k = 22). */
const POW10 = [1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15];

/**
 * Seconds of a time in the API's form, a decimal number followed by `s` ("1.5s", "0.25s", ".5s"),
 * i.e. `/^(?:\d+(?:\.\d+)?|\.\d+)s$/`; NaN for anything else. A char loop, not a regex and not
 * `Number()`, because it runs once per break on the hot path. With at most 15 digits the value is
 * digits / 10^fraction, one correctly rounded division of two exact doubles: the same double
 * `Number()` gives (Clinger's fast path).
 */
function strictSeconds(time: string): number {
  const n = time.length - 1;
  if (n < 1 || time.charCodeAt(n) !== 0x73 /* s */) return NaN;
  let dot = -1;
  let digits = 0;
  let m = 0;
  for (let k = 0; k < n; k++) {
    const c = time.charCodeAt(k);
    if (c === 0x2e /* . */) {
      if (dot !== -1) return NaN;
      dot = k;
    } else if (c >= 0x30 && c <= 0x39) {
      m = m * 10 + (c - 0x30);
      digits++;
    } else {
      return NaN;
    }
  }
  if (dot === n - 1) return NaN; // "1.s": no digit after the dot
  if (digits > 15) return Number(time.slice(0, n));
  return dot === -1 ? m : m / POW10[n - 1 - dot]!;
}

/**
 * What `'repair'` understands: a number, optional spaces, then `s`, `ms` or no unit. Each run of
 * spaces has exactly one place to go (issue 11 §8: `\s*(ms|s|)\s*` let two runs share the spaces,
 * quadratic backtracking on `1` + 64k spaces + `x`), so a match costs linear time for any length.
 */
const LENIENT_TIME = /^\s*(\d+(?:\.\d*)?|\.\d+)\s*(?:(ms|s)\s*)?$/i;
/** Salvages a time from a malformed break: `time=1s`, `time = '2s'`, `time="1s">`. */
const SALVAGE_TIME = /\btime\s*=\s*["']?([^"'\s/>]*)/;

/** Result of {@link checkBreakTime}. */
export type BreakTimeCheck =
  | { ok: true; seconds: number }
  | { ok: false; code: 'TAG_BREAK_INVALID_TIME' | 'TAG_BREAK_OUT_OF_RANGE'; reason: string };

/**
 * Checks a break `time` attribute against the API (docs/api.md §4.5, §8): `"<seconds>s"` with
 * seconds from 0.1 to 2.0 inclusive.
 */
export function checkBreakTime(time: string): BreakTimeCheck {
  stringArg(time, 'checkBreakTime: time');
  const seconds = strictSeconds(time);
  if (Number.isNaN(seconds)) {
    const reason = /ms\s*$/i.test(time)
      ? 'milliseconds are not accepted: write seconds, e.g. "0.5s"'
      : 'expected seconds such as "1.5s"';
    return { ok: false, code: 'TAG_BREAK_INVALID_TIME', reason };
  }
  if (!(seconds >= TAG_BREAK_MIN_SECONDS && seconds <= TAG_BREAK_MAX_SECONDS)) {
    return { ok: false, code: 'TAG_BREAK_OUT_OF_RANGE', reason: `${seconds} s is outside ${TAG_BREAK_MIN_SECONDS}–${TAG_BREAK_MAX_SECONDS} s` };
  }
  return { ok: true, seconds };
}

/** Lenient reading for `'repair'`: ms converted, bare number = seconds, clamped. undefined = unusable. */
function repairBreakTime(time: string): number | undefined {
  const m = LENIENT_TIME.exec(time);
  if (m === null) return undefined;
  let seconds = Number(m[1]);
  if (m[2]?.toLowerCase() === 'ms') seconds /= 1000;
  if (!Number.isFinite(seconds)) return undefined;
  return Math.min(TAG_BREAK_MAX_SECONDS, Math.max(TAG_BREAK_MIN_SECONDS, seconds));
}

/** An array of tag events: objects with a known `type` (what renderTagEvents and mergeTextEvents read). */
function checkEvents(events: readonly TagEvent[], what: string): void {
  arrayArg(events, what);
  for (const e of events) {
    const ok =
      e !== null &&
      typeof e === 'object' &&
      (e.type === 'text' ? typeof e.text === 'string' : e.type === 'break' ? typeof e.seconds === 'number' : e.type === 'flush');
    if (!ok) throw new VoicewireError('INVALID_ARGUMENT', `${what}: each event must be { type: 'text', text } | { type: 'break', seconds } | { type: 'flush' }`);
  }
}

/** The canonical tag for a pause: `<break time="1.5s" />`. */
export function formatBreakTag(seconds: number): string {
  if (typeof seconds !== 'number') throw new VoicewireError('INVALID_ARGUMENT', `formatBreakTag: seconds must be a number, got ${describeValue(seconds)}`);
  return `<break time="${String(seconds)}s" />`;
}

/**
 * Renders events back to the text the service expects: text as is, `<flush>`, and
 * `<break time="…s" />` in canonical form. Spaces around breaks are those of the text events
 * (the parser's default `breakSpacing: 'repair'` puts them there).
 */
export function renderTagEvents(events: readonly TagEvent[]): string {
  checkEvents(events, 'renderTagEvents: events');
  let out = '';
  for (const e of events) {
    out += e.type === 'text' ? e.text : e.type === 'flush' ? '<flush>' : formatBreakTag(e.seconds);
  }
  return out;
}

/** Merges adjacent text events (the normal form in which piece-by-piece equals one-shot). */
export function mergeTextEvents(events: readonly TagEvent[]): TagEvent[] {
  checkEvents(events, 'mergeTextEvents: events');
  const out: TagEvent[] = [];
  for (const e of events) {
    const last = out[out.length - 1];
    if (e.type === 'text' && last !== undefined && last.type === 'text') {
      out[out.length - 1] = { type: 'text', text: last.text + e.text };
    } else if (e.type !== 'text' || e.text.length > 0) {
      out.push(e);
    }
  }
  return out;
}

// ------------------------------------------------------------------------------------------------
// Joining text messages (protocol-notes.md "TTS WebSocket")
// ------------------------------------------------------------------------------------------------

/** What follows `<` in an unfinished tag: a prefix of a tag name, or a tag name and more (`break ti`). */
const OPEN_TAG_NAME = /^(?:\/|b(?:r(?:e(?:a(?:k)?)?)?)?|f(?:l(?:u(?:s(?:h)?)?)?)?)$/i;
const OPEN_TAG_BODY = /^(?:break|flush)[\s/][^<>]*$/i;

/**
 * The unfinished tag at the end of `text` (`<`, `<br`, `<break ti`), or `''` when `text` does not end
 * inside one. Only the API's two tags count (`<b…`, `<f…`, `</`): `x<y` is prose. At most
 * `maxTagLength` code units (the parser's hold-back; longer is text either way).
 */
export function unfinishedTag(text: string, maxTagLength: number = TAG_DEFAULT_MAX_LENGTH): string {
  stringArg(text, 'unfinishedTag: text');
  const lt = text.lastIndexOf('<');
  if (lt < 0 || text.length - lt > maxTagLength) return '';
  const after = text.slice(lt + 1);
  return after === '' || OPEN_TAG_NAME.test(after) || OPEN_TAG_BODY.test(after) ? text.slice(lt) : '';
}

/**
 * The separator the server puts between one text message and the next (protocol-notes.md:
 * consecutive messages are joined with one space): none when `next` starts with whitespace, and
 * none inside a tag split across messages (`"<br"` + `"eak …"`, `"alpha <break ti"` +
 * `"me=…"`): that space would turn the tag into words read aloud. `tail` is
 * {@link unfinishedTag} of the text so far. Exceptions that keep the space: a complete tag name
 * followed by an attribute (`"<break"` + `"time=…"`: the client split at that space), and a bare
 * `<` not followed by a tag name.
 */
export function textJoiner(tail: string, next: string): '' | ' ' {
  stringArg(tail, 'textJoiner: tail');
  stringArg(next, 'textJoiner: next');
  if (next === '' || isBreakingSpace(next.charCodeAt(0)) || next.charCodeAt(0) === 0xa0) return '';
  if (tail === '') return ' ';
  // A bare `<` at the end: a tag only when the next message goes on with a tag name.
  if (tail === '<') return /^\/?(?:break|flush)(?![a-z])/i.test(next) ? '' : ' ';
  if (/^<(?:break|flush)$/i.test(tail) && /^[a-z]/i.test(next)) return ' ';
  return '';
}

// ------------------------------------------------------------------------------------------------
// Parser
// ------------------------------------------------------------------------------------------------

/** Whitespace for the spacing rule: the JS `\s` set without the no-break spaces. */
export function isBreakingSpace(c: number): boolean {
  if (typeof c !== 'number') throw new VoicewireError('INVALID_ARGUMENT', `isBreakingSpace: c must be a UTF-16 code unit (a number), got ${describeValue(c)}`);
  if (c <= 0x20) return c === 0x20 || (c >= 0x09 && c <= 0x0d);
  if (c < 0x1680) return false;
  return (
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a && c !== 0x2007) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x205f ||
    c === 0x3000
  );
}

function notAString(value: unknown): VoicewireError {
  return new VoicewireError('INVALID_ARGUMENT', `push() takes a string, got ${typeof value}`);
}

function isHighSurrogate(c: number): boolean {
  return c >= 0xd800 && c <= 0xdbff;
}

class TagParserImpl implements TagParser {
  private readonly scanner: TagScanner;
  private readonly invalidBreak: TagInvalidBreakPolicy;
  private readonly breakSpacing: TagBreakSpacingPolicy;
  private readonly onRepair: ((warning: VoicewireError) => void) | undefined;

  /** Text of the current run, emitted at a tag or at the end of the piece. */
  private run = '';
  /** Events of the current call. */
  private events: TagEvent[] = [];
  private errors: VoicewireError[] = [];
  /** The last content was whitespace (true at the start of the stream). */
  private lastSpace = true;
  /** Last code unit of the last text: of `run` when `run` is not empty (read instead of `run`,
   * which may be a concatenation that charCodeAt would flatten). */
  private lastCode = 0;
  /** A break was emitted and the content after it has not been seen yet. */
  private needSpaceAfter = false;
  /** Stream offset of the break that set needSpaceAfter, and its source: `piece.slice(start, end)`
   * (sliced only if a problem is reported). */
  private lastBreakPosition = 0;
  private lastBreakPiece = '';
  private lastBreakStart = 0;
  private lastBreakEnd = 0;
  private readonly maxTagLength: number;
  /** Stream position of the current piece's first code unit (the scanner's position, which moves
   * part by part within a piece). */
  private consumed = 0;

  constructor(options: TagParserOptions) {
    options = optionsArg(options, 'tag parser options');
    this.invalidBreak = options.invalidBreak ?? 'repair';
    this.breakSpacing = options.breakSpacing ?? 'repair';
    this.onRepair = options.onRepair;
    if (!['repair', 'error', 'text'].includes(this.invalidBreak)) {
      throw new VoicewireError('INVALID_ARGUMENT', `invalidBreak must be 'repair', 'error' or 'text', got ${shown(this.invalidBreak)}`);
    }
    if (!['repair', 'error', 'ignore'].includes(this.breakSpacing)) {
      throw new VoicewireError('INVALID_ARGUMENT', `breakSpacing must be 'repair', 'error' or 'ignore', got ${shown(this.breakSpacing)}`);
    }
    const scannerOptions: TagScannerOptions = { holdMalformed: this.invalidBreak !== 'text' };
    if (options.maxTagLength !== undefined) scannerOptions.maxTagLength = options.maxTagLength;
    // The handler is an object of its own: ontext/onflush/onbreak are the scanner's, not API.
    const handler: TagScannerHandler = {
      ontext: (text) => this.ontext(text),
      onflush: () => this.onflush(),
      onbreak: (source, time, position) => this.onbreak(source, time, position),
    };
    this.scanner = new TagScanner(handler, scannerOptions);
    this.maxTagLength = checkMaxTagLength(options.maxTagLength);
  }

  get position(): number {
    return this.consumed;
  }

  // push() is kept small so that V8 can inline it into the caller's loop (4-character pieces took
  // up to 1.5x as long where it was not). Plain text while nothing is held back (most pieces)
  // takes three lines; everything else is in parsePiece.
  push(text: string): TagEvent[] {
    if (typeof text !== 'string') throw notAString(text);
    const scanner = this.scanner;
    if (scanner.idle && text.indexOf('<') === -1) {
      if (text.length > 0) this.ontext(text);
      scanner.advance(text.length);
    } else {
      this.parsePiece(text);
    }
    this.consumed += text.length;
    return this.takeEvents();
  }

  /** The events of the current push: text held back for a surrogate, the rest in order. */
  private takeEvents(): TagEvent[] {
    // A trailing high surrogate waits for its low half, so an emoji split across pieces comes out
    // whole in one text event.
    let run = this.run;
    if (run.length > 0) {
      if (isHighSurrogate(this.lastCode)) {
        this.run = run.slice(-1);
        run = run.slice(0, -1);
      } else {
        this.run = '';
      }
    }
    // Common case, plain text only: one exact-size array (no growable array per push).
    if (this.events.length === 0 && this.errors.length === 0) return run.length > 0 ? [{ type: 'text', text: run }] : [];
    if (run.length > 0) this.events.push({ type: 'text', text: run });
    return this.finish();
  }

  /** A piece that has a `<` or arrives while the scanner holds a possible tag back. */
  private parsePiece(text: string): void {
    const scanner = this.scanner;
    const n = text.length;
    let at = 0;
    if (!scanner.idle) {
      // A possible tag from an earlier piece is open; the scanner settles it (a tag, or text)
      // within maxTagLength code units, and may go on from there.
      at = n < this.maxTagLength ? n : this.maxTagLength;
      scanner.write(text, 0, at);
    }
    if (at < n && scanner.idle) {
      // Plain text and tags in their usual spelling are handled here; the scanner takes over at
      // the first `<` that needs its states.
      const lt = text.indexOf('<', at);
      let stop = n;
      if (lt === -1) this.ontext(at === 0 ? text : text.slice(at));
      else stop = this.scanPiece(text, at, lt);
      scanner.advance(stop - at);
      at = stop;
    }
    if (at < n) scanner.write(text, at, n);
  }

  flush(): TagEvent[] {
    this.scanner.end();
    this.consumed = 0;
    this.emitRun();
    this.lastSpace = true;
    this.needSpaceAfter = false;
    return this.finish();
  }

  reset(): void {
    this.scanner.reset();
    this.consumed = 0;
    this.run = '';
    this.events = [];
    this.errors = [];
    this.lastSpace = true;
    this.needSpaceAfter = false;
  }

  private finish(): TagEvent[] {
    const events = this.events;
    this.events = [];
    if (this.errors.length === 0) return events;
    const errors = this.errors;
    this.errors = [];
    const first = errors[0]!;
    const d = first.details as { position: number; source: string };
    const details: TagParseErrorDetails = { position: d.position, source: d.source, events, errors };
    throw new VoicewireError(first.code, first.message, { details });
  }

  private emitRun(): void {
    if (this.run.length > 0) {
      this.events.push({ type: 'text', text: this.run });
      this.run = '';
    }
  }

  private problem(code: ErrorCode, message: string, position: number, source: string, policy: 'repair' | 'error'): void {
    const err = new VoicewireError(code, `${message} at position ${position}: ${source}`, { details: { position, source } });
    if (policy === 'error') this.errors.push(err);
    else this.onRepair?.(err);
  }

  /** Content (text or a tag) follows a break: apply §4.5's "space must follow". */
  private checkAfterBreak(startsWithSpace: boolean): void {
    this.needSpaceAfter = false;
    if (startsWithSpace || this.breakSpacing === 'ignore') return;
    const source = this.lastBreakPiece.slice(this.lastBreakStart, this.lastBreakEnd);
    this.problem('TAG_BREAK_MISSING_SPACE', 'no space after the break', this.lastBreakPosition, source, this.breakSpacing);
    if (this.breakSpacing === 'repair') {
      this.run += ' ';
      this.lastCode = 0x20;
      this.lastSpace = true;
    }
  }

  private ontext(text: string): void {
    this.textOf(text, 0, text.length);
  }

  /** ontext(piece.slice(start, end)), reading the characters it looks at from the flat piece. */
  private textOf(piece: string, start: number, end: number): void {
    if (this.needSpaceAfter) this.checkAfterBreak(isBreakingSpace(piece.charCodeAt(start)));
    const text = start === 0 && end === piece.length ? piece : piece.slice(start, end);
    this.run = this.run.length === 0 ? text : this.run + text;
    const last = piece.charCodeAt(end - 1);
    this.lastCode = last;
    this.lastSpace = isBreakingSpace(last);
  }

  private onflush(): void {
    if (this.needSpaceAfter) this.checkAfterBreak(false);
    this.emitRun();
    this.events.push({ type: 'flush' });
    this.lastSpace = false;
  }

  private onbreak(source: string, time: string | undefined, position: number): void {
    let seconds = time === undefined ? NaN : strictSeconds(time);
    if (!(seconds >= TAG_BREAK_MIN_SECONDS && seconds <= TAG_BREAK_MAX_SECONDS)) {
      // Invalid (the valid case allocates nothing): the full check says why.
      const check = time === undefined ? undefined : checkBreakTime(time);
      const code: ErrorCode = check === undefined || check.ok ? 'TAG_BREAK_MALFORMED' : check.code;
      const reason = check === undefined || check.ok ? 'expected <break time="<seconds>s" />' : check.reason;
      if (this.invalidBreak === 'text') {
        this.ontext(source);
        return;
      }
      const salvaged = time ?? SALVAGE_TIME.exec(source)?.[1];
      const repaired = this.invalidBreak === 'repair' && salvaged !== undefined ? repairBreakTime(salvaged) : undefined;
      if (repaired === undefined) {
        // "<break from work>": words inside, no attribute (no '='), is prose in angle brackets,
        // not markup: dropping it would lose the words, and reading it aloud is what it is.
        if (this.invalidBreak === 'repair' && salvaged === undefined && !source.includes('=') && /[^\s/>]/.test(source.slice(6, -1))) {
          this.ontext(source);
          return;
        }
        this.problem(code, `invalid break (${reason}), tag dropped`, position, source, this.invalidBreak);
        return;
      }
      this.problem(code, `invalid break (${reason}), repaired to ${repaired} s`, position, source, 'repair');
      seconds = repaired;
    }
    this.emitBreak(seconds, position, source, 0, source.length);
  }

  /** A break of `seconds` (valid or repaired) written as `piece.slice(start, end)`. */
  private emitBreak(seconds: number, position: number, piece: string, start: number, end: number): void {
    if (this.needSpaceAfter) this.checkAfterBreak(false);
    if (!this.lastSpace && this.breakSpacing !== 'ignore') {
      this.problem('TAG_BREAK_MISSING_SPACE', 'no space before the break', position, piece.slice(start, end), this.breakSpacing);
      if (this.breakSpacing === 'repair') this.run += ' '; // emitted just below
    }
    this.emitRun();
    this.events.push({ type: 'break', seconds });
    this.lastSpace = false;
    this.needSpaceAfter = true;
    this.lastBreakPosition = position;
    this.lastBreakPiece = piece;
    this.lastBreakStart = start;
    this.lastBreakEnd = end;
  }

  /**
   * Fast path of push() while the scanner holds nothing back. Hands plain text and the canonical
   * tags (CANONICAL_TAG, with a time in range) of `piece` to ontext/onflush/emitBreak itself,
   * and returns the index of the first `<` it leaves to the scanner (any other spelling, an
   * invalid time, a candidate cut by the end of the piece), or the piece's length. It decides
   * nothing the scanner would decide differently: a `<` not followed by `f` or `b`, or whose name
   * breaks off at its second letter (`<b>`, `<fx`), is text there too, and the text before a `<`
   * it stops at has no bearing on how the scanner reads that `<` (state TEXT, nothing held).
   * Starts at `start`, `first` being the first `<` from there; `this.consumed` is the stream
   * position of `piece[0]`.
   */
  private scanPiece(piece: string, start: number, first: number): number {
    const n = piece.length;
    let textStart = start;
    let lt = first;
    // One loop, one indexOf: decoys ("3 < 5", "<b>") only move `from` on, so they do not shape the
    // path of the tags (V8 compiled that path 25% slower when decoys had branches of their own).
    // No charCodeAt past the end either: V8 deoptimizes on the first such read and keeps slower code.
    while (lt !== -1) {
      if (lt + 2 >= n) break; // `<` or `<x` at the end of the piece: the scanner decides (and holds)
      let from = lt + 1;
      const c = piece.charCodeAt(lt + 1);
      // `<` then anything but `fl`/`br` is text for the scanner too ("3 < 5", "<b>", "<fx").
      if ((c === 0x66 /* f */ || c === 0x62 /* b */) && piece.charCodeAt(lt + 2) === (c === 0x66 ? 0x6c /* l */ : 0x72 /* r */)) {
        CANONICAL_TAG.lastIndex = lt;
        if (!CANONICAL_TAG.test(piece) || CANONICAL_TAG.lastIndex - lt > this.maxTagLength) break; // the scanner's
        const end = CANONICAL_TAG.lastIndex;
        if (!this.canonicalTag(piece, textStart, lt, end, c === 0x66)) break;
        textStart = from = end;
      }
      lt = piece.indexOf('<', from);
    }
    const stop = lt === -1 ? n : lt;
    if (stop > textStart) this.textOf(piece, textStart, stop);
    return stop;
  }

  /**
   * Emits the text `piece.slice(textStart, lt)` and the canonical tag `piece.slice(lt, end)`.
   * Returns false, having done nothing, for a break whose time is out of range (the scanner then
   * applies the policies to it).
   */
  private canonicalTag(piece: string, textStart: number, lt: number, end: number, flush: boolean): boolean {
    if (flush) {
      if (lt > textStart) this.textOf(piece, textStart, lt);
      this.onflush();
      return true;
    }
    const seconds = canonicalSeconds(piece, lt + 13);
    if (!(seconds >= TAG_BREAK_MIN_SECONDS && seconds <= TAG_BREAK_MAX_SECONDS)) return false;
    if (lt > textStart) this.textOf(piece, textStart, lt);
    this.emitBreak(seconds, this.consumed + lt, piece, lt, end);
    return true;
  }
}

/**
 * Seconds of a time CANONICAL_TAG matched, its digits starting at `at`: the same double as
 * strictSeconds (digits / 10^fraction digits; Number() beyond 15 digits), without slicing it out.
 */
function canonicalSeconds(piece: string, at: number): number {
  let m = 0;
  let digits = 0;
  let fraction = -1;
  let k = at;
  for (; ; k++) {
    const c = piece.charCodeAt(k);
    if (c >= 0x30 && c <= 0x39) {
      m = m * 10 + (c - 0x30);
      digits++;
      if (fraction >= 0) fraction++;
    } else if (c === 0x2e /* . */) {
      fraction = 0;
    } else {
      break; // the `s`
    }
  }
  if (digits > 15) return Number(piece.slice(at, k));
  return fraction <= 0 ? m : m / POW10[fraction]!;
}

/**
 * Creates an incremental parser for `<flush>` and `<break time="…s" />` (docs/api.md §4.5).
 * Defaults: `invalidBreak: 'repair'`, `breakSpacing: 'repair'`, `maxTagLength: 64`.
 *
 * Added latency: none for plain text; a possible tag at the end of a piece (from `<` up to at most
 * `maxTagLength` code units) and a trailing high surrogate wait for the next piece.
 *
 * @example
 * const p = createTagParser();
 * p.push('Hello <br');                // [{ type: 'text', text: 'Hello ' }]
 * p.push('eak time="0.5s" /> world'); // [{ type: 'break', seconds: 0.5 }, { type: 'text', text: ' world' }]
 */
export function createTagParser(options: TagParserOptions = {}): TagParser {
  return new TagParserImpl(options);
}

/** One-shot {@link createTagParser}: all events of `text`, adjacent text merged. */
export function parseTags(text: string, options: TagParserOptions = {}): TagEvent[] {
  stringArg(text, 'parseTags: text');
  const parser = new TagParserImpl(options);
  let events: TagEvent[];
  try {
    events = parser.push(text);
  } catch (err) {
    // Error policy: finish the stream so the details hold every event, then rethrow.
    const details = (err as VoicewireError).details as TagParseErrorDetails;
    try {
      details.events.push(...parser.flush());
    } catch (more) {
      const d = (more as VoicewireError).details as TagParseErrorDetails;
      details.events.push(...d.events);
      details.errors.push(...d.errors);
    }
    details.events = mergeTextEvents(details.events);
    throw err;
  }
  try {
    events.push(...parser.flush());
  } catch (err) {
    const details = (err as VoicewireError).details as TagParseErrorDetails;
    details.events = mergeTextEvents([...events, ...details.events]);
    throw err;
  }
  return mergeTextEvents(events);
}

/**
 * Web TransformStream: text pieces in, {@link TagEvent}s out. Under an `'error'` policy the events
 * of the failing piece are enqueued first, then the stream errors with the VoicewireError.
 */
export function createTagParserStream(options: TagParserOptions = {}): TransformStream<string, TagEvent> {
  const parser = createTagParser(options);
  const run = (controller: TransformStreamDefaultController<TagEvent>, step: () => TagEvent[]): void => {
    let events: TagEvent[];
    try {
      events = step();
    } catch (err) {
      const details = (err as VoicewireError).details as TagParseErrorDetails | undefined;
      for (const e of details?.events ?? []) controller.enqueue(e);
      throw err;
    }
    for (const e of events) controller.enqueue(e);
  };
  return new TransformStream<string, TagEvent>({
    transform: (text, controller) => run(controller, () => parser.push(text)),
    flush: (controller) => run(controller, () => parser.flush()),
  });
}
