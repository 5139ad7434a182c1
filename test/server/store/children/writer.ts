/**
 * Crash-test child: writes committed rows in a loop until it is killed, printing `N` on stdout
 * after each commit of round N (a candidate batch of 3, a voice, a debit). stdout to a pipe is
 * synchronous on Linux, so a printed N was written before round N+1 began.
 * argv: <db path> <org id> <first round>
 */
import { SqliteStore } from '../../../../src/server/store/sqlite-store.js';

const [path, orgId, first] = process.argv.slice(2) as [string, string, string];
const store = SqliteStore.open(path);
await store.migrate();
const blob = 'x'.repeat(16_384); // big rows: more of the loop's time is spent inside a write
const expiresAt = new Date(Date.now() + 3600_000).toISOString();
for (let n = Number(first); ; n++) {
  await store.putCandidates([0, 1, 2].map((i) => ({ embeddingId: `c-${n}-${i}`, orgId, language: 'en', prompt: `round ${n}`, params: { blob, i }, expiresAt })));
  await store.putVoice({
    uid: `v-${n}`,
    orgId,
    name: `voice ${n}`,
    description: blob,
    language: 'en',
    filename: `${n}.wav`,
    startS: 0,
    tags: [String(n)],
    isProClone: false,
    params: { n },
    createdAt: new Date().toISOString(),
  });
  const left = await store.debitCredits(orgId, 1, { keyId: null, kind: 'tts', units: 1 });
  if (left === null) throw new Error('out of credits');
  process.stdout.write(`${n}\n`);
}
