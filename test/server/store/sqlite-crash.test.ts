/**
 * Crash safety of the SQLite store (issue 13: "a kill -9 mid-write loses no committed data"): a
 * child writes in a loop and is killed with SIGKILL at a random moment; the file must reopen,
 * pass SQLite's integrity check, and hold every round the child reported committed. Every
 * transaction is whole or absent: a batch of 3 candidates is all there or all gone, and the
 * balance plus the usage rows always make the allocation (a debit and its usage row commit together).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'libsql';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../../src/server/store/sqlite-store.js';

const WRITER = new URL('./children/writer.ts', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'vw-crash-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the writer from round `first`, kills it with SIGKILL `afterMs` after its first commit; resolves the rounds it reported. */
function writeUntilKilled(path: string, orgId: string, first: number, afterMs: number): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', WRITER, path, orgId, String(first)], { stdio: ['ignore', 'pipe', 'pipe'] });
    const reported: number[] = [];
    let buffered = '';
    let stderr = '';
    let timer: NodeJS.Timeout | undefined;
    const guard = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const l of lines) reported.push(Number(l));
      timer ??= setTimeout(() => child.kill('SIGKILL'), afterMs);
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(guard);
      clearTimeout(timer);
      if (signal !== 'SIGKILL') reject(new Error(`writer exited ${code} ${signal} before the kill: ${stderr}`));
      else resolve(reported);
    });
  });
}

describe('SqliteStore crash safety', () => {
  it('SIGKILL mid-write, three times over: the file reopens sound and holds every committed round, each transaction whole', async () => {
    const path = join(dir, 'crash.db');
    const setup = SqliteStore.open(path);
    await setup.migrate();
    const org = await setup.createOrganization({ name: 'crash', region: null, allocatedCredits: 1_000_000, remainingCredits: 1_000_000, billingPeriod: 'monthly', nextRolloverDate: '2027-01-01', planName: 'p' });
    await setup.close();

    let next = 0;
    const committed: number[] = [];
    for (const afterMs of [150 + Math.random() * 200, 300 + Math.random() * 300, 50 + Math.random() * 100]) {
      const reported = await writeUntilKilled(path, org.id, next, afterMs);
      expect(reported.length).toBeGreaterThan(0);
      committed.push(...reported);

      const store = SqliteStore.open(path);
      await store.migrate();
      expect(await store.integrityCheck()).toEqual([]);
      const far = new Date(Date.now() + 60_000);
      for (const n of reported) {
        expect(await store.getVoice(org.id, `v-${n}`), `voice of round ${n}`).toBeDefined();
        for (const i of [0, 1, 2]) expect(await store.getCandidate(org.id, `c-${n}-${i}`, far), `candidate ${i} of round ${n}`).toBeDefined();
      }
      await store.close();

      // Whole transactions only: a batch of candidates is all there or all gone, and credits match usage.
      const raw = new Database(path);
      const counts = raw.prepare("SELECT COUNT(*) AS n FROM candidates GROUP BY substr(embedding_id, 1, length(embedding_id) - 2)").all() as { n: number }[];
      expect(counts.every((c) => c.n === 3)).toBe(true);
      const o = raw.prepare('SELECT remaining_credits AS r FROM organizations WHERE id = ?').get(org.id) as { r: number };
      const u = raw.prepare('SELECT COUNT(*) AS n, TOTAL(credits) AS c FROM usage').get() as { n: number; c: number };
      expect(o.r + u.c).toBe(1_000_000);
      expect(u.n).toBeGreaterThanOrEqual(committed.length);
      next = Math.max(...committed) + 100; // past any round that committed after its last print
      raw.close();
    }
    // Each round committed before it was printed; a round after the last print may be there too.
    const store = SqliteStore.open(path);
    await store.migrate();
    for (const n of committed) expect(await store.getVoice(org.id, `v-${n}`)).toBeDefined();
    await store.close();
  }, 30_000);
});
