/**
 * Faults: an engine that throws, hangs or emits after close (issue 16 "Faults"). That request gets
 * a 1011 `error` (docs/api.md §7.3); the other requests on the same multiplexed socket and on
 * the server go on; a hanging engine is cut by the per-request engine timeout.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { connect, startServer, type Harness } from '../harness.js';
import { registerFaultyEngine, until } from './faulty-engine.js';
import { STT_ENGINES } from '../../../src/engines/registry.js';
import { createToneSttEngine } from '../../../src/engines/tone.js';

// An STT engine whose second frame never finishes: the engine timeout must end that request.
let sttClosed = 0;
STT_ENGINES['stt-hang-test'] = {
  create: () => {
    const inner = createToneSttEngine();
    return {
      async open(config, emit) {
        const s = await inner.open(config, emit);
        let frames = 0;
        return { info: s.info, push: (f) => (++frames >= 2 ? new Promise<void>(() => {}) : s.push(f)), close: () => (sttClosed++, s.close()) };
      },
    };
  },
};

const counts = registerFaultyEngine('faulty-engines-test');
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function multiplexed(trigger: string): Promise<void> {
  h = await startServer({ tts: 'faulty-engines-test', limits: { engineTimeoutSeconds: 0.5 } });
  const before = { ...counts };
  const c = connect(`${h.wsBase}/speech/tts`, { 'x-api-key': h.apiKey });
  const bystander = connect(`${h.wsBase}/speech/tts`, { 'x-api-key': h.apiKey });
  for (const id of ['bad', 'good']) c.send({ type: 'setup', output_format: 'pcm', close_ws_on_eos: false, client_req_id: id });
  bystander.send({ type: 'setup', output_format: 'pcm' });
  await c.waitFor((m) => m['type'] === 'ready' && m['client_req_id'] === 'good');
  const t0 = Date.now();
  c.send({ type: 'text', text: trigger, client_req_id: 'bad' });
  const err = await c.waitFor((m) => m['type'] === 'error');
  expect(Date.now() - t0).toBeLessThan(3000);
  expect(err).toMatchObject({ type: 'error', code: 1011, client_req_id: 'bad' });
  // The other request on the same socket goes on.
  c.send({ type: 'text', text: 'still here', client_req_id: 'good' });
  c.send({ type: 'end_of_stream', client_req_id: 'good' });
  await c.waitFor((m) => m['type'] === 'end_of_stream' && m['client_req_id'] === 'good');
  expect(c.messages.filter((m) => m['type'] === 'text' && m['client_req_id'] === 'good').map((m) => m['text'])).toEqual(['still', 'here']);
  // And another socket on the server.
  bystander.send({ type: 'text', text: 'fine' });
  bystander.send({ type: 'end_of_stream' });
  expect((await bystander.closed).code).toBe(1000);
  expect(bystander.messages.at(-1)).toEqual({ type: 'end_of_stream' });
  c.ws.close();
  await c.closed;
  await until(() => counts.closed - before.closed === counts.opened - before.opened, 2000, 'every engine stream closed');
  expect(counts.opened - before.opened).toBe(3);
  // Nothing of the bad request reaches the socket after its error.
  const afterErr = c.messages.slice(c.messages.indexOf(err) + 1).filter((m) => m['client_req_id'] === 'bad');
  expect(afterErr).toEqual([]);
}

describe('engine faults', { timeout: 15_000 }, () => {
  it('an engine that throws: that request gets error 1011, the other request on the socket and another socket go on', async () => {
    await multiplexed('THROW now');
  });

  it('an engine that hangs: cut by the engine timeout (0.5 s here) with error 1011; the others go on', async () => {
    await multiplexed('HANG forever');
  });

  it('an engine that emits after close: error 1011, nothing late reaches the socket, the others go on', async () => {
    const late = counts.lateEmits;
    await multiplexed('LATE frames');
    await until(() => counts.lateEmits > late, 2000, 'the late emit');
  });

  it('a hanging engine on POST /post/speech/tts: 500 with the 1011 form within the engine timeout', async () => {
    h = await startServer({ tts: 'faulty-engines-test', limits: { engineTimeoutSeconds: 0.5 } });
    const t0 = Date.now();
    const r = await fetch(`${h.base}/post/speech/tts`, { method: 'POST', headers: { 'x-api-key': h.apiKey }, body: JSON.stringify({ text: 'HANG please', output_format: 'pcm' }), signal: AbortSignal.timeout(5000) });
    expect(r.status).toBe(500);
    expect(await r.text()).toMatch(/^error from server 1011: /);
    expect(Date.now() - t0).toBeLessThan(3000);
  });

  it('an STT engine whose push hangs: error 1011 within the engine timeout, the stream closed, the server serves on', async () => {
    h = await startServer({ stt: 'stt-hang-test', limits: { engineTimeoutSeconds: 0.5 } });
    const closed = sttClosed;
    const c = connect(`${h.wsBase}/speech/asr`, { 'x-api-key': h.apiKey });
    c.send({ type: 'setup', input_format: 'pcm' });
    await c.waitFor((m) => m['type'] === 'ready');
    const t0 = Date.now();
    for (let i = 0; i < 4; i++) c.send({ type: 'audio', audio: Buffer.alloc(3840).toString('base64') });
    const { code } = await c.closed;
    expect(code).toBe(1011);
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(c.messages.at(-1)).toMatchObject({ type: 'error', code: 1011 });
    expect(String(c.messages.at(-1)!['message'])).toMatch(/took longer than 0.5 s/);
    await until(() => sttClosed === closed + 1, 1000, 'the STT stream closed');
    const tts = connect(`${h.wsBase}/speech/tts`, { 'x-api-key': h.apiKey });
    tts.send({ type: 'setup', output_format: 'pcm' });
    tts.send({ type: 'text', text: 'fine' });
    tts.send({ type: 'end_of_stream' });
    expect((await tts.closed).code).toBe(1000);
  });
});
