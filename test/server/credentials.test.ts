/**
 * Each credential means one thing (issue 20 §7, README "Credentials"): a temporary token speaks
 * and listens for a browser page (TOKEN_ROUTES) and does nothing else; an organization's key is
 * refused on instance administration; an instance-admin key (`keys create --admin`, no
 * organization) is refused on every organization route. Every route of every route module is
 * tried, so a route added later without thinking about tokens fails here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'libsql';
import { connect, startServer, type Harness } from './harness.js';
import { TOKEN_ROUTES } from '../../src/server/auth.js';
import { createKey, hashSecret } from '../../src/server/keys.js';
import { MemoryStore } from '../../src/server/store/memory-store.js';
import { SqliteStore } from '../../src/server/store/sqlite-store.js';
import { SQLITE_MIGRATIONS } from '../../src/server/store/sqlite-migrations.js';
import { probeRoutes } from '../../src/server/routes/probes.js';
import { ttsRoutes } from '../../src/server/routes/tts.js';
import { sttRoutes } from '../../src/server/routes/stt.js';
import { accountRoutes, usageSummaryRoutes } from '../../src/server/routes/account.js';
import { voiceRoutes, coreVoiceRoutes } from '../../src/server/routes/voices.js';
import { voiceDesignRoutes } from '../../src/server/routes/voice-design.js';
import { pronunciationRoutes, corePronunciationRoutes } from '../../src/server/routes/pronunciations.js';
import { cli } from './instances/serve-process.js';

const MODULES = [probeRoutes, ttsRoutes, sttRoutes, accountRoutes, voiceRoutes, voiceDesignRoutes, pronunciationRoutes, usageSummaryRoutes, coreVoiceRoutes, corePronunciationRoutes];
const HTTP = MODULES.flatMap((m) => m.http ?? []).map((r) => ({ method: r.method, path: r.path.replace(/:\w+/g, 'x') }));
const WS = MODULES.flatMap((m) => m.ws ?? []).map((r) => r.path);
const PUBLIC = ['GET /healthz', 'GET /readyz', 'HEAD /healthz', 'HEAD /readyz'];
const INSTANCE = ['GET /statusz', 'POST /drain'];
const name = (r: { method: string; path: string }): string => `${r.method} ${r.path}`;

let h: Harness;
let token: string;
beforeAll(async () => {
  h = await startServer();
  token = ((await (await fetch(`${h.base}/api-keys/token`, { headers: { 'x-api-key': h.apiKey } })).json()) as { token: string }).token;
});
afterAll(() => h.close());

async function call(method: string, path: string, init: { key?: string; token?: string } = {}): Promise<{ status: number; text: string }> {
  const q = init.token === undefined ? '' : `?token=${encodeURIComponent(init.token)}`;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (init.key !== undefined) headers['x-api-key'] = init.key;
  const r = await fetch(`${h.base}${path}${q}`, { method, headers, ...(method === 'GET' || method === 'HEAD' ? {} : { body: '{}' }) });
  return { status: r.status, text: await r.text() };
}

async function wsRefusal(path: string, query: string, headers: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const c = connect(`${h.wsBase}${path}${query}`, headers);
  await c.closed;
  return c.messages[0] ?? {};
}

describe('a temporary token', () => {
  it('is refused (1008) on every HTTP route but the ones a browser page speaks and listens with', async () => {
    const accepted: string[] = [];
    for (const r of HTTP.filter((x) => !PUBLIC.includes(name(x)))) {
      if (TOKEN_ROUTES.includes(name(r))) {
        accepted.push(name(r));
        continue;
      }
      const res = await call(r.method, r.path, { token });
      expect({ route: name(r), status: res.status, text: res.text.slice(0, 22) }).toEqual({ route: name(r), status: 500, text: 'error from server 1008' });
    }
    expect(accepted.sort()).toEqual(['GET /voices', 'POST /post/speech/tts', 'POST /speech/tts']);
  });

  it('cannot generate voices, keep or delete candidates, mint tokens (the findings of issue 20 §7)', async () => {
    const made = await fetch(`${h.base}/voice-generator/generate`, { method: 'POST', headers: { 'x-api-key': h.apiKey, 'content-type': 'application/json' }, body: JSON.stringify({ prompt: 'a calm voice', n_samples: 1, language: 'en' }) });
    const id = ((await made.json()) as { embeddings: { embedding_id: string }[] }).embeddings[0]!.embedding_id;
    const org = (await h.store.getOrganizationByName('default'))!;
    const voicesBefore = (await h.store.listVoices(org.id, { includeCatalog: false, limit: null, offset: 0 })).total;
    const tries = [
      fetch(`${h.base}/voice-generator/generate?token=${token}`, { method: 'POST', body: JSON.stringify({ prompt: 'a calm voice', n_samples: 5, language: 'en' }) }),
      fetch(`${h.base}/voices/from-embedding?token=${token}`, { method: 'POST', body: JSON.stringify({ voice_embedding_id: id, name: 'kept', description: '' }) }),
      fetch(`${h.base}/voice-generator/embeddings/${id}?token=${token}`, { method: 'DELETE' }),
      fetch(`${h.base}/api-keys/token?token=${token}`),
    ];
    for (const r of await Promise.all(tries)) expect((await r.text()).startsWith('error from server 1008: missing API key')).toBe(true);
    expect(await h.store.getCandidate(org.id, id, new Date())).toBeDefined();
    expect((await h.store.listVoices(org.id, { includeCatalog: false, limit: null, offset: 0 })).total).toBe(voicesBefore);
  });

  it('speaks (POST TTS), lists voices, and opens the TTS and STT WebSockets', async () => {
    expect((await call('GET', '/voices', { token })).status).toBe(200);
    const tts = await fetch(`${h.base}/post/speech/tts?token=${token}`, { method: 'POST', body: JSON.stringify({ text: 'hi', output_format: 'pcm', only_audio: true }) });
    expect(tts.status).toBe(200);
    await tts.arrayBuffer();
    for (const path of ['/speech/tts', '/speech/asr']) {
      const c = connect(`${h.wsBase}${path}?token=${token}`);
      c.send({ type: 'setup', ...(path === '/speech/tts' ? { output_format: 'pcm' } : { input_format: 'pcm' }) });
      expect(await c.waitFor((m) => m['type'] === 'ready')).toBeDefined();
      c.ws.close();
    }
    expect(WS.filter((p) => TOKEN_ROUTES.includes(`WS ${p}`)).sort()).toEqual(['/speech/asr', '/speech/tts']);
    for (const p of WS.filter((x) => !TOKEN_ROUTES.includes(`WS ${x}`))) expect(await wsRefusal(p, `?token=${token}`)).toMatchObject({ type: 'error', code: 1008 });
  });
});

describe('an instance-admin key', () => {
  it('reads /statusz and drains, and is refused (1008) on every organization route, HTTP and WebSocket', async () => {
    expect((await call('GET', '/statusz', { key: h.adminKey })).status).toBe(200);
    for (const r of HTTP.filter((x) => !PUBLIC.includes(name(x)) && !INSTANCE.includes(name(x)))) {
      const res = await call(r.method, r.path, { key: h.adminKey });
      expect({ route: name(r), status: res.status, text: res.text }).toEqual({
        route: name(r),
        status: 500,
        text: "error from server 1008: an instance-admin key is for /statusz and /drain only: use an organization's API key",
      });
    }
    for (const p of WS) expect(await wsRefusal(p, '', { 'x-api-key': h.adminKey })).toMatchObject({ type: 'error', code: 1008 });
    const token = await call('GET', '/api-keys/token', { key: h.adminKey });
    expect(token.status).toBe(500);
  });

  it("an organization's key (and its token) cannot read /statusz or drain", async () => {
    for (const path of ['/statusz', '/drain']) {
      const method = path === '/drain' ? 'POST' : 'GET';
      expect(await call(method, path, { key: h.apiKey })).toEqual({ status: 500, text: 'error from server 1008: this route needs an instance-admin key (voicewire keys create --admin)' });
      expect((await call(method, path, { token })).text).toMatch(/^error from server 1008: missing API key/);
    }
    expect(h.server.context.sessions.draining).toBe(false);
  });
});

describe('createKey', () => {
  it('null makes an instance-admin key; the old admin flag is refused, not read as an organization key', async () => {
    const store = new MemoryStore();
    const org = await store.createOrganization({ name: 'o', region: null, allocatedCredits: 1, remainingCredits: 1, billingPeriod: 'monthly', nextRolloverDate: '2030-01-01', planName: '' });
    expect((await createKey(store, null)).record).toMatchObject({ admin: true, orgId: null });
    expect((await createKey(store, org.id)).record).toMatchObject({ admin: false, orgId: org.id });
    await expect((createKey as (...a: unknown[]) => Promise<unknown>)(store, org.id, true)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});

describe('voicewire keys create --admin', () => {
  it('refuses --org (an admin key made "for" an organization drained the whole instance); without it makes a key of no organization', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vw-admin-key-'));
    try {
      expect(() => cli(['keys', 'create', '--org', 'acme', '--admin', '--data', dir])).toThrow(/belongs to no organization: --admin takes no --org/);
      const key = cli(['keys', 'create', '--admin', '--data', dir]).trim();
      expect(key).toMatch(/^vw_/);
      const store = SqliteStore.open(join(dir, 'voicewire.db'));
      try {
        expect(await store.findApiKeyByHash(hashSecret(key))).toMatchObject({ admin: true, orgId: null });
        expect(await store.countOrganizations()).toBe(0);
      } finally {
        await store.close();
      }
      expect(cli(['keys', 'list', '--data', dir])).toMatch(/\t-\tvw_.{4}…\tinstance-admin\tactive\t/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('migration of an existing admin key (schema 1 → 2)', () => {
  it('becomes an instance-admin key: it keeps draining, loses its organization and its tokens; other keys and tokens stay', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vw-admin-migrate-'));
    const path = join(dir, 'v1.db');
    try {
      const v1 = SqliteStore.open(path, { migrations: SQLITE_MIGRATIONS.slice(0, 1) });
      await v1.migrate();
      const org = await v1.createOrganization({ name: 'default', region: null, allocatedCredits: 10, remainingCredits: 10, billingPeriod: 'monthly', nextRolloverDate: '2030-01-01', planName: '' });
      await v1.close();
      // Schema 1 rows, written as that version did (this version refuses an admin key with an organization).
      const raw = new Database(path);
      const put = raw.prepare('INSERT INTO api_keys (id, org_id, hash, admin, revoked, prefix, created_at) VALUES (?, ?, ?, ?, 0, ?, ?)');
      put.run('api', org.id, hashSecret('vw_api'), 0, 'vw_api', '2026-01-01T00:00:00.000Z');
      put.run('adm', org.id, hashSecret('vw_adm'), 1, 'vw_adm', '2026-01-01T00:00:01.000Z');
      const tok = raw.prepare('INSERT INTO tokens (hash, key_id, expires_at, expires_ms) VALUES (?, ?, ?, ?)');
      tok.run('t-api', 'api', '2099-01-01T00:00:00.000Z', Date.parse('2099-01-01'));
      tok.run('t-adm', 'adm', '2099-01-01T00:00:00.000Z', Date.parse('2099-01-01'));
      raw.close();

      const v2 = SqliteStore.open(path);
      await v2.migrate();
      expect(await v2.getApiKey('adm')).toMatchObject({ admin: true, orgId: null, hash: hashSecret('vw_adm') });
      expect(await v2.getApiKey('api')).toMatchObject({ admin: false, orgId: org.id });
      expect((await v2.listApiKeys()).map((k) => k.id)).toEqual(['api', 'adm']);
      expect(await v2.findToken('t-api', new Date())).toMatchObject({ keyId: 'api' });
      expect(await v2.findToken('t-adm', new Date())).toBeUndefined();
      expect(await v2.integrityCheck()).toEqual([]);
      await expect(v2.createApiKey({ id: 'x', orgId: org.id, hash: 'hx', admin: true, prefix: 'p' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      await v2.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
