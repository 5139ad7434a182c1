/**
 * The database goes away under a running `voicewire serve` (issue 16): /readyz turns 503 within
 * a few seconds (store pinged every 1000 ms, down after 2 failed pings: src/server/store-health.ts), a live
 * session finishes, new sessions get STORE_UNAVAILABLE in the §7 forms (WebSocket `error` 1011,
 * HTTP 503 plain text), and all recovers without a restart once the database is back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasPostgres, needsPostgres, startPostgres, type PostgresCluster } from '../../helpers/postgres.js';
import { connect, audioBytes } from '../harness.js';
import { cli, startServe, type ServeProcess } from './serve-process.js';

let pg: PostgresCluster | undefined;
let s: ServeProcess | undefined;

/** Polls /readyz until it answers `status`; resolves with the time it took (rejects past `boundMs`). */
async function readyzBecomes(base: string, status: number, boundMs: number): Promise<number> {
  const t0 = Date.now();
  while (Date.now() - t0 < boundMs) {
    const r = await fetch(`${base}/readyz`).catch(() => undefined);
    if (r?.status === status) return Date.now() - t0;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error(`/readyz did not become ${status} within ${boundMs} ms`);
}

describe.skipIf(!hasPostgres())(needsPostgres('the database goes away and comes back'), () => {
  beforeAll(async () => {
    pg = await startPostgres();
  }, 30_000);

  afterAll(async () => {
    const code = await s?.stop();
    pg?.destroy();
    expect(code).toBe(0);
  }, 30_000);

  it('readiness 503 within seconds, the live session finishes, new ones get STORE_UNAVAILABLE, then it all recovers', async () => {
    const key = cli(['keys', 'create', '--org', 'acme', '--store', pg!.url()]).trim();
    s = await startServe(['--store', pg!.url(), '--no-bootstrap']);
    expect((await fetch(`${s.base}/readyz`)).status).toBe(200);

    const live = connect(`${s.wsBase}/speech/tts`, { 'x-api-key': key });
    live.send({ type: 'setup', output_format: 'pcm_16000' });
    live.send({ type: 'text', text: 'spoken before the outage.', flush: true });
    await live.waitFor((m) => m['type'] === 'audio');

    pg!.stop();
    const took = await readyzBecomes(s.base, 503, 5000);
    expect(took).toBeLessThan(5000);
    expect(await (await fetch(`${s.base}/readyz`)).json()).toEqual({ status: 'store_unavailable' });
    expect((await fetch(`${s.base}/healthz`)).status).toBe(200); // alive, only not ready

    // New sessions: the §7 forms of STORE_UNAVAILABLE.
    const refused = connect(`${s.wsBase}/speech/tts`, { 'x-api-key': key });
    const closed = await refused.closed;
    expect(closed.code).toBe(1011);
    expect(refused.messages[0]).toMatchObject({ type: 'error', code: 1011 });
    // Exactly that: the driver's `connect ECONNREFUSED 127.0.0.1:port` is for the logs (issue 20 §8).
    expect(refused.messages[0]!['message']).toBe('store unavailable');
    const post = await fetch(`${s.base}/post/speech/tts`, { method: 'POST', headers: { 'x-api-key': key }, body: '{"text":"hi"}' });
    expect(post.status).toBe(503);
    expect(post.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await post.text()).toBe('store unavailable');
    expect(s.stderr()).toMatch(/ECONNREFUSED|terminating connection|Connection terminated/);

    // The live session was not cut: it ends normally with its audio.
    live.send({ type: 'end_of_stream' });
    expect((await live.closed).code).toBe(1000);
    expect(live.messages.at(-1)).toEqual({ type: 'end_of_stream' });
    expect(audioBytes(live.messages).length).toBeGreaterThan(0);

    pg!.start();
    expect(await readyzBecomes(s.base, 200, 8000)).toBeLessThan(8000);
    const again = await fetch(`${s.base}/post/speech/tts`, { method: 'POST', headers: { 'x-api-key': key }, body: JSON.stringify({ text: 'back again', only_audio: true }) });
    expect(again.status).toBe(200);
    expect((await again.arrayBuffer()).byteLength).toBeGreaterThan(0);
    const ws = connect(`${s.wsBase}/speech/tts`, { 'x-api-key': key });
    ws.send({ type: 'setup', output_format: 'pcm_16000' });
    ws.send({ type: 'text', text: 'after the outage.', flush: true });
    ws.send({ type: 'end_of_stream' });
    expect((await ws.closed).code).toBe(1000);
    expect(audioBytes(ws.messages).length).toBeGreaterThan(0);
  }, 30_000);
});
