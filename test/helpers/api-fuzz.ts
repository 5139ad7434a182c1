/**
 * The machinery of the API fuzz tests (issue 11 §13): argument shapes, one bounded call, the
 * entry points of a module namespace and the members of what they return. The test files pass in
 * their `import.meta.glob` results (the modules and their sources), since globs are resolved per file.
 */
import { EventEmitter } from 'node:events';
import { writeSync } from 'node:fs';
import { Duplex, PassThrough, Readable, Stream, Transform, Writable } from 'node:stream';
import fc from 'fast-check';
import { VoicewireError } from '../../src/util/errors.js';

/** What the fuzz reads from the sources: the modules (`import.meta.glob`, eager) and their text (`?raw`). */
export interface FuzzSources {
  modules: Record<string, Record<string, unknown>>;
  sources: Record<string, string>;
}

/** What the sources tell the fuzz: where each export is defined, option names, private members. */
export interface FuzzContext {
  /** Where each exported function is defined: `text/tags.ts`. */
  owner: Map<unknown, string>;
  /** Every field name of an exported `…Options` interface, so random options reach the real checks. */
  optionNames: string[];
  /** Members declared `private` or `protected`: not API, though JavaScript lets anyone call them. */
  privateNames: Set<string>;
  /** Classes whose constructor is private: made only through their static factories. */
  privateConstructors: Set<string>;
  /** Random argument lists. */
  argsArb: fc.Arbitrary<unknown[]>;
}

export function fuzzContext({ modules, sources }: FuzzSources): FuzzContext {
  const owner = new Map<unknown, string>();
  for (const [path, m] of Object.entries(modules)) for (const v of Object.values(m)) if (typeof v === 'function' && !owner.has(v)) owner.set(v, path.split('/src/')[1]!);
  const texts = Object.values(sources);
  const optionNames = [
    ...new Set(texts.flatMap((src) => [...src.matchAll(/export interface \w*Options\b[^{]*\{([\s\S]*?)\n\}/g)].flatMap((m) => [...m[1]!.matchAll(/^ {2}(?:readonly )?(\w+)\??:/gm)].map((f) => f[1]!)))),
  ];
  const privateNames = new Set(texts.flatMap((src) => [...src.matchAll(/\b(?:private|protected)\s+(?:static\s+)?(?:readonly\s+)?(?:get\s+|set\s+)?(\w+)\s*[(<=:;]/g)].map((m) => m[1]!)));
  const privateConstructors = new Set(texts.flatMap((src) => [...src.matchAll(/export class (\w+)[^{]*\{(?:(?!\nexport )[\s\S])*?\n {2}private constructor\(/g)].map((m) => m[1]!)));
  return { owner, optionNames, privateNames, privateConstructors, argsArb: argsArbOf(optionNames) };
}

/** A value that cannot be turned into a string or number (`String()` throws a TypeError). */
const unprintable = (): object => ({ toString: 1, valueOf: 2 });
export const UNPRINTABLE = unprintable();
/** Options whose every field is {@link UNPRINTABLE}: reaches each option's check and its error message. */
export const HOSTILE_OPTIONS = new Proxy({}, { get: (_t, key) => (typeof key === 'symbol' ? undefined : UNPRINTABLE), has: () => true });

function argsArbOf(optionNames: string[]): fc.Arbitrary<unknown[]> {
  const scalarArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, undefined, NaN, Infinity, -Infinity, 0, -1, 0.5, 1, 2, 8000, 16000, 24000, 48000, 2 ** 31, '', 'pcm', 'wav', 'opus', 'x', true, false),
  fc.integer({ min: -100_000, max: 100_000 }),
  fc.string({ maxLength: 8 }),
);
  /** Options built from the real field names, each with a random (mostly wrong) value. */
  const optionsArb = fc.dictionary(fc.constantFrom(...optionNames), fc.oneof(scalarArb, fc.constant(UNPRINTABLE)), { maxKeys: 4 });

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
  return fc.array(valueArb, { maxLength: 4 });
}

/** Fixed shapes every entry gets, before the random ones. */
export const FIXED: unknown[][] = [[UNPRINTABLE], [Object.create(null)], [HOSTILE_OPTIONS], ['x', HOSTILE_OPTIONS], [new Uint8Array(4), HOSTILE_OPTIONS], [{}, HOSTILE_OPTIONS], [], [null], [undefined], [NaN], [0], [-1], [0.5], ['x'], [{}], [[]], [new Uint8Array(3)], [new Int16Array(3)], [{}, null], ['x', null], [new Uint8Array(4), NaN], [new Uint8Array(4), {}], [null, null, null]];

/** A call that spends more CPU than this (ms) is reported: every shape here is at most a few hundred bytes. */
export const SLOW_MS = 250;
/**
 * A call that blocks the process this long (ms) without spending the CPU is reported too (waiting on
 * a child or a syscall). Wall time alone is no measure: on a busy machine a call waits for a core
 * (isFfmpegAvailable's one `ffmpeg -version` took 955 ms beside other jobs, issue 25).
 */
const STALL_MS = 5000;
export const RUNS = Number(process.env.FUZZ_RUNS ?? 60);
export const SEED = Number(process.env.FUZZ_SEED ?? 1);
/** A seed per entry point, so each gets its own shapes and one entry's failure reproduces alone. */
export const seedOf = (name: string): number => [...name].reduce((h, c) => (Math.imul(h, 31) + c.charCodeAt(0)) | 0, SEED);
const TRACE = process.env.FUZZ_TRACE === '1';

const isClass = (f: unknown): boolean => typeof f === 'function' && /^class[\s{]/.test(Function.prototype.toString.call(f));

export function show(args: unknown[]): string {
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

export function describeError(err: unknown): string {
  if (!(err instanceof Error)) return `a thrown ${err === null ? 'null' : typeof err} (not an Error)`;
  return `${err.constructor.name}: ${err.message.slice(0, 100)}`;
}

/** What one call did: the problem, if any (a non-VoicewireError, or too slow), and its result. */
export interface Outcome {
  bad: string | null;
  result?: unknown;
  /** For a promise still pending after a short wait: its problem, once it settles. */
  late?: Promise<string | null>;
}

/** How long a returned promise is awaited before the fuzz moves on (the rest is collected as `late`). */
const PROMISE_WAIT_MS = 20;

/** Runs `invoke(args)`; reports anything but a VoicewireError it throws or its promise rejects with, and a slow call. */
export async function attempt(label: string, invoke: (args: unknown[]) => unknown, args: unknown[]): Promise<Outcome> {
  if (TRACE) writeSync(2, `${label}(${show(args)})\n`);
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  let result: unknown;
  try {
    result = invoke(args);
  } catch (err) {
    return { bad: err instanceof VoicewireError ? null : `${label}(${show(args)}) → ${describeError(err)}` };
  }
  // A synchronous hang cannot be interrupted here; a slow call is the symptom that shows one.
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const cpuMs = (cpu.user + cpu.system) / 1000;
  if (cpuMs > SLOW_MS || ms > STALL_MS) return { bad: `${label}(${show(args)}) took ${ms.toFixed(0)} ms (${cpuMs.toFixed(0)} ms of CPU)` };
  if (result !== null && typeof result === 'object' && typeof (result as Promise<unknown>).then === 'function') {
    const settled = (result as Promise<unknown>).then(
      () => null,
      (err: unknown) => (err instanceof VoicewireError ? null : `${label}(${show(args)}) rejects → ${describeError(err)}`),
    );
    const early = await Promise.race([settled, new Promise<'pending'>((r) => setTimeout(r, PROMISE_WAIT_MS, 'pending'))]);
    return early === 'pending' ? { bad: null, late: settled } : { bad: early };
  }
  return { bad: null, result };
}

/** A Node stream the fuzz made is destroyed (an ffmpeg child behind it exits); its errors are expected. */
function dispose(value: unknown): void {
  if (value instanceof Stream) {
    value.on('error', () => undefined);
    (value as Readable).destroy();
  }
}

/** Collects the problems of calls, by module, including promises that settle later. */
class Failures {
  private readonly byModule = new Map<string, string[]>();
  private readonly late: { module: string; settled: Promise<string | null> }[] = [];

  add(module: string, outcome: Outcome): void {
    if (outcome.late !== undefined) this.late.push({ module, settled: outcome.late });
    if (outcome.bad === null) return;
    const list = this.byModule.get(module) ?? [];
    list.push(outcome.bad);
    this.byModule.set(module, list);
  }

  /** The report, once the late promises settled (or LATE_WAIT_MS passed: a promise that never settles is a problem). */
  async report(): Promise<string[]> {
    const timeout = new Promise<'timeout'>((r) => setTimeout(r, LATE_WAIT_MS, 'timeout').unref());
    for (const { module, settled } of this.late) {
      const bad = await Promise.race([settled, timeout]);
      this.add(module, { bad: bad === 'timeout' ? `a promise of ${module} still pending after ${LATE_WAIT_MS} ms` : bad });
      if (bad === 'timeout') break;
    }
    return [...this.byModule].map(([m, calls]) => `${m}: ${calls.length} failing calls\n  ${[...new Set(calls)].slice(0, 20).join('\n  ')}`);
  }
}

/** How long, after the last call, promises still pending may take to settle. */
const LATE_WAIT_MS = 10_000;

/** One public entry point: a function, a constructor (`new`) or a static method. */
export interface Entry {
  name: string;
  module: string;
  invoke(args: unknown[]): unknown;
}

/** The entry points of a module namespace: its functions, its constructors (not private ones), their static methods. */
export function entriesOf(ctx: FuzzContext, api: Record<string, unknown>): Entry[] {
  const entries: Entry[] = [];
  for (const [name, f] of Object.entries(api)) {
    if (typeof f !== 'function') continue;
    const module = ctx.owner.get(f) ?? '?';
    if (!isClass(f)) {
      entries.push({ name, module, invoke: (args) => (f as (...a: unknown[]) => unknown)(...args) });
      continue;
    }
    if (!ctx.privateConstructors.has(name)) entries.push({ name, module, invoke: (args) => new (f as new (...a: unknown[]) => unknown)(...args) });
    for (const key of Object.getOwnPropertyNames(f)) {
      const d = Object.getOwnPropertyDescriptor(f, key)!;
      if (typeof d.value === 'function' && !ctx.privateNames.has(key)) entries.push({ name: `${name}.${key}`, module, invoke: (args) => (d.value as (...a: unknown[]) => unknown).apply(f, args) });
    }
  }
  return entries;
}

/** Node's own classes: their methods (write, pipe, on) are Node's to check, not ours. */
const NODE_CLASSES = new Set<unknown>([EventEmitter, Stream, Readable, Writable, Duplex, Transform, PassThrough]);

/** A constructor of the platform (TransformStream, Uint8Array, Map, a Node stream): its methods are not ours to test. */
const isBuiltin = (ctor: unknown): boolean => typeof ctor === 'function' && (NODE_CLASSES.has(ctor) || (globalThis as Record<string, unknown>)[(ctor as { name: string }).name] === ctor);

/** The methods and getters of an object the API returned: its own, and those of its (non-built-in) classes. */
function membersOf(ctx: FuzzContext, value: unknown): { methods: Map<string, (...a: unknown[]) => unknown>; getters: string[] } {
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
      // `_transform`, `_flush`: Node's stream protocol, called by Node with its own arguments.
      if (seen.has(key) || ctx.privateNames.has(key) || key.startsWith('_')) continue;
      seen.add(key);
      const d = Object.getOwnPropertyDescriptor(o, key)!;
      if (typeof d.value === 'function') methods.set(key, d.value as (...a: unknown[]) => unknown);
      else if (d.get !== undefined) getters.push(key);
    }
  }
  return { methods, getters };
}

/** Every entry point with the fixed shapes and RUNS random ones: the failures, by module. */
export async function fuzzEntries(ctx: FuzzContext, entries: readonly Entry[]): Promise<string[]> {
  const failures = new Failures();
  for (const e of entries) {
    for (const args of [...FIXED, ...fc.sample(ctx.argsArb, { numRuns: RUNS, seed: seedOf(e.name) })]) {
      const outcome = await attempt(e.name, e.invoke, args);
      dispose(outcome.result);
      failures.add(e.module, outcome);
    }
  }
  return failures.report();
}

/** An object to fuzz the members of: what an entry point returned, or one a test made itself. */
export interface FuzzTarget {
  label: string;
  module: string;
  value: unknown;
}

/**
 * What each entry point returns (made with defaults and with random arguments), and any `extra`
 * objects, get RUNS random calls of their public methods and getters, in random order (destroy
 * included): the failures, and how many objects and calls there were.
 */
export async function fuzzMembers(ctx: FuzzContext, entries: readonly Entry[], extra: readonly FuzzTarget[] = []): Promise<{ failures: string[]; objects: number; calls: number }> {
  const failures = new Failures();
  let objects = 0;
  let calls = 0;
  const targets: FuzzTarget[] = [...extra];
  for (const e of entries) {
    for (const args of [[], [{}], ...fc.sample(ctx.argsArb, { numRuns: 6, seed: seedOf(e.name) + 1 })]) {
      const made = await attempt(e.name, e.invoke, args);
      failures.add(e.module, made);
      targets.push({ label: `${e.name}(${show(args)})`, module: e.module, value: made.result });
    }
  }
  for (const t of targets) {
    const { methods, getters } = membersOf(ctx, t.value);
    if (methods.size === 0 && getters.length === 0) continue;
    objects++;
    const sequence = fc.sample(fc.tuple(fc.constantFrom(...methods.keys(), ...getters), fc.oneof(fc.constantFrom(...FIXED), ctx.argsArb)), { numRuns: RUNS, seed: seedOf(t.label) + 2 });
    for (const [key, callArgs] of sequence) {
      const method = methods.get(key);
      const outcome = await attempt(`${t.label}.${key}`, (a) => (method === undefined ? (t.value as Record<string, unknown>)[key] : method.apply(t.value, a)), method === undefined ? [] : callArgs);
      dispose(outcome.result);
      failures.add(t.module, outcome);
      calls++;
    }
    dispose(t.value);
  }
  return { failures: await failures.report(), objects, calls };
}
