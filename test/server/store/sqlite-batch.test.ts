/**
 * SQLite settlements batched per turn of the event loop (issue 34, sqlite-store.ts SqliteDriver):
 * the settlements asked within one turn commit in one transaction, each still whole or not at all (its own
 * savepoint), in the order asked, and written to the file when its promise resolves.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isVoicewireError } from '../../../src/util/errors.js';
import { SqliteStore } from '../../../src/server/store/sqlite-store.js';
import type { Organization } from '../../../src/server/store/store.js';

const ORG = { region: null, allocatedCredits: 10_000, remainingCredits: 10_000, billingPeriod: 'monthly', nextRolloverDate: '2026-12-01', planName: 'free' };

describe('SQLite settlements batched per turn', () => {
  let dir: string;
  let store: SqliteStore;
  let org: Organization;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vw-batch-'));
    store = SqliteStore.open(join(dir, 'voicewire.db'));
    await store.migrate();
    org = await store.createOrganization({ ...ORG, name: 'batch' });
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('settlements asked in one turn share one transaction (was one each), with exact totals', async () => {
    const holds = await Promise.all(Array.from({ length: 40 }, () => store.reserveCredits(org.id, 10, { keyId: null, kind: 'tts', units: 10 })));
    const before = store.transactions;
    const left = await Promise.all(holds.map((h) => store.settleCredits(org.id, h!.holdId, { units: 4, credits: 4 })));
    expect(store.transactions - before).toBe(1);
    // Each saw the balance its predecessors left.
    expect(left).toEqual(Array.from({ length: 40 }, (_, i) => 10_000 - 400 + 6 * (i + 1)));
    expect((await store.getOrganization(org.id))!.remainingCredits).toBe(10_000 - 40 * 4);
  });

  it('a settlement that fails in a batch fails alone: the others commit, its own changes are rolled back', async () => {
    const a = (await store.reserveCredits(org.id, 100, { keyId: null, kind: 'tts', units: 100 }))!;
    const b = (await store.reserveCredits(org.id, 50, { keyId: null, kind: 'stt', units: 50 }))!;
    const before = store.transactions;
    const outcomes = await Promise.allSettled([
      store.settleCredits(org.id, b.holdId, { units: 7, credits: 7 }),
      // More than held: refused (INVALID_ARGUMENT), after its first statement read the line.
      store.settleCredits(org.id, a.holdId, { units: 101, credits: 101 }),
      store.settleCredits(org.id, a.holdId, { units: 30, credits: 30 }),
    ]);
    expect(store.transactions - before).toBe(1);
    expect(outcomes[0]!.status).toBe('fulfilled');
    expect(outcomes[1]!.status).toBe('rejected');
    expect(isVoicewireError((outcomes[1] as PromiseRejectedResult).reason, 'INVALID_ARGUMENT')).toBe(true);
    expect(outcomes[2]).toEqual({ status: 'fulfilled', value: 10_000 - 7 - 30 });
    expect((await store.getOrganization(org.id))!.remainingCredits).toBe(10_000 - 7 - 30);
  });

  it('nothing a client waits on waits for the batch: a hold or read asked behind waiting settlements runs in its call, with them, and sees them', async () => {
    const a = (await store.reserveCredits(org.id, 100, { keyId: null, kind: 'tts', units: 100 }))!;
    const before = store.transactions;
    const settled = store.settleCredits(org.id, a.holdId, { units: 40, credits: 40 });
    expect(store.transactions - before).toBe(0); // waiting for the turn's end
    const hold = store.reserveCredits(org.id, 25, { keyId: null, kind: 'tts', units: 25 });
    expect(store.transactions - before).toBe(1); // ran now, the settlement with it
    const seen = store.getOrganization(org.id);
    expect(store.transactions - before).toBe(2);
    expect(await settled).toBe(10_000 - 40);
    expect((await hold)!.remaining).toBe(10_000 - 40 - 25);
    expect((await seen)!.remainingCredits).toBe(10_000 - 40 - 25);
  });

  it('a write that resolved is in the file: another connection reads it', async () => {
    const holds = await Promise.all([1, 2, 3].map((n) => store.reserveCredits(org.id, n, { keyId: null, kind: 'tts', units: n })));
    await Promise.all(holds.map((h) => store.settleCredits(org.id, h!.holdId, { units: 0, credits: 0 })));
    const other = SqliteStore.open(join(dir, 'voicewire.db'));
    try {
      expect((await other.getOrganization(org.id))!.remainingCredits).toBe(10_000);
    } finally {
      await other.close();
    }
  });

  it('writes asked just before close are written (or fail), never lost', async () => {
    const hold = (await store.reserveCredits(org.id, 5, { keyId: null, kind: 'tts', units: 5 }))!;
    const settled = store.settleCredits(org.id, hold.holdId, { units: 2, credits: 2 });
    await store.close();
    expect(await settled).toBe(10_000 - 2);
    store = SqliteStore.open(join(dir, 'voicewire.db'));
    expect((await store.getOrganization(org.id))!.remainingCredits).toBe(10_000 - 2);
  });
});
