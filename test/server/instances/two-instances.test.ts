/**
 * Two `voicewire serve` processes on one Postgres (issue 16): what one creates the other honours
 * (keys, tokens), credits stay exact when both spend one organization's budget at once (the debit
 * is one SQL statement that refuses an overdraft), and draining one loses no session while the
 * other keeps serving.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasPostgres, needsPostgres, startPostgres, type PostgresCluster } from '../../helpers/postgres.js';
import { PostgresStore } from '../../../src/server/store/postgres-store.js';
import { ensureOrganization } from '../../../src/server/bootstrap.js';
import { createKey } from '../../../src/server/keys.js';
import { connect, audioBytes, type WsConversation } from '../harness.js';
import { cli, startServe, type ServeProcess } from './serve-process.js';
import { upgradeAnswer } from '../../helpers/upgrade-answer.js';

let pg: PostgresCluster | undefined;
let store: PostgresStore | undefined;
let a: ServeProcess | undefined;
let b: ServeProcess | undefined;
let admin = '';

describe.skipIf(!hasPostgres())(needsPostgres('two serve processes on one Postgres'), () => {
  beforeAll(async () => {
    pg = await startPostgres();
    // The CLI migrates the schema and makes the instance-admin key, as an operator would.
    admin = cli(['keys', 'create', '--admin', '--store', pg.url()]).trim();
    [a, b] = await Promise.all([startServe(['--store', pg.url(), '--no-bootstrap']), startServe(['--store', pg.url(), '--no-bootstrap'])]);
    store = new PostgresStore(pg.url());
  }, 40_000);

  afterAll(async () => {
    const codes = await Promise.all([a?.stop(), b?.stop()]);
    await store?.close();
    pg?.destroy();
    expect(codes).toEqual([0, 0]);
  }, 30_000);

  it('a key created with `keys create` works on both; a token minted on one is accepted by the other', async () => {
    const key = cli(['keys', 'create', '--org', 'acme', '--credits', '5000', '--store', pg!.url()]).trim();
    for (const s of [a!, b!]) {
      const r = await fetch(`${s.base}/usages/credits`, { headers: { 'x-api-key': key } });
      expect(r.status).toBe(200);
      expect(await r.json()).toMatchObject({ remaining_credits: 5000 });
    }
    const minted = await fetch(`${a!.base}/api-keys/token`, { headers: { 'x-api-key': key } });
    expect(minted.status).toBe(200);
    const { token } = (await minted.json()) as { token: string };
    const spoken = await fetch(`${b!.base}/post/speech/tts?token=${token}`, { method: 'POST', body: JSON.stringify({ text: 'hello', output_format: 'pcm_16000', only_audio: true }) });
    expect(spoken.status).toBe(200);
    expect((await spoken.arrayBuffer()).byteLength).toBeGreaterThan(0);
    // A wrong token is refused on both: the acceptance above is the store's, not a blanket one.
    const forged = await fetch(`${b!.base}/post/speech/tts?token=${token.slice(0, -2)}xx`, { method: 'POST', body: '{"text":"hello"}' });
    expect(forged.status).not.toBe(200);
  });

  it('2×200 concurrent TTS requests across both spend one budget exactly: budget/cost succeed, balance 0, never negative', async () => {
    const budget = 1000;
    const text = 'hello'; // 5 characters → 5 credits at the default rate
    const org = await ensureOrganization(store!, 'budget', { credits: budget });
    // Four keys per instance keep each under the per-key connection limit (50 per process).
    const keys = await Promise.all(Array.from({ length: 8 }, () => createKey(store!, org.id)));
    const one = async (s: ServeProcess, key: string): Promise<{ status: number; body: string }> => {
      const r = await fetch(`${s.base}/post/speech/tts`, { method: 'POST', headers: { 'x-api-key': key }, body: JSON.stringify({ text, output_format: 'pcm_16000', only_audio: true }) });
      const body = Buffer.from(await r.arrayBuffer());
      return { status: r.status, body: r.status === 200 ? String(body.length) : body.toString() };
    };
    const all = await Promise.all(Array.from({ length: 400 }, (_, i) => one(i % 2 === 0 ? a! : b!, keys[(i % 2) * 4 + ((i >> 1) % 4)]!.key)));
    const ok = all.filter((r) => r.status === 200);
    expect(ok.length).toBe(budget / text.length);
    for (const r of ok) expect(Number(r.body)).toBeGreaterThan(0);
    for (const r of all.filter((x) => x.status !== 200)) expect(r.body).toMatch(/credits/);
    const after = await store!.getOrganization(org.id);
    expect(after?.remainingCredits).toBe(0);
    expect(Number(pg!.psql(`SELECT count(*) FROM organizations WHERE remaining_credits < 0`, 'voicewire_test'))).toBe(0);
    // Both instances did part of the spending.
    const per = [0, 1].map((side) => all.filter((r, i) => i % 2 === side && r.status === 200).length);
    expect(per[0]! + per[1]!).toBe(200);
  }, 30_000);

  it('draining one instance loses none of its live sessions while the other keeps serving', async () => {
    const key = cli(['keys', 'create', '--org', 'drain', '--store', pg!.url()]).trim();
    const open = (s: ServeProcess, i: number): WsConversation => {
      const c = connect(`${s.wsBase}/speech/tts`, { 'x-api-key': key });
      c.send({ type: 'setup', output_format: 'pcm_16000' });
      c.send({ type: 'text', text: `session ${i} starts.`, flush: true });
      return c;
    };
    const live = Array.from({ length: 10 }, (_, i) => open(a!, i));
    await Promise.all(live.map((c) => c.waitFor((m) => m['type'] === 'audio')));
    const drain = await fetch(`${a!.base}/drain`, { method: 'POST', headers: { 'x-api-key': admin } });
    expect(drain.status).toBe(200);
    expect((await fetch(`${a!.base}/readyz`)).status).toBe(503);
    expect((await fetch(`${b!.base}/readyz`)).status).toBe(200);
    expect((await upgradeAnswer(`${a!.wsBase}/speech/tts`, { 'x-api-key': key })).status).toBe(503);
    // The other instance takes the new sessions meanwhile.
    const elsewhere = Array.from({ length: 5 }, (_, i) => open(b!, 100 + i));
    // Live sessions on the draining instance go on: more text, then the end.
    for (const c of live) {
      c.send({ type: 'text', text: 'and finishes.', flush: true });
      c.send({ type: 'end_of_stream' });
    }
    for (const c of elsewhere) c.send({ type: 'end_of_stream' });
    const closes = await Promise.all([...live, ...elsewhere].map((c) => c.closed));
    expect(closes.map((c) => c.code)).toEqual(Array(15).fill(1000));
    for (const c of [...live, ...elsewhere]) {
      expect(c.messages.some((m) => m['type'] === 'error')).toBe(false);
      expect(c.messages.at(-1)).toEqual({ type: 'end_of_stream' });
      expect(audioBytes(c.messages).length).toBeGreaterThan(0);
    }
    expect((await fetch(`${a!.base}/drain?enable=false`, { method: 'POST', headers: { 'x-api-key': admin } })).status).toBe(200);
    expect((await fetch(`${a!.base}/readyz`)).status).toBe(200);
  }, 20_000);
});
