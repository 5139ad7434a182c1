/**
 * What a store can keep, checked where a route validates its body so that the caller gets a 422
 * (§2.7) naming the field, never a 500 quoting the driver (issue 20 §8): no NUL character in any
 * string or key (Postgres text and JSONB refuse U+0000), and JSON nested at most
 * {@link MAX_STORED_JSON_DEPTH} levels (SQLite's json_valid, a CHECK of every JSON column, stops at 1000).
 */
import { VoicewireError } from '../util/errors.js';
import { describeIssue, makeIssue, type ValidationIssue, type ValidationLoc } from '../protocol/validate.js';

/** Deepest nesting of a stored JSON value (voicewire's own JSON is flat: json_config, rules). */
export const MAX_STORED_JSON_DEPTH = 32;

const NUL = 'must not contain the NUL character (U+0000)';

function collect(value: unknown, loc: ValidationLoc, issues: ValidationIssue[], depth: number, anchor: ValidationLoc): void {
  if (typeof value === 'string') {
    if (value.includes('\0')) issues.push(makeIssue(loc, 'value_error', value, { error: NUL }));
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  if (depth > MAX_STORED_JSON_DEPTH) {
    // Reported at the field's own child: a 1000-element loc would say nothing more.
    issues.push(makeIssue(anchor, 'value_error', undefined, { error: `nested deeper than ${MAX_STORED_JSON_DEPTH} levels` }));
    return;
  }
  const entries: Array<[string | number, unknown]> = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  for (const [k, v] of entries) {
    const at = [...loc, k];
    if (typeof k === 'string' && k.includes('\0')) issues.push(makeIssue(at, 'value_error', k, { error: NUL }));
    collect(v, at, issues, depth + 1, depth === 0 ? at : anchor);
    if (issues.length > 0 && depth > 0) return; // one issue per field is enough
  }
}

/**
 * Checks the fields a route is about to store.
 * @throws VoicewireError `VALIDATION_FAILED` (422) whose details are the §2.7 body.
 */
export function assertStorable(fields: Record<string, unknown>, where: 'body' | 'query' = 'body'): void {
  const issues: ValidationIssue[] = [];
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) collect(v, [where, k], issues, 0, [where, k]);
  if (issues.length > 0) throw new VoicewireError('VALIDATION_FAILED', `Validation failed: ${issues.map(describeIssue).join('; ')}`, { details: { detail: issues } });
}

/**
 * §4.7: a prompt "must contain actual text": a letter, digit, punctuation or symbol, not only
 * spaces, control or format characters (U+0001, U+200B…).
 * @throws VoicewireError `VALIDATION_FAILED` (422) at `body.prompt`.
 */
export function assertActualText(text: string, field: string): void {
  if (/[\p{L}\p{N}\p{P}\p{S}]/u.test(text)) return;
  const issue = makeIssue(['body', field], 'value_error', text, { error: `${field} must contain actual text, not only spaces or control characters` });
  throw new VoicewireError('VALIDATION_FAILED', `Validation failed: ${describeIssue(issue)}`, { details: { detail: [issue] } });
}
