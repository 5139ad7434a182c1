import { describe, expect, it } from 'vitest';
import { FairLimiter, defaultNativeCalls } from '../../src/engines/fair-limiter.js';
import { ReservedShares } from '../../src/engines/budget.js';
import { VoicewireError } from '../../src/util/errors.js';

/** A task that resolves when told to, recording when it started. */
function gate(log: string[], name: string): { task: () => Promise<string>; open: () => void } {
  let open!: () => void;
  const p = new Promise<string>((r) => (open = () => r(name)));
  return {
    task: () => {
      log.push(name);
      return p;
    },
    open: () => open(),
  };
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('FairLimiter', () => {
  it('runs at most `concurrency` tasks, then serves the waiting tenants in turn', async () => {
    const lim = new FairLimiter(1);
    const log: string[] = [];
    const gates = new Map<string, ReturnType<typeof gate>>();
    const runs: Promise<string>[] = [];
    const add = (tenant: string, name: string): void => {
      const g = gate(log, name);
      gates.set(name, g);
      runs.push(lim.run(tenant.split('/'), g.task));
    };
    // One key's eight streams queue a call each, then another organization's one call.
    for (let i = 0; i < 8; i++) add(`a/k/s${i}`, `a${i}`);
    add('b/k/s0', 'b0');
    expect(lim.running).toBe(1);
    expect(lim.queued).toBe(8);
    for (let i = 0; i < 3; i++) {
      gates.get(log.at(-1)!)!.open();
      await tick();
    }
    // a0 ran at once (nothing waited); then a's turn and b's: b's call ran third, not ninth.
    expect(log.slice(0, 3)).toEqual(['a0', 'a1', 'b0']);
    for (const g of gates.values()) g.open();
    await Promise.all(runs);
    expect(lim.running).toBe(0);
  });

  it('releases its slot whatever the task does (throws, rejects), and settles as the task does', async () => {
    const lim = new FairLimiter(1);
    await expect(lim.run([], () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(
      lim.run([], () => {
        throw new Error('sync');
      }),
    ).rejects.toThrow('sync');
    await expect(lim.run([], async () => 7)).resolves.toBe(7);
    expect(lim.running).toBe(0);
  });

  it('a higher concurrency starts waiting tasks at once; bad values are INVALID_ARGUMENT', async () => {
    const lim = new FairLimiter(1);
    const log: string[] = [];
    const a = gate(log, 'a');
    const b = gate(log, 'b');
    const pa = lim.run(['x'], a.task);
    const pb = lim.run(['y'], b.task);
    expect(log).toEqual(['a']);
    lim.setConcurrency(2);
    expect(log).toEqual(['a', 'b']);
    a.open();
    b.open();
    await Promise.all([pa, pb]);
    for (const n of [0, 1.5, -1, NaN]) expect(() => new FairLimiter(n)).toThrow(VoicewireError);
    expect(defaultNativeCalls(2)).toBe(2);
    expect(defaultNativeCalls(16)).toBe(3);
    expect(defaultNativeCalls(1)).toBe(1);
  });
});

describe('ReservedShares (the STT decoders kept for organizations holding none)', () => {
  it('an organization holding decoders cannot take the last `reserve`; one holding none can, one each', () => {
    const shares = new ReservedShares('STT decoders', () => 8, 2, 'limits.sttDecoderReserve');
    const held: Array<() => void> = [];
    // Four keys of two organizations take all they can: 6 of 8.
    for (let i = 0; i < 6; i++) held.push(shares.acquire(i % 2 ? 'org-a' : 'org-b', 'this organization'));
    let err: unknown;
    try {
      shares.acquire('org-a', 'this organization');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(VoicewireError);
    expect((err as VoicewireError).code).toBe('ENGINE_BUSY');
    expect((err as VoicewireError).message).toContain('limits.sttDecoderReserve');
    // Two other organizations still get one each.
    held.push(shares.acquire('org-c', 'this organization'));
    held.push(shares.acquire('org-d', 'this organization'));
    expect(shares.held).toBe(8);
    // Releases give the places back (twice is harmless).
    for (const r of held) {
      r();
      r();
    }
    expect(shares.held).toBe(0);
    expect(shares.live('org-a')).toBe(0);
  });
});
