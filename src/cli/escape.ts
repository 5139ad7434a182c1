/**
 * Terminal-safe text for what the CLI prints. A message may carry names chosen by someone else
 * (a file name, ffmpeg's stderr quoting it): a newline there would forge a second error line, an
 * ESC sequence would drive the terminal (issue 11 §14). Control characters become JSON-style
 * escapes, so one error is always one line and never a terminal command.
 */
import { isVoicewireError } from '../util/errors.js';

// C0 controls, DEL, C1 controls (0x9B is the 8-bit CSI), the Unicode line and paragraph
// separators, and the bidi overrides/isolates that reorder what a reader sees (CVE-2021-42574).
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

// What JSON.stringify leaves raw (C0 is escaped by it; a raw newline is the pretty-printer's own).
const UNSAFE_IN_JSON = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const SHORT: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function escapeChar(c: string): string {
  const short = SHORT[c];
  if (short !== undefined) return short;
  const code = c.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * Escapes control characters as `\n`, `\r`, `\t`, `\xHH` (C0, DEL, C1) and `\uHHHH` (line
 * separators, bidi controls). Printable text, backslashes included, is left as it is.
 */
export function escapeControl(text: string): string {
  return text.replace(UNSAFE, escapeChar);
}

/**
 * For JSON the CLI prints: JSON.stringify already escapes C0, but leaves C1, U+2028/9 and bidi
 * controls raw; `\uHHHH` keeps the JSON valid (they can only occur inside strings).
 */
export function escapeJsonText(json: string): string {
  return json.replace(UNSAFE_IN_JSON, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** The one line an error prints: `voicewire: MESSAGE [CODE]`, control characters escaped (issue 11 §14). */
export function errorLine(err: unknown): string {
  const message = isVoicewireError(err) ? `${err.message} [${err.code}]` : `internal error: ${(err as Error)?.message ?? String(err)}`;
  return `voicewire: ${escapeControl(message)}\n`;
}
