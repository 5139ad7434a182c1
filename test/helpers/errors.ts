/**
 * Error assertions shared by the tests: the call must throw a VoicewireError of this code (and,
 * optionally, a message matching a pattern). Returns the error for further checks.
 */
import { expect } from 'vitest';
import { VoicewireError } from '../../src/errors.js';

export function expectCode(fn: () => unknown, code: string, message?: RegExp): VoicewireError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(VoicewireError);
  expect((caught as VoicewireError).code).toBe(code);
  if (message) expect((caught as VoicewireError).message).toMatch(message);
  return caught as VoicewireError;
}
