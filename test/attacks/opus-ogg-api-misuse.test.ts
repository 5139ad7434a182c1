/**
 * Issue 11 §13 (the Opus and Ogg part): every export of opus, ogg, ogg-opus, opus-head and crc32,
 * called with random argument shapes, raises only VoicewireErrors (never a TypeError, a hang or a
 * wasm trap), and the instances' methods likewise.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import * as crc32 from '../../src/audio/crc32.js';
import * as ogg from '../../src/audio/ogg.js';
import * as oggOpus from '../../src/audio/ogg-opus.js';
import * as opus from '../../src/audio/opus.js';
import * as opusHead from '../../src/audio/opus-head.js';
import { VoicewireError } from '../../src/util/errors.js';

const shapes: unknown[] = [undefined, null, 0, -1, NaN, 0.5, 1e12, 'x', '', {}, [], [1, 2], new Uint8Array(3), Uint8Array.of(0xfc, 0xff, 0xfe), new Int16Array(960), new Float32Array(960), true, () => 0, 2n, { sampleRate: 'x' }, { channels: 3 }, { serial: -5 }, { eos: 'yes' }];
const shape = fc.constantFrom(...shapes);
const args = fc.array(shape, { maxLength: 4 });

/** Calls `fn`; anything thrown must be a VoicewireError. Async results are awaited. */
async function onlyVoicewireErrors(fn: () => unknown): Promise<void> {
  let result: unknown;
  try {
    result = fn();
  } catch (err) {
    if (!(err instanceof VoicewireError)) throw new Error(`non-VoicewireError: ${String(err)}`, { cause: err });
    return;
  }
  if (result instanceof Promise) {
    await result.catch((err: unknown) => {
      if (!(err instanceof VoicewireError)) throw new Error(`non-VoicewireError (async): ${String(err)}`, { cause: err });
    });
  }
}

const modules = { crc32, ogg, oggOpus, opus, opusHead } as Record<string, Record<string, unknown>>;
/** Exports that change process-wide state: called only with valid arguments elsewhere. */
const skip = new Set(['setOpusLimits', 'setOpusBackend', 'setOpusBackendProvider']);
/** The public methods of each class (TypeScript's private methods are on the prototype too). */
const methods: Record<string, string[]> = {
  OpusEncoder: ['setBitrate', 'getBitrate', 'setComplexity', 'getComplexity', 'encode', 'encodeInto', 'reset', 'destroy'],
  OpusDecoder: ['setGain', 'getGain', 'decode', 'decodeFloat', 'decodeInto', 'reset', 'destroy'],
  OggPageReader: ['push', 'flush'],
  OggPacketReader: ['push', 'unfollow', 'flush'],
  OggPageWriter: ['addPacket', 'flushPage'],
  OggOpusEncoder: ['push', 'flushPage', 'flush', 'destroy'],
  OggOpusDecoder: ['push', 'pull', 'flush', 'destroy'],
};
const made: { destroy?: () => void }[] = [];
afterAll(() => {
  for (const m of made) m.destroy?.();
});

describe('the Opus and Ogg public API under random argument shapes', () => {
  for (const [modName, mod] of Object.entries(modules)) {
    for (const [name, value] of Object.entries(mod)) {
      if (typeof value !== 'function' || skip.has(name)) continue;
      const isClass = /^class\b/.test(Function.prototype.toString.call(value));
      it(`${modName}.${name}${isClass ? ' (constructor and methods)' : ''}`, async () => {
        await fc.assert(
          fc.asyncProperty(args, args, async (a, b) => {
            if (!isClass) return onlyVoicewireErrors(() => (value as (...x: unknown[]) => unknown)(...a));
            let instance: Record<string, unknown> | undefined;
            await onlyVoicewireErrors(() => {
              instance = new (value as new (...x: unknown[]) => Record<string, unknown>)(...a);
              made.push(instance as { destroy?: () => void });
            });
            if (!instance) return;
            expect(methods[name], `public methods of ${name}`).toBeDefined();
            for (const method of methods[name]!) {
              const f = (instance as Record<string, unknown>)[method];
              if (typeof f === 'function') await onlyVoicewireErrors(() => (f as (...x: unknown[]) => unknown).apply(instance, b));
            }
          }),
          { numRuns: 40 },
        );
      });
    }
  }

  it("OpusEncoder.encode(null) and decodeInto(packet, out, NaN | 0.5 | -1) are INVALID_ARGUMENT (decodeInto with NaN returned 960 and wrote nothing)", () => {
    const e = new opus.OpusEncoder();
    const d = new opus.OpusDecoder();
    const packet = e.encode(new Int16Array(960).fill(1000));
    for (const bad of [null, undefined, 5, 'x', {}]) expect(() => e.encode(bad as never)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    const out = new Int16Array(2000);
    for (const offset of [NaN, 0.5, -1, '1', Infinity]) expect(() => d.decodeInto(packet, out, offset as never)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => d.decodeInto(packet, null as never)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => e.encodeInto(new Int16Array(960), new Uint8Array(4000), 0.5)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(d.decodeInto(packet, out, 7)).toBe(960);
    e.destroy();
    d.destroy();
  });
});
