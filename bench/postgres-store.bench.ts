/**
 * The Postgres store on the server's hot paths, against the same SQL on a bare `pg` client (what
 * the store layer and its pool cost) and against the embedded SqliteStore (what a network database
 * costs per call). A throwaway cluster on loopback (test/helpers/postgres.ts) with Postgres' own
 * durability on (fsync, synchronous commit), as a real server has it.
 *   1. latency of one awaited call, p50/p99, interleaved rounds, per-round p50 ratios vs PostgresStore;
 *   2. throughput of concurrent debits through the pool (default 10 connections): on one
 *      organization (one hot row: debits serialize on its row lock) and spread over 50.
 * Needs Debian `postgresql` (initdb, pg_ctl).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { PostgresStore } from '../src/server/store/postgres-store.js';
import { SqliteStore } from '../src/server/store/sqlite-store.js';
import { hasPostgres, startPostgres } from '../test/helpers/postgres.js';
import { machine, median, save } from './util.js';
import { BENCH_ORG, compareLatency, hash, KEYS, OPS, ROUNDS, seedStore, storePeer, voiceFor, type Peer } from './store-peers.js';

const CONCURRENT = 200;

if (!hasPostgres()) {
  console.log('postgres-store bench skipped: Postgres (initdb, pg_ctl) not installed (Debian postgresql)');
  process.exit(0);
}

const cluster = await startPostgres({ durable: true });
const dir = mkdtempSync(join(tmpdir(), 'vw-pg-bench-'));

/** The store's SQL on one bare pg client, no pool, no checks. */
async function directPeer(url: string): Promise<Peer> {
  const setup = new PostgresStore(url);
  const orgId = await seedStore(setup);
  await setup.close();
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  return {
    name: 'pg client direct (same SQL)',
    debit: () => {
      const at = new Date();
      return c.query(
        `WITH debit AS (UPDATE organizations SET remaining_credits = remaining_credits - $1 WHERE id = $2 AND remaining_credits >= $1 RETURNING remaining_credits),
         line AS (INSERT INTO usage (org_id, key_id, kind, units, credits, at, at_ms) SELECT $2, $3, $4, $5, $1, $6, $7 FROM debit)
         SELECT remaining_credits FROM debit`,
        [1, orgId, 'k1', 'tts', 1, at.toISOString(), at.getTime()],
      );
    },
    lookup: (i) => c.query('SELECT * FROM api_keys WHERE hash = $1', [hash(`key ${i % KEYS}`)]),
    insertVoice: () => {
      const v = voiceFor(orgId);
      return c.query(
        'INSERT INTO voices (uid, org_id, name, description, language, filename, start_s, tags, is_pro_clone, params, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10::jsonb, $11)',
        [v.uid, v.orgId, v.name, v.description, v.language, v.filename, v.startS, JSON.stringify(v.tags), false, JSON.stringify(v.params), v.createdAt],
      );
    },
  };
}

const schemaUrl = async (schema: string): Promise<string> => {
  cluster.psql(`CREATE SCHEMA ${schema}`, 'voicewire_test');
  return `${cluster.url()}?options=${encodeURIComponent(`-c search_path=${schema}`)}`;
};

const pgStore = new PostgresStore(await schemaUrl('store'));
const peers: Peer[] = [
  await storePeer('PostgresStore (pool 10)', pgStore),
  await directPeer(await schemaUrl('direct')),
  await storePeer('SqliteStore (WAL, NORMAL)', SqliteStore.open(join(dir, 'store.db'))),
];

console.log(`postgres store benchmark on ${machine()}; Postgres ${cluster.psql('SHOW server_version').trim()} on loopback, fsync on; ${ROUNDS} rounds x ${OPS} ops; one awaited call, us`);
const groups = await compareLatency(peers, 'debit (UPDATE ... RETURNING + usage row, one statement)');

// Throughput: CONCURRENT debits at once through the pool, per round; median debits/s and spread.
const orgs = await Promise.all(Array.from({ length: 50 }, (_, i) => pgStore.createOrganization({ ...BENCH_ORG, name: `spread-${i}` })));
const hot = orgs[0]!.id;
const through: Record<string, number[]> = { 'one organization (hot row)': [], 'spread over 50 organizations': [] };
for (let r = 0; r < ROUNDS; r++) {
  for (const [name, pick] of [
    ['one organization (hot row)', () => hot],
    ['spread over 50 organizations', (i: number) => orgs[i % orgs.length]!.id],
  ] as const) {
    const t = performance.now();
    await Promise.all(Array.from({ length: CONCURRENT }, (_, i) => pgStore.debitCredits(pick(i), 1, { keyId: null, kind: 'tts', units: 1 })));
    through[name]!.push(CONCURRENT / ((performance.now() - t) / 1000));
  }
}
console.log(`\n${CONCURRENT} concurrent debits through PostgresStore (pool 10), debits/s`);
const tRows = Object.entries(through).map(([name, xs]) => {
  console.log(`  ${name.padEnd(32)} median ${median(xs).toFixed(0).padStart(7)}  (${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)})`);
  return { name, median: median(xs), min: Math.min(...xs), max: Math.max(...xs) };
});
groups.push({ group: `${CONCURRENT} concurrent debits, pool 10`, unit: 'debits/s', rows: tRows });

save('postgres-store', groups);
await pgStore.close();
rmSync(dir, { recursive: true, force: true });
process.exit(0); // the exit handler stops and removes the cluster
