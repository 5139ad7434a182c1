/**
 * Credits under concurrency on SQLite, across processes (issue 13 "debits are atomic (no double
 * spend under concurrency, never below zero)"). In one process the store suite already spends 200
 * concurrent debits on a budget for 100; here two processes share one file, as a second server
 * worker or the keys CLI would.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../../src/server/store/sqlite-store.js';

const DEBITER = new URL('./children/debiter.ts', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'vw-conc-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Outcome {
  ok: number;
  refused: number;
  errors: string[];
  seen: number[];
}

function start(path: string, orgId: string, attempts: number): { child: ChildProcessWithoutNullStreams; ready: Promise<void>; done: Promise<Outcome> } {
  const child = spawn(process.execPath, ['--import', 'tsx', DEBITER, path, orgId, String(attempts)]);
  let out = '';
  let err = '';
  let onReady: () => void;
  const ready = new Promise<void>((r) => (onReady = r));
  child.stdout.setEncoding('utf8').on('data', (c: string) => {
    out += c;
    if (out.startsWith('ready\n')) onReady();
  });
  child.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
  const guard = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const done = new Promise<Outcome>((resolve, reject) =>
    child.on('exit', (code) => {
      clearTimeout(guard);
      const last = out.trim().split('\n').at(-1)!;
      if (code !== 0) reject(new Error(`debiter exited ${code}: ${err}`));
      else resolve(JSON.parse(last) as Outcome);
    }),
  );
  return { child, ready, done };
}

describe('SqliteStore credits across two processes', () => {
  it('two processes debiting one budget at once: exact totals, never below zero, no balance seen twice', async () => {
    const path = join(dir, 'credits.db');
    const setup = SqliteStore.open(path);
    await setup.migrate();
    const budget = 1500;
    const org = await setup.createOrganization({ name: 'shared', region: null, allocatedCredits: budget, remainingCredits: budget, billingPeriod: 'monthly', nextRolloverDate: '2027-01-01', planName: 'p' });

    const children = [start(path, org.id, 1000), start(path, org.id, 1000)];
    await Promise.all(children.map((c) => c.ready));
    for (const c of children) c.child.stdin.write('go\n');
    const outcomes = await Promise.all(children.map((c) => c.done));

    expect(outcomes.flatMap((o) => o.errors)).toEqual([]);
    expect(outcomes[0]!.ok + outcomes[1]!.ok).toBe(budget);
    expect(outcomes[0]!.refused + outcomes[1]!.refused).toBe(2000 - budget);
    // Interleaved, not one after the other: each child's balances have gaps the other filled.
    const gaps = outcomes.map((o) => o.seen.filter((v, i) => i > 0 && o.seen[i - 1]! - v > 1).length);
    console.log(`two-process debits: ${outcomes.map((o) => o.ok).join(' + ')} successes, ${gaps.join(' / ')} interleavings`);
    expect(gaps[0]! + gaps[1]!, 'the two processes never overlapped: nothing was tested').toBeGreaterThan(0);
    // Every success saw a distinct balance from budget-1 down to 0: nothing spent twice.
    const seen = outcomes.flatMap((o) => o.seen).sort((x, y) => x - y);
    expect(seen).toEqual(Array.from({ length: budget }, (_, i) => i));
    expect((await setup.getOrganization(org.id))!.remainingCredits).toBe(0);
    expect((await setup.usageSummary(org.id, '1970-01-01T00:00:00Z')).tts).toEqual({ units: budget, credits: budget, requests: budget });
    expect(await setup.integrityCheck()).toEqual([]);
    await setup.close();
  }, 30_000);
});
