/**
 * Credits under concurrency on SQLite, across processes (issue 13 "debits are atomic (no double
 * spend under concurrency, never below zero)"). In one process the store suite already spends 200
 * concurrent debits on a budget for 100; here two processes share one file, as a second server
 * worker or the keys CLI would.
 *
 * The test makes the overlap happen rather than hoping for it (issue 25): a third process holds
 * the write lock while both debiters make their first debit (so SQLite's busy handling is
 * exercised: they wait, they do not fail), and the debiters then go in lock-step rounds, each
 * round released only when both reached it. With three or more rounds in which both succeed, each
 * child's balances must jump somewhere, because the other debited between two of its rounds.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../../src/server/store/sqlite-store.js';

const CHILDREN = new URL('./children/', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'vw-conc-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Outcome {
  ok: number;
  refused: number;
  errors: string[];
  seen: number[];
  firstMs: number;
}

interface Child {
  child: ChildProcessWithoutNullStreams;
  /** Resolves when the child has printed `line` (each line once). */
  said(line: string): Promise<void>;
  send(line: string): void;
  /** The child's last stdout line, once it exited 0. */
  done: Promise<string>;
}

function start(script: string, args: string[]): Child {
  const child = spawn(process.execPath, ['--import', 'tsx', join(CHILDREN, script), ...args]);
  let out = '';
  let err = '';
  const waiters = new Map<string, () => void>();
  const lines = new Set<string>();
  child.stdout.setEncoding('utf8').on('data', (c: string) => {
    out += c;
    for (const l of out.split('\n').slice(0, -1)) {
      lines.add(l);
      waiters.get(l)?.();
    }
  });
  child.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
  // The whole test has 90 s; a child that hangs is killed well before, and fails the test.
  const guard = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const done = new Promise<string>((resolve, reject) =>
    child.on('exit', (code) => {
      clearTimeout(guard);
      if (code !== 0) reject(new Error(`${script} exited ${code}: ${err}`));
      else resolve(out.trim().split('\n').at(-1)!);
    }),
  );
  return {
    child,
    said: (line) => (lines.has(line) ? Promise.resolve() : Promise.race([new Promise<void>((r) => waiters.set(line, r)), done.then(() => { throw new Error(`${script} exited before "${line}": ${out}`); })])),
    send: (line) => child.stdin.write(`${line}\n`),
    done,
  };
}

describe('SqliteStore credits across two processes', () => {
  it('two processes debiting one budget at once, one waiting on a held lock: exact totals, never below zero, no balance seen twice', async () => {
    const path = join(dir, 'credits.db');
    const setup = SqliteStore.open(path);
    await setup.migrate();
    const budget = 1500;
    const org = await setup.createOrganization({ name: 'shared', region: null, allocatedCredits: budget, remainingCredits: budget, billingPeriod: 'monthly', nextRolloverDate: '2027-01-01', planName: 'p' });

    const rounds = 10;
    const holder = start('lock-holder.ts', [path]);
    const debiters = [start('debiter.ts', [path, org.id, '1000', String(rounds)]), start('debiter.ts', [path, org.id, '1000', String(rounds)])];
    await Promise.all([holder.said('ready'), ...debiters.map((c) => c.said('at 0'))]);
    // Both debiters make their first debit while another process holds the write lock.
    holder.send('hold');
    await holder.said('holding');
    for (const c of debiters) c.send('go');
    await Promise.all(debiters.map((c) => c.said('debiting')));
    await new Promise((r) => setTimeout(r, 300));
    holder.send('release');
    await holder.said('released');
    await holder.done;
    // The barrier: round r starts only when both children finished round r-1.
    for (let r = 1; r < rounds; r++) {
      await Promise.all(debiters.map((c) => c.said(`at ${r}`)));
      for (const c of debiters) c.send('go');
    }
    const outcomes = (await Promise.all(debiters.map((c) => c.done))).map((l) => JSON.parse(l) as Outcome);

    expect(outcomes.flatMap((o) => o.errors)).toEqual([]);
    expect(outcomes[0]!.ok + outcomes[1]!.ok).toBe(budget);
    expect(outcomes[0]!.refused + outcomes[1]!.refused).toBe(2000 - budget);
    // Every success saw a distinct balance from budget-1 down to 0: nothing spent twice, never below zero.
    const seen = outcomes.flatMap((o) => o.seen).sort((x, y) => x - y);
    expect(seen).toEqual(Array.from({ length: budget }, (_, i) => i));
    // Each first debit waited for the held lock (released ≥ 300 ms after it began) and then succeeded.
    for (const o of outcomes) expect(o.firstMs).toBeGreaterThanOrEqual(250);
    // The rounds made them overlap: each child's balances jump where the other debited meanwhile.
    const gaps = outcomes.map((o) => o.seen.filter((v, i) => i > 0 && o.seen[i - 1]! - v > 1).length);
    expect(gaps[0]! > 0 && gaps[1]! > 0, `interleavings ${gaps.join(' / ')}`).toBe(true);
    expect((await setup.getOrganization(org.id))!.remainingCredits).toBe(0);
    expect((await setup.usageSummary(org.id, '1970-01-01T00:00:00Z')).tts).toEqual({ units: budget, credits: budget, requests: budget });
    expect(await setup.integrityCheck()).toEqual([]);
    await setup.close();
  }, 90_000);
});
