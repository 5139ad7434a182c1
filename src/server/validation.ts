/**
 * Validation of the server's own bodies and queries (where the library has no validator: the core
 * routes), with the library's FieldReader so every 422 is §2.7's body.
 */
import { VoicewireError } from '../util/errors.js';
import { FieldReader, describeIssue, isRecord, makeIssue, own, type ValidationIssue } from '../protocol/validate.js';

/** Runs `read` over a body (or query record); throws VALIDATION_FAILED with the 422 body when it recorded issues. */
export function validate<T>(value: unknown, where: 'body' | 'query', read: (r: FieldReader) => T): T {
  const issues: ValidationIssue[] = [];
  if (!isRecord(value)) issues.push(makeIssue([where], 'model_attributes_type', value));
  const out = issues.length === 0 ? read(new FieldReader(value as Record<string, unknown>, [where], 'lax', issues)) : undefined;
  if (issues.length > 0) throw new VoicewireError('VALIDATION_FAILED', `Validation failed: ${issues.map(describeIssue).join('; ')}`, { details: { detail: issues } });
  return out as T;
}

/** A query as a plain record (last value wins, as FastAPI). */
export function queryRecord(params: URLSearchParams): Record<string, string> {
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [k, v] of params) out[k] = v;
  return out;
}

export { own };
