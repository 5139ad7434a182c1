/**
 * Issue 35 items 1, 2 and 6 against the in-process server (tone engines): the STT options the
 * service's Python client documents (`delay_in_frames` 7…48, `temp` 0 to 1, `padding_bonus`) are
 * accepted and do what the docs say; values outside the ranges are refused the same way for every
 * key (422 on POST, `error` 1008 on the WebSocket); and a client pays for its own audio, never for
 * the silence the server pushes behind a flush or at the end. test/server/dropin-built.test.ts
 * runs the same scenarios against the built server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type Harness } from './harness.js';
import {
  audioMessages,
  costOf,
  DOCUMENTED_DELAYS,
  flushedPieces,
  postAsr,
  setup,
  silence,
  spoken,
  stepsBeforeText,
  sttSession,
  type SttTarget,
} from './stt-options-scenarios.js';

let h: Harness;
let t: SttTarget;
beforeAll(async () => {
  h = await startServer();
  t = { base: h.base, wsBase: h.wsBase, key: h.apiKey };
});
afterAll(async () => {
  await h.close();
});

describe('STT json_config: the service client\'s options (seen failing first: temp 0.3 and delay 7/24 were refused at setup)', () => {
  it('every documented delay_in_frames is the delay ready reports', async () => {
    for (const d of DOCUMENTED_DELAYS) {
      const m = await sttSession(t, [setup({ delay_in_frames: d }), ...audioMessages(silence(0.08)), { type: 'end_of_stream' }]);
      expect(m[0], `delay ${d}`).toMatchObject({ type: 'ready', delay_in_frames: d });
      expect(m.at(-1)).toMatchObject({ type: 'end_of_stream' });
    }
  });

  it('text is held delay_in_frames frames: 24 puts a word 17 frames later than 7, and the end still brings it out', async () => {
    const hello = await spoken(t, 'hello');
    const run = (cfg?: Record<string, unknown>) => sttSession(t, [setup(cfg), ...audioMessages(hello), { type: 'end_of_stream' }]);
    const own = await run();
    const seven = await run({ delay_in_frames: 7 });
    const late = await run({ delay_in_frames: 24 });
    for (const m of [own, seven, late]) expect(m.filter((x) => x['type'] === 'text').map((x) => x['text'])).toEqual(['hello']);
    const ownDelay = own[0]!['delay_in_frames'] as number;
    expect(stepsBeforeText(seven) - stepsBeforeText(own)).toBe(7 - ownDelay);
    expect(stepsBeforeText(late) - stepsBeforeText(seven)).toBe(17);
    // The end pushes delay_in_frames frames of silence: the steps after the audio are that many (plus the padded frame).
    const audioFrames = Math.ceil(hello.length / 3840);
    expect(late.filter((x) => x['type'] === 'step')).toHaveLength(audioFrames + 24);
  });

  it('a flush pushes delay_in_frames frames of silence and comes after the text before it', async () => {
    const hello = await spoken(t, 'hello');
    const m = await sttSession(t, [setup({ delay_in_frames: 36 }), ...audioMessages(hello), { type: 'flush', flush_id: 5 }, { type: 'end_of_stream' }]);
    const flushed = m.findIndex((x) => x['type'] === 'flushed');
    const text = m.findIndex((x) => x['type'] === 'text');
    expect(text).toBeGreaterThan(0);
    expect(text).toBeLessThan(flushed);
    expect(m.slice(0, flushed).filter((x) => x['type'] === 'step')).toHaveLength(Math.ceil(hello.length / 3840) + 36);
  });

  it('temp (0 to 1) and padding_bonus are accepted; on the tone engine temp lowers the voicing threshold and padding_bonus raises it', async () => {
    // A quiet "hello": the tone engine's RMS is ≈ 5657 at full level; a fifth of it is under the
    // threshold of 1500, which temp 1 halves (docs/engines.md).
    const hello = await spoken(t, 'hello');
    const quiet = new Int16Array(hello.buffer.slice(hello.byteOffset, hello.byteOffset + hello.byteLength));
    for (let i = 0; i < quiet.length; i++) quiet[i] = Math.round(quiet[i]! / 5);
    const pcm = new Uint8Array(quiet.buffer);
    const heard = async (cfg: Record<string, unknown>): Promise<unknown[]> => {
      const m = await sttSession(t, [setup(cfg), ...audioMessages(pcm), { type: 'end_of_stream' }]);
      expect(m[0], JSON.stringify(cfg)).toMatchObject({ type: 'ready' });
      return m.filter((x) => x['type'] === 'text').map((x) => x['text']);
    };
    expect(await heard({ temp: 0 })).toEqual([]);
    expect(await heard({ temp: 1 })).toEqual(['hello']);
    expect(await heard({ temp: 0.3, padding_bonus: 4 })).toEqual([]);
    expect(await heard({ temp: 1, padding_bonus: -1 })).toEqual(['hello']);
    expect(await heard({ temp: 1, padding_bonus: 4 })).toEqual([]);
  });
});

describe('refusals are the same for every key (seen failing first: delay_in_frames 2 on POST answered 500 "error from server 1008")', () => {
  const bad: Array<[string, unknown]> = [
    ['delay_in_frames', 2],
    ['delay_in_frames', 9],
    ['temp', 1.2],
    ['temp', -0.1],
    ['padding_bonus', 0.05],
    ['padding_bonus', 5],
    ['language', 'it'],
    ['beam', 4],
  ];
  it.each(bad)('%s: %s → 422 on POST (§7.4, loc query.json_config.<key>), error 1008 on the WebSocket', async (key, value) => {
    const cfg = JSON.stringify({ [key]: value });
    const r = await postAsr(t, silence(0.08), cfg);
    expect(r.status, r.body).toBe(422);
    const detail = (JSON.parse(r.body) as { detail: Array<{ loc: unknown[]; type: string }> }).detail;
    expect(detail).toHaveLength(1);
    expect(detail[0]!.loc).toEqual(['query', 'json_config', key]);
    const m = await sttSession(t, [setup({ [key]: value }), ...audioMessages(silence(0.08)), { type: 'end_of_stream' }]);
    expect(m).toHaveLength(1);
    expect(m[0]).toMatchObject({ type: 'error', code: 1008 });
    expect(String(m[0]!['message'])).toContain(`json_config.${key}`);
  });
});

describe('STT billing counts the client\'s audio only (seen failing first: 0.96 s cost 2, 3 with a flush, 5 with three; 2.00 s POST cost 3)', () => {
  for (const flushes of [0, 1, 3] as const) {
    it(`0.96 s over the WebSocket with ${flushes} flush(es) costs 1 credit`, async () => {
      const cost = await costOf(t, 1, () => sttSession(t, [setup(), ...flushedPieces(flushes), { type: 'end_of_stream' }]));
      expect(cost).toBe(1);
    });
  }

  it('0.96 s at delay_in_frames 48 costs 1 credit (48 frames of padding are free)', async () => {
    const cost = await costOf(t, 1, () => sttSession(t, [setup({ delay_in_frames: 48 }), ...flushedPieces(1), { type: 'end_of_stream' }]));
    expect(cost).toBe(1);
  });

  it('2.00 s over POST costs 2 credits, 2.01 s costs 3 (a started second)', async () => {
    expect(await costOf(t, 2, () => postAsr(t, silence(2)))).toBe(2);
    expect(await costOf(t, 3, () => postAsr(t, silence(2.01)))).toBe(3);
  });
});
