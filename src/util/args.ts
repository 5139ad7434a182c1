/**
 * Argument checks for public entry points (issue 11 §13): a call with null, undefined or a value of
 * the wrong type gets `INVALID_ARGUMENT` naming the argument, never a `TypeError` from deep inside.
 */
import { VoicewireError } from './errors.js';

/** A short description of a value for an error message (no contents: they may be large or private). */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (ArrayBuffer.isView(value)) return `a ${value.constructor.name}`;
  if (typeof value === 'number') return Number.isNaN(value) ? 'NaN' : `the number ${value}`;
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** `String(value)`, or a description when the value cannot be converted (`{ toString: 1 }`, `Object.create(null)`). */
export function shown(value: unknown): string {
  try {
    return String(value);
  } catch {
    return describeValue(value);
  }
}

function invalid(what: string, expected: string, value: unknown): VoicewireError {
  return new VoicewireError('INVALID_ARGUMENT', `${what} must be ${expected}, got ${describeValue(value)}`);
}

/** An options object: `undefined` is `{}`; anything but a plain object (or class instance) is refused. */
export function optionsArg<T extends object>(value: T | undefined, what = 'options'): T {
  if (value === undefined) return {} as T;
  if (value === null || typeof value !== 'object' || Array.isArray(value) || ArrayBuffer.isView(value)) throw invalid(what, 'an object', value);
  return value;
}

/** A required object (not null, not an array). */
export function objectArg<T extends object>(value: T, what: string): T {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw invalid(what, 'an object', value);
  return value;
}

export function stringArg(value: unknown, what: string): string {
  if (typeof value !== 'string') throw invalid(what, 'a string', value);
  return value;
}

export function bytesArg(value: unknown, what: string): Uint8Array {
  if (!(value instanceof Uint8Array)) throw invalid(what, 'a Uint8Array', value);
  return value;
}

export function functionArg<T>(value: T, what: string): T {
  if (typeof value !== 'function') throw invalid(what, 'a function', value);
  return value;
}

/** An iterable that is not a string (a string would iterate its characters). */
export function iterableArg<T>(value: Iterable<T>, what: string): Iterable<T> {
  if (value === null || typeof value !== 'object' || typeof (value as { [Symbol.iterator]?: unknown })[Symbol.iterator] !== 'function') throw invalid(what, 'an iterable', value);
  return value;
}

export function arrayArg<T>(value: readonly T[], what: string): readonly T[] {
  if (!Array.isArray(value)) throw invalid(what, 'an array', value);
  return value;
}
