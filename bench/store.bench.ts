/**
 * The server's store, per operation the server does on its hot paths: debit (every TTS/STT
 * request), key lookup by hash (every authenticated request, 10,000 keys in the table) and voice
 * insert (voice design, cloning). Per-op latency p50/p99 of one `await store.op()`, on:
 *   - SqliteStore: the shipped store (libsql, WAL, synchronous=NORMAL: no fsync per commit;
 *     a kill -9 loses nothing committed);
 *   - libsql direct: the same SQL on a raw connection with the same pragmas (what the store layer
 *     costs on top of the driver);
 *   - SqliteStore, synchronous=FULL: an fsync per commit (what durability against power loss
 *     would cost: the fsync blocks the event loop, the driver being synchronous);
 *   - PostgresStore: a local throwaway cluster on loopback (fsync on: test/helpers/postgres.ts), when Postgres is
 *     installed: what one round trip per operation costs an instance on a shared database;
 *   - MemoryStore: no I/O at all (the floor).
 * Peers run in interleaved rounds; the summary gives the median over rounds of each peer's p50
 * and p99 and the median of per-round p50 ratios against SqliteStore, with their spread.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash, randomUUID } from 'node:crypto';
import Database from 'libsql';
import { MemoryStore } from '../src/server/store/memory-store.js';
import { SqliteStore } from '../src/server/store/sqlite-store.js';
import { PostgresStore } from '../src/server/store/postgres-store.js';
import { hasPostgres, startPostgres } from '../test/helpers/postgres.js';
import type { Store, VoiceRecord } from '../src/server/store/store.js';
import { machine, save } from './util.js';

const ROUNDS = Number(process.env.STORE_BENCH_ROUNDS ?? 5);
const OPS = Number(process.env.STORE_BENCH_OPS ?? 400);
const KEYS = 10_000;

const dir = mkdtempSync(join(tmpdir(), 'vw-store-bench-'));
const hash = (s: string): string => createHash('sha256').update(s).digest('hex');

/** One peer: how to run each operation once. */
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

async function storePeer(name: string, store: Store): Promise<Peer> {
  await store.migrate();
  const org = await store.createOrganization({ name: 'bench', region: null, allocatedCredits: 1e12, remainingCredits: 1e12, billingPeriod: 'monthly', nextRolloverDate: '2027-01-01', planName: 'bench' });
  for (let i = 0; i < KEYS; i++) await store.createApiKey({ id: `k${i}`, orgId: org.id, hash: hash(`key ${i}`), admin: false, prefix: `vw_${i}` });
  return {
    name,
    debit: () => store.debitCredits(org.id, 1, { keyId: 'k1', kind: 'tts', units: 1 }),
    lookup: (i) => store.findApiKeyByHash(hash(`key ${i % KEYS}`)),
    insertVoice: () => store.putVoice(voiceFor(org.id)),
  };
}

/** The same statements on a bare libsql connection. */
async function directPeer(): Promise<Peer> {
  const setup = SqliteStore.open(join(dir, 'direct.db'));
  await storePeer('setup', setup); // same schema and rows as the others
  await setup.close();
  const db = new Database(join(dir, 'direct.db'));
  db.pragma('busy_timeout = 5000');
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  const orgId = (db.prepare("SELECT id FROM organizations WHERE name = 'bench'").get() as { id: string }).id;
  const debit = db.prepare('UPDATE organizations SET remaining_credits = remaining_credits - ? WHERE id = ? AND remaining_credits >= ? RETURNING remaining_credits');
  const usage = db.prepare('INSERT INTO usage (org_id, key_id, kind, units, credits, at, at_ms) VALUES (?, ?, ?, ?, ?, ?, ?)');
  const lookup = db.prepare('SELECT * FROM api_keys WHERE hash = ?');
  const insert = db.prepare(
    'INSERT INTO voices (uid, org_id, name, description, language, filename, start_s, tags, is_pro_clone, params, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  return {
    name: 'libsql direct (same SQL)',
    debit: async () => {
      db.exec('BEGIN IMMEDIATE');
      const r = debit.get(1, orgId, 1);
      const now = new Date();
      usage.run(orgId, 'k1', 'tts', 1, 1, now.toISOString(), now.getTime());
      db.exec('COMMIT');
      return r;
    },
    lookup: async (i) => lookup.get(hash(`key ${i % KEYS}`)),
    insertVoice: async () => {
      const v = voiceFor(orgId);
      return insert.run(v.uid, v.orgId, v.name, v.description, v.language, v.filename, v.startS, JSON.stringify(v.tags), 0, JSON.stringify(v.params), v.createdAt);
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

const peers: Peer[] = [
  await storePeer('SqliteStore (WAL, synchronous=NORMAL)', SqliteStore.open(join(dir, 'store.db'))),
  await directPeer(),
  await storePeer('SqliteStore, synchronous=FULL', SqliteStore.open(join(dir, 'full.db'), { synchronous: 'FULL' })),
];
const cluster = hasPostgres() ? await startPostgres({ durable: true }) : undefined;
if (cluster) peers.push(await storePeer('PostgresStore (local, loopback)', PostgresStore.open(cluster.url())));
else console.log('PostgresStore: skipped, Postgres is not installed (apt-get install postgresql)');
peers.push(await storePeer('MemoryStore', new MemoryStore()));

const ops = ['debit', 'lookup', 'insertVoice'] as const;
const labels: Record<(typeof ops)[number], string> = { debit: 'debit (UPDATE ... RETURNING + usage row, one transaction)', lookup: `key lookup by hash (${KEYS} keys)`, insertVoice: 'insert voice' };
const results: Record<string, Record<string, { p50: number[]; p99: number[] }>> = {};
for (const op of ops) {
  results[op] = Object.fromEntries(peers.map((p) => [p.name, { p50: [], p99: [] }]));
  for (const p of peers) await measure((i) => p[op](i)); // warm-up round
}
for (let r = 0; r < ROUNDS; r++) {
  for (const op of ops) {
    // Interleaved: every peer once per round, the order rotating so none always runs first.
    for (let k = 0; k < peers.length; k++) {
      const p = peers[(k + r) % peers.length]!;
      const m = await measure((i) => p[op](i));
      results[op]![p.name]!.p50.push(m.p50);
      results[op]![p.name]!.p99.push(m.p99);
    }
  }
}

console.log(`store benchmark on ${machine()}; ${ROUNDS} rounds x ${OPS} ops per peer and operation; latency of one awaited call, us`);
const groups: unknown[] = [];
for (const op of ops) {
  console.log(`\n${labels[op]}`);
  const ref = results[op]![peers[0]!.name]!;
  const rows = peers.map((p) => {
    const m = results[op]![p.name]!;
    const ratios = m.p50.map((v, i) => v / ref.p50[i]!);
    const row = { name: p.name, p50: median(m.p50), p99: median(m.p99), p50Ratio: median(ratios), ratioMin: Math.min(...ratios), ratioMax: Math.max(...ratios) };
    const vs = p === peers[0] ? '' : `  p50 ${row.p50Ratio.toFixed(2)}x SqliteStore (${row.ratioMin.toFixed(2)}-${row.ratioMax.toFixed(2)})`;
    console.log(`  ${p.name.padEnd(38)} p50 ${row.p50.toFixed(1).padStart(8)}  p99 ${row.p99.toFixed(1).padStart(8)}${vs}`);
    return row;
  });
  groups.push({ group: labels[op], unit: 'us', rows });
}
save('store', groups);
cluster?.destroy();
rmSync(dir, { recursive: true, force: true });
