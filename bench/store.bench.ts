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
import Database from 'libsql';
import { MemoryStore } from '../src/server/store/memory-store.js';
import { SqliteStore } from '../src/server/store/sqlite-store.js';
import { PostgresStore } from '../src/server/store/postgres-store.js';
import { hasPostgres, startPostgres } from '../test/helpers/postgres.js';
import { machine, save } from './util.js';
import { compareLatency, hash, KEYS, OPS, ROUNDS, storePeer, voiceFor, type Peer } from './store-peers.js';


const dir = mkdtempSync(join(tmpdir(), 'vw-store-bench-'));
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

const peers: Peer[] = [
  await storePeer('SqliteStore (WAL, synchronous=NORMAL)', SqliteStore.open(join(dir, 'store.db'))),
  await directPeer(),
  await storePeer('SqliteStore, synchronous=FULL', SqliteStore.open(join(dir, 'full.db'), { synchronous: 'FULL' })),
];
const cluster = hasPostgres() ? await startPostgres({ durable: true }) : undefined;
if (cluster) peers.push(await storePeer('PostgresStore (local, loopback)', PostgresStore.open(cluster.url())));
else console.log('PostgresStore: skipped, Postgres is not installed (apt-get install postgresql)');
peers.push(await storePeer('MemoryStore', new MemoryStore()));

console.log(`store benchmark on ${machine()}; ${ROUNDS} rounds x ${OPS} ops per peer and operation; latency of one awaited call, us`);
const groups = await compareLatency(peers, 'debit (UPDATE ... RETURNING + usage row, one transaction)');
save('store', groups);
cluster?.destroy();
rmSync(dir, { recursive: true, force: true });
