/**
 * Errors say what the caller needs and nothing more (issue 20 §8): what the store cannot keep (a
 * NUL character, JSON nested past what SQLite's json_valid takes) is a 422 before it reaches the
 * store, never a 500 quoting the driver; a store that fails is a 503 `store unavailable`, with the
 * driver's reason in the logs beside the request id; a voice-design prompt of only control
 * characters or spaces is a 422 (§4.7: "actual text").
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startServer, type Harness } from './harness.js';
import { SqliteStore } from '../../src/server/store/sqlite-store.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function sqliteServer(): Promise<Harness> {
  const store = SqliteStore.open(':memory:');
  await store.migrate();
  // The harness bootstraps whatever store it is given; its type names MemoryStore only.
  return startServer({ store: store as never, storeHealth: { intervalMs: 60_000 } });
}

const post = (path: string, key: string, body: unknown, method = 'POST'): Promise<Response> =>
  fetch(`${h!.base}${path}`, { method, headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify(body) });

async function expect422(r: Response, loc: Array<string | number>): Promise<void> {
  const text = await r.text();
  expect(r.status, text).toBe(422);
  const body = JSON.parse(text) as { detail: Array<{ loc: unknown[]; type: string }> };
  expect(body.detail.map((d) => d.loc)).toContainEqual(loc);
  expect(text).not.toMatch(/store|constraint|sqlite|json_valid/i);
}

describe('what the store cannot keep is a 422 before it', () => {
  it('voice design: JSON nested past json_valid, NUL in the prompt, a prompt of control characters and spaces', async () => {
    h = await sqliteServer();
    let deep: unknown = 1;
    // Past what the store keeps (32 levels) but within the parser's 64: refused by field.
    for (let i = 0; i < 40; i++) deep = [deep];
    await expect422(await post('/voice-generator/generate', h.apiKey, { prompt: 'a calm voice', n_samples: 1, language: 'en', json_config: { seed: 1, extra: deep } }), ['body', 'json_config', 'extra']);
    await expect422(await post('/voice-generator/generate', h.apiKey, { prompt: 'a calm\u0000voice', n_samples: 1, language: 'en' }), ['body', 'prompt']);
    for (const prompt of ['\u0001\u0002\u0003', ' \t\u0007\n\u001b ', '\u200b\u200b']) {
      await expect422(await post('/voice-generator/generate', h.apiKey, { prompt, n_samples: 1, language: 'en' }), ['body', 'prompt']);
    }
    const ok = await post('/voice-generator/generate', h.apiKey, { prompt: 'a calm voice', n_samples: 1, language: 'en', json_config: { seed: 1 } });
    expect(ok.status).toBe(200);
    const id = ((await ok.json()) as { embeddings: Array<{ embedding_id: string }> }).embeddings[0]!.embedding_id;
    await expect422(await post('/voices/from-embedding', h.apiKey, { voice_embedding_id: id, name: 'x\u0000', description: '' }), ['body', 'name']);
  });

  it('voices and pronunciations: NUL in a name, a description, a tag, a rule', async () => {
    h = await sqliteServer();
    await expect422(await post('/pronunciations', h.apiKey, { name: 'n\u0000', language: 'en' }), ['body', 'name']);
    await expect422(await post('/pronunciations', h.apiKey, { name: 'n', language: 'en', rules: [{ word: 'a', replacement: 'b\u0000' }] }), ['body', 'rules', 0, 'replacement']);
    const d = await post('/pronunciations', h.apiKey, { name: 'n', language: 'en' });
    const uid = ((await d.json()) as { uid: string }).uid;
    await expect422(await post(`/pronunciations/${uid}/rules`, h.apiKey, { rules: [{ word: 'a\u0000', replacement: 'b' }] }), ['body', 'rules', 0, 'word']);
    await expect422(await post('/voices/tone-en', h.apiKey, { description: 'd\u0000' }, 'PUT'), ['body', 'description']);
    await expect422(await post('/voices/tone-en', h.apiKey, { tags: ['t\u0000'] }, 'PUT'), ['body', 'tags', 0]);
    const form = new FormData();
    form.set('name', 'v\u0000');
    form.set('audio_file', new Blob([new Uint8Array(100)]), 'a.wav');
    await expect422(await fetch(`${h.base}/voices`, { method: 'POST', headers: { 'x-api-key': h.apiKey }, body: form }), ['body', 'name']);
  });

  it('an id with NUL in a path is not found, not a store error', async () => {
    h = await sqliteServer();
    for (const [method, path] of [['GET', '/voices/a%00b'], ['DELETE', '/voice-generator/embeddings/a%00b'], ['GET', '/pronunciations/a%00b']] as const) {
      const r = await fetch(`${h.base}${path}`, { method, headers: { 'x-api-key': h.apiKey } });
      expect(r.status, path).toBe(404);
    }
  });
});

describe('a store that fails', () => {
  it('is a 503 `store unavailable`, the reason only in the logs, beside the request id', async () => {
    h = await sqliteServer();
    const store = h.server.context.store as SqliteStore;
    await store.close();
    const r = await fetch(`${h.base}/usages/credits`, { headers: { 'x-api-key': h.apiKey } });
    expect(r.status).toBe(503);
    expect(await r.text()).toBe('store unavailable');
    const line = h.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l['code'] === 'STORE_UNAVAILABLE');
    expect(line).toBeDefined();
    expect(typeof line!['request_id']).toBe('string');
    expect(JSON.stringify(line)).toMatch(/closed/);
  });
});
