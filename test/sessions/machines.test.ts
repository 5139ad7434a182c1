import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { VoicewireError } from '../../src/util/errors.js';
import {
  createScriptedSttEngine,
  createScriptedTtsEngine,
  createSttClientSession,
  createSttServerSession,
  createTtsClientSession,
  createTtsServerSession,
  parseSttServerMessage,
  parseTtsServerMessage,
  sttServerMachine,
  ttsServerMachine,
  type SttClientEvent,
  type SttServerEffect,
  type TtsClientEvent,
} from '../../src/index.js';

const ZERO_FRAME_B64 = Buffer.alloc(3840).toString('base64');

describe('the pure STT server machine: effects are data', () => {
  it('setup → engine open; opened → ready; engine events → messages; late events dropped', () => {
    let state = sttServerMachine.initial();
    let r = sttServerMachine.transition(state, { type: 'receive', data: '{"type":"setup","input_format":"pcm","client_req_id":"a","close_ws_on_eos":false}' });
    expect(r.effects).toEqual([
      { type: 'emit', event: { type: 'request_started', clientReqId: 'a' } },
      { type: 'engine', key: 'a', stream: 1, op: { op: 'open', config: { modelName: 'default', inputFormat: 'pcm', jsonConfig: {}, clientReqId: 'a' } } },
    ]);
    state = r.state;
    r = sttServerMachine.transition(state, { type: 'engine', key: 'a', stream: 1, event: { type: 'opened', requestId: 'R', info: { delayInFrames: 3 } } });
    expect(r.effects).toEqual([
      { type: 'send', message: { type: 'ready', request_id: 'R', model_name: 'default', sample_rate: 24000, frame_size: 1920, delay_in_frames: 3, client_req_id: 'a' } },
    ]);
    state = r.state;
    r = sttServerMachine.transition(state, { type: 'receive', data: `{"type":"audio","audio":"${ZERO_FRAME_B64}","client_req_id":"a"}` });
    expect(r.effects).toHaveLength(1);
    const audio = r.effects[0] as Extract<SttServerEffect, { type: 'engine' }>;
    expect(audio.op.op).toBe('audio');
    expect((audio.op as { audio: Uint8Array }).audio.byteLength).toBe(3840);
    state = r.state;
    r = sttServerMachine.transition(state, { type: 'engine', key: 'a', stream: 1, event: { type: 'step', vad: [] } });
    expect(r.effects).toEqual([{ type: 'send', message: { type: 'step', vad: [], step_idx: 0, step_duration_s: 0.08, total_duration_s: 0.08, client_req_id: 'a' } }]);
    state = r.state;
    // An event for an older stream of the same id, or for an id with no request, is dropped.
    expect(sttServerMachine.transition(state, { type: 'engine', key: 'a', stream: 0, event: { type: 'step', vad: [] } }).effects).toEqual([]);
    expect(sttServerMachine.transition(state, { type: 'engine', key: 'b', stream: 1, event: { type: 'step', vad: [] } }).effects).toEqual([]);
    // The state objects are not mutated.
    expect(sttServerMachine.transition(state, { type: 'engine', key: 'a', stream: 1, event: { type: 'step', vad: [] } }).effects[0]).toMatchObject({ message: { step_idx: 1 } });
    expect(sttServerMachine.transition(state, { type: 'engine', key: 'a', stream: 1, event: { type: 'step', vad: [] } }).effects[0]).toMatchObject({ message: { step_idx: 1 } });
  });

  it('a closed socket ignores every event', () => {
    let state = sttServerMachine.initial();
    state = sttServerMachine.transition(state, { type: 'receive', data: '{"type":"audio","audio":""}' }).state;
    expect(state.phase).toBe('closed');
    expect(sttServerMachine.transition(state, { type: 'receive', data: '{"type":"setup"}' }).effects).toEqual([]);
    expect(ttsServerMachine.transition(ttsServerMachine.initial(), { type: 'transport_closed' }).state.phase).toBe('closed');
  });
});

// ------------------------------------------------------------------------------------------------
// Random conversations
// ------------------------------------------------------------------------------------------------

type Frame = string;
const ids = fc.constantFrom<string | undefined>(undefined, 'a', 'b', 'c');
const withId = (m: Record<string, unknown>, id: string | undefined) => JSON.stringify(id === undefined ? m : { ...m, client_req_id: id });

const sttFrame: fc.Arbitrary<Frame> = fc.oneof(
  { weight: 3, arbitrary: fc.tuple(ids, fc.constantFrom(true, false, undefined), fc.constantFrom('pcm', 'pcm', 'pcm', 'mp3', 'wav')).map(([id, close, fmt]) => withId({ type: 'setup', input_format: fmt, ...(close === undefined ? {} : { close_ws_on_eos: close }) }, id)) },
  { weight: 6, arbitrary: fc.tuple(ids, fc.nat(9000)).map(([id, n]) => withId({ type: 'audio', audio: Buffer.alloc(n).toString('base64') }, id)) },
  { weight: 2, arbitrary: fc.tuple(ids, fc.oneof(fc.integer(), fc.string({ maxLength: 4 }))).map(([id, f]) => withId({ type: 'flush', flush_id: f }, id)) },
  { weight: 2, arbitrary: ids.map((id) => withId({ type: 'end_of_stream' }, id)) },
  { weight: 1, arbitrary: fc.oneof(fc.string({ maxLength: 10 }), fc.constant('{"type":"flush","flush_id":true,"client_req_id":"a"}'), fc.constant('{"type":"audio","audio":"!!","client_req_id":"b"}'), fc.jsonValue().map((v) => JSON.stringify(v))) },
);

interface Run {
  outputs: Array<{ msg?: Record<string, unknown>; close?: number }>;
  opened: number;
  closed: number;
}

function runStt(frames: Frame[], engineOptions: Parameters<typeof createScriptedSttEngine>[0]): Run {
  const outputs: Run['outputs'] = [];
  const engine = createScriptedSttEngine(engineOptions);
  const session = createSttServerSession({
    engine,
    transport: { send: (t) => outputs.push({ msg: JSON.parse(t) as Record<string, unknown> }), close: (code) => outputs.push({ close: code }) },
  });
  for (const f of frames) session.receive(f);
  session.transportClosed();
  return { outputs, opened: engine.opened, closed: engine.closed };
}

/** Invariants every run must satisfy, whatever the client sent. */
function checkInvariants(run: Run, parse: (m: unknown) => unknown): void {
  const closes = run.outputs.filter((o) => o.close !== undefined);
  expect(closes.length).toBeLessThanOrEqual(1);
  if (closes.length === 1) expect(run.outputs.at(-1)!.close).toBeDefined(); // nothing after the close
  const steps = new Map<string, number>();
  run.outputs.forEach((o, i) => {
    if (o.msg === undefined) return;
    expect(() => parse(o.msg)).not.toThrow(); // well-formed
    const m = o.msg;
    const id = (m['client_req_id'] as string | undefined) ?? '';
    if (m['type'] === 'error') {
      expect(typeof m['message'] === 'string' && m['message'].length > 0).toBe(true);
      expect([1008, 1011]).toContain(m['code']);
      if (m['client_req_id'] === undefined) expect(run.outputs[i + 1]?.close).toBe(m['code']); // an error for no request ends the socket
    }
    // Own timing per request: step_idx counts 0, 1, 2… from each ready / end_of_stream of that id.
    if (m['type'] === 'ready' || m['type'] === 'end_of_stream' || m['type'] === 'error') steps.set(id, 0);
    if (m['type'] === 'step') {
      expect(m['step_idx']).toBe(steps.get(id) ?? 0);
      steps.set(id, (steps.get(id) ?? 0) + 1);
    }
  });
  // Every engine stream that was opened was closed again once the socket went away.
  expect(run.closed).toBe(run.opened);
}

describe('fast-check: random conversations never crash a machine', () => {
  it('STT server: any frame sequence, sync engine', () => {
    fc.assert(
      fc.property(fc.array(sttFrame, { maxLength: 25 }), fc.nat(3), fc.option(fc.nat(12), { nil: undefined }), (frames, delay, failAt) => {
        const run = runStt(frames, failAt === undefined ? { delayInFrames: delay } : { delayInFrames: delay, failAtFrame: failAt });
        checkInvariants(run, parseSttServerMessage);
      }),
      { numRuns: 300 },
    );
  });

  it('TTS server: any frame sequence', () => {
    const ttsFrame: fc.Arbitrary<Frame> = fc.oneof(
      { weight: 3, arbitrary: fc.tuple(ids, fc.constantFrom(true, false, undefined), fc.constantFrom('pcm', 'pcm', 'wav', 'xx')).map(([id, close, fmt]) => withId({ type: 'setup', output_format: fmt, ...(close === undefined ? {} : { close_ws_on_eos: close }) }, id)) },
      { weight: 6, arbitrary: fc.tuple(ids, fc.constantFrom('Hello world', 'a <break time="0.2s" /> b', '<flush>', 'x <br', 'eak time="1s" /> y', '', 'one')).map(([id, t]) => withId({ type: 'text', text: t }, id)) },
      { weight: 2, arbitrary: ids.map((id) => withId({ type: 'end_of_stream' }, id)) },
      { weight: 1, arbitrary: fc.oneof(fc.string({ maxLength: 10 }), fc.jsonValue().map((v) => JSON.stringify(v))) },
    );
    fc.assert(
      fc.property(fc.array(ttsFrame, { maxLength: 25 }), fc.nat(2), fc.boolean(), (frames, lookahead, needMore) => {
        const outputs: Run['outputs'] = [];
        const engine = createScriptedTtsEngine({ lookaheadWords: lookahead, needMoreText: needMore });
        const session = createTtsServerSession({ engine, transport: { send: (t) => outputs.push({ msg: JSON.parse(t) as Record<string, unknown> }), close: (code) => outputs.push({ close: code }) } });
        for (const f of frames) session.receive(f);
        session.transportClosed();
        checkInvariants({ outputs, opened: engine.opened, closed: engine.closed }, parseTtsServerMessage);
        // Audio times restart per request and never overlap within one.
        const last = new Map<string, number>();
        for (const o of outputs) {
          const m = o.msg;
          if (!m) continue;
          const id = (m['client_req_id'] as string | undefined) ?? '';
          if (m['type'] === 'ready' || m['type'] === 'end_of_stream') last.set(id, 0);
          if (m['type'] === 'audio') {
            expect(m['start_s']).toBe(last.get(id) ?? 0);
            last.set(id, m['stop_s'] as number);
          }
        }
      }),
      { numRuns: 200 },
    );
  });

  it('STT server with an async engine: same invariants once everything settled', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(sttFrame, { maxLength: 15 }), fc.nat(2), async (frames, delay) => {
        const outputs: Run['outputs'] = [];
        const engine = createScriptedSttEngine({ delayInFrames: delay, async: true });
        const session = createSttServerSession({ engine, transport: { send: (t) => outputs.push({ msg: JSON.parse(t) as Record<string, unknown> }), close: (code) => outputs.push({ close: code }) } });
        for (const f of frames) {
          session.receive(f);
          if (f.length % 2 === 0) await Promise.resolve(); // sometimes let the engine run in between
        }
        await session.whenIdle();
        session.transportClosed();
        await session.whenIdle();
        await new Promise((r) => setTimeout(r, 0));
        checkInvariants({ outputs, opened: engine.opened, closed: engine.closed }, parseSttServerMessage);
      }),
      { numRuns: 80 },
    );
  });
});

// ------------------------------------------------------------------------------------------------
// Invalid sequences end in a well-formed error
// ------------------------------------------------------------------------------------------------

/** A valid multiplexed prefix: setups for a subset of a/b/c, then audio and flushes for them. */
const validPrefix = fc
  .tuple(fc.subarray(['a', 'b', 'c'], { minLength: 1 }), fc.array(fc.tuple(fc.nat(2), fc.constantFrom('audio', 'flush')), { maxLength: 8 }))
  .map(([active, actions]) => ({
    active,
    frames: [
      ...active.map((id) => withId({ type: 'setup', input_format: 'pcm', close_ws_on_eos: false }, id)),
      ...actions.map(([i, kind]) => {
        const id = active[i % active.length]!;
        return kind === 'audio' ? withId({ type: 'audio', audio: ZERO_FRAME_B64 }, id) : withId({ type: 'flush', flush_id: i }, id);
      }),
    ],
  }));

type Invalid = { frame: (active: string[]) => string; id: (active: string[]) => string | undefined; closes: boolean };
const invalids: Invalid[] = [
  { frame: () => 'garbage', id: () => undefined, closes: true },
  { frame: () => '{"type":"audio","audio":""}', id: () => undefined, closes: true }, // no id on a multiplexed socket
  { frame: () => withId({ type: 'audio', audio: ZERO_FRAME_B64 }, 'zz'), id: () => 'zz', closes: false }, // unknown id
  { frame: (a) => withId({ type: 'setup', input_format: 'pcm', close_ws_on_eos: false }, a[0]), id: (a) => a[0], closes: false }, // active id reused
  { frame: (a) => withId({ type: 'flush', flush_id: true }, a[0]), id: (a) => a[0], closes: false }, // wrong field type
  { frame: (a) => withId({ type: 'audio', audio: '!!!!' }, a[0]), id: (a) => a[0], closes: false }, // not base64
  { frame: (a) => withId({ type: 'dance' }, a[0]), id: (a) => a[0], closes: false }, // unknown type
];

describe('fast-check: every invalid sequence ends in a well-formed error', () => {
  it('STT multiplexed socket: a valid prefix, then one invalid frame', () => {
    fc.assert(
      fc.property(validPrefix, fc.constantFrom(...invalids), (prefix, invalid) => {
        const outputs: Run['outputs'] = [];
        const session = createSttServerSession({
          engine: createScriptedSttEngine({ delayInFrames: 1 }),
          transport: { send: (t) => outputs.push({ msg: JSON.parse(t) as Record<string, unknown> }), close: (code) => outputs.push({ close: code }) },
        });
        for (const f of prefix.frames) session.receive(f);
        expect(outputs.some((o) => o.msg?.['type'] === 'error' || o.close !== undefined)).toBe(false); // the prefix is valid
        const n = outputs.length;
        session.receive(invalid.frame(prefix.active));
        const after = outputs.slice(n);
        const expectedId = invalid.id(prefix.active);
        const error = after.find((o) => o.msg?.['type'] === 'error')?.msg;
        expect(error).toBeDefined();
        expect(error).toEqual(expectedId === undefined ? { type: 'error', message: expect.any(String), code: 1008 } : { type: 'error', message: expect.any(String), code: 1008, client_req_id: expectedId });
        expect(after.some((o) => o.close === 1008)).toBe(invalid.closes);
        checkInvariants(runStt([...prefix.frames, invalid.frame(prefix.active)], { delayInFrames: 1 }), parseSttServerMessage);
      }),
      { numRuns: 150 },
    );
  });

  it('first message not a setup, on either route: error 1008 then close 1008', () => {
    fc.assert(
      fc.property(fc.oneof(sttFrame.filter((f) => !f.includes('"setup"')), fc.string()), ids, (frame, _id) => {
        const out: Array<unknown> = [];
        const s = createSttServerSession({ engine: createScriptedSttEngine(), transport: { send: (t) => out.push(JSON.parse(t)), close: (c) => out.push(c) } });
        s.receive(frame);
        expect(out).toHaveLength(2);
        expect(out[0]).toMatchObject({ type: 'error', code: 1008 });
        expect(out[1]).toBe(1008);
        const out2: Array<unknown> = [];
        const t = createTtsServerSession({ engine: createScriptedTtsEngine(), transport: { send: (x) => out2.push(JSON.parse(x)), close: (c) => out2.push(c) } });
        t.receive(frame.replace('"setup"', '"text"'));
        expect(out2[0]).toMatchObject({ type: 'error', code: 1008 });
        expect(out2[1]).toBe(1008);
      }),
      { numRuns: 100 },
    );
  });
});

// ------------------------------------------------------------------------------------------------
// Client machines
// ------------------------------------------------------------------------------------------------

const step = (i: number, id?: string) => ({ type: 'step', vad: [{ horizon_s: 2, inactivity_prob: 0.1 }], step_idx: i, step_duration_s: 0.08, total_duration_s: (i + 1) * 0.08, ...(id ? { client_req_id: id } : {}) });
const serverFrames = fc.oneof(
  fc.constant({ type: 'ready', request_id: 'r', model_name: 'm', sample_rate: 24000, frame_size: 1920, delay_in_frames: 2 }),
  fc.constant({ type: 'text', text: 'x', start_s: 0 }),
  fc.constant({ type: 'end_text', stop_s: 1 }),
  fc.nat(5).map((i) => step(i)),
  fc.constant({ type: 'flushed', flush_id: 1 }),
  fc.constant({ type: 'end_of_stream' }),
  fc.constant({ type: 'error', message: 'e', code: 1011 }),
  fc.constant({ type: 'audio', audio: 'AAAA' }),
  fc.string({ maxLength: 6 }),
);

describe('client machines', () => {
  it('STT client: any server sequence after setup never throws; violations are error events and close the socket', () => {
    fc.assert(
      fc.property(fc.array(serverFrames, { maxLength: 12 }), fc.boolean(), (frames, sendEos) => {
        const events: SttClientEvent[] = [];
        let closed = 0;
        const c = createSttClientSession({ transport: { send: () => undefined, close: () => closed++ }, onEvent: (e) => events.push(e) });
        c.setup({ input_format: 'pcm' });
        c.sendAudio(new Uint8Array(3840));
        c.flush(1);
        if (sendEos) c.endOfStream();
        for (const f of frames) c.receive(typeof f === 'string' ? f : JSON.stringify(f));
        c.transportClosed(1000);
        for (const e of events) if (e.type === 'error') expect(e.error).toBeInstanceOf(VoicewireError);
        const local = events.filter((e) => e.type === 'error' && e.error.code !== 'PROTOCOL_SERVER_ERROR' && e.error.code !== 'PROTOCOL_CONNECTION_CLOSED');
        if (local.length > 0) expect(closed).toBe(1);
        expect(events.at(-1)).toEqual({ type: 'closed', code: 1000, reason: '' });
      }),
      { numRuns: 300 },
    );
  });

  it('STT client: each invalid server message ends in an error event', () => {
    const bad = [
      { type: 'text', text: 'early', start_s: 0 }, // before ready
      { type: 'flushed', flush_id: 99 }, // never sent
      { type: 'end_of_stream' }, // the client did not end
      'not json',
    ];
    for (const b of bad) {
      const events: SttClientEvent[] = [];
      const c = createSttClientSession({ transport: { send: () => undefined, close: () => undefined }, onEvent: (e) => events.push(e) });
      c.setup();
      c.receive(typeof b === 'string' ? b : JSON.stringify(b));
      expect(events.map((e) => e.type), JSON.stringify(b)).toEqual(['error']);
      expect((events[0] as { error: VoicewireError }).error.code).toMatch(/^PROTOCOL_(UNEXPECTED|INVALID)_MESSAGE$/);
    }
    const events: SttClientEvent[] = [];
    const c = createSttClientSession({ transport: { send: () => undefined, close: () => undefined }, onEvent: (e) => events.push(e) });
    c.setup();
    c.receive(JSON.stringify({ type: 'ready', request_id: 'r', model_name: 'm', sample_rate: 24000, frame_size: 1920, delay_in_frames: 2 }));
    c.receive(JSON.stringify({ type: 'ready', request_id: 'r', model_name: 'm', sample_rate: 24000, frame_size: 1920, delay_in_frames: 2 }));
    expect(events.map((e) => e.type)).toEqual(['message', 'error']);
  });

  it('STT client: local calls in the wrong state throw INVALID_STATE and send nothing', () => {
    const sent: string[] = [];
    const c = createSttClientSession({ transport: { send: (t) => sent.push(t), close: () => undefined }, onEvent: () => undefined });
    expect(() => c.sendAudio(new Uint8Array(2))).toThrow(expect.objectContaining({ code: 'INVALID_STATE' }));
    c.setup();
    c.endOfStream();
    expect(() => c.sendAudio(new Uint8Array(2))).toThrow(expect.objectContaining({ code: 'INVALID_STATE' }));
    expect(() => c.endOfStream()).toThrow(expect.objectContaining({ code: 'INVALID_STATE' }));
    expect(() => c.setup()).toThrow(expect.objectContaining({ code: 'INVALID_STATE' }));
    expect(sent.map((t) => JSON.parse(t).type)).toEqual(['setup', 'end_of_stream']);
  });

  it('multiplexed client: abandoned and unknown ids are dropped; an error without id fails every request', () => {
    const events: TtsClientEvent[] = [];
    const sent: Array<Record<string, unknown>> = [];
    const c = createTtsClientSession({ transport: { send: (t) => sent.push(JSON.parse(t)), close: () => undefined }, onEvent: (e) => events.push(e) });
    c.setup({ client_req_id: 'a', close_ws_on_eos: false });
    c.setup({ client_req_id: 'b', close_ws_on_eos: false });
    const ready = (id: string) => JSON.stringify({ type: 'ready', request_id: id, model_name: 'm', sample_rate: 48000, frame_size: 3840, client_req_id: id });
    c.receive(ready('a'));
    c.receive(ready('b'));
    c.sendText('hello ', 'a');
    c.abandon('a');
    expect(sent.at(-1)).toEqual({ type: 'end_of_stream', client_req_id: 'a' });
    const n = events.length;
    c.receive(JSON.stringify({ type: 'audio', audio: 'AAAA', client_req_id: 'a' })); // dropped: abandoned
    c.receive(JSON.stringify({ type: 'audio', audio: 'AAAA', client_req_id: 'zz' })); // dropped: unknown
    expect(events.length).toBe(n);
    c.receive(JSON.stringify({ type: 'audio', audio: 'AAAA', start_s: 0, stop_s: 0.08, client_req_id: 'b' }));
    expect(events.at(-1)).toMatchObject({ type: 'message', clientReqId: 'b', audio: new Uint8Array([0, 0, 0]) });
    c.receive(JSON.stringify({ type: 'error', message: 'socket broken', code: 1011 }));
    expect(events.at(-1)).toMatchObject({ type: 'error', clientReqId: 'b', error: { code: 'PROTOCOL_SERVER_ERROR', closeCode: 1011 } });
  });

  it('TTS client: word chunking never splits a word or a tag across messages', () => {
    const sent: Array<Record<string, unknown>> = [];
    const c = createTtsClientSession({ transport: { send: (t) => sent.push(JSON.parse(t)), close: () => undefined }, onEvent: () => undefined });
    c.setup({ voice_id: 'v' });
    for (const piece of ['Hel', 'lo wor', 'ld <bre', 'ak time="0.5s" />', ' and', ' more']) c.sendText(piece);
    c.endOfStream();
    const texts = sent.filter((m) => m['type'] === 'text').map((m) => m['text'] as string);
    expect(texts.join(' ')).toBe('Hello world <break time="0.5s" /> and more');
    for (const t of texts) expect(t.includes('<') === t.includes('>')).toBe(true);
    expect(sent.at(-1)).toEqual({ type: 'end_of_stream' });
  });
});

describe('TTS client: socket-level end_of_stream', () => {
  it('sends the held-back text of every multiplexed request before ending the socket', () => {
    const sent: Array<Record<string, unknown>> = [];
    const c = createTtsClientSession({ transport: { send: (t) => sent.push(JSON.parse(t)), close: () => undefined }, onEvent: () => undefined });
    c.setup({ client_req_id: 'a', close_ws_on_eos: false });
    c.setup({ client_req_id: 'b', close_ws_on_eos: false });
    c.sendText('Hello wor', 'a');
    c.sendText('Bonjour', 'b');
    c.endOfStream();
    expect(sent.slice(2)).toEqual([
      { type: 'text', text: 'Hello', client_req_id: 'a' },
      { type: 'text', text: 'wor', client_req_id: 'a' },
      { type: 'text', text: 'Bonjour', client_req_id: 'b' },
      { type: 'end_of_stream' },
    ]);
  });
});
