/**
 * Faults: malformed and hostile frames over real sockets (issue 16 "Faults"): fuzzed JSON,
 * binary frames, invalid UTF-8, frames over the limits (10 MB), a flood of `flush`. Each gets its
 * §7.3 error (`error` 1008, then close 1008), the process stays
 * up and its memory bounded.
 */
import { afterEach, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { WebSocket } from 'ws';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { connect, startServer, type Harness } from '../harness.js';
import { until } from './faulty-engine.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

interface Outcome {
  code: number;
  messages: Array<Record<string, unknown>>;
}

/** Sends raw frames on a fresh socket of `route` and collects what comes back until the close (bounded). */
async function exchange(h: Harness, route: string, frames: Array<string | Buffer | { binary: Buffer }>, ms = 5000): Promise<Outcome> {
  const ws = new WebSocket(`${h.wsBase}${route}`, { headers: { 'x-api-key': h.apiKey }, maxPayload: 64 << 20 });
  const messages: Array<Record<string, unknown>> = [];
  ws.on('message', (d) => messages.push(JSON.parse(String(d)) as Record<string, unknown>));
  ws.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  for (const f of frames) {
    if (typeof f === 'string') ws.send(f);
    else if (Buffer.isBuffer(f)) ws.send(f, { binary: false });
    else ws.send(f.binary, { binary: true });
  }
  const code = await new Promise<number>((resolve, reject) => {
    const t = setTimeout(() => {
      ws.terminate();
      reject(new Error(`no close within ${ms} ms; got ${JSON.stringify(messages).slice(0, 200)}`));
    }, ms);
    ws.once('close', (c) => {
      clearTimeout(t);
      resolve(c);
    });
  });
  return { code, messages };
}

function expectPolicyError(o: Outcome, pattern?: RegExp): void {
  expect(o.code).toBe(1008);
  const last = o.messages.at(-1)!;
  expect(last).toMatchObject({ type: 'error', code: 1008 });
  if (pattern) expect(String(last['message'])).toMatch(pattern);
}

describe('hostile frames', { timeout: 20_000 }, () => {
  it('fuzzed JSON as the first message (fast-check, 150 sockets over TTS and STT): error 1008 or ready, never 1011 nor a hang', async () => {
    h = await startServer();
    const hh = h;
    const first = fc.oneof(
      fc.string(),
      fc.json(),
      fc.record({ type: fc.constantFrom('setup', 'text', 'audio', 'flush', 'end_of_stream', 'eos', 'x'), output_format: fc.oneof(fc.string(), fc.constantFrom('pcm', 'opus')), input_format: fc.anything(), text: fc.anything(), client_req_id: fc.anything() }, { requiredKeys: ['type'] }).map((r) => JSON.stringify(r) ?? 'null'),
    );
    let errors = 0;
    await fc.assert(
      fc.asyncProperty(first, fc.constantFrom('/speech/tts', '/speech/asr'), async (frame, route) => {
        const ws = connect(`${hh.wsBase}${route}`, { 'x-api-key': hh.apiKey });
        ws.send(frame);
        const got = await Promise.race([ws.waitFor((m) => m['type'] === 'ready' || m['type'] === 'error').catch(() => null), ws.closed.then(() => null)]);
        if (got?.['type'] === 'ready') {
          ws.ws.close();
          await ws.closed;
          return;
        }
        const { code } = await ws.closed;
        errors++;
        expect(code).toBe(1008);
        expect(ws.messages.at(-1)).toMatchObject({ type: 'error', code: 1008 });
        let parsed: unknown;
        try {
          parsed = JSON.parse(frame);
        } catch {
          expect(String(ws.messages.at(-1)!['message'])).toMatch(/not valid JSON/);
        }
        if (parsed !== undefined && (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))) {
          expect(String(ws.messages.at(-1)!['message'])).toMatch(/must be a JSON object/);
        }
      }),
      { numRuns: 150, seed: 16 },
    );
    expect(errors).toBeGreaterThan(100);
    await until(() => hh.server.context.sessions.live === 0, 2000, 'every fuzzed session released');
    expect((await fetch(`${hh.base}/healthz`)).status).toBe(200);
  });

  it('binary frames: random bytes get error 1008; a binary frame of valid JSON is read as that JSON', async () => {
    h = await startServer();
    const junk = await exchange(h, '/speech/tts', [{ binary: Buffer.from([0x00, 0xff, 0x13, 0x37, 0x80, 0x81]) }]);
    expectPolicyError(junk, /not valid UTF-8/);
    const json = await exchange(h, '/speech/tts', [{ binary: Buffer.from('{"type":"setup","output_format":"pcm"}') }, '{"type":"text","text":"hi"}', '{"type":"end_of_stream"}']);
    expect(json.code).toBe(1000);
    expect(json.messages[0]).toMatchObject({ type: 'ready' });
    expect(json.messages.at(-1)).toEqual({ type: 'end_of_stream' });
  });

  it('invalid UTF-8 in a text frame: error 1008 naming it, before and after setup', async () => {
    h = await startServer();
    const bad = Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x7d]); // {"\xc3(" }: a broken 2-byte sequence
    expectPolicyError(await exchange(h, '/speech/tts', [bad]), /not valid UTF-8/);
    expectPolicyError(await exchange(h, '/speech/asr', ['{"type":"setup","input_format":"pcm"}', bad]), /not valid UTF-8/);
  });

  it('frames over the limits: 1.5 MB gets error 1008 naming the 1 MiB limit; 10 MB too (dropped unread at the ws cap), memory bounded', async () => {
    h = await startServer();
    const over = await exchange(h, '/speech/tts', ['{"type":"setup","output_format":"pcm"}', JSON.stringify({ type: 'text', text: 'a'.repeat(1_500_000) })]);
    expectPolicyError(over, /over the limit of 1048576/);
    gc();
    const heap0 = process.memoryUsage().heapUsed;
    const rss0 = process.memoryUsage().rss;
    const huge = JSON.stringify({ type: 'text', text: 'a'.repeat(10_000_000) });
    const outcomes = await Promise.all(Array.from({ length: 5 }, () => exchange(h!, '/speech/tts', ['{"type":"setup","output_format":"pcm"}', huge])));
    // ws drops it unread at its cap (2 MiB + 1 KiB); the session's §7.3 error goes first.
    for (const o of outcomes) expectPolicyError(o, /over the limit of 1048576 bytes/);
    gc();
    expect(process.memoryUsage().heapUsed - heap0).toBeLessThan(16 << 20);
    // 5 × 10 MB were sent (by this process too): the server kept at most its 2 MiB cap of each.
    expect(process.memoryUsage().rss - rss0).toBeLessThan(120 << 20);
    expect((await fetch(`${h.base}/healthz`)).status).toBe(200);
  });

  it('a flood of 5,000 `flush` on an STT socket: every one answered in order within 10 s, memory bounded, another session unaffected', async () => {
    h = await startServer();
    const c = connect(`${h.wsBase}/speech/asr`, { 'x-api-key': h.apiKey });
    c.send({ type: 'setup', input_format: 'pcm' });
    await c.waitFor((m) => m['type'] === 'ready');
    gc();
    const heap0 = process.memoryUsage().heapUsed;
    const t0 = Date.now();
    for (let i = 0; i < 5000; i++) c.send({ type: 'flush', flush_id: i });
    await c.waitFor((m) => m['type'] === 'flushed' && m['flush_id'] === 4999);
    expect(Date.now() - t0).toBeLessThan(10_000);
    const ids = c.messages.filter((m) => m['type'] === 'flushed').map((m) => m['flush_id']);
    expect(ids).toEqual(Array.from({ length: 5000 }, (_, i) => i));
    const other = connect(`${h.wsBase}/speech/tts`, { 'x-api-key': h.apiKey });
    other.send({ type: 'setup', output_format: 'pcm' });
    other.send({ type: 'text', text: 'ok' });
    other.send({ type: 'end_of_stream' });
    expect((await other.closed).code).toBe(1000);
    c.ws.close();
    await c.closed;
    gc();
    expect(process.memoryUsage().heapUsed - heap0).toBeLessThan(16 << 20);
  });
});
