/**
 * Issue 11, the session runners under load a hostile (or just busy) peer can create: per-message
 * cost independent of the number of open requests, O(1) queues, bounded queues, no per-request
 * leaks. Assertions are on counts and sizes, not on wall time, except where noted.
 */
import { describe, expect, it } from 'vitest';
import { Readable } from 'node:stream';
import { createSttServerTransform } from '../../src/node/protocol.js';
import {
  DEFAULT_MAX_REQUESTS_PER_SOCKET,
  createScriptedSttEngine,
  createSttServerSession,
  createSttServerStream,
  createTtsClientSession,
  encodeBase64,
  sttServerMachine,
  type SttEngine,
} from '../../src/index.js';

describe('attacks: TTS client session', () => {
  it('frees the text chunker of each request when it ends: 100k requests, the count stays flat (issue 11 §11)', () => {
    const session = createTtsClientSession({ transport: { send: () => undefined, close: () => undefined }, onEvent: () => undefined });
    const count = (): number => (session as unknown as { chunkerCount: number }).chunkerCount;
    let max = 0;
    for (let i = 0; i < 100_000; i++) {
      const id = `r${i}`;
      session.setup({ client_req_id: id, close_ws_on_eos: false });
      session.sendText('hello wor', id); // "wor" is held back by the chunker
      max = Math.max(max, count());
      session.endOfStream(id);
      session.receive(JSON.stringify({ type: 'ready', request_id: 'x', model_name: 'm', sample_rate: 48000, frame_size: 3840, client_req_id: id }));
      session.receive(JSON.stringify({ type: 'end_of_stream', client_req_id: id }));
      max = Math.max(max, count());
    }
    expect(max).toBe(1);
    expect(count()).toBe(0);
    expect(session.state.requests.size).toBe(0);
  });

  it('abandon and a socket close free the chunkers too', () => {
    const session = createTtsClientSession({ transport: { send: () => undefined, close: () => undefined }, onEvent: () => undefined });
    const count = (): number => (session as unknown as { chunkerCount: number }).chunkerCount;
    for (const id of ['a', 'b', 'c']) {
      session.setup({ client_req_id: id, close_ws_on_eos: false });
      session.sendText('one tw', id);
    }
    expect(count()).toBe(3);
    session.abandon('a');
    expect(count()).toBe(2);
    session.transportClosed(1006);
    expect(count()).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------
// §2 multiplexed ids, §3 queues
// ---------------------------------------------------------------------------------------------

const AUDIO = encodeBase64(new Uint8Array(640));
const noTransport = { send: () => undefined, close: () => undefined };
const setupOf = (id: string): string => `{"type":"setup","input_format":"pcm","client_req_id":"${id}","close_ws_on_eos":false}`;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1]!;
}

/** Median over interleaved rounds of time(big) / time(small): a ratio on one machine at one moment, robust to its load. */
function ratio(small: () => void, big: () => void, rounds = 5): number {
  const rs: number[] = [];
  for (let r = 0; r < rounds; r++) {
    let t = performance.now();
    small();
    const a = performance.now() - t;
    t = performance.now();
    big();
    rs.push((performance.now() - t) / Math.max(a, 1e-3));
  }
  return median(rs);
}

function sttSocket(n: number, options: Record<string, unknown> = {}) {
  const session = createSttServerSession({ engine: createScriptedSttEngine(), transport: noTransport, maxRequests: 100_000, ...options });
  for (let i = 0; i < n; i++) session.receive(setupOf(`r${i}`));
  return session;
}

describe('attacks: multiplexed ids (issue 11 §2)', () => {
  it('an audio message costs about the same with 4,000 ids open as with one (the map copy made it ~25× at 4,000, 58× at 10,000)', () => {
    const one = sttSocket(1);
    const many = sttSocket(4000);
    const send = (s: ReturnType<typeof sttSocket>) => () => {
      for (let i = 0; i < 1000; i++) s.receive(`{"type":"audio","audio":"${AUDIO}","client_req_id":"r0"}`);
    };
    send(one)();
    send(many)();
    // GC of the larger heap and machine load move it a little; a copy per message moves it 25×.
    expect(ratio(send(one), send(many), 7)).toBeLessThan(10);
  });

  it('opening, ending (end_of_stream without id) and closing n requests is linear: 8n costs < 32× n (linear: 8×, quadratic: 64×)', () => {
    const open = (n: number) => () => void sttSocket(n);
    // The smaller ratio of a few rounds: load only ever makes a round slower.
    const best = (rs: number[]): number => Math.min(...rs);
    expect(best([0, 1, 2, 3].map(() => ratio(open(500), open(4000), 1)))).toBeLessThan(32);
    const endAll = (n: number) => {
      const s = sttSocket(n);
      return () => s.receive('{"type":"end_of_stream"}');
    };
    // Each round needs fresh sockets: build them outside the timed part.
    const rs: number[] = [];
    for (let r = 0; r < 4; r++) rs.push(ratio(endAll(500), endAll(4000), 1));
    expect(best(rs)).toBeLessThan(32);
    const closeAll = (n: number) => {
      const s = sttSocket(n);
      return () => s.transportClosed();
    };
    const cs: number[] = [];
    for (let r = 0; r < 4; r++) cs.push(ratio(closeAll(500), closeAll(4000), 1));
    expect(best(cs)).toBeLessThan(32);
  });

  it('caps the requests of one socket (default 256): one more gets error PROTOCOL_TOO_MANY_REQUESTS with its id, the others go on', () => {
    const sent: Record<string, unknown>[] = [];
    const session = createSttServerSession({ engine: createScriptedSttEngine(), transport: { send: (t: string) => void sent.push(JSON.parse(t)), close: () => undefined } });
    for (let i = 0; i < DEFAULT_MAX_REQUESTS_PER_SOCKET + 1; i++) session.receive(setupOf(`r${i}`));
    const errors = sent.filter((m) => m.type === 'error');
    expect(errors).toEqual([{ type: 'error', code: 1008, message: expect.stringContaining('256'), client_req_id: `r${DEFAULT_MAX_REQUESTS_PER_SOCKET}` }]);
    expect(session.closed).toBe(false);
    expect(session.state.requests.size).toBe(DEFAULT_MAX_REQUESTS_PER_SOCKET);
    // Another request still works once one ended.
    session.receive('{"type":"end_of_stream","client_req_id":"r0"}');
    sent.length = 0;
    session.receive(setupOf('late'));
    expect(sent.filter((m) => m.client_req_id === 'late').map((m) => m.type)).toEqual(['ready']);
  });

  it('maxRequests is an option of the runner; a socket that does not multiplex closes when it passes it', () => {
    const sent: Record<string, unknown>[] = [];
    let closed: number | undefined;
    const session = createSttServerSession({
      engine: createScriptedSttEngine(),
      maxRequests: 1,
      transport: { send: (t: string) => void sent.push(JSON.parse(t)), close: (code: number) => void (closed = code) },
    });
    session.receive('{"type":"setup","input_format":"pcm","client_req_id":"a"}');
    session.receive('{"type":"setup","input_format":"pcm","client_req_id":"b"}');
    expect(sent.at(-1)).toMatchObject({ type: 'error', code: 1008, client_req_id: 'b' });
    expect(closed).toBe(1008);
    expect(() => createSttServerSession({ engine: createScriptedSttEngine(), transport: noTransport, maxRequests: 0 })).toThrowError(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});

/** An STT engine whose pushes wait until `release()`: a stalled model. */
function stalledEngine() {
  const waiting: Array<() => void> = [];
  let stalled = true;
  const engine: SttEngine = {
    open: () => ({
      info: { delayInFrames: 0 },
      push: () => (stalled ? new Promise<void>((r) => waiting.push(r)) : undefined),
      close: () => undefined,
    }),
  };
  return {
    engine,
    release() {
      stalled = false;
      for (const w of waiting.splice(0)) w();
    },
  };
}

describe('attacks: queues before the engine (issue 11 §3)', () => {
  const chunk = `{"type":"audio","audio":"${encodeBase64(new Uint8Array(64 * 1024))}"}`;

  it('a stalled engine and a transport that cannot pause: past maxQueuedBytes the request fails with PROTOCOL_QUEUE_FULL, memory stays bounded', async () => {
    const { engine } = stalledEngine();
    const sent: Record<string, unknown>[] = [];
    let closed: number | undefined;
    const session = createSttServerSession({ engine, maxQueuedBytes: 1 << 20, transport: { send: (t: string) => void sent.push(JSON.parse(t)), close: (c: number) => void (closed = c) } });
    session.receive('{"type":"setup","input_format":"pcm"}');
    await new Promise((r) => setTimeout(r, 0));
    const queued = () => (session as unknown as { queued: { bytes: number } }).queued.bytes;
    let peak = 0;
    for (let i = 0; i < 400 && !session.closed; i++) {
      session.receive(chunk); // 400 × 64 KiB = 25 MiB offered
      peak = Math.max(peak, queued());
    }
    expect(sent.at(-1)).toMatchObject({ type: 'error', code: 1011, message: expect.stringContaining('queued') });
    expect(closed).toBe(1011);
    expect(peak).toBeLessThanOrEqual((1 << 20) + 64 * 1024);
    expect(queued()).toBe(0);
  });

  it('with pauseReading/resumeReading the runner pauses past the bound and resumes at half, and nothing fails', async () => {
    const { engine, release } = stalledEngine();
    const calls: string[] = [];
    const sent: Record<string, unknown>[] = [];
    const session = createSttServerSession({
      engine,
      maxQueuedBytes: 1 << 20,
      transport: { send: (t: string) => void sent.push(JSON.parse(t)), close: () => undefined, pauseReading: () => void calls.push('pause'), resumeReading: () => void calls.push('resume') },
    });
    session.receive('{"type":"setup","input_format":"pcm"}');
    await new Promise((r) => setTimeout(r, 0));
    let i = 0;
    while (calls.length === 0 && i < 100) {
      session.receive(chunk);
      i++;
    }
    expect(calls).toEqual(['pause']);
    expect(i).toBe(18); // the first chunk is in the engine; 17 × 64 KiB queued is the first amount over 1 MiB
    release();
    await session.whenIdle();
    expect(calls).toEqual(['pause', 'resume']);
    expect(sent.filter((m) => m.type === 'error')).toEqual([]);
    expect(session.closed).toBe(false);
  });

  it('small audio messages queued behind a slow engine cost O(1) each: 120k cost < 24× 15k (Array.shift made it quadratic: 160k took 14 s)', async () => {
    const run = async (n: number): Promise<number> => {
      const session = createSttServerSession({ engine: createScriptedSttEngine({ async: true }), transport: noTransport, maxQueuedMessages: 1_000_000 });
      session.receive('{"type":"setup","input_format":"pcm"}');
      const msg = `{"type":"audio","audio":"${encodeBase64(new Uint8Array(2))}"}`;
      const t = performance.now();
      for (let i = 0; i < n; i++) session.receive(msg);
      await session.whenIdle();
      expect(session.closed).toBe(false);
      return performance.now() - t;
    };
    await run(5000);
    // 8× the messages: linear costs ~8× (GC noise: 4–12×), quadratic ~64×. The smaller of two rounds.
    const rs: number[] = [];
    for (let r = 0; r < 2; r++) rs.push((await run(120_000)) / Math.max(await run(15_000), 1e-3));
    expect(Math.min(...rs)).toBeLessThan(24);
  });

  it('the STT server machine answers queued flushes in order, each in O(1): 16,000 cost < 8× 4,000 (the list was copied per flush)', () => {
    const cycle = (n: number): { ms: number; ids: unknown[]; first: unknown[] } => {
      const t = performance.now();
      let state = sttServerMachine.initial();
      state = sttServerMachine.transition(state, { type: 'receive', data: '{"type":"setup","input_format":"pcm"}' }).state;
      state = sttServerMachine.transition(state, { type: 'engine', key: null, stream: 1, event: { type: 'opened', requestId: 'R', info: { delayInFrames: 0 } } }).state;
      for (let i = 0; i < n; i++) state = sttServerMachine.transition(state, { type: 'receive', data: `{"type":"flush","flush_id":${i}}` }).state;
      expect(state.requests.get(null)!.pendingFlushes.length).toBe(n);
      const before = state;
      const ids: unknown[] = [];
      for (let i = 0; i < n; i++) {
        const r = sttServerMachine.transition(state, { type: 'engine', key: null, stream: 1, event: { type: 'flush_done', flush_id: i } });
        for (const e of r.effects) if (e.type === 'send') ids.push((e.message as { flush_id: unknown }).flush_id);
        state = r.state;
      }
      // Purity: the older state still holds its queue.
      return { ms: performance.now() - t, ids, first: [...before.requests.get(null)!.pendingFlushes].slice(0, 3) };
    };
    const small = cycle(4000);
    expect(small.ids).toEqual(Array.from({ length: 4000 }, (_, i) => i));
    expect(small.first).toEqual([0, 1, 2]);
    const rs: number[] = [];
    for (let r = 0; r < 3; r++) rs.push(cycle(16_000).ms / Math.max(cycle(4000).ms, 1e-3));
    expect(median(rs)).toBeLessThan(8);
  });

  it('the web stream pair and the Node Transform hold the writer while the queue is full (no PROTOCOL_QUEUE_FULL)', async () => {
    const sleep = (ms: number) => new Promise<'blocked'>((r) => setTimeout(() => r('blocked'), ms));
    // Web streams.
    {
      const { engine, release } = stalledEngine();
      const { readable, writable } = createSttServerStream({ engine, maxQueuedBytes: 1 << 20 });
      const out: string[] = [];
      const reading = (async () => {
        for await (const frame of readable as unknown as AsyncIterable<string>) out.push(frame);
      })();
      const writer = writable.getWriter();
      await writer.write('{"type":"setup","input_format":"pcm"}');
      await new Promise((r) => setTimeout(r, 0));
      let blockedAt = -1;
      let pending: Promise<unknown> = Promise.resolve();
      for (let i = 0; i < 40; i++) {
        pending = writer.write(chunk);
        if ((await Promise.race([pending, sleep(30)])) === 'blocked') {
          blockedAt = i;
          break;
        }
      }
      expect(blockedAt).toBeGreaterThan(10);
      release();
      await pending;
      for (let i = 0; i < 5; i++) await writer.write(chunk);
      await writer.write('{"type":"end_of_stream"}');
      await writer.close();
      await reading;
      expect(out.map((f) => JSON.parse(f).type)).not.toContain('error');
      expect(out.map((f) => JSON.parse(f).type).at(-1)).toBe('end_of_stream');
    }
    // Node Transform: a piped source waits too.
    {
      const { engine, release } = stalledEngine();
      const t = createSttServerTransform({ engine, maxQueuedBytes: 1 << 20 });
      const frames = ['{"type":"setup","input_format":"pcm"}', ...Array.from({ length: 40 }, () => chunk), '{"type":"end_of_stream"}'];
      const out: string[] = [];
      t.on('data', (f: string) => out.push(f));
      const done = new Promise<void>((resolve, reject) => t.on('end', resolve).on('error', reject));
      Readable.from(frames).pipe(t);
      await new Promise((r) => setTimeout(r, 100));
      const queued = (t.session as unknown as { queued: { bytes: number } }).queued.bytes;
      expect(queued).toBeLessThanOrEqual((1 << 20) + 64 * 1024);
      release();
      await done;
      expect(out.map((f) => JSON.parse(f).type)).not.toContain('error');
      expect(out.map((f) => JSON.parse(f).type).at(-1)).toBe('end_of_stream');
    }
  });
});
