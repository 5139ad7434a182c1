/**
 * Node stream options checked before Node sees them (issue 11 §13). Node's own checks throw plain
 * TypeErrors (`ERR_INVALID_ARG_VALUE` for a highWaterMark of -1, `ERR_INVALID_ARG_TYPE` for a
 * signal that is not an AbortSignal); every voicewire entry point answers `INVALID_ARGUMENT`.
 */
import { Buffer } from 'node:buffer';
import { describeValue, optionsArg } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';

const WATER_MARKS = ['highWaterMark', 'readableHighWaterMark', 'writableHighWaterMark'] as const;
const ENCODINGS = ['encoding', 'defaultEncoding'] as const;

/** `options` (undefined is `{}`) when Node will accept them; else `INVALID_ARGUMENT` naming the field. */
export function nodeStreamOptions<T extends object>(options: T | undefined, what: string): T {
  const o = optionsArg(options, what) as T & Record<string, unknown>;
  for (const key of WATER_MARKS) {
    const v = o[key];
    // Node takes integers >= 0 (stream/state.js getHighWaterMark).
    if (v !== undefined && (typeof v !== 'number' || !Number.isInteger(v) || v < 0)) throw invalid(what, key, 'an integer >= 0', v);
  }
  for (const key of ENCODINGS) {
    const v = o[key];
    if (v !== undefined && v !== null && !(typeof v === 'string' && Buffer.isEncoding(v))) throw invalid(what, key, 'a Buffer encoding', v);
  }
  if (o.signal !== undefined && !(o.signal instanceof AbortSignal)) throw invalid(what, 'signal', 'an AbortSignal', o.signal);
  return o;
}

function invalid(what: string, key: string, expected: string, value: unknown): VoicewireError {
  return new VoicewireError('INVALID_ARGUMENT', `${what}: ${key} must be ${expected}, got ${describeValue(value)}`);
}
