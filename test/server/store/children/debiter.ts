/**
 * Concurrency child: opens the store file, waits for "go" on stdin, then tries `attempts` debits of
 * 1 credit as fast as it can, and prints {"ok":N,"refused":N,"errors":[...]} as its last line.
 * argv: <db path> <org id> <attempts>
 */
import { createInterface } from 'node:readline';
import { SqliteStore } from '../../../../src/server/store/sqlite-store.js';

const [path, orgId, attempts] = process.argv.slice(2) as [string, string, string];
const store = SqliteStore.open(path);
await store.migrate();
process.stdout.write('ready\n');
const lines = createInterface({ input: process.stdin });
for await (const line of lines) if (line === 'go') break;
let ok = 0;
let refused = 0;
const errors: string[] = [];
const seen: number[] = [];
for (let i = 0; i < Number(attempts); i++) {
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
