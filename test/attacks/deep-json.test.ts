/**
 * Attacks: JSON nested deeper than the server's limit (issue 20 finding 3). A 16 KB body nested
 * 8,000 deep used to fail validation, and the 422 body's echo of it overflowed the stack inside
 * sendError: an unhandled rejection that ended the process. Now every JSON body route answers 422
 * (§2.7, before validation) with a bounded body, and the WebSocket setup an `error` 1008; the
 * server answers /healthz afterwards.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { startServer, type Harness } from '../server/harness.js';
import { failOnProcessFaults } from '../helpers/process-faults.js';

failOnProcessFaults();

let h: Harness;
let token: string;
beforeAll(async () => {
  h = await startServer();
  const r = await fetch(`${h.base}/api-keys/token`, { headers: { 'x-api-key': h.apiKey } });
  token = ((await r.json()) as { token: string }).token;
});
afterAll(() => h?.close());

/** `[[[…]]]` and `{"a":{"a":…1}}`, `depth` levels. */
const bodies = (depth: number): Array<[string, string]> => [
  [`[ × ${depth}`, '['.repeat(depth) + ']'.repeat(depth)],
  [`{"a": × ${depth}`, '{"a":'.repeat(depth) + '1' + '}'.repeat(depth)],
];
const payloads = [...bodies(8_000), ...bodies(100_000)];

/** Every route that reads a JSON body (method, path under /api). */
const ROUTES: Array<[string, string]> = [
  ['POST', '/post/speech/tts'],
  ['POST', '/speech/tts'],
  ['POST', '/voice-generator/generate'],
  ['POST', '/voices/from-embedding'],
  ['POST', '/pronunciations'],
  ['POST', '/pronunciations/some-uid/rules'],
  ['PUT', '/voices/some-uid'],
];

async function expectDepth422(url: string, method: string, body: string, headers: Record<string, string>): Promise<void> {
  const r = await fetch(url, { method, body, headers: { 'content-type': 'application/json', ...headers }, signal: AbortSignal.timeout(10_000) });
  const text = await r.text();
  expect(r.status, text.slice(0, 200)).toBe(422);
  // A bounded answer: never the input echoed whole.
  expect(text.length).toBeLessThan(2048);
  const json = JSON.parse(text) as { detail: Array<{ loc: unknown[]; type: string; msg: string }> };
  expect(json.detail[0]).toMatchObject({ loc: ['body', expect.any(Number)], type: 'json_invalid' });
  expect(JSON.stringify(json.detail[0])).toMatch(/nested deeper than 64/);
}

async function healthy(): Promise<void> {
  const r = await fetch(`${h.base}/healthz`, { signal: AbortSignal.timeout(5000) });
  expect(r.status).toBe(200);
}

describe('deep JSON bodies (issue 20 finding 3)', { timeout: 120_000 }, () => {
  for (const [method, path] of ROUTES) {
    it(`${method} ${path} with a key: 422 before validation, the server lives`, async () => {
      for (const [, body] of payloads) await expectDepth422(`${h.base}${path}`, method, body, { 'x-api-key': h.apiKey });
      await healthy();
    });
  }

  it('POST /voice-generator/generate with only a temporary token (the 16 KB request that ended the process): refused, the server lives', async () => {
    // A token does not write (auth.ts): it is refused before its body is read.
    for (const [, body] of payloads) {
      const r = await fetch(`${h.base}/voice-generator/generate?token=${token}`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
      expect(await r.text()).toMatch(/^error from server 1008: /);
      expect(r.status).toBe(500);
    }
    await healthy();
  });

  it("depth 64 is within the parser's limit, depth 65 is not (422 json_invalid)", async () => {
    // The body is one level, json_config the rest.
    const body = JSON.stringify({ prompt: 'calm', json_config: JSON.parse('{"a":'.repeat(63) + '1' + '}'.repeat(63)) as unknown });
    const r = await fetch(`${h.base}/voice-generator/generate`, { method: 'POST', body, headers: { 'x-api-key': h.apiKey, 'content-type': 'application/json' } });
    // Past the parser, the store's own bound on what it keeps (32 levels, validation.ts) may refuse it: by field, not by depth.
    expect(await r.text()).not.toMatch(/nested deeper than 64/);
    const deeper = JSON.stringify({ prompt: 'calm', json_config: JSON.parse('{"a":'.repeat(64) + '1' + '}'.repeat(64)) as unknown });
    const refused = await fetch(`${h.base}/voice-generator/generate`, { method: 'POST', body: deeper, headers: { 'x-api-key': h.apiKey, 'content-type': 'application/json' } });
    expect(refused.status).toBe(422);
    expect(await refused.text()).toMatch(/nested deeper than 64/);
  });

  it('a deep json_config given as a JSON string inside a valid body: 422, the server lives', async () => {
    const config = '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000);
    const r = await fetch(`${h.base}/voice-generator/generate`, {
      method: 'POST',
      body: JSON.stringify({ prompt: 'calm', json_config: config }),
      headers: { 'x-api-key': h.apiKey, 'content-type': 'application/json' },
      signal: AbortSignal.timeout(10_000),
    });
    const text = await r.text();
    expect(r.status).toBe(422);
    expect(text.length).toBeLessThan(2048);
    expect(text).toMatch(/nested deeper than 64/);
    await healthy();
  });

  it('a long string that fails validation is echoed at most 200 characters', async () => {
    const r = await fetch(`${h.base}/voice-generator/generate`, {
      method: 'POST',
      body: JSON.stringify({ prompt: 'x'.repeat(600_000) }),
      headers: { 'x-api-key': h.apiKey, 'content-type': 'application/json' },
    });
    expect(r.status).toBe(422);
    const json = (await r.json()) as { detail: Array<{ input: string; type: string }> };
    expect(json.detail[0]!.type).toBe('string_too_long');
    expect(json.detail[0]!.input.length).toBeLessThanOrEqual(200);
  });
});

describe('deep JSON over the WebSocket setup (issue 20 finding 3)', { timeout: 60_000 }, () => {
  for (const route of ['/speech/tts', '/speech/asr']) {
    for (const [name, body] of payloads) {
      it(`${route}: ${name} as the setup message → error 1008, the server lives`, async () => {
        const ws = new WebSocket(`${h.wsBase}${route}`, { headers: { 'x-api-key': h.apiKey } });
        const messages: Array<Record<string, unknown>> = [];
        ws.on('message', (d) => messages.push(JSON.parse(String(d)) as Record<string, unknown>));
        ws.on('error', () => {});
        ws.once('open', () => ws.send(body));
        const code = await new Promise<number>((resolve) => ws.once('close', (c) => resolve(c)));
        expect(code).toBe(1008);
        expect(messages).toEqual([expect.objectContaining({ type: 'error', code: 1008 })]);
        expect(String(messages[0]!['message'])).toMatch(/nested deeper than 64/);
        await healthy();
      });
    }
    it(`${route}: a deep json_config object inside a setup → error 1008`, async () => {
      const deep = '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000);
      const ws = new WebSocket(`${h.wsBase}${route}`, { headers: { 'x-api-key': h.apiKey } });
      const messages: Array<Record<string, unknown>> = [];
      ws.on('message', (d) => messages.push(JSON.parse(String(d)) as Record<string, unknown>));
      ws.on('error', () => {});
      ws.once('open', () => ws.send(`{"type":"setup","json_config":${deep}}`));
      const code = await new Promise<number>((resolve) => ws.once('close', (c) => resolve(c)));
      expect(code).toBe(1008);
      expect(messages[0]).toMatchObject({ type: 'error', code: 1008 });
      await healthy();
    });
  }
});

describe('the server\'s maxJsonDepth on every JSON body route (issue 20)', { timeout: 60_000 }, () => {
  it('POST /v1/audio/speech honours a configured maxJsonDepth (4 here), not only the default 64', async () => {
    const small = await startServer({ limits: { maxJsonDepth: 4 } });
    try {
      // Depth 5: within 64, past 4. The depth check comes before the fields are read.
      const body = JSON.stringify({ model: 'tts-1', input: 'hi', voice: 'alloy', extra: { a: { b: { c: { d: 1 } } } } });
      const r = await fetch(`${small.base.replace(/\/api$/, '')}/v1/audio/speech`, { method: 'POST', body, headers: { authorization: `Bearer ${small.apiKey}`, 'content-type': 'application/json' } });
      const text = await r.text();
      expect(r.status, text.slice(0, 200)).toBe(400);
      expect(text).toMatch(/JSON decode error/);
    } finally {
      await small.close();
    }
  });
});
