/**
 * The turn budget for peers' frames (src/node/frame-budget.ts, issue 34): past the budget frames
 * wait in one FIFO, each socket's order kept, drained in setImmediate slices; a socket with too
 * many queued is held; a closed one's frames are dropped. Owners here are plain objects; the
 * `ws` wiring is test/server/ws-frame-budget.test.ts.
 */
import { expect, it } from 'vitest';
import { FrameBudget } from '../../src/node/frame-budget.js';

/** Busy for `ms` (a frame's handling: the session machine, the engine). */
function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

const settle = async (): Promise<void> => {
  for (let i = 0; i < 200; i++) await new Promise((r) => setImmediate(r));
};

it('keeps each socket’s order under slicing (many sockets, a small budget)', async () => {
  const seen = new Map<number, number[]>();
  let waitedAfterFirstTurn = 0;
  const budget = new FrameBudget<number, number>({
    budgetMs: 1,
    run: (owner, n) => {
      busy(0.1);
      (seen.get(owner) ?? seen.set(owner, []).get(owner)!).push(n);
    },
    hold: () => {},
  });
  // 40 sockets × 25 frames, interleaved as one poll phase delivers them, then later turns.
  for (let round = 0; round < 5; round++) {
    for (let n = 0; n < 5; n++) for (let owner = 0; owner < 40; owner++) budget.offer(owner, round * 5 + n, false);
    if (round === 0) waitedAfterFirstTurn = budget.queued;
    await new Promise((r) => setImmediate(r));
  }
  await settle();
  expect(budget.queued).toBe(0);
  // Sliced: frames did wait (a budget of 1 ms is far less than the 100 ms of work).
  expect(waitedAfterFirstTurn).toBeGreaterThan(100);
  for (let owner = 0; owner < 40; owner++) expect(seen.get(owner)).toEqual(Array.from({ length: 25 }, (_, i) => i));
});

it('holds a flooding socket past its queue bound and lets it go once half is handled', async () => {
  const holds: boolean[] = [];
  let held = false;
  let maxQueued = 0;
  const budget = new FrameBudget<string, number>({
    budgetMs: 1,
    maxQueuedPerOwner: 8,
    run: () => busy(0.5),
    hold: (_owner, on) => {
      holds.push(on);
      held = on;
    },
  });
  // The peer's reader: offers while its reading is not paused (as the socket's would).
  let sent = 0;
  while (sent < 400) {
    while (!held && sent < 400) {
      budget.offer('flood', sent++, false);
      maxQueued = Math.max(maxQueued, budget.queuedOf('flood'));
    }
    await new Promise((r) => setImmediate(r));
  }
  await settle();
  expect(sent).toBe(400);
  expect(holds.length).toBeGreaterThan(2);
  expect(holds.at(-1)).toBe(false);
  // Bounded by the hold, not by the 400 frames sent.
  expect(maxQueued).toBeLessThanOrEqual(8);
  expect(budget.queued).toBe(0);
});

it('drops a closed socket’s queued frames and releases its hold', async () => {
  const ran: string[] = [];
  const holds: [string, boolean][] = [];
  const budget = new FrameBudget<string, number>({
    budgetMs: 1,
    maxQueuedPerOwner: 4,
    run: (owner) => {
      busy(0.5);
      ran.push(owner);
    },
    hold: (owner, on) => holds.push([owner, on]),
  });
  for (let i = 0; i < 20; i++) {
    budget.offer('gone', i, false);
    budget.offer('stays', i, false);
  }
  const before = ran.filter((o) => o === 'gone').length;
  expect(budget.queuedOf('gone')).toBeGreaterThan(0);
  budget.drop('gone');
  expect(budget.queuedOf('gone')).toBe(0);
  expect(holds).toContainEqual(['gone', false]);
  await settle();
  expect(ran.filter((o) => o === 'gone').length).toBe(before);
  expect(ran.filter((o) => o === 'stays').length).toBe(20);
});

it('a frame of another socket waits about a budget while one socket floods, not the flood', async () => {
  /** How long `other`'s frame, offered in the next turn, waited from the flood's start. */
  const waitBehindFlood = async (budgetMs: number): Promise<{ waited: number; floodWork: number }> => {
    let floodWork = 0;
    const budget = new FrameBudget<string, number>({
      budgetMs,
      run: (owner) => {
        if (owner === 'other') return;
        const t = performance.now();
        busy(1);
        floodWork += performance.now() - t;
      },
      hold: () => {},
    });
    const start = performance.now();
    let waited = NaN;
    const done = new Promise<void>((resolve) => {
      // The next turn's frame (a timer runs after the check phase's slice).
      setTimeout(() => {
        budget.offer('other', 0, false);
        waited = performance.now() - start;
        resolve();
      }, 0);
    });
    for (let i = 0; i < 150; i++) budget.offer('flood', i, false);
    await done;
    await settle();
    return { waited, floodWork };
  };
  const sliced = await waitBehindFlood(4);
  // No budget (everything at once, the old path): the same frame waits for the whole flood.
  const inline = await waitBehindFlood(Infinity);
  expect(inline.waited).toBeGreaterThan(inline.floodWork * 0.9);
  expect(sliced.floodWork).toBeGreaterThan(100);
  // About two budgets (the flood's turn, one slice) against 150 ms of flood: generous slack.
  expect(sliced.waited).toBeLessThan(sliced.floodWork / 4);
});
