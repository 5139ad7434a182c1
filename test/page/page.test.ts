/**
 * The web page of `voicewire serve` in a real browser (Debian's Chromium driven by playwright-core)
 * against the real server with the tone engines: typed text is spoken (the page schedules Web
 * Audio buffers holding exactly the bytes the Node SDK gets for the same request, and shows every
 * word), and the fake microphone (a WAV the tone TTS made, then silence) is transcribed word by
 * word until the turn ends (silence before the first word ends no turn). Voice design takes the
 * API key in its own field (a temporary token may not generate, docs/server.md "Credentials"),
 * never kept in the browser's storage; each candidate plays before it is kept; the page has an
 * icon. A screenshot is kept in test-artifacts/.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserContext, Page } from 'playwright-core';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient } from '../../src/node/client.js';
import { decodeWav, encodeWav } from '../../src/index.js';
import { startServer, type Harness } from '../server/harness.js';
import { has, needs } from '../helpers/tools.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const pageDir = join(root, 'dist/web');
const built = existsSync(join(pageDir, 'index.html'));
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--autoplay-policy=no-user-gesture-required', '--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream'];

const name = !built ? 'the web page [SKIPPED: dist/web not built — run npm run build]' : needs('chromium', 'the web page speaks, highlights words and transcribes the microphone in Chromium');

describe.skipIf(!built || !has('chromium'))(name, () => {
  let h: Harness;
  let dir: string;
  beforeAll(async () => {
    h = await startServer({ pageDir });
    dir = mkdtempSync(join(tmpdir(), 'vw-page-'));
  });
  afterAll(async () => {
    await h?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const origin = (): string => h.base.replace(/\/api$/, '');

  /** Chromium on the page, connected with a temporary token (`?token=`); the voices are listed. */
  async function openPage(profileName: string, extraArgs: string[] = []): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
    const { chromium } = await import('playwright-core');
    const token = (await createClient({ baseUrl: h.base, apiKey: h.apiKey }).token()).token;
    const context = await chromium.launchPersistentContext(join(dir, profileName), { executablePath: '/usr/bin/chromium', headless: true, args: [...CHROMIUM_ARGS, ...extraArgs] });
    const page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(15_000);
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`${origin()}/?token=${encodeURIComponent(token)}`);
    await page.waitForFunction(() => document.querySelectorAll('#voice option').length >= 5, null, { timeout: 10_000 });
    return { context, page, errors };
  }

  it('speaks and listens', async () => {
    const sdk = createClient({ baseUrl: h.base, apiKey: h.apiKey });
    // The microphone: 1.5 s of silence (the user has not spoken yet: no turn ends there, and the
    // capture's start cannot clip the first word), "hello world" in tones, then 3 s of silence so
    // the turn ends.
    const said = await sdk.tts({ text: 'hello world', outputFormat: 'wav' });
    const pcm = decodeWav(said.audio, { output: 'int16' }).samples;
    const mic = new Int16Array(48000 * 1.5 + pcm.length + 48000 * 3);
    mic.set(pcm, 48000 * 1.5);
    const micPath = join(dir, 'mic.wav');
    writeFileSync(micPath, encodeWav(mic, { sampleRate: 48000 }));
    const expected = await sdk.tts({ text: 'Good morning everyone', outputFormat: 'pcm', voiceId: 'tone-en' });

    const { context, page, errors } = await openPage('profile', [`--use-file-for-fake-audio-capture=${micPath}`]);
    try {
      await page.selectOption('#voice', 'tone-en');

      // Speak: the page plays what the Node SDK gets, byte for byte, and shows every word.
      await page.fill('#text', 'Good morning everyone');
      await page.click('#say');
      await page.waitForFunction(() => /done/.test(document.querySelector('#tts-state')?.textContent ?? ''), null, { timeout: 15_000 });
      const browserAudio = await page.evaluate(() => {
        const s = (globalThis as unknown as { __voicewire: { ttsAudio: Uint8Array[]; scheduledSamples: number } }).__voicewire;
        let bin = '';
        for (const c of s.ttsAudio) for (const b of c) bin += String.fromCharCode(b);
        return { b64: btoa(bin), scheduled: s.scheduledSamples };
      });
      expect(Buffer.from(browserAudio.b64, 'base64').equals(Buffer.from(expected.audio))).toBe(true);
      expect(browserAudio.scheduled).toBe(expected.audio.length / 2);
      expect(await page.locator('#words span').allTextContents()).toEqual(['Good ', 'morning ', 'everyone ']);

      // Listen: the fake microphone's words appear, and the turn ends on the silence.
      await page.click('#mic');
      await page.waitForFunction(() => (globalThis as unknown as { __voicewire: { turns: number } }).__voicewire.turns > 0, null, { timeout: 20_000 });
      const heard = await page.evaluate(() => (globalThis as unknown as { __voicewire: { transcript: string[]; steps: number } }).__voicewire);
      expect(heard.transcript.slice(0, 2)).toEqual(['hello', 'world']);
      expect(heard.steps).toBeGreaterThan(10);
      mkdirSync(join(root, 'test-artifacts'), { recursive: true });
      await page.screenshot({ path: join(root, 'test-artifacts', 'page.png'), fullPage: true });
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);

  it('answers /favicon.ico and the icon the page links with an image, not 404', async () => {
    const ico = await fetch(`${origin()}/favicon.ico`);
    expect(ico.status).toBe(200);
    expect(ico.headers.get('content-type')).toMatch(/^image\//);
    expect(await ico.text()).toMatch(/<svg[\s\S]*<\/svg>/);
    const { context, page, errors } = await openPage('profile-icon');
    try {
      const linked = await page.evaluate(async () => {
        const link = document.querySelector<HTMLLinkElement>('link[rel~="icon"]');
        if (link === null) return null;
        const res = await fetch(link.href);
        return { status: res.status, type: res.headers.get('content-type') };
      });
      expect(linked).toEqual({ status: 200, type: expect.stringMatching(/^image\//) });
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);

  it('designs a voice with the API key, plays each candidate before keeping it, and stores no key', async () => {
    const sdk = createClient({ baseUrl: h.base, apiKey: h.apiKey });
    const { context, page, errors } = await openPage('profile-design');
    const generateCalls: string[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/voice-generator/')) generateCalls.push(r.url());
    });
    // What the page's TTS sockets carry (address and sent messages): the candidate's id must be there.
    const ttsSent: string[] = [];
    page.on('websocket', (ws) => {
      ttsSent.push(ws.url());
      ws.on('framesent', (f) => ttsSent.push(String(f.payload)));
    });
    try {
      await page.fill('#prompt', 'a calm, deep voice');
      // Without the key: a clear message, and no call the server would refuse (a token may not generate).
      await page.click('#generate');
      await expect.poll(() => page.textContent('#design-state'), { timeout: 5_000 }).toMatch(/API key/);
      expect(generateCalls).toEqual([]);

      await page.fill('#design-key', h.apiKey);
      await page.click('#generate');
      await page.waitForFunction(() => document.querySelectorAll('#candidates li button.play').length === 3, null, { timeout: 15_000 });
      const ids = await page.locator('#candidates li').evaluateAll((items) => items.map((li) => (li as HTMLElement).dataset['embeddingId']));
      expect(ids).toHaveLength(3);

      // Play the second candidate: the page plays what TTS gives for that candidate's voice, byte for byte.
      const sample = await page.inputValue('#sample');
      expect(sample.length).toBeGreaterThan(0);
      await page.locator('#candidates li').nth(1).locator('button.play').click();
      await page.waitForFunction(() => /done/.test(document.querySelector('#design-state')?.textContent ?? ''), null, { timeout: 15_000 });
      const expected = await sdk.tts({ text: sample, outputFormat: 'pcm', voiceId: ids[1]! });
      expect(expected.audio.length).toBeGreaterThan(0);
      const played = await page.evaluate(() => {
        const s = (globalThis as unknown as { __voicewire: { ttsAudio: Uint8Array[] } }).__voicewire;
        let bin = '';
        for (const c of s.ttsAudio) for (const b of c) bin += String.fromCharCode(b);
        return btoa(bin);
      });
      expect(Buffer.from(played, 'base64').equals(Buffer.from(expected.audio))).toBe(true);
      expect(ttsSent.some((m) => m.includes(ids[1]!))).toBe(true);

      // Keep it: it becomes one of the organization's voices and the voice list shows it.
      page.once('dialog', (d) => void d.accept('Calm one'));
      await page.locator('#candidates li').nth(1).locator('button.keep').click();
      await page.waitForFunction(() => Array.from(document.querySelectorAll('#voice option')).some((o) => o.textContent?.startsWith('Calm one')), null, { timeout: 10_000 });
      expect((await sdk.voices.list({ includeCatalog: false })).map((v) => v.name)).toContain('Calm one');

      // The key lives in the field only: nothing in the browser's storage or the address.
      const stored = await page.evaluate(() => JSON.stringify({ ...sessionStorage }) + JSON.stringify({ ...localStorage }) + location.href + document.cookie);
      expect(stored).not.toContain(h.apiKey);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);
});
