/**
 * Replays the conversations of fixtures/sessions/*.jsonl (the hand-written spec) against the
 * server runners with a scripted engine, and against the client runners.
 *
 * A fixture line is one of:
 *   {"meta": {route: "stt"|"tts", engine: {...scripted engine options}, client?: false, description}}
 *   {"in": <client message>}            a text frame from the client (flags: refused_by_client)
 *   {"in_raw": "<text>"}               a raw text frame
 *   {"out": <server message>}           what the server must send next (flags: client_drops)
 *   {"close": <code>}                   the server closes the socket with this code
 * Macros inside messages: {"$zeros": n} base64 of n zero bytes; {"$fill16": [v, n]} base64 of n
 * little-endian int16 samples of value v; {"$vad": [p0, p1, p2]} the three horizons 0.5/1/2 s
 * with those inactivity probabilities; {"$string": 1} any non-empty string (in expectations).
 * Base64 in macros is computed with Node's Buffer, independent of the code under test.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { expect } from 'vitest';
import {
  createScriptedSttEngine,
  createScriptedTtsEngine,
  createSttClientSession,
  createSttServerSession,
  createTtsClientSession,
  createTtsServerSession,
  type ScriptedSttEngineOptions,
  type ScriptedTtsEngineOptions,
  type VadPrediction,
} from '../../src/index.js';

export const FIXTURE_DIR = new URL('../../fixtures/sessions/', import.meta.url);

export interface FixtureMeta {
  route: 'stt' | 'tts';
  description: string;
  engine: Record<string, unknown>;
  client?: boolean;
}

export type FixtureLine =
  | { in: Record<string, unknown>; refused_by_client?: boolean }
  | { in_raw: string }
  | { out: Record<string, unknown>; client_drops?: boolean }
  | { close: number };

export interface Fixture {
  name: string;
  meta: FixtureMeta;
  lines: FixtureLine[];
}

export function loadFixtures(): Fixture[] {
  return readdirSync(FIXTURE_DIR)
    .filter((f) => f.endsWith('.jsonl'))
    .sort()
    .map((name) => {
      const rows = readFileSync(new URL(name, FIXTURE_DIR), 'utf8')
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      const [first, ...lines] = rows;
      return { name, meta: (first as { meta: FixtureMeta }).meta, lines: lines as FixtureLine[] };
    });
}

/** Expands macros; `forMatching` turns `$string` into an asymmetric matcher. */
export function expand(value: unknown, forMatching: boolean): unknown {
  if (Array.isArray(value)) return value.map((v) => expand(v, forMatching));
  if (value === null || typeof value !== 'object') return value;
  const obj = value as Record<string, unknown>;
  if ('$zeros' in obj) return Buffer.alloc(obj['$zeros'] as number).toString('base64');
  if ('$fill16' in obj) {
    const [v, n] = obj['$fill16'] as [number, number];
    const b = Buffer.alloc(n * 2);
    for (let i = 0; i < n; i++) b.writeInt16LE(v, i * 2);
    return b.toString('base64');
  }
  if ('$vad' in obj) {
    const [a, b, c] = obj['$vad'] as [number, number, number];
    return [
      { horizon_s: 0.5, inactivity_prob: a },
      { horizon_s: 1, inactivity_prob: b },
      { horizon_s: 2, inactivity_prob: c },
    ];
  }
  if ('$string' in obj) return forMatching ? expect.stringMatching(/.+/) : 'x';
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) out[k] = expand(v, forMatching);
  return out;
}

function sttEngine(meta: FixtureMeta) {
  const e = meta.engine as ScriptedSttEngineOptions & { vadByFrame?: Record<number, [number, number, number]> };
  const vad = (i: number): VadPrediction[] => {
    const p = e.vadByFrame?.[i] ?? [0, 0, 0];
    return [
      { horizon_s: 0.5, inactivity_prob: p[0] },
      { horizon_s: 1, inactivity_prob: p[1] },
      { horizon_s: 2, inactivity_prob: p[2] },
    ];
  };
  return createScriptedSttEngine({ ...e, vad });
}

function byRequest(outputs: Output[]): Record<string, Output[]> {
  const groups: Record<string, Output[]> = {};
  for (const o of outputs) {
    const id = 'out' in o ? String((o.out as { client_req_id?: string }).client_req_id ?? '') : '';
    (groups[id] ??= []).push(o);
  }
  return groups;
}

/** What the server did: messages (parsed) and closes, in order. */
export type Output = { out: unknown } | { close: number };

/**
 * Replays the fixture against a server runner. Synchronous fixtures are checked input by input:
 * the outputs produced by an input must be exactly the `out`/`close` lines that follow it.
 * Asynchronous ones (engine.async) are checked as a whole once the engine is idle.
 */
export async function replayServer(fixture: Fixture, options: { async?: boolean } = {}): Promise<Output[]> {
  const outputs: Output[] = [];
  let n = 0;
  const transport = {
    send: (text: string) => outputs.push({ out: JSON.parse(text) }),
    close: (code: number) => outputs.push({ close: code }),
  };
  const requestId = () => `req-${++n}`;
  const meta: FixtureMeta = options.async ? { ...fixture.meta, engine: { ...fixture.meta.engine, async: true } } : fixture.meta;
  const session =
    meta.route === 'stt'
      ? createSttServerSession({ engine: sttEngine(meta), transport, requestId })
      : createTtsServerSession({ engine: createScriptedTtsEngine(meta.engine as ScriptedTtsEngineOptions), transport, requestId });
  // With an async engine and `options.async`, the replay lets the engine settle after each input,
  // so the segments must come out exactly as with a synchronous engine.
  const isAsync = fixture.meta.engine['async'] === true;
  const expected: Output[] = [];
  let checked = 0;
  const checkSegment = (): void => {
    if (isAsync) return;
    const got = outputs.slice(checked);
    const want = expected.slice(checked);
    if (options.async) {
      // Concurrent requests may interleave differently with an async engine; each request's own
      // messages keep their order, and the socket-level end comes last.
      expect(byRequest(got), `${fixture.name}: outputs per request after input #${checked}`).toEqual(byRequest(want));
      expect(got.at(-1)).toEqual(want.at(-1));
    } else {
      expect(got, `${fixture.name}: outputs after input #${checked}`).toEqual(want);
    }
    expect(outputs.length).toBe(expected.length);
    checked = outputs.length;
  };
  for (const line of fixture.lines) {
    if ('in' in line || 'in_raw' in line) {
      if (options.async) {
        await session.whenIdle();
        await new Promise((r) => setTimeout(r, 0));
      }
      checkSegment();
      session.receive('in' in line ? JSON.stringify(expand(line.in, false)) : line.in_raw);
    } else if ('out' in line) {
      expected.push({ out: expand(line.out, true) });
    } else {
      expected.push({ close: line.close });
    }
  }
  if (options.async) {
    await session.whenIdle();
    await new Promise((r) => setTimeout(r, 0));
  }
  checkSegment();
  await session.whenIdle();
  await new Promise((r) => setTimeout(r, 0));
  if (options.async) expect(byRequest(outputs)).toEqual(byRequest(expected));
  else expect(outputs, `${fixture.name}: all outputs`).toEqual(expected);
  return outputs;
}

/** Client-side record of a replay. */
export interface ClientReplay {
  sent: unknown[];
  events: Array<Record<string, unknown>>;
}

/**
 * Replays the fixture against a client runner: `in` lines are sent through the session (and must
 * come out as the same frame, or be refused when flagged), `out` lines are received (and must
 * come back as the same validated message, an error event for `error`, or nothing when flagged
 * `client_drops`), `close` ends the transport.
 */
export function replayClient(fixture: Fixture): ClientReplay {
  const sent: unknown[] = [];
  const events: Array<Record<string, unknown>> = [];
  const transport = { send: (t: string) => sent.push(JSON.parse(t)), close: () => undefined };
  const onEvent = (e: unknown) => events.push(e as Record<string, unknown>);
  const session =
    fixture.meta.route === 'stt'
      ? createSttClientSession({ transport, onEvent })
      : createTtsClientSession({ transport, onEvent: onEvent as never, chunkWords: false });
  for (const line of fixture.lines) {
    if ('in' in line) {
      const message = expand(line.in, false) as never;
      const before = sent.length;
      if (line.refused_by_client) {
        expect(() => session.send(message), `${fixture.name}: client refuses ${JSON.stringify(line.in)}`).toThrow(expect.objectContaining({ code: 'INVALID_STATE' }));
        expect(sent.length).toBe(before);
      } else {
        session.send(message);
        expect(sent.slice(before), `${fixture.name}: client sends`).toEqual([message]);
      }
    } else if ('out' in line) {
      const message = expand(line.out, false) as Record<string, unknown>;
      const before = events.length;
      session.receive(JSON.stringify(message));
      const got = events.slice(before);
      if (line.client_drops) {
        expect(got, `${fixture.name}: client drops ${JSON.stringify(line.out)}`).toEqual([]);
      } else if (message['type'] === 'error') {
        expect(got.length).toBeGreaterThanOrEqual(1);
        expect(got[0]!['type']).toBe('error');
        const error = got[0]!['error'] as { code: string; closeCode: number };
        expect(error.code).toBe('PROTOCOL_SERVER_ERROR');
        expect(error.closeCode).toBe(message['code']);
      } else {
        expect(got, `${fixture.name}: client event for ${JSON.stringify(line.out)}`).toHaveLength(1);
        expect(got[0]!['type']).toBe('message');
        expect(got[0]!['message']).toEqual(message);
        if (message['type'] === 'audio') {
          expect(Buffer.from(got[0]!['audio'] as Uint8Array).toString('base64')).toBe(message['audio']);
        }
      }
    } else if ('close' in line) {
      const before = events.length;
      session.transportClosed(line.close, '');
      const got = events.slice(before);
      // An expected close: no request is left waiting, so the only event is `closed`.
      expect(got, `${fixture.name}: events at close`).toEqual([{ type: 'closed', code: line.close, reason: '' }]);
    }
  }
  return { sent, events };
}
