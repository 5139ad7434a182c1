/**
 * The SDK against the real server (voicewire/server with the tone engines and a memory store) on
 * loopback: every REST method, TTS over the WebSocket and HTTP agreeing byte for byte, a TTS → STT
 * round trip, temporary tokens (accepted, refused where the API says so, expired), and a draining
 * server retried until it serves.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient } from '../../src/node/client.js';
import { decodeWav } from '../../src/index.js';
import { startServer, type Harness } from '../server/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startServer({ tokenSeconds: 2 });
});
afterAll(() => h.close());

const client = () => createClient({ baseUrl: h.base, apiKey: h.apiKey, retry: { attempts: 1 } });

describe('SDK REST against voicewire serve', () => {
  it('voices: list (limit 0 = every voice), design, keep, get, update, delete, discard', async () => {
    const c = client();
    const catalog = await c.voices.list();
    expect(catalog.map((v) => v.uid)).toEqual(expect.arrayContaining(['tone-en', 'tone-fr', 'tone-de', 'tone-es', 'tone-pt']));
    expect(catalog.every((v) => v.is_catalog)).toBe(true);

    const candidates = await c.voices.design('a calm low voice', { nSamples: 3, language: 'fr' });
    expect(candidates).toHaveLength(3);
    expect(Date.parse(candidates[0]!.expires_at)).toBeGreaterThan(Date.now());
    const kept = await c.voices.keep(candidates[0]!, { name: 'Calme', description: 'kept from a candidate' });
    expect(kept).toMatchObject({ name: 'Calme', language: 'fr' });
    await c.voices.discard(candidates[1]!);
    await expect(c.voices.keep(candidates[1]!, { name: 'gone' })).rejects.toMatchObject({ code: 'HTTP_ERROR' });

    const mine = (await c.voices.list()).filter((v) => !v.is_catalog);
    expect(mine.map((v) => v.uid)).toEqual([kept.uid]);
    expect((await c.voices.list({ includeCatalog: false })).map((v) => v.uid)).toEqual([kept.uid]);
    expect(await c.voices.get(kept.uid)).toMatchObject({ uid: kept.uid, name: 'Calme' });
    expect(await c.voices.update(kept.uid, { name: 'Très calme' })).toMatchObject({ name: 'Très calme' });
    await c.voices.delete(kept.uid);
    await expect(c.voices.get(kept.uid)).rejects.toMatchObject({ code: 'HTTP_ERROR', details: { status: 404 } });

    // A voice from a short sample (POST /voices/, multipart), as the service's Python client makes one.
    const sample = await c.tts({ text: 'a sample of my voice', outputFormat: 'wav' });
    const cloned = await c.voices.create({ audio: sample.audio, name: 'Mine', description: 'from a sample', startS: 0 });
    expect(cloned).toMatchObject({ name: 'Mine', description: 'from a sample' });
    expect((await c.voices.list({ includeCatalog: false })).map((v) => v.uid)).toEqual([cloned.uid]);
    await c.voices.delete(cloned.uid);
  });

  it('credits, pronunciations and a 422 with its detail', async () => {
    const c = client();
    const credits = await c.credits();
    expect(credits.allocated_credits).toBeGreaterThan(0);
    expect(credits.remaining_credits).toBeLessThanOrEqual(credits.allocated_credits);
    expect(await c.pronunciations.list()).toMatchObject({ dictionaries: [], total: 0 });
    const err = await c.voices.design('   ', { nSamples: 9 }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'HTTP_ERROR', details: { status: 422 } });
    const locs = (err as { details: { validation: { detail: { loc: unknown[] }[] } } }).details.validation.detail.map((d) => d.loc.join('.'));
    expect(locs).toEqual(expect.arrayContaining(['body.prompt', 'body.n_samples']));
  });

  it('a bad key: HTTP 500 "error from server 1008" on REST, error 1008 on the WebSocket', async () => {
    const bad = createClient({ baseUrl: h.base, apiKey: 'vw_not-a-key', retry: { attempts: 1 } });
    // §7.1's code is kept: the failure is named, not a bare HTTP_ERROR.
    await expect(bad.credits()).rejects.toMatchObject({ code: 'PROTOCOL_UNAUTHORIZED', closeCode: 1008, details: { status: 500, code: 1008 } });
    await expect(bad.tts({ text: 'hi', outputFormat: 'pcm' })).rejects.toMatchObject({ code: 'PROTOCOL_UNAUTHORIZED', closeCode: 1008 });
  });
});

describe('SDK speech against voicewire serve', () => {
  it('TTS over the WebSocket and over HTTP give the same bytes and words', async () => {
    const c = client();
    const ws = await c.tts({ text: 'hello brave world', outputFormat: 'pcm_16000', voiceId: 'tone-en' });
    const http = await c.tts({ text: 'hello brave world', outputFormat: 'pcm_16000', voiceId: 'tone-en', http: true });
    expect(ws.sampleRate).toBe(16000);
    expect(ws.audio.length).toBeGreaterThan(16000);
    expect(Buffer.from(http.audio).equals(Buffer.from(ws.audio))).toBe(true);
    expect(http.words).toEqual(ws.words);
    expect(ws.words.map((w) => w.text)).toEqual(['hello', 'brave', 'world']);
  });

  it('round trip: the SDK speaks a WAV and the SDK hears the same words back (WebSocket and HTTP)', async () => {
    const c = client();
    const spoken = await c.tts({ text: 'open the door', outputFormat: 'wav' });
    expect(decodeWav(spoken.audio).format.sampleRate).toBe(48000);
    const heard = await c.stt(spoken.audio, { inputFormat: 'wav' });
    expect(heard.text).toBe('open the door');
    expect(heard.words.map((w) => w.text)).toEqual(['open', 'the', 'door']);
    for (let i = 0; i < 3; i++) expect(Math.abs(heard.words[i]!.start_s - spoken.words[i]!.start_s)).toBeLessThanOrEqual(0.16);
    expect((await c.stt(spoken.audio, { inputFormat: 'wav', http: true })).text).toBe('open the door');
  });

  it('three multiplexed streams on one socket, and one cancelled mid-stream', async () => {
    const c = client();
    const texts = ['one two', 'three four five', 'six'];
    const streams = texts.map(() => c.ttsStream({ outputFormat: 'pcm', multiplex: true }));
    const cancel = new AbortController();
    const doomed = c.ttsStream({ outputFormat: 'pcm', multiplex: true, signal: cancel.signal });
    doomed.write('this will never be heard in full');
    streams.forEach((s, i) => {
      s.write(texts[i]!);
      s.end();
    });
    cancel.abort();
    const words = await Promise.all(
      streams.map(async (s) => {
        const w: string[] = [];
        for await (const e of s) if (e.type === 'word') w.push(e.word.text);
        return w.join(' ');
      }),
    );
    expect(words).toEqual(texts);
    await expect((async () => { for await (const _ of doomed); })()).rejects.toMatchObject({ code: 'CLIENT_ABORTED' });
    c.close();
  });

  it('a temporary token: TTS and the STT WebSocket accept it, credits refuses it; expired it fails 1008', async () => {
    const { token } = await client().token();
    const viaToken = createClient({ baseUrl: h.base, token, retry: { attempts: 1 } });
    const spoken = await viaToken.tts({ text: 'hi there', outputFormat: 'pcm' });
    expect(spoken.words.map((w) => w.text)).toEqual(['hi', 'there']);
    const s = viaToken.sttStream({ inputFormat: 'pcm' });
    s.write(new Uint8Array(3840));
    s.end();
    let steps = 0;
    for await (const e of s) if (e.type === 'step') steps++;
    expect(steps).toBeGreaterThan(0);
    expect((await viaToken.voices.list()).length).toBeGreaterThanOrEqual(5);
    await expect(viaToken.credits()).rejects.toMatchObject({ code: 'PROTOCOL_UNAUTHORIZED', details: { status: 500, code: 1008 } });
    await new Promise((r) => setTimeout(r, 2100)); // tokenSeconds: 2
    await expect(viaToken.tts({ text: 'late', outputFormat: 'pcm' })).rejects.toMatchObject({ code: 'PROTOCOL_UNAUTHORIZED', closeCode: 1008 });
  });

  it('a draining server answers 503; the SDK retries with backoff and succeeds once it serves again', async () => {
    const c = createClient({ baseUrl: h.base, apiKey: h.apiKey, retry: { attempts: 5, baseDelayMs: 100 } });
    h.server.drain(true);
    const once = createClient({ baseUrl: h.base, apiKey: h.apiKey, retry: { attempts: 1 } });
    await expect(once.tts({ text: 'no', outputFormat: 'pcm', http: true })).rejects.toMatchObject({ details: { status: 503 } });
    setTimeout(() => h.server.drain(false), 250);
    const r = await c.tts({ text: 'back again', outputFormat: 'pcm', http: true });
    expect(r.words.map((w) => w.text)).toEqual(['back', 'again']);
  });
});

describe('client CLI commands against voicewire serve', () => {
  const root = fileURLToPath(new URL('../../', import.meta.url));
  // Asynchronous: the server under test runs in this process and must keep answering.
  const cli = (args: string[], env: Record<string, string> = { VOICEWIRE_API_KEY: h.apiKey }) =>
    new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) =>
      execFile(process.execPath, ['--import', 'tsx', join(root, 'src/cli/main.ts'), ...args, '--base-url', h.base], { encoding: 'utf8', timeout: 30_000, env: { ...process.env, ...env } }, (err, stdout, stderr) =>
        resolve({ status: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr }),
      ),
    );

  it('tts -o FILE, then stt FILE --json gives the words back; voices and credits print JSON', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'voicewire-client-'));
    try {
      const out = join(dir, 'b.wav');
      const t = await cli(['tts', 'bonjour a tous', '-o', out, '--language', 'fr']);
      expect(t.stderr).toBe('');
      expect(t.status).toBe(0);
      expect(decodeWav(new Uint8Array(readFileSync(out))).frames).toBeGreaterThan(48000);
      const s = await cli(['stt', out, '--json']);
      expect(s.status).toBe(0);
      expect(JSON.parse(s.stdout)).toMatchObject({ text: 'bonjour a tous' });
      const v = await cli(['voices', '--json']);
      expect(JSON.parse(v.stdout).map((x: { uid: string }) => x.uid)).toContain('tone-fr');
      expect(JSON.parse((await cli(['credits'])).stdout)).toHaveProperty('remaining_credits');
      const bad = await cli(['credits', '--api-key', 'vw_wrong'], {});
      expect(bad.status).toBe(1);
      expect(bad.stderr.trim().split('\n')).toHaveLength(1);
      expect(bad.stderr).toMatch(/invalid API key \(error from server 1008\) \[PROTOCOL_UNAUTHORIZED\]/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
