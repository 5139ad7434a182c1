/**
 * The describing reader (src/protocol/describe.ts, issue 21): a validator written as a function of
 * a FieldReader gives, run against it, the JSON Schema of what it reads; and the same function
 * validates with the ordinary reader.
 */
import { describe, expect, it } from 'vitest';
import { FieldReader, type ValidationIssue } from '../../src/protocol/validate.js';
import { describeReader, keysRead } from '../../src/protocol/describe.js';

/** A validator as the library writes them: every kind of read, a custom check, a nested object, closed. */
function readSample(r: FieldReader): unknown {
  const name = r.string('name', { required: true, minLength: 1, maxLength: 9, description: 'Who.' });
  r.refine('name', name, (n) => (n.trim() === '' ? 'name must not be blank' : undefined), 'name must not be blank');
  r.literal('kind', ['a', 'b'] as const, { default: 'a' });
  r.integer('n', { ge: 1, le: 5, default: 1 });
  r.number('x', { ge: -1, nullable: false });
  r.boolean('on', { default: false });
  r.stringArray('tags');
  r.object('sub', (s) => (s.number('t', { ge: 0 }), s.closed()), { name: 'Sub', jsonString: true });
  r.closed();
  return name;
}

const run = (value: Record<string, unknown>): ValidationIssue[] => {
  const issues: ValidationIssue[] = [];
  readSample(new FieldReader(value, ['body'], 'strict', issues));
  return issues;
};

describe('describeReader', () => {
  it('records each read as the schema of its field: type, bounds, enum, required, default, nullability, description, nested objects, closed', () => {
    const components: Record<string, Record<string, unknown>> = {};
    const s = describeReader(readSample, { components });
    expect(s).toEqual({
      type: 'object',
      properties: {
        name: { type: 'string', minLength: 1, maxLength: 9, description: 'Who. name must not be blank.' },
        kind: { anyOf: [{ type: 'string', enum: ['a', 'b'] }, { type: 'null' }], default: 'a' },
        n: { anyOf: [{ type: 'integer', minimum: 1, maximum: 5 }, { type: 'null' }], default: 1 },
        x: { type: 'number', minimum: -1 },
        on: { anyOf: [{ type: 'boolean' }, { type: 'null' }], default: false },
        tags: { anyOf: [{ type: 'array', items: { type: 'string' } }, { type: 'null' }] },
        sub: {
          anyOf: [
            { $ref: '#/components/schemas/Sub' },
            { type: 'string', contentMediaType: 'application/json', contentSchema: { $ref: '#/components/schemas/Sub' } },
            { type: 'null' },
          ],
        },
      },
      required: ['name'],
      additionalProperties: false,
    });
    expect(components['Sub']).toEqual({ type: 'object', properties: { t: { anyOf: [{ type: 'number', minimum: 0 }, { type: 'null' }] } }, additionalProperties: false });
    expect(keysRead(readSample)).toEqual(['name', 'kind', 'n', 'x', 'on', 'tags', 'sub']);
  });

  it('the same function validates: what the schema forbids is refused, its edges are taken', () => {
    expect(run({ name: 'a' })).toEqual([]);
    expect(run({ name: 'a', n: 5, x: -1, sub: '{"t":0}' })).toEqual([]);
    expect(run({}).map((i) => i.type)).toEqual(['missing']);
    expect(run({ name: 'a', n: 6 }).map((i) => i.type)).toEqual(['less_than_equal']);
    expect(run({ name: ' ' }).map((i) => i.type)).toEqual(['value_error']);
    expect(run({ name: 'a', other: 1 }).map((i) => [i.type, i.loc])).toEqual([['extra_forbidden', ['body', 'other']]]);
    expect(run({ name: 'a', sub: { t: 1, u: 2 } }).map((i) => [i.type, i.loc])).toEqual([['extra_forbidden', ['body', 'sub', 'u']]]);
    expect(run({ name: 'a', sub: '{"t":' }).map((i) => i.type)).toEqual(['json_invalid']);
    expect(run({ name: 'a', sub: '['.repeat(70) + ']'.repeat(70) }).map((i) => i.type)).toEqual(['json_invalid']);
    expect(run({ name: 'a', x: null }).map((i) => i.type)).toEqual(['float_type']);
  });

  it('a key read twice (a second pass) gets both schemas merged; a check adds its schema', () => {
    const s = describeReader((r) => {
      r.number('temp', { ge: 0 });
      const t = r.number('temp');
      r.refine('temp', t, (v) => (v !== 0 ? 'only 0' : undefined), 'only 0', { const: 0 });
    }, { showNull: false });
    expect(s).toEqual({ type: 'object', properties: { temp: { type: 'number', minimum: 0, const: 0, description: 'only 0.' } } });
  });
});
