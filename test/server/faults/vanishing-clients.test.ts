/**
 * Faults: clients that vanish mid-stream (TCP socket destroyed, no close frame; issue 16 "Faults").
 * Each engine stream is closed within a second, and after 10,000 such sessions nothing leaks: live
 * sessions back to 0, engine streams opened == closed, handles, heap and ArrayBuffer memory flat within a bound.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { connect, startServer, type Harness } from '../harness.js';
import { registerFaultyEngine, until } from './faulty-engine.js';

const counts = registerFaultyEngine('vanishing-clients-test');
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** One session: setup, text, wait for audio, then the TCP socket is destroyed (no close frame). */
async function vanish(wsBase: string, key: string, i: number): Promise<void> {
  const c = connect(`${wsBase}/speech/tts`, { 'x-api-key': key });
  c.closed.catch(() => {});
  c.send({ type: 'setup', output_format: 'pcm' });
  // A few characters: the engine stream stays open (no end_of_stream), the socket carries little.
  c.send({ type: 'text', text: `hi ${i % 10}` });
  await c.waitFor((m) => m['type'] === 'audio');
  (c.ws as unknown as { _socket: import('node:net').Socket })._socket.destroy();
  await c.closed;
}

// A real collection before each heap reading (vitest runs without --expose-gc).
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heap = (): number => {
  gc();
  return process.memoryUsage().heapUsed;
};

const handles = (): number => process.getActiveResourcesInfo().filter((r) => r !== 'Timeout' && r !== 'Immediate').length;

/** Sessions in the leak test: the 10,000 (about 8 s here); VANISHING_CLIENTS sets another count. */
const CLIENTS = Number(process.env['VANISHING_CLIENTS'] ?? 10_000);

describe('vanishing clients', { timeout: 20_000 + CLIENTS * 20 }, () => {
  it('one client vanishes mid-stream: its engine stream is closed within 1 s', async () => {
    h = await startServer({ tts: 'vanishing-clients-test' });
    const opened = counts.opened;
    const c = connect(`${h.wsBase}/speech/tts`, { 'x-api-key': h.apiKey });
    c.send({ type: 'setup', output_format: 'pcm' });
    c.send({ type: 'text', text: 'a long text that keeps the engine streaming audio for a while yet' });
    await c.waitFor((m) => m['type'] === 'audio');
    expect(counts.opened).toBe(opened + 1);
    const t0 = performance.now();
    (c.ws as unknown as { _socket: import('node:net').Socket })._socket.destroy();
    await until(() => counts.closedAt[opened] !== undefined, 1000, 'the engine stream closed');
    expect(counts.closedAt[opened]! - t0).toBeLessThan(1000);
    await until(() => h!.server.context.sessions.live === 0, 1000, 'the session released');
  });

  it(`${CLIENTS.toLocaleString('en')} vanishing clients (50 at a time): live sessions 0, engine opened == closed, handles, heap and buffers flat`, async () => {
    h = await startServer({ tts: 'vanishing-clients-test', limits: { connectionsPerKey: 1000 } });
    const { wsBase, apiKey } = h;
    // Warm-up round: the first sessions allocate what the process keeps (JIT, pools).
    for (let i = 0; i < 100; i += 50) await Promise.all(Array.from({ length: 50 }, (_, j) => vanish(wsBase, apiKey, i + j)));
    await until(() => h!.server.context.sessions.live === 0, 2000, 'warm-up released');
    h.logs.length = 0;
    const before = { opened: counts.opened, closed: counts.closed, handles: handles(), heap: heap(), buffers: process.memoryUsage().arrayBuffers };
    for (let i = 0; i < CLIENTS; i += 50) {
      await Promise.all(Array.from({ length: 50 }, (_, j) => vanish(wsBase, apiKey, i + j)));
      // The harness keeps every log line (other tests read them): ~0.7 KB a session, not the server's.
      h.logs.length = 0;
    }
    await until(() => h!.server.context.sessions.live === 0, 3000, 'every session released');
    await until(() => counts.closed === counts.opened, 3000, 'every engine stream closed');
    expect(counts.opened - before.opened).toBe(CLIENTS);
    expect(counts.closed - before.closed).toBe(CLIENTS);
    await until(() => handles() <= before.handles + 5, 3000, `handles back near ${before.handles}`);
    // Client and server share this process. Heap after a collection: a leaked session (socket,
    // runner, engine, buffers) holds tens of KB, so even 1,000 of them would be far over 8 MB.
    // What does grow is the store's usage ledger (~150 B a session, by design) and compiled code.
    const grown = heap() - before.heap;
    // Socket and audio buffers live outside the heap: ArrayBuffer memory after the same collection.
    // (RSS is not a leak measure: it grew 24 MB alone and 103 MB beside the other test files.)
    const buffers = process.memoryUsage().arrayBuffers - before.buffers;
    if (process.env["FAULTS_VERBOSE"]) console.log({ heapGrownKB: grown >> 10, buffersGrownKB: buffers >> 10, handlesBefore: before.handles, handlesAfter: handles() });
    expect(grown).toBeLessThan(8 << 20);
    expect(buffers).toBeLessThan(8 << 20);
  });
});
