/**
 * What the store benches share (bench/store.bench.ts, bench/postgres-store.bench.ts): the rows
 * every peer is seeded with, one peer per store, and the interleaved per-operation latency
 * comparison with its printed table.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Store, VoiceRecord } from '../src/server/store/store.js';
import { median } from './util.js';

export const ROUNDS = Number(process.env.STORE_BENCH_ROUNDS ?? 5);
export const OPS = Number(process.env.STORE_BENCH_OPS ?? 400);
/** API keys in the table the lookups search. */
export const KEYS = 10_000;

export const hash = (s: string): string => createHash('sha256').update(s).digest('hex');

/** An organization with credits enough for any run. */
export const BENCH_ORG = { region: null, allocatedCredits: 1e12, remainingCredits: 1e12, billingPeriod: 'monthly', nextRolloverDate: '2027-01-01', planName: 'bench' };

/** One peer: how to run each operation once. */
export interface Peer {
  name: string;
  debit(): Promise<unknown>;
  lookup(i: number): Promise<unknown>;
  insertVoice(): Promise<unknown>;
}

export function voiceFor(orgId: string): VoiceRecord {
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

/** Migrates `store` and gives it the bench organization with {@link KEYS} keys; its id. */
export async function seedStore(store: Store): Promise<string> {
  await store.migrate();
  const org = await store.createOrganization({ ...BENCH_ORG, name: 'bench' });
  for (let i = 0; i < KEYS; i += 500) {
    await Promise.all(Array.from({ length: 500 }, (_, j) => store.createApiKey({ id: `k${i + j}`, orgId: org.id, hash: hash(`key ${i + j}`), admin: false, prefix: `vw_${i + j}` })));
  }
  return org.id;
}

/** A peer over a `Store`, seeded. */
export async function storePeer(name: string, store: Store): Promise<Peer> {
  const orgId = await seedStore(store);
  return {
    name,
    debit: () => store.debitCredits(orgId, 1, { keyId: 'k1', kind: 'tts', units: 1 }),
    lookup: (i) => store.findApiKeyByHash(hash(`key ${i % KEYS}`)),
    insertVoice: () => store.putVoice(voiceFor(orgId)),
  };
}

const pct = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;


/** p50/p99 latency of {@link OPS} awaited calls, µs. */
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

/**
 * Each operation on every peer, in {@link ROUNDS} interleaved rounds (the order rotating so none
 * always runs first) after a warm-up; prints per op the median p50/p99 and the median of per-round
 * p50 ratios against the first peer, with their range. Returns the groups for `save`.
 */
export async function compareLatency(peers: Peer[], debitLabel: string): Promise<unknown[]> {
  const ops = ['debit', 'lookup', 'insertVoice'] as const;
  const labels: Record<(typeof ops)[number], string> = { debit: debitLabel, lookup: `key lookup by hash (${KEYS} keys)`, insertVoice: 'insert voice' };
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
  const width = Math.max(...peers.map((p) => p.name.length)) + 2;
  const groups: unknown[] = [];
  for (const op of ops) {
    console.log(`\n${labels[op]}`);
    const ref = results[op]![peers[0]!.name]!;
    const rows = peers.map((p) => {
      const m = results[op]![p.name]!;
      const ratios = m.p50.map((v, i) => v / ref.p50[i]!);
      const row = { name: p.name, p50: median(m.p50), p99: median(m.p99), p50Ratio: median(ratios), ratioMin: Math.min(...ratios), ratioMax: Math.max(...ratios) };
      const vs = p === peers[0] ? '' : `  p50 ${row.p50Ratio.toFixed(2)}x ${peers[0]!.name} (${row.ratioMin.toFixed(2)}-${row.ratioMax.toFixed(2)})`;
      console.log(`  ${p.name.padEnd(width)} p50 ${row.p50.toFixed(1).padStart(8)}  p99 ${row.p99.toFixed(1).padStart(8)}${vs}`);
      return row;
    });
    groups.push({ group: labels[op], unit: 'us', rows });
  }
  return groups;
}
