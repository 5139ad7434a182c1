/**
 * Engine budgets (src/engines/budget.ts): counted slots with a limit, their errors, reclaimers,
 * the per-key bound, the memory-derived default, and `limitSttStreams` giving back every slot.
 */
import { describe, expect, it } from 'vitest';
import { defaultSttDecoders, EngineBudget, KeyedBudget, limitSttStreams, STT_DECODER_BYTES } from '../../src/engines/budget.js';
import { createToneSttEngine } from '../../src/engines/tone.js';
import type { SttEngine } from '../../src/sessions/engine.js';
import { VoicewireError } from '../../src/util/errors.js';

const GB = 2 ** 30;
const CONFIG = { modelName: 'default', inputFormat: 'pcm' as const, jsonConfig: {} };

describe('EngineBudget', () => {
  it('counts slots up to its limit; a release is idempotent; past the limit ENGINE_BUSY 1011 naming the limit', () => {
    const b = new EngineBudget('STT decoders', 2, { limitName: 'limits.sttDecoders' });
    const r1 = b.acquire();
    const r2 = b.acquire();
    expect(b.live).toBe(2);
    let err: unknown;
    try {
      b.acquire();
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(VoicewireError);
    expect(err).toMatchObject({ code: 'ENGINE_BUSY', closeCode: 1011, message: 'the server holds its limit of 2 STT decoders (limits.sttDecoders): try again later' });
    r1();
    r1();
    expect(b.live).toBe(1);
    b.acquire();
    r2();
    expect(b.live).toBe(1);
  });

  it('asks its reclaimers for an idle instance before refusing, and when its limit is lowered', () => {
    const b = new EngineBudget('things', 2);
    const idle = [b.acquire(), b.acquire()];
    const remove = b.addReclaimer(() => {
      const r = idle.pop();
      r?.();
      return r !== undefined;
    });
    b.acquire();
    expect(idle).toHaveLength(1);
    b.setLimit(1);
    expect(idle).toHaveLength(0);
    expect(b.live).toBe(1);
    remove();
    expect(() => b.acquire()).toThrow(/limit of 1 things/);
  });

  it('refuses a limit that is not an integer ≥ 1', () => {
    for (const bad of [0, -1, 1.5, NaN, '2', null]) {
      expect(() => new EngineBudget('x', bad as number)).toThrow(/limit must be an integer ≥ 1/);
      expect(() => new EngineBudget('x', 1).setLimit(bad as number)).toThrow(/limit must be an integer ≥ 1/);
    }
  });

  it('the default decoder budget is a quarter of the memory at 96 MiB each, from 1 to 32', () => {
    expect(STT_DECODER_BYTES).toBe(96 * 2 ** 20);
    expect(defaultSttDecoders(24 * GB)).toBe(32);
    expect(defaultSttDecoders(4 * GB)).toBe(10);
    expect(defaultSttDecoders(1 * GB)).toBe(2);
    expect(defaultSttDecoders(0)).toBe(1);
    expect(defaultSttDecoders()).toBeGreaterThanOrEqual(1);
    expect(() => defaultSttDecoders(-1)).toThrow(/totalBytes/);
  });
});

describe('KeyedBudget', () => {
  it('bounds each key on its own with LIMIT_EXCEEDED 1008 and forgets keys without live slots', () => {
    const k = new KeyedBudget('live STT requests', 2, 'limits.sttDecodersPerKey');
    const a = [k.acquire('a', 'this API key'), k.acquire('a', 'this API key')];
    expect(() => k.acquire('a', 'this API key')).toThrow(expect.objectContaining({ code: 'LIMIT_EXCEEDED', closeCode: 1008, message: 'this API key already holds 2 live STT requests (limit limits.sttDecodersPerKey 2)' }));
    const b = k.acquire('b', 'this API key');
    expect([k.live('a'), k.live('b')]).toEqual([2, 1]);
    for (const r of [...a, b, b]) r();
    expect([k.live('a'), k.live('b')]).toEqual([0, 0]);
    expect((k as unknown as { counts: Map<string, number> }).counts.size).toBe(0);
  });
});

describe('limitSttStreams', () => {
  it('takes one slot of each budget per stream and gives them back on close, on a refused slot and on a failed open', async () => {
    const socket = new KeyedBudget('live STT requests', 2, 'limits.sttDecodersPerSocket');
    const key = new KeyedBudget('live STT requests', 1, 'limits.sttDecodersPerKey');
    const engine = limitSttStreams(createToneSttEngine(), [() => socket.acquire('', 'this socket'), () => key.acquire('k', 'this API key')]);
    const s = await engine.open(CONFIG, () => {});
    expect([socket.live(''), key.live('k')]).toEqual([1, 1]);
    // The key refuses: the socket's slot taken first is given back.
    await expect(engine.open(CONFIG, () => {})).rejects.toMatchObject({ code: 'LIMIT_EXCEEDED', message: expect.stringMatching(/^this API key/) });
    expect(socket.live('')).toBe(1);
    s.push(new Int16Array(1920));
    await s.end?.();
    s.close();
    expect([socket.live(''), key.live('k')]).toEqual([0, 0]);

    const failing: SttEngine = {
      open: () => {
        throw new VoicewireError('ENGINE_BUSY', 'busy');
      },
    };
    const limited = limitSttStreams(failing, [() => socket.acquire('', 'this socket')]);
    await expect(limited.open(CONFIG, () => {})).rejects.toMatchObject({ code: 'ENGINE_BUSY' });
    expect(socket.live('')).toBe(0);
  });
});
