/**
 * Issue 11 §8 (tag part): a regex that backtracks quadratically on a long tag or field lets a
 * peer buy seconds of CPU with kilobytes. Each check runs the attack input and its linear-time
 * bound: before the fix these took seconds (see the comments), after it milliseconds. The bounds
 * are 10× or more above what a loaded 2-core machine needs, and far below the quadratic cost.
 */
import { describe, expect, it } from 'vitest';
import { parseTags } from '../../src/text/tags.js';
import { FieldReader } from '../../src/protocol/validate.js';

function timed(f: () => void): number {
  const t = performance.now();
  f();
  return performance.now() - t;
}

describe('attacks: text parsers stay linear', () => {
  it('a 64k-character <break time="1   …   x" /> with maxTagLength 2^17 is repaired in milliseconds (was 2.5–7 s)', () => {
    const tag = `<break time="1${' '.repeat(65536 - 22)}x" />`;
    let events: unknown;
    const ms = timed(() => {
      events = parseTags(tag, { maxTagLength: 1 << 17 });
    });
    // 'repair' drops a break whose time is unusable.
    expect(events).toEqual([]);
    expect(ms).toBeLessThan(250);
  });

  it('lax number coercion of 64k digits then a letter is rejected in milliseconds (was ~5 s)', () => {
    const r = new FieldReader({ speed: `${'1'.repeat(65536)}x` }, ['body'], 'lax');
    const ms = timed(() => {
      expect(r.number('speed')).toBeUndefined();
    });
    expect(r.issues[0]?.type).toBe('float_parsing');
    expect(ms).toBeLessThan(250);
  });
});
