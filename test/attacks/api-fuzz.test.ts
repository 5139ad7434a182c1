/// <reference types="vite/client" />
/**
 * Issue 11 §13: every public entry point of `voicewire` (src/index.ts) — each exported function,
 * constructor and static method, and every method and getter of what they return — called with
 * random argument shapes (null, undefined, numbers, NaN, strings, objects, arrays, typed arrays,
 * options with the real field names and wrong values, values that cannot be converted to a string
 * or number) throws nothing but VoicewireErrors (a returned promise rejects with nothing else
 * either), and returns within a bounded time. The machinery is in test/helpers/api-fuzz.ts.
 *
 * The shapes are reproducible: `FUZZ_SEED=n` picks another set (default 1), `FUZZ_RUNS=n` sets the
 * random shapes per entry (default 60), and `FUZZ_TRACE=1` writes each call to stderr before making
 * it, so a hang names its call.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import * as api from '../../src/index.js';
import { attempt, entriesOf, fuzzContext, fuzzEntries, fuzzMembers, RUNS, seedOf } from '../helpers/api-fuzz.js';

const ctx = fuzzContext({
  modules: import.meta.glob(['../../src/{util,audio,text,pipelines,protocol,sessions}/*.ts', '!../../src/**/index.ts'], { eager: true }),
  sources: import.meta.glob('../../src/{util,audio,text,pipelines,protocol,sessions}/*.ts', { eager: true, query: '?raw', import: 'default' }),
});
const entries = entriesOf(ctx, api);

describe('attacks: the public API under random argument shapes (issue 11 §13)', () => {
  it('covers every exported function, constructor and static method, each attributed to its module', () => {
    expect(entries.length).toBeGreaterThan(120);
    expect(entries.map((e) => e.name)).toEqual(expect.arrayContaining(['OpusEncoder', 'RequestMap.empty', 'PersistentQueue.of', 'parseTags']));
    expect(entries.filter((e) => e.module === '?').map((e) => e.name)).toEqual([]);
    expect(ctx.optionNames).toEqual(expect.arrayContaining(['sampleRate', 'channels', 'highWaterMark', 'maxPacketSize']));
    expect([...ctx.privateConstructors].sort()).toEqual(['PersistentQueue', 'RequestMap']);
  });

  it('entry points: only VoicewireErrors, from every module, each call bounded in time', async () => {
    expect(await fuzzEntries(ctx, entries)).toEqual([]);
  }, 240_000);

  it('methods and getters of what the entry points return: only VoicewireErrors, in any order, after destroy too', async () => {
    const { failures, objects, calls } = await fuzzMembers(ctx, entries);
    expect(objects).toBeGreaterThan(100);
    expect(calls).toBeGreaterThan(100 * RUNS);
    expect(failures).toEqual([]);
  }, 240_000);

  it('as a fast-check property per entry point (shrinks a failure to its smallest call)', async () => {
    for (const e of entries) {
      await fc.assert(
        fc.asyncProperty(ctx.argsArb, async (args) => {
          expect((await attempt(e.name, e.invoke, args)).bad).toBeNull();
        }),
        { numRuns: 40, seed: seedOf(e.name) + 3 },
      );
    }
  }, 60_000);
});
