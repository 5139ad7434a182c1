/**
 * Issue 20 finding 2: the budget of live STT decoders (`limits.sttDecoders`, per process) and the
 * per-key bound of heavy STT requests (`limits.sttDecodersPerKey`), each with its documented
 * error: past the budget `ENGINE_BUSY` (WebSocket `error` 1011 then close, a multiplexed request's
 * own `error` with its id on a socket that goes on, POST 503 plain text); past the key's bound
 * `LIMIT_EXCEEDED` 1008. The requests that hold a decoder keep working.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { STT_DECODER_BUDGET } from '../../src/engines/budget.js';
import { pocketsphinxAvailable } from '../../src/engines/pocketsphinx-ffi.js';
import { resolveServerConfig } from '../../src/server/config.js';
import { createKey } from '../../src/server/keys.js';
import { connect, startServer, type Harness, type WsConversation } from './harness.js';

const missing = pocketsphinxAvailable();
const WAV = readFileSync(join(import.meta.dirname, '../../fixtures/speech/librivox-0880.wav'));

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** An STT WebSocket session that has its `ready` (or its refusal). */
async function session(key: string, id?: string): Promise<WsConversation> {
  const c = connect(`${h!.wsBase}/speech/asr`, { 'x-api-key': key });
  c.send({ type: 'setup', input_format: 'wav', ...(id === undefined ? {} : { client_req_id: id, close_ws_on_eos: false }) });
  await c.waitFor((m) => m['type'] === 'ready' || m['type'] === 'error').catch(() => undefined);
  return c;
}

/** A second key of the default organization (the harness's other key is an instance-admin key, which speaks no STT). */
let second: string | undefined;
async function secondKey(): Promise<string> {
  const org = (await h!.store.getOrganizationByName('default'))!;
  second ??= (await createKey(h!.store, org.id)).key;
  return second;
}

/** Sends the clip and `end_of_stream` on `c`; resolves with the words heard. */
async function finish(c: WsConversation, id?: string): Promise<string[]> {
  const withId = id === undefined ? {} : { client_req_id: id };
  for (let o = 0; o < WAV.length; o += 16000) c.send({ type: 'audio', audio: WAV.subarray(o, o + 16000).toString('base64'), ...withId });
  c.send({ type: 'end_of_stream', ...withId });
  await c.waitFor((m) => m['type'] === 'end_of_stream' && (id === undefined || m['client_req_id'] === id));
  return c.messages.filter((m) => m['type'] === 'text' && (id === undefined || m['client_req_id'] === id)).map((m) => String(m['text']));
}

describe.skipIf(missing !== undefined)(missing ? `STT decoder budget [SKIPPED: ${missing}]` : 'STT decoder budget (pocketsphinx)', () => {
  it('with a budget of 2 decoders, a third request gets ENGINE_BUSY (WebSocket 1011, multiplexed: its own error, POST 503); the first two still work', async () => {
    second = undefined;
    h = await startServer({ stt: 'pocketsphinx', limits: { sttDecoders: 2 } });
    const a = await session(h.apiKey);
    const b = await session((await secondKey()));
    expect(a.messages[0]).toMatchObject({ type: 'ready' });
    expect(b.messages[0]).toMatchObject({ type: 'ready' });

    const c = await session(h.apiKey);
    expect(c.messages[0]).toMatchObject({ type: 'error', code: 1011, message: expect.stringMatching(/limit of 2 STT decoders \(limits\.sttDecoders\)/) });
    expect((await c.closed).code).toBe(1011);

    const post = await fetch(`${h.base}/post/speech/asr`, { method: 'POST', headers: { 'x-api-key': h.apiKey, 'content-type': 'audio/wav' }, body: new Uint8Array(WAV) });
    const postText = await post.clone().text();
    expect(post.status, postText).toBe(503);
    expect(post.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await post.text()).toMatch(/limit of 2 STT decoders/);

    // A multiplexed request over the budget gets its own error; the socket stays usable.
    const m = await session((await secondKey()), 'm1');
    expect(m.messages[0]).toMatchObject({ type: 'error', code: 1011, client_req_id: 'm1' });
    expect(m.ws.readyState).toBe(m.ws.OPEN);

    const said = await finish(a);
    expect(said.length).toBeGreaterThan(2);
    expect((await a.closed).code).toBe(1000);
    // a's decoder is free again: the multiplexed socket gets it for its next request.
    m.send({ type: 'setup', input_format: 'wav', client_req_id: 'm2', close_ws_on_eos: false });
    await m.waitFor((x) => x['type'] === 'ready' && x['client_req_id'] === 'm2');
    expect(await finish(m, 'm2')).toEqual(said);
    expect(await finish(b)).toEqual(said);
    m.ws.close();
    await m.closed;
    expect(h.logs.some((l) => l.includes('ENGINE_BUSY'))).toBe(true);
  }, 120_000);

  it('sessions whose clients vanish give their decoders back: with a budget of 2, two cut sockets, then two new sessions are ready', async () => {
    second = undefined;
    h = await startServer({ stt: 'pocketsphinx', limits: { sttDecoders: 2 } });
    const gone = [await session(h.apiKey), await session((await secondKey()))];
    for (const g of gone) {
      expect(g.messages[0]).toMatchObject({ type: 'ready' });
      g.send({ type: 'audio', audio: WAV.subarray(0, 16000).toString('base64') });
      g.ws.terminate();
    }
    await Promise.all(gone.map((g) => g.closed));
    // The server sees the sockets go; the next two sessions get the two decoders back.
    const deadline = Date.now() + 20_000;
    let again: WsConversation[] = [];
    while (Date.now() < deadline) {
      again = [await session(h.apiKey), await session((await secondKey()))];
      if (again.every((c) => c.messages[0]?.['type'] === 'ready')) break;
      for (const c of again) c.ws.close();
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(again.map((c) => c.messages[0]?.['type'])).toEqual(['ready', 'ready']);
    expect(STT_DECODER_BUDGET.live).toBe(2);
    expect((await finish(again[0]!)).length).toBeGreaterThan(2);
    again[1]!.ws.close();
    await again[1]!.closed;
  }, 120_000);

  it('one API key holds at most sttDecodersPerKey live requests (LIMIT_EXCEEDED 1008); another key is not affected', async () => {
    second = undefined;
    h = await startServer({ stt: 'pocketsphinx', limits: { sttDecoders: 8, sttDecodersPerKey: 2 } });
    const a = await session(h.apiKey);
    const b = await session(h.apiKey, 'x');
    expect(a.messages[0]).toMatchObject({ type: 'ready' });
    expect(b.messages[0]).toMatchObject({ type: 'ready' });
    const c = await session(h.apiKey);
    expect(c.messages[0]).toMatchObject({ type: 'error', code: 1008, message: expect.stringMatching(/this API key already holds 2 live STT requests \(limit limits\.sttDecodersPerKey 2\)/) });
    expect((await c.closed).code).toBe(1008);
    const other = await session((await secondKey()));
    expect(other.messages[0]).toMatchObject({ type: 'ready' });
    // Once a request ends, its key may open another.
    expect((await finish(a)).length).toBeGreaterThan(2);
    const d = await session(h.apiKey);
    expect(d.messages[0]).toMatchObject({ type: 'ready' });
    for (const s of [b, other, d]) s.ws.close();
    await Promise.all([b.closed, other.closed, d.closed]);
  }, 120_000);
});

describe('STT decoder limits in the configuration', () => {
  it('default to counts (the budget from the machine memory, from 1 to 32) and refuse fractions', () => {
    const { limits } = resolveServerConfig({}, { tts: 'tone', stt: 'tone' });
    expect(Number.isInteger(limits.sttDecoders) && limits.sttDecoders >= 1 && limits.sttDecoders <= 32).toBe(true);
    expect(limits).toMatchObject({ sttDecodersPerSocket: 4, sttDecodersPerKey: 8 });
    for (const k of ['sttDecoders', 'sttDecodersPerSocket', 'sttDecodersPerKey']) {
      expect(() => resolveServerConfig({ limits: { [k]: 1.5 } }, { tts: 'tone', stt: 'tone' })).toThrow(new RegExp(`limits\\.${k} must be a whole number`));
      expect(() => resolveServerConfig({ limits: { [k]: 0 } }, { tts: 'tone', stt: 'tone' })).toThrow(/positive/);
    }
  });
});
