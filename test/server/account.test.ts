/**
 * Credits (atomic debits under concurrency, the refusal form), usages, voices, voice design,
 * pronunciation dictionaries, 404s and the forwarding route's 401, over real sockets.
 */
import { LIBRARY_VOICES } from '../../src/engines/library-voices.js';
import { afterEach, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect, startServer, type Harness } from './harness.js';
import { parseCreditBalance, parsePronunciationList, parseVoiceGenerationResponse, parseVoiceList, parseTemporaryToken } from '../../src/protocol/resources.js';

let h: Harness | undefined;
let core: Server | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  if (core) await new Promise((r) => core!.close(r));
  core = undefined;
});

const auth = (key: string, extra: Record<string, string> = {}): Record<string, string> => ({ 'x-api-key': key, 'content-type': 'application/json', ...extra });

async function setCredits(hh: Harness, n: number): Promise<string> {
  const org = (await hh.store.getOrganizationByName('default'))!;
  await hh.store.setCredits(org.id, n, n);
  return org.id;
}

describe('credits', () => {
  it('200 parallel TTS requests on a budget for 100: exactly 100 succeed, the balance ends at 0', async () => {
    h = await startServer();
    const orgId = await setCredits(h, 500); // "hello" = 5 credits per request
    const results = await Promise.all(
      Array.from({ length: 200 }, async () => {
        const r = await fetch(`${h!.base}/post/speech/tts`, { method: 'POST', headers: auth(h!.apiKey), body: JSON.stringify({ text: 'hello', output_format: 'pcm', only_audio: true }) });
        const body = Buffer.from(await r.arrayBuffer());
        return { status: r.status, body };
      }),
    );
    const ok = results.filter((r) => r.status === 200);
    expect(ok).toHaveLength(100);
    for (const r of ok) expect(r.body.length).toBe(5 * 3840 * 2);
    for (const r of results.filter((x) => x.status !== 200)) expect(r.body.toString()).toMatch(/^error from server 1008: not enough credits/);
    expect((await h.store.getOrganization(orgId))!.remainingCredits).toBe(0);
    const credits = parseCreditBalance(await (await fetch(`${h.base}/usages/credits`, { headers: auth(h.apiKey) })).json());
    expect(credits).toMatchObject({ remaining_credits: 0, allocated_credits: 500, billing_period: 'monthly', plan_name: '' });
    const summary = (await (await fetch(`${h.base}/usages/summary`, { headers: auth(h.apiKey) })).json()) as { tts: { units: number; requests: number } };
    expect(summary.tts).toMatchObject({ units: 500, requests: 100 });
  }, 20_000);

  it('WebSocket TTS without credits: error 1008 with the credits message, then close', async () => {
    h = await startServer();
    await setCredits(h, 3);
    const c = connect(`${h.wsBase}/speech/tts`, { 'x-api-key': h.apiKey });
    c.send({ type: 'setup', output_format: 'pcm' });
    c.send({ type: 'text', text: 'toolong' });
    c.send({ type: 'end_of_stream' });
    expect((await c.closed).code).toBe(1008);
    expect(c.messages.at(-1)).toMatchObject({ type: 'error', code: 1008 });
    expect(String(c.messages.at(-1)!['message'])).toContain('not enough credits');
    expect(c.messages.some((m) => m['type'] === 'audio')).toBe(false);
  });

  it('STT debits one credit per started second of audio', async () => {
    h = await startServer();
    const orgId = await setCredits(h, 100);
    const pcm = new Uint8Array(24000 * 2 * 2.5); // 2.5 s of 24 kHz silence
    const r = await fetch(`${h.base}/post/speech/asr`, { method: 'POST', headers: { 'x-api-key': h.apiKey, 'content-type': 'audio/pcm' }, body: pcm });
    expect((await r.text()).trim().split('\n').at(-1)).toBe('{"type":"end_of_stream"}');
    // 2.5 s plus the model delay's silent frame: 3 started seconds
    expect((await h.store.getOrganization(orgId))!.remainingCredits).toBe(97);
  });

  it('an expired token fails like a bad key (lifetime from tokenSeconds)', async () => {
    h = await startServer({ tokenSeconds: 0.1 });
    const t = parseTemporaryToken(await (await fetch(`${h.base}/api-keys/token`, { headers: auth(h.apiKey) })).json());
    expect(Date.parse(t.expires_at) - Date.now()).toBeLessThanOrEqual(100);
    await new Promise((r) => setTimeout(r, 150));
    const r = await fetch(`${h.base}/post/speech/tts?token=${t.token}`, { method: 'POST', body: '{"text":"x"}' });
    expect(await r.text()).toBe('error from server 1008: invalid or expired token');
  });

  it('a revoked key fails like a bad one; its tokens too', async () => {
    h = await startServer();
    const t = parseTemporaryToken(await (await fetch(`${h.base}/api-keys/token`, { headers: auth(h.apiKey) })).json());
    const key = (await h.store.listApiKeys()).find((k) => !k.admin)!;
    await h.store.revokeApiKey(key.id);
    const r = await fetch(`${h.base}/usages/credits`, { headers: auth(h.apiKey) });
    expect(await r.text()).toBe('error from server 1008: API key revoked');
    const c = connect(`${h.wsBase}/speech/tts?token=${t.token}`);
    expect((await c.closed).code).toBe(1008);
    expect(c.messages[0]).toMatchObject({ type: 'error', code: 1008, message: 'the API key of this token was revoked' });
  });
});

describe('voices and voice design', () => {
  it('GET /voices/: catalog plus own; limit=0&include_catalog=1 gives every voice; 422 on a bad limit', async () => {
    h = await startServer();
    const all = parseVoiceList(await (await fetch(`${h.base}/voices/?limit=0&include_catalog=1`, { headers: auth(h.apiKey) })).json());
    // The engine's voices and the service's library mapped onto them (library-voices.ts).
    const uids = ['tone-de', 'tone-en', 'tone-es', 'tone-fr', 'tone-pt', ...LIBRARY_VOICES.map((v) => v[1])].sort((a, b) => a.localeCompare(b));
    expect(all.map((v) => v.uid)).toEqual(uids); // same creation time: by uid (store contract)
    expect(all.every((v) => v.is_catalog)).toBe(true);
    const page = parseVoiceList(await (await fetch(`${h.base}/voices/?limit=2&offset=1`, { headers: auth(h.apiKey) })).json());
    expect(page.map((v) => v.uid)).toEqual(uids.slice(1, 3));
    const none = parseVoiceList(await (await fetch(`${h.base}/voices/?include_catalog=false`, { headers: auth(h.apiKey) })).json());
    expect(none).toEqual([]);
    const bad = await fetch(`${h.base}/voices/?limit=-1`, { headers: auth(h.apiKey) });
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as { detail: Array<{ loc: unknown[] }> }).detail[0]!.loc).toEqual(['query', 'limit']);
  });

  it('generate → candidates; from-embedding keeps one as a voice usable in TTS; delete removes the other', async () => {
    h = await startServer();
    const gen = await fetch(`${h.base}/voice-generator/generate`, { method: 'POST', headers: auth(h.apiKey), body: JSON.stringify({ prompt: 'a calm narrator', n_samples: 2, language: 'fr' }) });
    const { embeddings } = parseVoiceGenerationResponse(await gen.json());
    expect(embeddings).toHaveLength(2);
    const kept = await fetch(`${h.base}/voices/from-embedding`, { method: 'POST', headers: auth(h.apiKey), body: JSON.stringify({ voice_embedding_id: embeddings[0]!.embedding_id, name: 'Narrator' }) });
    const voice = (await kept.json()) as { uid: string; language: string };
    expect(voice.language).toBe('fr');
    const del = await fetch(`${h.base}/voice-generator/embeddings/${embeddings[1]!.embedding_id}`, { method: 'DELETE', headers: auth(h.apiKey) });
    expect(del.status).toBe(200);
    const again = await fetch(`${h.base}/voice-generator/embeddings/${embeddings[1]!.embedding_id}`, { method: 'DELETE', headers: auth(h.apiKey) });
    expect(again.status).toBe(404);
    const reuse = await fetch(`${h.base}/voices/from-embedding`, { method: 'POST', headers: auth(h.apiKey), body: JSON.stringify({ voice_embedding_id: embeddings[0]!.embedding_id, name: 'Twice' }) });
    expect(reuse.status).toBe(404);
    const r = await fetch(`${h.base}/post/speech/tts`, { method: 'POST', headers: auth(h.apiKey), body: JSON.stringify({ text: 'hi', voice_id: voice.uid, output_format: 'pcm', only_audio: true }) });
    expect(r.status).toBe(200);
    await r.arrayBuffer();
    const mine = parseVoiceList(await (await fetch(`${h.base}/voices/?include_catalog=0`, { headers: auth(h.apiKey) })).json());
    expect(mine.map((v) => [v.uid, v.is_catalog])).toEqual([[voice.uid, false]]);
  });

  it('generate validates per §4.7/§8 with 422 bodies', async () => {
    h = await startServer();
    const cases: Array<[unknown, unknown[]]> = [
      [{ prompt: '   ' }, ['body', 'prompt']],
      [{ prompt: 'x'.repeat(501) }, ['body', 'prompt']],
      [{ prompt: 'ok', n_samples: 6 }, ['body', 'n_samples']],
      [{ prompt: 'ok', language: 'it' }, ['body', 'language']],
      [{}, ['body', 'prompt']],
    ];
    for (const [body, loc] of cases) {
      const r = await fetch(`${h.base}/voice-generator/generate`, { method: 'POST', headers: auth(h.apiKey), body: JSON.stringify(body) });
      expect(r.status).toBe(422);
      expect(((await r.json()) as { detail: Array<{ loc: unknown[] }> }).detail[0]!.loc).toEqual(loc);
    }
  });

  it('expired candidates are gone', async () => {
    h = await startServer({ candidateSeconds: 0.05 });
    const { embeddings } = parseVoiceGenerationResponse(await (await fetch(`${h.base}/voice-generator/generate`, { method: 'POST', headers: auth(h.apiKey), body: '{"prompt":"p"}' })).json());
    await new Promise((r) => setTimeout(r, 100));
    const kept = await fetch(`${h.base}/voices/from-embedding`, { method: 'POST', headers: auth(h.apiKey), body: JSON.stringify({ voice_embedding_id: embeddings[0]!.embedding_id, name: 'late' }) });
    expect(kept.status).toBe(404);
  });

  it('core routes: POST /voices/ multipart, GET/PUT/DELETE /voices/{uid}', async () => {
    h = await startServer();
    const form = new FormData();
    form.append('name', 'Sample');
    form.append('start_s', '0.5');
    form.append('description', 'from a file');
    form.append('audio_file', new Blob([new Uint8Array(1000)]), 'me.wav');
    const created = (await (await fetch(`${h.base}/voices/`, { method: 'POST', headers: { 'x-api-key': h.apiKey }, body: form })).json()) as { uid: string; filename: string; start_s: number };
    expect(created).toMatchObject({ filename: 'me.wav', start_s: 0.5 });
    const put = await fetch(`${h.base}/voices/${created.uid}`, { method: 'PUT', headers: auth(h.apiKey), body: '{"name":"Renamed"}' });
    expect(await put.json()).toMatchObject({ name: 'Renamed' });
    expect(await (await fetch(`${h.base}/voices/${created.uid}`, { headers: auth(h.apiKey) })).json()).toMatchObject({ name: 'Renamed' });
    expect((await fetch(`${h.base}/voices/${created.uid}`, { method: 'DELETE', headers: auth(h.apiKey) })).status).toBe(200);
    const gone = await fetch(`${h.base}/voices/${created.uid}`, { headers: auth(h.apiKey) });
    expect(gone.status).toBe(404);
    expect(await gone.json()).toEqual({ detail: 'voice not found' });
    const noFile = new FormData();
    noFile.append('name', 'x');
    expect((await fetch(`${h.base}/voices/`, { method: 'POST', headers: { 'x-api-key': h.apiKey }, body: noFile })).status).toBe(422);
  });
});

describe('pronunciations', () => {
  it('create, fill, list (§2.4a) and use one in TTS (a respelling changes the tones)', async () => {
    h = await startServer();
    const d = (await (await fetch(`${h.base}/pronunciations/`, { method: 'POST', headers: auth(h.apiKey), body: JSON.stringify({ name: 'brands', language: 'en', rules: [{ word: 'vw', replacement: 'voicewire' }] }) })).json()) as { uid: string };
    const filled = await fetch(`${h.base}/pronunciations/${d.uid}/rules`, { method: 'POST', headers: auth(h.apiKey), body: JSON.stringify({ rules: [{ word: 'tts', replacement: 'speech' }] }) });
    expect(((await filled.json()) as { rules: unknown[] }).rules).toHaveLength(2);
    const list = parsePronunciationList(await (await fetch(`${h.base}/pronunciations/?limit=10`, { headers: auth(h.apiKey) })).json());
    expect(list.total).toBe(1);
    expect(list.dictionaries[0]!.uid).toBe(d.uid);
    const c = connect(`${h.wsBase}/speech/tts`, { 'x-api-key': h.apiKey });
    c.send({ type: 'setup', output_format: 'pcm', pronunciation_id: d.uid });
    c.send({ type: 'text', text: 'vw' });
    c.send({ type: 'end_of_stream' });
    await c.closed;
    const audio = c.messages.filter((m) => m['type'] === 'audio');
    expect(audio.length).toBe('voicewire'.length);
    const bad = await fetch(`${h.base}/pronunciations/?limit=1001`, { headers: auth(h.apiKey) });
    expect(bad.status).toBe(422);
  });
});

describe('unmatched routes (§4.13)', () => {
  it('bad key → 401; good key and no core → 404 JSON', async () => {
    h = await startServer();
    expect((await fetch(`${h.base}/nothing/here`, { headers: { 'x-api-key': 'nope' } })).status).toBe(401);
    const r = await fetch(`${h.base}/nothing/here`, { headers: { 'x-api-key': h.apiKey } });
    expect(r.status).toBe(404);
    expect(await r.json()).toEqual({ detail: 'Not Found' });
  });

  it('with --core-url: forwarded with method, path, query, headers and body; core routes go there too', async () => {
    const seen: Array<{ method: string; url: string; body: string; key: string }> = [];
    core = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        seen.push({ method: req.method!, url: req.url!, body, key: String(req.headers['x-api-key']) });
        res.writeHead(201, { 'content-type': 'application/json', 'x-core': 'yes' });
        res.end('{"from":"core"}');
      });
    });
    await new Promise<void>((r) => core!.listen(0, '127.0.0.1', r));
    const corePort = (core.address() as AddressInfo).port;
    h = await startServer({ coreUrl: `http://127.0.0.1:${corePort}` });
    const r = await fetch(`${h.base}/usages/summary?x=1`, { method: 'GET', headers: auth(h.apiKey) });
    expect(r.status).toBe(201);
    expect(r.headers.get('x-core')).toBe('yes');
    expect(await r.json()).toEqual({ from: 'core' });
    const p = await fetch(`${h.base}/things/7`, { method: 'PATCH', headers: auth(h.apiKey), body: '{"a":1}' });
    expect(p.status).toBe(201);
    expect(seen).toEqual([
      { method: 'GET', url: '/api/usages/summary?x=1', body: '', key: h.apiKey },
      { method: 'PATCH', url: '/api/things/7', body: '{"a":1}', key: h.apiKey },
    ]);
  });

  it('residency: an organization pinned elsewhere is denied (403) before its body is read or forwarded', async () => {
    let forwarded = 0;
    core = createServer((_req, res) => {
      forwarded++;
      res.end();
    });
    await new Promise<void>((r) => core!.listen(0, '127.0.0.1', r));
    h = await startServer({ region: 'eu', coreUrl: `http://127.0.0.1:${(core.address() as AddressInfo).port}` });
    const org = (await h.store.getOrganizationByName('default'))!;
    const pinned = await h.store.createOrganization({ ...org, id: 'us-org', name: 'us', region: 'us' });
    const { createKey } = await import('../../src/server/keys.js');
    const { key } = await createKey(h.store, pinned.id);
    const r = await fetch(`${h.base}/things`, { method: 'POST', headers: auth(key), body: '{"big":true}' });
    expect(r.status).toBe(403);
    expect(await r.text()).toContain('pinned to region us');
    expect(forwarded).toBe(0);
    const t = await fetch(`${h.base}/post/speech/tts`, { method: 'POST', headers: auth(key), body: '{"text":"x"}' });
    expect(t.status).toBe(403);
  });
});
