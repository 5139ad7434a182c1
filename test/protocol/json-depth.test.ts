/**
 * The depth check every JSON body and WebSocket message passes before it is parsed (issue 20),
 * and the bounded `input` of a validation issue.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { MAX_JSON_DEPTH, jsonDepthExceededAt } from '../../src/protocol/json-depth.js';
import { MAX_ISSUE_INPUT_CHARS, makeIssue } from '../../src/protocol/validate.js';
import { parseJsonBody, restErrorResponse, validateTtsRequestBody } from '../../src/protocol/rest.js';
import { parseSttClientMessage, parseTtsClientMessage } from '../../src/protocol/parse.js';
import { caught, expectCode } from '../helpers/errors.js';

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);

/** Reference: the depth of a parsed value, walked with a stack. */
function depthOf(value: unknown): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    max = Math.max(max, d + 1);
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, d + 1]);
  }
  return max;
}

describe('jsonDepthExceededAt', () => {
  it('finds the bracket that opens the level past the limit, in strings and in bytes alike', () => {
    expect(jsonDepthExceededAt('[[1]]', 2)).toBe(-1);
    expect(jsonDepthExceededAt('[[1]]', 1)).toBe(1);
    expect(jsonDepthExceededAt('{"a":{"b":[]}}', 2)).toBe(10);
    expect(jsonDepthExceededAt(bytes('{"a":{"b":[]}}'), 2)).toBe(10);
    expect(jsonDepthExceededAt('1', 0)).toBe(-1);
    expect(jsonDepthExceededAt('[]', 0)).toBe(0);
  });

  it('brackets inside strings do not count, escaped quotes do not end a string', () => {
    expect(jsonDepthExceededAt('["[[[[[[", "{{{{"]', 1)).toBe(-1);
    expect(jsonDepthExceededAt('["a\\"[[[[", 1]', 1)).toBe(-1);
    expect(jsonDepthExceededAt('["a\\\\", [[1]]]', 2)).toBe(9); // the string ends at its second quote
    expect(jsonDepthExceededAt(bytes('["é[[[", "\\u005b"]'), 1)).toBe(-1);
    expect(jsonDepthExceededAt('["unterminated [[[[', 1)).toBe(-1);
  });

  it('agrees with the parsed depth of random JSON (string and bytes)', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), fc.integer({ min: 0, max: 10 }), (value, max) => {
        const text = JSON.stringify(value);
        const deeper = depthOf(value) > max;
        expect(jsonDepthExceededAt(text, max) >= 0).toBe(deeper);
        expect(jsonDepthExceededAt(bytes(text), max) >= 0).toBe(deeper);
      }),
      { numRuns: 500 },
    );
  });

  it('is linear: 1 MiB of brackets, of strings, of backslashes each in well under a second', () => {
    const cases = ['['.repeat(1 << 20), `["${'\\\\'.repeat(1 << 18)}"]`, `[${'"\\"\\"",'.repeat(1 << 16)}1]`, `["${'a'.repeat(1 << 20)}"]`];
    for (const text of cases) {
      const t0 = performance.now();
      jsonDepthExceededAt(text, MAX_JSON_DEPTH);
      jsonDepthExceededAt(bytes(text), MAX_JSON_DEPTH);
      expect(performance.now() - t0).toBeLessThan(1000);
    }
  });

  it('refuses bad arguments with INVALID_ARGUMENT', () => {
    expectCode(() => jsonDepthExceededAt(5 as unknown as string, 1), 'INVALID_ARGUMENT');
    expectCode(() => jsonDepthExceededAt('[]', -1), 'INVALID_ARGUMENT');
    expectCode(() => jsonDepthExceededAt('[]', 1.5), 'INVALID_ARGUMENT');
  });
});

describe('parsers refuse JSON nested deeper than 64 before parsing', () => {
  const deep = (n: number): string => '{"a":'.repeat(n) + '1' + '}'.repeat(n);
  it('parseJsonBody: 422 json_invalid at the offending bracket; maxDepth is an option', () => {
    const e = expectCode(() => parseJsonBody('['.repeat(100_000) + ']'.repeat(100_000)), 'VALIDATION_FAILED');
    expect((e.details as { detail: unknown[] }).detail).toEqual([{ loc: ['body', 64], msg: 'JSON decode error', type: 'json_invalid', input: {}, ctx: { error: 'JSON nested deeper than 64 levels' } }]);
    expect(parseJsonBody(deep(63))).toBeTypeOf('object');
    expectCode(() => parseJsonBody(deep(65)), 'VALIDATION_FAILED');
    expectCode(() => parseJsonBody(deep(3), { maxDepth: 2 }), 'VALIDATION_FAILED');
    expectCode(() => parseJsonBody('{}', { maxDepth: -1 }), 'INVALID_ARGUMENT');
  });

  it('WebSocket messages: PROTOCOL_INVALID_MESSAGE 1008, also as bytes and inside a json_config string', () => {
    for (const parse of [parseTtsClientMessage, parseSttClientMessage]) {
      const e = expectCode(() => parse(deep(100_000)), 'PROTOCOL_INVALID_MESSAGE', /nested deeper than 64 levels/);
      expect(e.closeCode).toBe(1008);
      expectCode(() => parse(bytes('['.repeat(8000))), 'PROTOCOL_INVALID_MESSAGE', /nested deeper than 64 levels/);
      const inConfig = caught(() => parse(JSON.stringify({ type: 'setup', json_config: deep(8000) })));
      expect(inConfig.code).toBe('PROTOCOL_INVALID_CONFIG');
      expect(inConfig.message).toMatch(/JSON decode error/);
    }
  });
});

describe('validation issues echo a bounded input', () => {
  it('short values are kept as they are', () => {
    expect(makeIssue(['body'], 'model_attributes_type', [1, 2]).input).toEqual([1, 2]);
    expect(makeIssue(['body', 'x'], 'string_type', { a: [true, null, 'b'] }).input).toEqual({ a: [true, null, 'b'] });
    expect(makeIssue(['body', 'x'], 'string_too_long', 'y'.repeat(MAX_ISSUE_INPUT_CHARS)).input).toBe('y'.repeat(MAX_ISSUE_INPUT_CHARS));
  });

  it('long strings, large and deep values become at most 200 characters', () => {
    const long = makeIssue(['body', 'p'], 'string_too_long', 'y'.repeat(1_000_000)).input as string;
    expect(long).toHaveLength(MAX_ISSUE_INPUT_CHARS);
    expect(long.endsWith('…')).toBe(true);
    let nested: unknown = 1;
    for (let i = 0; i < 200_000; i++) nested = [nested];
    const deep = makeIssue(['body'], 'model_attributes_type', nested).input as string;
    expect(deep).toBe(`${'['.repeat(MAX_ISSUE_INPUT_CHARS - 1)}…`);
    const wide = makeIssue(['body'], 'model_attributes_type', Array.from({ length: 100_000 }, (_, i) => i)).input as string;
    expect(wide.startsWith('[0,1,2,3')).toBe(true);
    expect(wide.length).toBeLessThanOrEqual(MAX_ISSUE_INPUT_CHARS);
    expect(makeIssue(['x'], 'string_type', new Date(0)).input).toBe('{}…');
  });

  it('a 422 body of a deep value serializes (it overflowed the stack before)', () => {
    let nested: unknown = 1;
    for (let i = 0; i < 100_000; i++) nested = { a: nested };
    const e = caught(() => validateTtsRequestBody({ text: nested }));
    const r = restErrorResponse(e);
    expect(r.status).toBe(422);
    expect(r.body.length).toBeLessThan(1000);
  });
});
