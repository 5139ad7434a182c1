/// <reference types="vite/client" />
/**
 * Issue 11 §13: every public entry point of `voicewire` (src/index.ts) — each exported function,
 * constructor and static method, and every method and getter of what they return — called with
 * random argument shapes (null, undefined, numbers, NaN, strings, objects, arrays, typed arrays,
 * options with the real field names and wrong values, values that cannot be converted to a string
 * or number) throws nothing but VoicewireErrors (a returned promise rejects with nothing else
 * either), and returns within a bounded time.
 *
 * The shapes are reproducible: `FUZZ_SEED=n` picks another set (default 1), `FUZZ_RUNS=n` sets the
 * random shapes per entry (default 60), and `FUZZ_TRACE=1` writes each call to stderr before making
 * it, so a hang names its call.
 */
import { writeSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import * as api from '../../src/index.js';
import { VoicewireError } from '../../src/util/errors.js';

const modules = import.meta.glob(['../../src/{util,audio,text,pipelines,protocol,sessions}/*.ts', '!../../src/**/index.ts'], { eager: true }) as Record<string, Record<string, unknown>>;
const sources = import.meta.glob('../../src/{util,audio,text,pipelines,protocol,sessions}/*.ts', { eager: true, query: '?raw', import: 'default' }) as Record<string, string>;

/** Where each exported function is defined: `text/tags.ts`. */
const owner = new Map<unknown, string>();
for (const [path, m] of Object.entries(modules)) for (const v of Object.values(m)) if (typeof v === 'function' && !owner.has(v)) owner.set(v, path.split('/src/')[1]!);

/** Every field name of an exported `…Options` interface, so random options reach the real checks. */
const OPTION_NAMES = [
  ...new Set(
    Object.values(sources).flatMap((src) =>
      [...src.matchAll(/export interface \w*Options\b[^{]*\{([\s\S]*?)\n\}/g)].flatMap((m) => [...m[1]!.matchAll(/^ {2}(?:readonly )?(\w+)\??:/gm)].map((f) => f[1]!)),
    ),
  ),
];
/** Members declared `private` or `protected`: not API, though JavaScript lets anyone call them. */
const PRIVATE_NAMES = new Set(Object.values(sources).flatMap((src) => [...src.matchAll(/\b(?:private|protected)\s+(?:static\s+)?(?:readonly\s+)?(?:get\s+|set\s+)?(\w+)\s*[(<=:;]/g)].map((m) => m[1]!)));
/** Classes whose constructor is private: made only through their static factories. */
const PRIVATE_CONSTRUCTORS = new Set(Object.values(sources).flatMap((src) => [...src.matchAll(/export class (\w+)[^{]*\{(?:(?!\nexport )[\s\S])*?\n {2}private constructor\(/g)].map((m) => m[1]!)));

/** A value that cannot be turned into a string or number (`String()` throws a TypeError). */
const unprintable = (): object => ({ toString: 1, valueOf: 2 });
const UNPRINTABLE = unprintable();
/** Options whose every field is {@link UNPRINTABLE}: reaches each option's check and its error message. */
const HOSTILE_OPTIONS = new Proxy({}, { get: (_t, key) => (typeof key === 'symbol' ? undefined : UNPRINTABLE), has: () => true });

const scalarArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, undefined, NaN, Infinity, -Infinity, 0, -1, 0.5, 1, 2, 8000, 16000, 24000, 48000, 2 ** 31, '', 'pcm', 'wav', 'opus', 'x', true, false),
  fc.integer({ min: -100_000, max: 100_000 }),
  fc.string({ maxLength: 8 }),
);
/** Options built from the real field names, each with a random (mostly wrong) value. */
const optionsArb = fc.dictionary(fc.constantFrom(...OPTION_NAMES), fc.oneof(scalarArb, fc.constant(UNPRINTABLE)), { maxKeys: 4 });

const valueArb: fc.Arbitrary<unknown> = fc.oneof(
  optionsArb,
  fc.constantFrom(null, undefined, NaN, Infinity, -Infinity, 0, -1, 0.5, 1, 2, '', 'pcm', 'wav', 'x', true, false),
  fc.integer({ min: -100_000, max: 100_000 }),
  fc.double({ min: -1e6, max: 1e6 }),
  fc.string({ maxLength: 12 }),
  fc.object({ maxDepth: 1, maxKeys: 3 }),
  fc.array(fc.oneof(fc.integer(), fc.string({ maxLength: 4 }), fc.constant(null)), { maxLength: 4 }),
  fc.uint8Array({ maxLength: 64 }),
  fc.int16Array({ maxLength: 32 }),
  fc.float32Array({ maxLength: 32 }),
  fc.constant(new ArrayBuffer(8)),
);
const argsArb = fc.array(valueArb, { maxLength: 4 });

/** Fixed shapes every entry gets, before the random ones. */
const FIXED: unknown[][] = [[UNPRINTABLE], [Object.create(null)], [HOSTILE_OPTIONS], ['x', HOSTILE_OPTIONS], [new Uint8Array(4), HOSTILE_OPTIONS], [{}, HOSTILE_OPTIONS], [], [null], [undefined], [NaN], [0], [-1], [0.5], ['x'], [{}], [[]], [new Uint8Array(3)], [new Int16Array(3)], [{}, null], ['x', null], [new Uint8Array(4), NaN], [new Uint8Array(4), {}], [null, null, null]];

/** A call slower than this (ms) is reported: every shape here is at most a few hundred bytes. */
const SLOW_MS = 250;
const RUNS = Number(process.env.FUZZ_RUNS ?? 60);
const SEED = Number(process.env.FUZZ_SEED ?? 1);
/** A seed per entry point, so each gets its own shapes and one entry's failure reproduces alone. */
const seedOf = (name: string): number => [...name].reduce((h, c) => (Math.imul(h, 31) + c.charCodeAt(0)) | 0, SEED);
const TRACE = process.env.FUZZ_TRACE === '1';

const isClass = (f: unknown): boolean => typeof f === 'function' && /^class[\s{]/.test(Function.prototype.toString.call(f));

function show(args: unknown[]): string {
  return args
    .map((a) => {
      if (a === undefined) return 'undefined';
      if (typeof a === 'number') return String(a);
      if (ArrayBuffer.isView(a)) return `${a.constructor.name}(${(a as Uint8Array).length})`;
      if (a instanceof ArrayBuffer) return `ArrayBuffer(${a.byteLength})`;
      try {
        return JSON.stringify(a);
      } catch {
        return typeof a;
      }
    })
    .join(', ');
}

function describeError(err: unknown): string {
  if (!(err instanceof Error)) return `a thrown ${err === null ? 'null' : typeof err} (not an Error)`;
  return `${err.constructor.name}: ${err.message.slice(0, 100)}`;
}

/** What one call did: the problem, if any (a non-VoicewireError, or too slow), and its result. */
interface Outcome {
  bad: string | null;
  result?: unknown;
}

/** Runs `invoke(args)`; reports anything but a VoicewireError it throws or its promise rejects with, and a slow call. */
async function attempt(label: string, invoke: (args: unknown[]) => unknown, args: unknown[]): Promise<Outcome> {
  if (TRACE) writeSync(2, `${label}(${show(args)})\n`);
  const t0 = performance.now();
  let result: unknown;
  try {
    result = invoke(args);
  } catch (err) {
    return { bad: err instanceof VoicewireError ? null : `${label}(${show(args)}) → ${describeError(err)}` };
  }
  // A synchronous hang cannot be interrupted here; a slow call is the symptom that shows one.
  const ms = performance.now() - t0;
  if (ms > SLOW_MS) return { bad: `${label}(${show(args)}) took ${ms.toFixed(0)} ms` };
  if (result !== null && typeof result === 'object' && typeof (result as Promise<unknown>).then === 'function') {
    let bad: string | null = null;
    const settled = (result as Promise<unknown>).then(
      () => null,
      (err: unknown) => (bad = err instanceof VoicewireError ? null : `${label}(${show(args)}) rejects → ${describeError(err)}`),
    );
    await Promise.race([settled, new Promise((r) => setTimeout(r, 20))]);
    return { bad };
  }
  return { bad: null, result };
}

/** One public entry point: a function, a constructor (`new`) or a static method. */
interface Entry {
  name: string;
  module: string;
  invoke(args: unknown[]): unknown;
}

const entries: Entry[] = [];
for (const [name, f] of Object.entries(api)) {
  if (typeof f !== 'function') continue;
  const module = owner.get(f) ?? '?';
  if (!isClass(f)) {
    entries.push({ name, module, invoke: (args) => (f as (...a: unknown[]) => unknown)(...args) });
    continue;
  }
  if (!PRIVATE_CONSTRUCTORS.has(name)) entries.push({ name, module, invoke: (args) => new (f as new (...a: unknown[]) => unknown)(...args) });
  for (const key of Object.getOwnPropertyNames(f)) {
    const d = Object.getOwnPropertyDescriptor(f, key)!;
    if (typeof d.value === 'function' && !PRIVATE_NAMES.has(key)) entries.push({ name: `${name}.${key}`, module, invoke: (args) => (d.value as (...a: unknown[]) => unknown).apply(f, args) });
  }
}

/** A constructor of the platform (TransformStream, Uint8Array, Map): its methods are not ours to test. */
const isBuiltin = (ctor: unknown): boolean => typeof ctor === 'function' && (globalThis as Record<string, unknown>)[(ctor as { name: string }).name] === ctor;

/** The methods and getters of an object the API returned: its own, and those of its (non-built-in) classes. */
function membersOf(value: unknown): { methods: Map<string, (...a: unknown[]) => unknown>; getters: string[] } {
  const methods = new Map<string, (...a: unknown[]) => unknown>();
  const getters: string[] = [];
  if (value === null || typeof value !== 'object' || Array.isArray(value) || ArrayBuffer.isView(value) || typeof (value as Promise<unknown>).then === 'function') return { methods, getters };
  // A generator's protocol (throw rethrows its argument) is the language's; its body is ours.
  const tag = Object.prototype.toString.call(value);
  if (tag === '[object Generator]' || tag === '[object AsyncGenerator]') return { methods: new Map([['next', (value as Generator).next as (...a: unknown[]) => unknown]]), getters };
  const seen = new Set<string>(['constructor']);
  for (let o: object | null = value; o !== null && o !== Object.prototype; o = Object.getPrototypeOf(o) as object | null) {
    if (Object.prototype.hasOwnProperty.call(o, 'constructor') && isBuiltin((o as { constructor: unknown }).constructor)) break;
    for (const key of Object.getOwnPropertyNames(o)) {
      if (seen.has(key) || PRIVATE_NAMES.has(key)) continue;
      seen.add(key);
      const d = Object.getOwnPropertyDescriptor(o, key)!;
      if (typeof d.value === 'function') methods.set(key, d.value as (...a: unknown[]) => unknown);
      else if (d.get !== undefined) getters.push(key);
    }
  }
  return { methods, getters };
}

function report(failures: Map<string, string[]>): string[] {
  return [...failures].map(([m, calls]) => `${m}: ${calls.length} failing calls\n  ${[...new Set(calls)].slice(0, 20).join('\n  ')}`);
}

function add(failures: Map<string, string[]>, module: string, bad: string | null): void {
  if (bad === null) return;
  const list = failures.get(module) ?? [];
  list.push(bad);
  failures.set(module, list);
}

describe('attacks: the public API under random argument shapes (issue 11 §13)', () => {
  it('covers every exported function, constructor and static method, each attributed to its module', () => {
    expect(entries.length).toBeGreaterThan(120);
    expect(entries.map((e) => e.name)).toEqual(expect.arrayContaining(['OpusEncoder', 'RequestMap.empty', 'PersistentQueue.of', 'parseTags']));
    expect(entries.filter((e) => e.module === '?').map((e) => e.name)).toEqual([]);
    expect(OPTION_NAMES).toEqual(expect.arrayContaining(['sampleRate', 'channels', 'highWaterMark', 'maxPacketSize']));
    expect([...PRIVATE_CONSTRUCTORS].sort()).toEqual(['PersistentQueue', 'RequestMap']);
  });

  it('entry points: only VoicewireErrors, from every module, each call bounded in time', async () => {
    const failures = new Map<string, string[]>(); // module → failing calls
    for (const e of entries) for (const args of [...FIXED, ...fc.sample(argsArb, { numRuns: RUNS, seed: seedOf(e.name) })]) add(failures, e.module, (await attempt(e.name, e.invoke, args)).bad);
    expect(report(failures)).toEqual([]);
  }, 240_000);

  it('methods and getters of what the entry points return: only VoicewireErrors, in any order, after destroy too', async () => {
    const failures = new Map<string, string[]>();
    let objects = 0;
    let calls = 0;
    for (const e of entries) {
      // Instances made with defaults and with random arguments; each gets a random sequence of calls.
      for (const args of [[], [{}], ...fc.sample(argsArb, { numRuns: 6, seed: seedOf(e.name) + 1 })]) {
        const made = await attempt(e.name, e.invoke, args);
        const { methods, getters } = membersOf(made.result);
        if (methods.size === 0 && getters.length === 0) continue;
        objects++;
        const sequence = fc.sample(fc.tuple(fc.constantFrom(...methods.keys(), ...getters), fc.oneof(fc.constantFrom(...FIXED), argsArb)), { numRuns: RUNS, seed: seedOf(e.name) + 2 });
        for (const [key, callArgs] of sequence) {
          const method = methods.get(key);
          const label = `${e.name}(${show(args)}).${key}`;
          const outcome = await attempt(label, (a) => (method === undefined ? (made.result as Record<string, unknown>)[key] : method.apply(made.result, a)), method === undefined ? [] : callArgs);
          add(failures, e.module, outcome.bad);
          calls++;
        }
      }
    }
    expect(objects).toBeGreaterThan(100);
    expect(calls).toBeGreaterThan(100 * RUNS);
    expect(report(failures)).toEqual([]);
  }, 240_000);

  it('as a fast-check property per entry point (shrinks a failure to its smallest call)', async () => {
    for (const e of entries) {
      await fc.assert(
        fc.asyncProperty(argsArb, async (args) => {
          expect((await attempt(e.name, e.invoke, args)).bad).toBeNull();
        }),
        { numRuns: 40, seed: seedOf(e.name) + 3 },
      );
    }
  }, 60_000);
});
