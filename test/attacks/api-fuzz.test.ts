/// <reference types="vite/client" />
/**
 * Issue 11 §13: every public function and constructor of `voicewire` (src/index.ts), called with
 * random argument shapes (null, undefined, numbers, NaN, strings, objects, arrays, typed arrays),
 * throws nothing but VoicewireErrors (a returned promise rejects with nothing else either).
 *
 * Failures are grouped by the module that defines the export. text, protocol, sessions and util
 * are asserted strictly. audio and pipelines belong to other engineers who are fixing their own
 * entry points, and two serializers of protocol/parse.ts and base64 are being reworked on another
 * branch: their failures are listed (printed) and must stay within those names, so a new failure
 * anywhere else still fails this test. OWNED_ELSEWHERE is empty now those branches are merged.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import * as api from '../../src/index.js';
import { VoicewireError } from '../../src/util/errors.js';

const modules = import.meta.glob(['../../src/{util,audio,text,pipelines,protocol,sessions}/*.ts', '!../../src/**/index.ts'], { eager: true }) as Record<string, Record<string, unknown>>;

/** Where each exported function is defined: `text/tags.ts`. */
const owner = new Map<unknown, string>();
for (const [path, m] of Object.entries(modules)) for (const v of Object.values(m)) if (typeof v === 'function' && !owner.has(v)) owner.set(v, path.split('/src/')[1]!);

const STRICT = ['text/', 'protocol/', 'sessions/', 'util/'];
/** Exports of the strict modules that other branches are reworking (see the module comment). */
const OWNED_ELSEWHERE = new Set<string>();

const valueArb: fc.Arbitrary<unknown> = fc.oneof(
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

/** A value that cannot be turned into a string (`String()` throws a TypeError). */
const UNPRINTABLE = { toString: 1, valueOf: 2 };
/** Options whose every field is {@link UNPRINTABLE}: reaches each option's check and its error message. */
const HOSTILE_OPTIONS = new Proxy({}, { get: (_t, key) => (typeof key === 'symbol' ? undefined : UNPRINTABLE), has: () => true });

/** Fixed shapes every function gets, before the random ones. */
const FIXED: unknown[][] = [[UNPRINTABLE], [Object.create(null)], [HOSTILE_OPTIONS], ['x', HOSTILE_OPTIONS], [new Uint8Array(4), HOSTILE_OPTIONS], [{}, HOSTILE_OPTIONS], [], [null], [undefined], [NaN], [0], [-1], [0.5], ['x'], [{}], [[]], [new Uint8Array(3)], [new Int16Array(3)], [{}, null], ['x', null], [new Uint8Array(4), NaN], [new Uint8Array(4), {}], [null, null, null]];

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

/** Calls `name(...args)` (or `new`); the non-VoicewireError it throws or rejects with, if any. */
async function call(name: string, f: unknown, args: unknown[]): Promise<string | null> {
  let result: unknown;
  try {
    result = isClass(f) ? new (f as new (...a: unknown[]) => unknown)(...args) : (f as (...a: unknown[]) => unknown)(...args);
  } catch (err) {
    return err instanceof VoicewireError ? null : `${name}(${show(args)}) → ${(err as Error)?.constructor?.name ?? typeof err}: ${String((err as Error)?.message ?? err).slice(0, 100)}`;
  }
  if (result !== null && typeof result === 'object' && typeof (result as Promise<unknown>).then === 'function') {
    let bad: string | null = null;
    const settled = (result as Promise<unknown>).then(
      () => null,
      (err: unknown) => (bad = err instanceof VoicewireError ? null : `${name}(${show(args)}) rejects → ${(err as Error)?.constructor?.name}: ${String((err as Error)?.message).slice(0, 100)}`),
    );
    await Promise.race([settled, new Promise((r) => setTimeout(r, 20))]);
    return bad;
  }
  return null;
}

const functions = Object.entries(api).filter(([, v]) => typeof v === 'function') as [string, unknown][];

describe('attacks: the public API under random argument shapes (issue 11 §13)', () => {
  it('covers every exported function and constructor, each attributed to its module', () => {
    expect(functions.length).toBeGreaterThan(100);
    const unattributed = functions.filter(([, f]) => !owner.has(f)).map(([n]) => n);
    expect(unattributed).toEqual([]);
  });

  it('text, protocol, sessions and util: only VoicewireErrors; audio and pipelines: failures listed, and only there', async () => {
    const failures = new Map<string, string[]>(); // module → failing call shapes
    const runs = Number(process.env.FUZZ_RUNS ?? 60);
    for (const [name, f] of functions) {
      const module = owner.get(f)!;
      // Other engineers' modules get the fixed shapes only: random ones can hang them today
      // (oggCrc32(x, crc, -66944, new Float32Array([3e38])) loops ~1e38 times), which would stall
      // this suite before their fix lands. Their random runs belong in this test once merged.
      const strict = STRICT.some((p) => module.startsWith(p));
      const shapes = strict ? [...FIXED, ...fc.sample(argsArb, runs)] : FIXED;
      for (const args of shapes) {
        const bad = await call(name, f, args);
        if (bad === null) continue;
        const key = OWNED_ELSEWHERE.has(name) ? `${module} (other branch)` : module;
        const list = failures.get(key) ?? [];
        list.push(bad);
        failures.set(key, list);
      }
    }
    const report = [...failures].map(([m, calls]) => `${m}: ${calls.length} failing call shapes\n  ${[...new Set(calls)].slice(0, 40).join('\n  ')}`).join('\n');
    if (report) console.log(`API fuzz, non-VoicewireErrors by module (owned by other branches):\n${report}`);
    const strictFailures = [...failures].filter(([m]) => STRICT.some((p) => m.startsWith(p)) && !m.endsWith('(other branch)'));
    expect(strictFailures).toEqual([]);
  }, 240_000);

  it('strict modules, as a fast-check property per export (shrinks a failure to its smallest call)', async () => {
    for (const [name, f] of functions) {
      const module = owner.get(f)!;
      if (!STRICT.some((p) => module.startsWith(p)) || OWNED_ELSEWHERE.has(name)) continue;
      await fc.assert(
        fc.asyncProperty(argsArb, async (args) => {
          expect(await call(name, f, args)).toBeNull();
        }),
        { numRuns: 40 },
      );
    }
  }, 60_000);
});
