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
import { createHash, randomUUID } from 'node:crypto';
import pg from 'pg';
import { PostgresStore } from '../src/server/store/postgres-store.js';
import { SqliteStore } from '../src/server/store/sqlite-store.js';
import type { Store, VoiceRecord } from '../src/server/store/store.js';
import { hasPostgres, startPostgres } from '../test/helpers/postgres.js';
import { machine, save } from './util.js';

const ROUNDS = Number(process.env.STORE_BENCH_ROUNDS ?? 5);
const OPS = Number(process.env.STORE_BENCH_OPS ?? 400);
const KEYS = 10_000;
const CONCURRENT = 200;

if (!hasPostgres()) {
  console.log('postgres-store bench skipped: Postgres (initdb, pg_ctl) not installed (Debian postgresql)');
  process.exit(0);
}

const cluster = await startPostgres({ durable: true });
const dir = mkdtempSync(join(tmpdir(), 'vw-pg-bench-'));
const hash = (s: string): string => createHash('sha256').update(s).digest('hex');
const ORG = { region: null, allocatedCredits: 1e12, remainingCredits: 1e12, billingPeriod: 'monthly', nextRolloverDate: '2027-01-01', planName: 'bench' };

interface Peer {
  name: string;
  debit(): Promise<unknown>;
  lookup(i: number): Promise<unknown>;
  insertVoice(): Promise<unknown>;
}

function voiceFor(orgId: string): VoiceRecord {
  return {
    uid: randomUUID(),
    orgId,
    name: 'bench voice',
    description: 'a voice made by the store benchmark',
    language: 'en',
    filename: 'sample.wav',
    startS: 0,
    tags: ['bench', 'calm'],
    isProClone: false,
    params: { espeak: 'en-us', pitch: 50, rate: 175 },
    createdAt: new Date().toISOString(),
  };
}

async function seed(store: Store): Promise<string> {
  await store.migrate();
  const org = await store.createOrganization({ ...ORG, name: 'bench' });
  for (let i = 0; i < KEYS; i += 500) {
    await Promise.all(Array.from({ length: 500 }, (_, j) => store.createApiKey({ id: `k${i + j}`, orgId: org.id, hash: hash(`key ${i + j}`), admin: false, prefix: `vw_${i + j}` })));
  }
  return org.id;
}

async function storePeer(name: string, store: Store): Promise<Peer> {
  const orgId = await seed(store);
  return {
    name,
    debit: () => store.debitCredits(orgId, 1, { keyId: 'k1', kind: 'tts', units: 1 }),
    lookup: (i) => store.findApiKeyByHash(hash(`key ${i % KEYS}`)),
    insertVoice: () => store.putVoice(voiceFor(orgId)),
  };
}

/** The store's SQL on one bare pg client, no pool, no checks. */
async function directPeer(url: string): Promise<Peer> {
  const setup = new PostgresStore(url);
  const orgId = await seed(setup);
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

const pct = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

async function measure(fn: (i: number) => Promise<unknown>): Promise<{ p50: number; p99: number }> {
  const lat = new Float64Array(OPS);
  for (let i = 0; i < OPS; i++) {
    const t = process.hrtime.bigint();
    await fn(i * 7919);
    lat[i] = Number(process.hrtime.bigint() - t) / 1000;
  }
  const s = Array.from(lat).sort((a, b) => a - b);
  return { p50: pct(s, 0.5), p99: pct(s, 0.99) };
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

const ops = ['debit', 'lookup', 'insertVoice'] as const;
const labels: Record<(typeof ops)[number], string> = { debit: 'debit (UPDATE ... RETURNING + usage row, one statement)', lookup: `key lookup by hash (${KEYS} keys)`, insertVoice: 'insert voice' };
const results: Record<string, Record<string, { p50: number[]; p99: number[] }>> = {};
for (const op of ops) {
  results[op] = Object.fromEntries(peers.map((p) => [p.name, { p50: [], p99: [] }]));
  for (const p of peers) await measure((i) => p[op](i)); // warm-up round
}
for (let r = 0; r < ROUNDS; r++) {
  for (const op of ops) {
    for (let k = 0; k < peers.length; k++) {
      const p = peers[(k + r) % peers.length]!;
      const m = await measure((i) => p[op](i));
      results[op]![p.name]!.p50.push(m.p50);
      results[op]![p.name]!.p99.push(m.p99);
    }
  }
}

console.log(`postgres store benchmark on ${machine()}; Postgres ${cluster.psql('SHOW server_version').trim()} on loopback, fsync on; ${ROUNDS} rounds x ${OPS} ops; one awaited call, us`);
const groups: unknown[] = [];
for (const op of ops) {
  console.log(`\n${labels[op]}`);
  const ref = results[op]![peers[0]!.name]!;
  const rows = peers.map((p) => {
    const m = results[op]![p.name]!;
    const ratios = m.p50.map((v, i) => v / ref.p50[i]!);
    const row = { name: p.name, p50: median(m.p50), p99: median(m.p99), p50Ratio: median(ratios), ratioMin: Math.min(...ratios), ratioMax: Math.max(...ratios) };
    const vs = p === peers[0] ? '' : `  p50 ${row.p50Ratio.toFixed(2)}x PostgresStore (${row.ratioMin.toFixed(2)}-${row.ratioMax.toFixed(2)})`;
    console.log(`  ${p.name.padEnd(32)} p50 ${row.p50.toFixed(1).padStart(8)}  p99 ${row.p99.toFixed(1).padStart(8)}${vs}`);
    return row;
  });
  groups.push({ group: labels[op], unit: 'us', rows });
}

// Throughput: CONCURRENT debits at once through the pool, per round; median debits/s and spread.
const orgs = await Promise.all(Array.from({ length: 50 }, (_, i) => pgStore.createOrganization({ ...ORG, name: `spread-${i}` })));
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
