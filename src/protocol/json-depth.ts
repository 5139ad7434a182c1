/**
 * How deep a JSON text nests, measured before it is parsed (issue 20): a body nested thousands
 * deep parses, but every recursive walk of the result (`JSON.stringify` of a 422 body that echoes
 * it, a store's serializer) overflows the stack. No message of the API nests past 4 levels.
 */
import { describeValue, shown } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';

/** Deepest nesting of arrays and objects a JSON body or message may have: 64 (server limit `maxJsonDepth`). */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

/**
 * Where a JSON text (a string, or its UTF-8 bytes) first nests deeper than `maxDepth`: the
 * offset of the `[` or `{` that opens level `maxDepth + 1`, or -1 when it never does.
 *
 * One pass, no recursion, no allocation: linear in the length, and a string's contents are
 * skipped with `indexOf` (a long base64 payload costs one native scan). Brackets inside strings
 * do not count. The text is not validated: malformed JSON is the parser's to refuse.
 *
 * @throws VoicewireError `INVALID_ARGUMENT` when `text` is not a string or bytes, or `maxDepth`
 *   not a whole number ≥ 0.
 */
export function jsonDepthExceededAt(text: string | Uint8Array, maxDepth: number): number {
  if (typeof text !== 'string' && !(text instanceof Uint8Array)) throw new VoicewireError('INVALID_ARGUMENT', `jsonDepthExceededAt: text must be a string or a Uint8Array, got ${describeValue(text)}`);
  if (typeof maxDepth !== 'number' || !Number.isInteger(maxDepth) || maxDepth < 0) {
    throw new VoicewireError('INVALID_ARGUMENT', `jsonDepthExceededAt: maxDepth must be a whole number ≥ 0, got ${shown(maxDepth)}`);
  }
  return typeof text === 'string' ? scanText(text, maxDepth) : scanBytes(text, maxDepth);
}

// Two copies of one loop (text and bytes) rather than one over accessor closures: this runs on
// every WebSocket message, and allocates nothing.

function scanText(text: string, maxDepth: number): number {
  const n = text.length;
  let depth = 0;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      // The closing quote is the next one not escaped, i.e. not after an odd run of backslashes.
      // Each backslash run is counted once (it ends at one quote): still linear.
      let j = i;
      for (;;) {
        j = text.indexOf('"', j + 1);
        if (j < 0) return -1; // unterminated string: the parser refuses it
        let k = j - 1;
        while (text.charCodeAt(k) === BACKSLASH) k--;
        if ((j - 1 - k) % 2 === 0) break;
      }
      i = j;
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > maxDepth) return i;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      depth--;
    }
  }
  return -1;
}

/** As {@link scanText} over UTF-8: quotes, brackets and backslashes are ASCII, never inside a multi-byte sequence. */
function scanBytes(bytes: Uint8Array, maxDepth: number): number {
  const n = bytes.length;
  let depth = 0;
  for (let i = 0; i < n; i++) {
    const c = bytes[i]!;
    if (c === QUOTE) {
      let j = i;
      for (;;) {
        j = bytes.indexOf(QUOTE, j + 1);
        if (j < 0) return -1;
        let k = j - 1;
        while (bytes[k] === BACKSLASH) k--;
        if ((j - 1 - k) % 2 === 0) break;
      }
      i = j;
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > maxDepth) return i;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      depth--;
    }
  }
  return -1;
}

/** The reason given when a text nests too deep (the 422 `ctx.error`, the WebSocket `error` message). */
export function jsonTooDeepReason(maxDepth: number): string {
  return `JSON nested deeper than ${maxDepth} levels`;
}
