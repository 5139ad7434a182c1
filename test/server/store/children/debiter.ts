/**
 * Concurrency child: opens the store file, prints "ready", waits for "go" on stdin, tries half of
 * `attempts` debits of 1 credit as fast as it can, prints "half" and waits for "go2" (the parent's
 * barrier: both children have debited before either goes on, so their runs overlap whatever the
 * scheduler does), then tries the rest, and prints {"ok":N,"refused":N,"errors":[...],"seen":[...]}
 * as its last line.
 * argv: <db path> <org id> <attempts>
 */
import { createInterface } from 'node:readline';
import { SqliteStore } from '../../../../src/server/store/sqlite-store.js';

const [path, orgId, attempts] = process.argv.slice(2) as [string, string, string];
const store = SqliteStore.open(path);
await store.migrate();
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const waitFor = async (word: string): Promise<void> => {
  for (let r = await lines.next(); !r.done; r = await lines.next()) if (r.value === word) return;
  throw new Error(`stdin closed before "${word}"`);
};
process.stdout.write('ready\n');
await waitFor('go');
let ok = 0;
let refused = 0;
const errors: string[] = [];
const seen: number[] = [];
const total = Number(attempts);
for (let i = 0; i < total; i++) {
  if (i === total >> 1) {
    process.stdout.write('half\n');
    await waitFor('go2');
  }
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
}
await store.close();
process.stdout.write(`${JSON.stringify({ ok, refused, errors, seen })}\n`);
process.exit(0);
