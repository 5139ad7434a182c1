/**
 * Concurrency child: opens the store file and tries `attempts` debits of 1 credit in `rounds`
 * equal rounds. Before each round it prints "at R" and waits for "go" on stdin: the parent's
 * barrier, released only when both children are at the same round, so their runs alternate
 * whatever the scheduler does (issue 25). Just before its first debit it prints "debiting" and
 * reports how long that debit took (`firstMs`: it waited on a lock another process held).
 * Last line: {"ok":N,"refused":N,"errors":[...],"seen":[...],"firstMs":N}
 * argv: <db path> <org id> <attempts> <rounds>
 */
import { createInterface } from 'node:readline';
import { SqliteStore } from '../../../../src/server/store/sqlite-store.js';

const [path, orgId, attempts, rounds] = process.argv.slice(2) as [string, string, string, string];
const store = SqliteStore.open(path);
await store.migrate();
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const waitFor = async (word: string): Promise<void> => {
  for (let r = await lines.next(); !r.done; r = await lines.next()) if (r.value === word) return;
  throw new Error(`stdin closed before "${word}"`);
};
let ok = 0;
let refused = 0;
let firstMs = -1;
const errors: string[] = [];
const seen: number[] = [];
const perRound = Number(attempts) / Number(rounds);
for (let r = 0; r < Number(rounds); r++) {
  process.stdout.write(`at ${r}\n`);
  await waitFor('go');
  for (let i = 0; i < perRound; i++) {
    const t0 = performance.now();
    if (firstMs < 0) process.stdout.write('debiting\n');
    try {
      const left = await store.debitCredits(orgId, 1, { keyId: `child-${process.pid}`, kind: 'tts', units: 1 });
      if (left === null) refused++;
      else {
        ok++;
        seen.push(left);
      }
    } catch (e) {
      errors.push(String(e));
    }
    if (firstMs < 0) firstMs = performance.now() - t0;
  }
}
await store.close();
process.stdout.write(`${JSON.stringify({ ok, refused, errors, seen, firstMs })}\n`);
process.exit(0);
