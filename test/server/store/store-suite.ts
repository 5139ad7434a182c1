/**
 * The one test suite every Store implementation passes (STYLE.md "The server": one suite, every
 * implementation). store.test.ts runs it on MemoryStore and SqliteStore; the Postgres store will
 * run it too. `make` returns a fresh, migrated, empty store.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isVoicewireError, type ErrorCode } from '../../../src/util/errors.js';
import type { CandidateRecord, DictionaryRecord, Organization, Store, VoiceRecord } from '../../../src/server/store/store.js';

export interface SuiteTarget {
  store: Store;
  /** Closes and removes whatever the store used. */
  cleanup(): Promise<void>;
}

async function rejectsWith(p: Promise<unknown>, code: ErrorCode): Promise<void> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, `expected a ${code} rejection`).toBeDefined();
  expect(isVoicewireError(err, code), `expected ${code}, got ${String(err)}`).toBe(true);
}

const ORG = {
  region: null,
  allocatedCredits: 1000,
  remainingCredits: 1000,
  billingPeriod: 'monthly',
  nextRolloverDate: '2026-12-01',
  planName: 'free',
};

const HOUR = 3600_000;

function voice(uid: string, orgId: string | null, createdAt: string, extra: Partial<VoiceRecord> = {}): VoiceRecord {
  return {
    uid,
    orgId,
    name: `voice ${uid}`,
    description: 'a test voice',
    language: 'en',
    filename: `${uid}.wav`,
    startS: 1.5,
    tags: ['calm', 'ünïcode ✓'],
    isProClone: false,
    params: { espeak: 'en-us', pitch: 50, nested: { rate: [1, 2.5, null] } },
    createdAt,
    ...extra,
  };
}

function candidate(embeddingId: string, orgId: string, expiresAt: string): CandidateRecord {
  return { embeddingId, orgId, language: 'en', prompt: 'a warm voice', params: { pitch: 42, seed: 'x' }, expiresAt };
}

function dictionary(uid: string, orgId: string, createdAt: string): DictionaryRecord {
  return {
    uid,
    orgId,
    name: `dict ${uid}`,
    language: 'en',
    description: '',
    rules: [
      { word: 'voicewire', replacement: 'voice wire', kind: 'respelling' },
      { word: 'SQL', replacement: 'ˈsiːkwəl', kind: 'phonemes' },
    ],
    createdAt,
  };
}

export function storeSuite(name: string, make: () => Promise<SuiteTarget>): void {
  describe(`Store contract: ${name}`, () => {
    let target: SuiteTarget;
    let store: Store;
    let a: Organization;
    let b: Organization;

    beforeEach(async () => {
      target = await make();
      store = target.store;
      a = await store.createOrganization({ ...ORG, name: 'org-a' });
      b = await store.createOrganization({ ...ORG, name: 'org-b', region: 'eu' });
    });
    afterEach(async () => {
      await target.cleanup();
    });

    describe('schema and health', () => {
      it('migrate() is idempotent and keeps the data', async () => {
        await store.migrate();
        await store.migrate();
        expect(await store.countOrganizations()).toBe(2);
        await expect(store.ping()).resolves.toBeUndefined();
      });
    });

    describe('organizations', () => {
      it('creates with a generated id, reads back by id and by name, counts', async () => {
        expect(a.id).toMatch(/^[0-9a-f-]{36}$/);
        expect(a.id).not.toBe(b.id);
        expect(Number.isNaN(Date.parse(a.createdAt))).toBe(false);
        expect(await store.getOrganization(a.id)).toEqual(a);
        expect(await store.getOrganizationByName('org-b')).toEqual(b);
        expect(b.region).toBe('eu');
        expect(await store.getOrganization('nope')).toBeUndefined();
        expect(await store.getOrganizationByName('nope')).toBeUndefined();
        expect(await store.countOrganizations()).toBe(2);
        const c = await store.createOrganization({ ...ORG, id: 'fixed-id', name: 'org-c' });
        expect(c.id).toBe('fixed-id');
        expect(await store.countOrganizations()).toBe(3);
      });

      it('refuses a duplicate name or id, and credits that are not non-negative integers', async () => {
        await rejectsWith(store.createOrganization({ ...ORG, name: 'org-a' }), 'INVALID_ARGUMENT');
        await rejectsWith(store.createOrganization({ ...ORG, id: a.id, name: 'other' }), 'INVALID_ARGUMENT');
        await rejectsWith(store.createOrganization({ ...ORG, name: '' }), 'INVALID_ARGUMENT');
        await rejectsWith(store.createOrganization({ ...ORG, name: 'x', remainingCredits: -1 }), 'INVALID_ARGUMENT');
        await rejectsWith(store.createOrganization({ ...ORG, name: 'y', allocatedCredits: 1.5 }), 'INVALID_ARGUMENT');
        expect(await store.countOrganizations()).toBe(2);
      });

      it('setCredits sets both balances; unknown organization and bad values are refused', async () => {
        await store.setCredits(a.id, 50, 20);
        expect(await store.getOrganization(a.id)).toMatchObject({ allocatedCredits: 50, remainingCredits: 20 });
        expect(await store.getOrganization(b.id)).toMatchObject({ allocatedCredits: 1000, remainingCredits: 1000 });
        await rejectsWith(store.setCredits('nope', 1, 1), 'INVALID_ARGUMENT');
        await rejectsWith(store.setCredits(a.id, 10, -5), 'INVALID_ARGUMENT');
        await rejectsWith(store.setCredits(a.id, Number.NaN, 5), 'INVALID_ARGUMENT');
        expect(await store.getOrganization(a.id)).toMatchObject({ allocatedCredits: 50, remainingCredits: 20 });
      });
    });

    describe('credits', () => {
      it('debits down to exactly zero and never below; a refused debit takes nothing', async () => {
        await store.setCredits(a.id, 10, 10);
        expect(await store.debitCredits(a.id, 4, { keyId: null, kind: 'tts', units: 4 })).toBe(6);
        expect(await store.debitCredits(a.id, 7, { keyId: null, kind: 'tts', units: 7 })).toBeNull();
        expect((await store.getOrganization(a.id))!.remainingCredits).toBe(6);
        expect(await store.debitCredits(a.id, 6, { keyId: null, kind: 'stt', units: 6 })).toBe(0);
        expect(await store.debitCredits(a.id, 1, { keyId: null, kind: 'tts', units: 1 })).toBeNull();
        expect(await store.debitCredits(a.id, 0, { keyId: null, kind: 'tts', units: 0 })).toBe(0);
        expect((await store.getOrganization(a.id))!.remainingCredits).toBe(0);
        expect(await store.debitCredits('nope', 1, { keyId: null, kind: 'tts', units: 1 })).toBeNull();
      });

      it('refuses a negative, fractional or non-numeric amount, a bad kind or bad units, taking nothing', async () => {
        for (const amount of [-1, 0.5, Number.NaN, Number.POSITIVE_INFINITY]) {
          await rejectsWith(store.debitCredits(a.id, amount, { keyId: null, kind: 'tts', units: 1 }), 'INVALID_ARGUMENT');
        }
        await rejectsWith(store.debitCredits(a.id, 1, { keyId: null, kind: 'video' as 'tts', units: 1 }), 'INVALID_ARGUMENT');
        await rejectsWith(store.debitCredits(a.id, 1, { keyId: null, kind: 'stt', units: -2 }), 'INVALID_ARGUMENT');
        expect((await store.getOrganization(a.id))!.remainingCredits).toBe(1000);
        expect(await store.usageSummary(a.id, '1970-01-01T00:00:00Z')).toEqual({ tts: { units: 0, credits: 0, requests: 0 }, stt: { units: 0, credits: 0, requests: 0 } });
      });

      it('200 concurrent debits on a budget for 100: exactly 100 succeed, balance 0', async () => {
        await store.setCredits(a.id, 100, 100);
        const results = await Promise.all(Array.from({ length: 200 }, () => store.debitCredits(a.id, 1, { keyId: null, kind: 'tts', units: 1 })));
        const ok = results.filter((r) => r !== null);
        expect(ok).toHaveLength(100);
        expect(new Set(ok).size).toBe(100); // every success saw its own balance: no double spend
        expect(Math.min(...(ok as number[]))).toBe(0);
        expect((await store.getOrganization(a.id))!.remainingCredits).toBe(0);
        expect((await store.usageSummary(a.id, '1970-01-01T00:00:00Z')).tts).toEqual({ units: 100, credits: 100, requests: 100 });
      });

      it('usageSummary sums per kind since a date, per organization, and only successful debits', async () => {
        const before = new Date(Date.now() - HOUR).toISOString();
        await store.debitCredits(a.id, 12, { keyId: 'k1', kind: 'tts', units: 12 });
        await store.debitCredits(a.id, 3, { keyId: null, kind: 'tts', units: 3 });
        await store.debitCredits(a.id, 2, { keyId: 'k1', kind: 'stt', units: 1.5 });
        await store.debitCredits(a.id, 5000, { keyId: 'k1', kind: 'stt', units: 5000 }); // refused
        await store.debitCredits(b.id, 7, { keyId: null, kind: 'tts', units: 7 });
        expect(await store.usageSummary(a.id, before)).toEqual({ tts: { units: 15, credits: 15, requests: 2 }, stt: { units: 1.5, credits: 2, requests: 1 } });
        expect((await store.usageSummary(b.id, before)).tts).toEqual({ units: 7, credits: 7, requests: 1 });
        const later = new Date(Date.now() + HOUR).toISOString();
        expect((await store.usageSummary(a.id, later)).tts.requests).toBe(0);
        await rejectsWith(store.usageSummary(a.id, 'yesterday'), 'INVALID_ARGUMENT');
      });

      it('reserve then settle: a hold is spent on a usage line of its own; settling lowers it to the charge and returns the rest', async () => {
        const since = new Date(Date.now() - HOUR).toISOString();
        await store.setCredits(a.id, 20, 20);
        const hold = (await store.reserveCredits(a.id, 12, { keyId: 'k1', kind: 'tts', units: 12 }))!;
        expect(hold.remaining).toBe(8);
        expect(await store.reserveCredits(a.id, 9, { keyId: 'k1', kind: 'tts', units: 9 })).toBeNull(); // refused: nothing held
        expect(await store.reserveCredits(a.id, 9, { keyId: 'k1', kind: 'tts', units: 9 }, hold.holdId)).toBeNull();
        expect((await store.getOrganization(a.id))!.remainingCredits).toBe(8);
        // The books balance while the hold is open: remaining + usage = allocated.
        expect((await store.usageSummary(a.id, since)).tts).toEqual({ units: 12, credits: 12, requests: 1 });
        expect(await store.reserveCredits(a.id, 3, { keyId: 'k1', kind: 'tts', units: 3 }, hold.holdId)).toEqual({ remaining: 5, holdId: hold.holdId });
        expect((await store.usageSummary(a.id, since)).tts).toEqual({ units: 15, credits: 15, requests: 1 });
        expect(await store.settleCredits(a.id, hold.holdId, { units: 5, credits: 5 })).toBe(15);
        expect(await store.usageSummary(a.id, since)).toEqual({ tts: { units: 5, credits: 5, requests: 1 }, stt: { units: 0, credits: 0, requests: 0 } });
        // Nothing delivered: all of it back, and no usage line left.
        const none = (await store.reserveCredits(a.id, 15, { keyId: null, kind: 'stt', units: 15 }))!;
        expect(none.remaining).toBe(0);
        expect(await store.reserveCredits(a.id, 1, { keyId: null, kind: 'stt', units: 1 })).toBeNull();
        expect(await store.settleCredits(a.id, none.holdId, { units: 0, credits: 0 })).toBe(15);
        expect((await store.usageSummary(a.id, since)).stt.requests).toBe(0);
        expect(await store.reserveCredits('nope', 1, { keyId: null, kind: 'tts', units: 1 })).toBeNull();
        // Another organization's hold is not this one's.
        const theirs = (await store.reserveCredits(b.id, 1, { keyId: null, kind: 'tts', units: 1 }))!;
        expect(await store.reserveCredits(a.id, 1, { keyId: null, kind: 'tts', units: 1 }, theirs.holdId)).toBeNull();
        await rejectsWith(store.settleCredits(a.id, theirs.holdId, { units: 0, credits: 0 }), 'INVALID_ARGUMENT');
        expect((await store.getOrganization(a.id))!.remainingCredits).toBe(15);
      });

      it('refuses a settlement above its hold, an unknown hold or bad amounts, changing nothing', async () => {
        await store.setCredits(a.id, 10, 10);
        const hold = (await store.reserveCredits(a.id, 3, { keyId: null, kind: 'tts', units: 3 }))!;
        await rejectsWith(store.settleCredits(a.id, hold.holdId, { units: 4, credits: 4 }), 'INVALID_ARGUMENT');
        await rejectsWith(store.settleCredits(a.id, '999999', { units: 0, credits: 0 }), 'INVALID_ARGUMENT');
        await rejectsWith(store.settleCredits(a.id, 'x1', { units: 0, credits: 0 }), 'INVALID_ARGUMENT');
        await rejectsWith(store.settleCredits(a.id, hold.holdId, { units: 1, credits: 0.5 }), 'INVALID_ARGUMENT');
        await rejectsWith(store.settleCredits(a.id, hold.holdId, { units: -1, credits: 1 }), 'INVALID_ARGUMENT');
        for (const amount of [-1, 0.5, Number.NaN]) await rejectsWith(store.reserveCredits(a.id, amount, { keyId: null, kind: 'tts', units: 1 }), 'INVALID_ARGUMENT');
        await rejectsWith(store.reserveCredits(a.id, 1, { keyId: null, kind: 'video' as 'tts', units: 1 }), 'INVALID_ARGUMENT');
        await rejectsWith(store.reserveCredits(a.id, 1, { keyId: null, kind: 'tts', units: 1 }, 'nope'), 'INVALID_ARGUMENT');
        expect((await store.getOrganization(a.id))!.remainingCredits).toBe(7);
        expect((await store.usageSummary(a.id, '1970-01-01T00:00:00Z')).tts).toEqual({ units: 3, credits: 3, requests: 1 });
      });

      it('200 concurrent holds settled at half on a budget for 100 holds: the balance never goes below zero, no credit lost or made', async () => {
        await store.setCredits(a.id, 200, 200);
        const held = await Promise.all(Array.from({ length: 200 }, () => store.reserveCredits(a.id, 2, { keyId: null, kind: 'stt', units: 2 })));
        const ok = held.filter((r) => r !== null) as Array<{ remaining: number; holdId: string }>;
        expect(ok).toHaveLength(100);
        expect(new Set(ok.map((r) => r.remaining)).size).toBe(100); // each hold saw its own balance: no double spend
        expect(new Set(ok.map((r) => r.holdId)).size).toBe(100);
        expect(Math.min(...ok.map((r) => r.remaining))).toBe(0);
        await Promise.all(ok.map((r) => store.settleCredits(a.id, r.holdId, { units: 1, credits: 1 })));
        expect((await store.getOrganization(a.id))!.remainingCredits).toBe(100);
        expect((await store.usageSummary(a.id, '1970-01-01T00:00:00Z')).stt).toEqual({ units: 100, credits: 100, requests: 100 });
      });
    });

    describe('API keys', () => {
      it('creates, finds by hash and id, lists in creation order, revokes', async () => {
        const k1 = await store.createApiKey({ id: 'k1', orgId: a.id, hash: 'h1', admin: false, prefix: 'vw_aa' });
        const k2 = await store.createApiKey({ id: 'k2', orgId: b.id, hash: 'h2', admin: false, prefix: 'vw_bb' });
        const k3 = await store.createApiKey({ id: 'k3', orgId: a.id, hash: 'h3', admin: false, prefix: 'vw_cc' });
        expect(k1).toMatchObject({ id: 'k1', orgId: a.id, hash: 'h1', admin: false, revoked: false, prefix: 'vw_aa' });
        expect(await store.findApiKeyByHash('h2')).toEqual(k2);
        expect(await store.findApiKeyByHash('nope')).toBeUndefined();
        expect(await store.getApiKey('k3')).toEqual(k3);
        expect(await store.getApiKey('nope')).toBeUndefined();
        expect((await store.listApiKeys()).map((k) => k.id)).toEqual(['k1', 'k2', 'k3']);
        expect((await store.listApiKeys(a.id)).map((k) => k.id)).toEqual(['k1', 'k3']);
        expect(await store.listApiKeys('nope')).toEqual([]);
        expect(await store.revokeApiKey('k1')).toBe(true);
        expect(await store.revokeApiKey('nope')).toBe(false);
        expect((await store.findApiKeyByHash('h1'))!.revoked).toBe(true);
        expect((await store.getApiKey('k3'))!.revoked).toBe(false);
      });

      it('an instance-admin key has no organization: listed with all keys, under none; one with an organization is refused', async () => {
        const adm = await store.createApiKey({ id: 'adm', orgId: null, hash: 'ha', admin: true, prefix: 'vw_ad' });
        expect(adm).toMatchObject({ orgId: null, admin: true, revoked: false });
        expect(await store.findApiKeyByHash('ha')).toEqual(adm);
        expect((await store.listApiKeys()).map((k) => k.id)).toEqual(['adm']);
        expect(await store.listApiKeys(a.id)).toEqual([]);
        await rejectsWith(store.createApiKey({ id: 'k1', orgId: a.id, hash: 'h1', admin: true, prefix: 'p' }), 'INVALID_ARGUMENT');
        await rejectsWith(store.createApiKey({ id: 'k2', orgId: null, hash: 'h2', admin: false, prefix: 'p' }), 'INVALID_ARGUMENT');
        expect(await store.listApiKeys()).toHaveLength(1);
        // A token stands for an organization's key, never for the instance's admin key.
        await rejectsWith(store.createToken({ hash: 'th', keyId: 'adm', expiresAt: new Date(Date.now() + HOUR).toISOString() }), 'INVALID_ARGUMENT');
        expect(await store.findToken('th', new Date())).toBeUndefined();
        expect(await store.revokeApiKey('adm')).toBe(true);
      });

      it('refuses a key for an unknown organization and a duplicate id or hash', async () => {
        await store.createApiKey({ id: 'k1', orgId: a.id, hash: 'h1', admin: false, prefix: 'vw_aa' });
        await rejectsWith(store.createApiKey({ id: 'k2', orgId: 'nope', hash: 'h2', admin: false, prefix: 'p' }), 'INVALID_ARGUMENT');
        await rejectsWith(store.createApiKey({ id: 'k1', orgId: a.id, hash: 'h9', admin: false, prefix: 'p' }), 'INVALID_ARGUMENT');
        await rejectsWith(store.createApiKey({ id: 'k9', orgId: a.id, hash: 'h1', admin: false, prefix: 'p' }), 'INVALID_ARGUMENT');
        expect(await store.listApiKeys()).toHaveLength(1);
      });
    });

    describe('tokens', () => {
      it('a token is found until its expiry and not from then on (now injected)', async () => {
        await store.createApiKey({ id: 'k1', orgId: a.id, hash: 'h1', admin: false, prefix: 'p' });
        const t0 = Date.parse('2030-01-01T00:00:00.000Z');
        const token = { hash: 'th1', keyId: 'k1', expiresAt: new Date(t0 + 60_000).toISOString() };
        await store.createToken(token);
        expect(await store.findToken('th1', new Date(t0))).toEqual(token);
        expect(await store.findToken('th1', new Date(t0 + 59_999))).toEqual(token);
        expect(await store.findToken('th1', new Date(t0 + 60_000))).toBeUndefined();
        expect(await store.findToken('th1', new Date(t0 + 3600_000))).toBeUndefined();
        expect(await store.findToken('other', new Date(t0))).toBeUndefined();
      });

      it('refuses a token for an unknown key, a bad expiry, a duplicate hash', async () => {
        await store.createApiKey({ id: 'k1', orgId: a.id, hash: 'h1', admin: false, prefix: 'p' });
        const expiresAt = new Date(Date.now() + HOUR).toISOString();
        await rejectsWith(store.createToken({ hash: 't1', keyId: 'nope', expiresAt }), 'INVALID_ARGUMENT');
        await rejectsWith(store.createToken({ hash: 't1', keyId: 'k1', expiresAt: 'soon' }), 'INVALID_ARGUMENT');
        await store.createToken({ hash: 't1', keyId: 'k1', expiresAt });
        await rejectsWith(store.createToken({ hash: 't1', keyId: 'k1', expiresAt }), 'INVALID_ARGUMENT');
        await rejectsWith(store.findToken('t1', new Date(Number.NaN)), 'INVALID_ARGUMENT');
      });
    });

    describe('voices', () => {
      beforeEach(async () => {
        await store.putVoice(voice('cat-2', null, '2026-01-02T00:00:00.000Z'));
        await store.putVoice(voice('cat-1', null, '2026-01-01T00:00:00.000Z'));
        await store.putVoice(voice('a-2', a.id, '2026-02-02T00:00:00.000Z'));
        await store.putVoice(voice('a-1', a.id, '2026-02-01T00:00:00.000Z'));
        await store.putVoice(voice('a-0', a.id, '2026-02-01T00:00:00.000Z')); // same time as a-1: uid breaks the tie
        await store.putVoice(voice('b-1', b.id, '2026-01-15T00:00:00.000Z', { isProClone: true }));
      });

      it('lists catalog first, then by creation, with every field and JSON column intact', async () => {
        const page = await store.listVoices(a.id, { includeCatalog: true, limit: null, offset: 0 });
        expect(page.total).toBe(5);
        expect(page.items.map((v) => v.uid)).toEqual(['cat-1', 'cat-2', 'a-0', 'a-1', 'a-2']);
        expect(page.items[2]).toEqual(voice('a-0', a.id, '2026-02-01T00:00:00.000Z'));
        const own = await store.listVoices(a.id, { includeCatalog: false, limit: null, offset: 0 });
        expect(own).toEqual({ total: 3, items: page.items.slice(2) });
      });

      it('pages with limit and offset, the total counting every match', async () => {
        const all = (await store.listVoices(a.id, { includeCatalog: true, limit: null, offset: 0 })).items.map((v) => v.uid);
        for (const [limit, offset] of [[2, 0], [2, 2], [2, 4], [3, 1], [10, 0], [0, 0], [2, 5], [1, 99]] as const) {
          const page = await store.listVoices(a.id, { includeCatalog: true, limit, offset });
          expect(page.total).toBe(5);
          expect(page.items.map((v) => v.uid)).toEqual(all.slice(offset, offset + limit));
        }
        expect((await store.listVoices(a.id, { includeCatalog: true, limit: null, offset: 3 })).items.map((v) => v.uid)).toEqual(all.slice(3));
        await rejectsWith(store.listVoices(a.id, { includeCatalog: true, limit: -1, offset: 0 }), 'INVALID_ARGUMENT');
        await rejectsWith(store.listVoices(a.id, { includeCatalog: true, limit: 1, offset: 0.5 }), 'INVALID_ARGUMENT');
      });

      it('catalog voices are visible to every organization, and no organization can change or delete them', async () => {
        for (const org of [a, b]) {
          expect((await store.getVoice(org.id, 'cat-1'))?.orgId).toBeNull();
          const uids = (await store.listVoices(org.id, { includeCatalog: true, limit: null, offset: 0 })).items.map((v) => v.uid);
          expect(uids.slice(0, 2)).toEqual(['cat-1', 'cat-2']);
        }
        const third = await store.createOrganization({ ...ORG, name: 'org-c' });
        expect((await store.listVoices(third.id, { includeCatalog: true, limit: null, offset: 0 })).total).toBe(2);
        expect(await store.deleteVoice(a.id, 'cat-1')).toBe(false);
        expect(await store.updateVoice(a.id, 'cat-1', { name: 'mine now' })).toBeUndefined();
        expect((await store.getVoice(b.id, 'cat-1'))!.name).toBe('voice cat-1');
      });

      it("another organization's voice is invisible and cannot be changed, deleted or overwritten", async () => {
        expect(await store.getVoice(a.id, 'b-1')).toBeUndefined();
        expect((await store.listVoices(a.id, { includeCatalog: true, limit: null, offset: 0 })).items.map((v) => v.uid)).not.toContain('b-1');
        expect(await store.updateVoice(a.id, 'b-1', { name: 'stolen' })).toBeUndefined();
        expect(await store.deleteVoice(a.id, 'b-1')).toBe(false);
        await rejectsWith(store.putVoice(voice('b-1', a.id, '2026-03-01T00:00:00.000Z')), 'INVALID_ARGUMENT');
        await rejectsWith(store.putVoice(voice('b-1', null, '2026-03-01T00:00:00.000Z')), 'INVALID_ARGUMENT');
        expect(await store.getVoice(b.id, 'b-1')).toEqual(voice('b-1', b.id, '2026-01-15T00:00:00.000Z', { isProClone: true }));
      });

      it('putVoice upserts by uid for the same owner; unknown organizations are refused', async () => {
        const changed = voice('a-1', a.id, '2026-02-01T00:00:00.000Z', { name: 'renamed', tags: [], params: {} });
        await store.putVoice(changed);
        expect(await store.getVoice(a.id, 'a-1')).toEqual(changed);
        expect((await store.listVoices(a.id, { includeCatalog: false, limit: null, offset: 0 })).total).toBe(3);
        await rejectsWith(store.putVoice(voice('z', 'nope', '2026-01-01T00:00:00.000Z')), 'INVALID_ARGUMENT');
        await rejectsWith(store.putVoice(voice('', a.id, '2026-01-01T00:00:00.000Z')), 'INVALID_ARGUMENT');
      });

      it('updateVoice changes only the fields given; deleteVoice removes the owner’s voice once', async () => {
        const updated = await store.updateVoice(a.id, 'a-2', { description: 'new text', tags: ['x'] });
        expect(updated).toEqual(voice('a-2', a.id, '2026-02-02T00:00:00.000Z', { description: 'new text', tags: ['x'] }));
        expect(await store.getVoice(a.id, 'a-2')).toEqual(updated);
        expect(await store.updateVoice(a.id, 'missing', { name: 'x' })).toBeUndefined();
        expect(await store.deleteVoice(a.id, 'a-2')).toBe(true);
        expect(await store.deleteVoice(a.id, 'a-2')).toBe(false);
        expect(await store.getVoice(a.id, 'a-2')).toBeUndefined();
      });
    });

    describe('voice-design candidates', () => {
      it('a candidate is found by its organization until it expires (now injected)', async () => {
        const t0 = Date.parse('2030-06-01T12:00:00.000Z');
        const c = candidate('e1', a.id, new Date(t0 + 10 * 60_000).toISOString());
        await store.putCandidates([c, candidate('e2', a.id, new Date(t0 + 60_000).toISOString())]);
        expect(await store.getCandidate(a.id, 'e1', new Date(t0))).toEqual(c);
        expect(await store.getCandidate(a.id, 'e2', new Date(t0 + 60_000))).toBeUndefined();
        expect(await store.getCandidate(a.id, 'e1', new Date(t0 + 10 * 60_000 - 1))).toEqual(c);
        expect(await store.getCandidate(a.id, 'e1', new Date(t0 + 10 * 60_000))).toBeUndefined();
        expect(await store.getCandidate(a.id, 'missing', new Date(t0))).toBeUndefined();
      });

      it("another organization's candidate is invisible and cannot be deleted or overwritten", async () => {
        const expiresAt = new Date(Date.now() + HOUR).toISOString();
        await store.putCandidates([candidate('e1', b.id, expiresAt)]);
        expect(await store.getCandidate(a.id, 'e1', new Date())).toBeUndefined();
        expect(await store.deleteCandidate(a.id, 'e1')).toBe(false);
        await rejectsWith(store.putCandidates([candidate('e1', a.id, expiresAt)]), 'INVALID_ARGUMENT');
        expect(await store.getCandidate(b.id, 'e1', new Date())).toEqual(candidate('e1', b.id, expiresAt));
        expect(await store.deleteCandidate(b.id, 'e1')).toBe(true);
        expect(await store.getCandidate(b.id, 'e1', new Date())).toBeUndefined();
        expect(await store.deleteCandidate(b.id, 'e1')).toBe(false);
      });

      it('an expired candidate is gone: deleting it finds nothing', async () => {
        await store.putCandidates([candidate('old', a.id, new Date(Date.now() - 1000).toISOString())]);
        expect(await store.deleteCandidate(a.id, 'old')).toBe(false);
      });

      it('a batch with a bad candidate stores none of it', async () => {
        const expiresAt = new Date(Date.now() + HOUR).toISOString();
        await rejectsWith(store.putCandidates([candidate('ok', a.id, expiresAt), candidate('bad', 'nope', expiresAt)]), 'INVALID_ARGUMENT');
        await rejectsWith(store.putCandidates([candidate('ok', a.id, expiresAt), candidate('bad2', a.id, 'never')]), 'INVALID_ARGUMENT');
        expect(await store.getCandidate(a.id, 'ok', new Date())).toBeUndefined();
      });
    });

    describe('pronunciation dictionaries', () => {
      beforeEach(async () => {
        await store.putDictionary(dictionary('d3', a.id, '2026-03-03T00:00:00.000Z'));
        await store.putDictionary(dictionary('d1', a.id, '2026-03-01T00:00:00.000Z'));
        await store.putDictionary(dictionary('d2', a.id, '2026-03-02T00:00:00.000Z'));
        await store.putDictionary(dictionary('db', b.id, '2026-03-01T00:00:00.000Z'));
      });

      it('lists by creation with paging and a total; rules round-trip', async () => {
        const all = await store.listDictionaries(a.id, { limit: 10, offset: 0 });
        expect(all.total).toBe(3);
        expect(all.items).toEqual([dictionary('d1', a.id, '2026-03-01T00:00:00.000Z'), dictionary('d2', a.id, '2026-03-02T00:00:00.000Z'), dictionary('d3', a.id, '2026-03-03T00:00:00.000Z')]);
        expect(await store.listDictionaries(a.id, { limit: 1, offset: 1 })).toEqual({ total: 3, items: [all.items[1]] });
        expect(await store.listDictionaries(a.id, { limit: 5, offset: 3 })).toEqual({ total: 3, items: [] });
        expect(await store.listDictionaries('nope', { limit: 5, offset: 0 })).toEqual({ total: 0, items: [] });
        await rejectsWith(store.listDictionaries(a.id, { limit: -2, offset: 0 }), 'INVALID_ARGUMENT');
      });

      it('putDictionary replaces by uid; get and delete are per organization', async () => {
        const replaced = { ...dictionary('d1', a.id, '2026-03-01T00:00:00.000Z'), rules: [], name: 'empty now' };
        await store.putDictionary(replaced);
        expect(await store.getDictionary(a.id, 'd1')).toEqual(replaced);
        expect(await store.getDictionary(a.id, 'db')).toBeUndefined();
        expect(await store.deleteDictionary(a.id, 'db')).toBe(false);
        await rejectsWith(store.putDictionary(dictionary('db', a.id, '2026-03-05T00:00:00.000Z')), 'INVALID_ARGUMENT');
        expect(await store.getDictionary(b.id, 'db')).toEqual(dictionary('db', b.id, '2026-03-01T00:00:00.000Z'));
        expect(await store.deleteDictionary(a.id, 'd1')).toBe(true);
        expect(await store.deleteDictionary(a.id, 'd1')).toBe(false);
        expect((await store.listDictionaries(a.id, { limit: 10, offset: 0 })).total).toBe(2);
        await rejectsWith(store.putDictionary(dictionary('dz', 'nope', '2026-03-05T00:00:00.000Z')), 'INVALID_ARGUMENT');
      });
    });

    describe('mistyped input', () => {
      it('a voice with a missing or mistyped field is refused, and later listings still work', async () => {
        const ok = voice('v1', a.id, '2026-01-01T00:00:00.000Z');
        for (const bad of [{ createdAt: 5 }, { name: undefined }, { startS: 'zz' }, { isProClone: 1 }, { tags: [1] }, { params: null }, { orgId: {} }]) {
          await rejectsWith(store.putVoice({ ...ok, ...bad } as unknown as VoiceRecord), 'INVALID_ARGUMENT');
        }
        // The memory store kept `createdAt: 5`, and every later listing failed with a TypeError.
        expect(await store.listVoices(a.id, { includeCatalog: true, limit: null, offset: 0 })).toEqual({ items: [], total: 0 });
      });

      it('what a JSON column cannot hold is dropped, as are properties no column holds', async () => {
        const ok = voice('v1', a.id, '2026-01-01T00:00:00.000Z');
        await store.putVoice({ ...ok, params: { pitch: 50, f: () => 1 }, extra: () => 2 } as unknown as VoiceRecord);
        // The memory store kept the functions, and getVoice then threw a DataCloneError.
        expect(await store.getVoice(a.id, 'v1')).toEqual({ ...ok, params: { pitch: 50 } });
      });

      it('NUL (U+0000, which Postgres text refuses): written, INVALID_ARGUMENT on every store; looked up, nothing found', async () => {
        const nul = 'a\u0000b';
        await rejectsWith(store.createOrganization({ ...ORG, name: nul }), 'INVALID_ARGUMENT');
        await rejectsWith(store.putVoice({ ...voice('v1', a.id, '2026-01-01T00:00:00.000Z'), name: nul }), 'INVALID_ARGUMENT');
        await rejectsWith(store.putVoice({ ...voice('v2', a.id, '2026-01-01T00:00:00.000Z'), tags: [nul] }), 'INVALID_ARGUMENT');
        await rejectsWith(store.putVoice({ ...voice('v3', a.id, '2026-01-01T00:00:00.000Z'), params: { k: nul } }), 'INVALID_ARGUMENT');
        const expiresAt = new Date(Date.now() + HOUR).toISOString();
        await rejectsWith(store.putCandidates([{ embeddingId: 'c1', orgId: a.id, language: 'en', prompt: nul, params: {}, expiresAt }]), 'INVALID_ARGUMENT');
        await rejectsWith(store.putDictionary({ uid: 'd1', orgId: a.id, name: 'n', language: 'en', description: '', rules: [{ word: nul, replacement: 'x', kind: 'respelling' }], createdAt: '2026-01-01T00:00:00.000Z' }), 'INVALID_ARGUMENT');
        expect(await store.getVoice(a.id, nul)).toBeUndefined();
        expect(await store.updateVoice(a.id, nul, { name: 'x' })).toBeUndefined();
        expect(await store.deleteVoice(a.id, nul)).toBe(false);
        expect(await store.getCandidate(a.id, nul, new Date())).toBeUndefined();
        expect(await store.deleteCandidate(a.id, nul)).toBe(false);
        expect(await store.getDictionary(a.id, nul)).toBeUndefined();
        expect(await store.deleteDictionary(a.id, nul)).toBe(false);
        expect(await store.getOrganizationByName(nul)).toBeUndefined();
        expect(await store.getApiKey(nul)).toBeUndefined();
        expect(await store.revokeApiKey(nul)).toBe(false);
      });

      it('an admin flag that is not a boolean is refused (the string "false" made an admin key)', async () => {
        await rejectsWith(store.createApiKey({ id: 'k1', orgId: a.id, hash: 'h1', admin: 'false' as unknown as boolean, prefix: 'p' }), 'INVALID_ARGUMENT');
        expect(await store.getApiKey('k1')).toBeUndefined();
      });

      it('records, options and ids of the wrong type: INVALID_ARGUMENT from every method, nothing written', async () => {
        const never = null as never;
        const expiresAt = new Date(Date.now() + HOUR).toISOString();
        const calls: [string, () => Promise<unknown>][] = [
          ['createOrganization(null)', () => store.createOrganization(never)],
          ['createOrganization without planName', () => store.createOrganization({ ...ORG, name: 'x', planName: undefined } as never)],
          ['getOrganization({})', () => store.getOrganization({} as never)],
          ['setCredits({})', () => store.setCredits({} as never, 1, 1)],
          ['debitCredits(null usage)', () => store.debitCredits(a.id, 1, never)],
          ['usageSummary(5)', () => store.usageSummary(5 as never, '2026-01-01')],
          ['createApiKey(null)', () => store.createApiKey(never)],
          ['findApiKeyByHash(null)', () => store.findApiKeyByHash(never)],
          ['listApiKeys({})', () => store.listApiKeys({} as never)],
          ['createToken(undefined)', () => store.createToken(undefined as never)],
          ['findToken({})', () => store.findToken({} as never, new Date())],
          ['listVoices(null options)', () => store.listVoices(a.id, never)],
          ['listVoices(includeCatalog "yes")', () => store.listVoices(a.id, { includeCatalog: 'yes' as never, limit: null, offset: 0 })],
          ['getVoice({})', () => store.getVoice({} as never, 'x')],
          ['updateVoice(null patch)', () => store.updateVoice(a.id, 'x', never)],
          ['updateVoice(name null)', () => store.updateVoice(a.id, 'x', { name: never })],
          ['deleteVoice(1)', () => store.deleteVoice(a.id, 1 as never)],
          ['putCandidates("x")', () => store.putCandidates('x' as never)],
          ['putCandidates([null])', () => store.putCandidates([never])],
          ['putCandidates(no prompt)', () => store.putCandidates([{ ...candidate('c1', a.id, expiresAt), prompt: undefined } as never])],
          ['getCandidate([])', () => store.getCandidate([] as never, 'c1', new Date())],
          ['listDictionaries(limit null)', () => store.listDictionaries(a.id, { limit: never, offset: 0 })],
          ['putDictionary(rule without word)', () => store.putDictionary({ ...dictionary('d1', a.id, '2026-03-01T00:00:00.000Z'), rules: [{ replacement: 'x', kind: 'respelling' }] } as never)],
          ['putDictionary(null)', () => store.putDictionary(never)],
          ['deleteDictionary(null)', () => store.deleteDictionary(a.id, never)],
        ];
        for (const [what, call] of calls) {
          const err = await call().then(
            () => 'resolved',
            (e: unknown) => e,
          );
          expect(isVoicewireError(err, 'INVALID_ARGUMENT'), `${what}: ${String(err)}`).toBe(true);
        }
        expect(await store.countOrganizations()).toBe(2);
        expect(await store.getCandidate(a.id, 'c1', new Date())).toBeUndefined();
        expect(await store.getDictionary(a.id, 'd1')).toBeUndefined();
      });
    });
  });
}
