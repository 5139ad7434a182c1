/**
 * Error assertions shared by the tests: the call must throw a VoicewireError of this code (and,
 * optionally, a message matching a pattern). Returns the error for further checks.
 */
import { expect } from 'vitest';
import { VoicewireError } from '../../src/util/errors.js';

export function expectCode(fn: () => unknown, code: string, message?: RegExp): VoicewireError {
  const err = caught(fn);
  expect(err.code).toBe(code);
  if (message) expect(err.message).toMatch(message);
  return err;
}

/** The VoicewireError `fn` throws; fails the test when it throws nothing or something else. */
export function caught(fn: () => unknown): VoicewireError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(VoicewireError);
    return err as VoicewireError;
  }
  throw new Error('expected a VoicewireError, but nothing was thrown');
}
