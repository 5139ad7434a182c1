import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { VoicewireError } from '../../src/util/errors.js';
import { decodeAlaw, decodeMulaw } from '../../src/audio/g711.js';
import {
  assertAcceptingSessions,
  createTurnTaking,
  drainInitialState,
  drainTransition,
  parseDrainQuery,
  readiness,
  type DrainEvent,
  type VadPrediction,
} from '../../src/index.js';

const step = (p2: number, p0 = 0, p1 = 0): { vad: VadPrediction[] } => ({
  vad: [
    { horizon_s: 0.5, inactivity_prob: p0 },
    { horizon_s: 1, inactivity_prob: p1 },
    { horizon_s: 2, inactivity_prob: p2 },
  ],
});

/** Naive reference: recompute the EMA from scratch over the whole history at each step. */
function reference(probs: number[], threshold: number, alpha: number, warmup: number): boolean[] {
  const out: boolean[] = [];
  let latched = false;
  for (let t = 0; t < probs.length; t++) {
    if (t < warmup) {
      out.push(false);
      continue;
    }
    let s = probs[warmup]!;
    for (let k = warmup + 1; k <= t; k++) s = alpha * probs[k]! + (1 - alpha) * s;
    const above = s > threshold;
    out.push(above && !latched);
    latched = above;
  }
  return out;
}

describe('turn-taking helper (docs/api.md §4.4 guidance)', () => {
  it('default: third horizon above 0.5, once per turn', () => {
    const tt = createTurnTaking();
    expect(tt.step(step(0.5)).endOfTurn).toBe(false); // "above 0.5": 0.5 is not above
    expect(tt.step(step(0.2, 0.9, 0.9)).endOfTurn).toBe(false); // the other horizons do not count
    expect(tt.step(step(0.51))).toEqual({ probability: 0.51, endOfTurn: true });
    expect(tt.step(step(0.9)).endOfTurn).toBe(false);
    expect(tt.turnEnded).toBe(true);
    expect(tt.step(step(0.1)).endOfTurn).toBe(false); // speech resumed: re-armed
    expect(tt.step(step(0.8)).endOfTurn).toBe(true);
  });

  it('threshold, smoothing and warm-up match a naive reference', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 40 }),
        fc.double({ min: 0.5, max: 0.9, noNaN: true }),
        fc.double({ min: 0.05, max: 1, noNaN: true }),
        fc.nat(5),
        (probs, threshold, smoothing, warmupSteps) => {
          const tt = createTurnTaking({ threshold, smoothing, warmupSteps });
          const got = probs.map((p) => tt.step(step(p)).endOfTurn);
          expect(got).toEqual(reference(probs, threshold, smoothing, warmupSteps));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('warm-up steps are ignored, and reset starts a new turn', () => {
    const tt = createTurnTaking({ warmupSteps: 2 });
    expect(tt.step(step(1))).toEqual({ probability: null, endOfTurn: false });
    expect(tt.step(step(1))).toEqual({ probability: null, endOfTurn: false });
    expect(tt.step(step(1)).endOfTurn).toBe(true);
    tt.reset();
    expect(tt.step(step(1)).endOfTurn).toBe(false);
    expect(tt.step(step(1)).endOfTurn).toBe(false);
    expect(tt.step(step(1)).endOfTurn).toBe(true);
  });

  it('a step without the chosen horizon decides nothing', () => {
    const tt = createTurnTaking();
    expect(tt.step({ vad: [{ horizon_s: 0.5, inactivity_prob: 1 }] })).toEqual({ probability: null, endOfTurn: false });
  });

  it('reads delay_in_frames or delay_in_tokens from ready, then gives that many 80 ms silent frames', () => {
    const tt = createTurnTaking();
    expect(() => tt.silenceFrames()).toThrow(expect.objectContaining({ code: 'INVALID_STATE' }));
    tt.ready({ delay_in_tokens: 4 });
    expect(tt.delayInFrames).toBe(4);
    tt.ready({ delay_in_frames: 6, delay_in_tokens: 4 });
    const frames = tt.silenceFrames();
    expect(frames).toHaveLength(6);
    for (const f of frames) {
      expect(f.byteLength).toBe(3840); // 1920 samples of s16 at 24 kHz (§4.4)
      expect(f.every((b) => b === 0)).toBe(true);
    }
    expect(createTurnTaking({ delayInFrames: 2, frameBytes: 100 }).silenceFrames().map((f) => f.length)).toEqual([100, 100]);
  });

  describe('silent frames in the request’s input_format (§4.4, G.711)', () => {
    const frames = (inputFormat: string, extra: Record<string, unknown> = {}) => createTurnTaking({ delayInFrames: 3, inputFormat, ...extra }).silenceFrames();

    it('μ-law: 640 bytes per 80 ms that decode to 0; A-law: 640 bytes that decode to +8 (G.711)', () => {
      for (const name of ['ulaw_8000', 'mulaw_8000']) {
        const f = frames(name);
        expect(f.map((x) => x.length)).toEqual([640, 640, 640]);
        for (const x of f) expect([...new Set(decodeMulaw(x))]).toEqual([0]);
      }
      const a = frames('alaw_8000');
      expect(a.map((x) => x.length)).toEqual([640, 640, 640]);
      for (const x of a) for (const v of decodeAlaw(x)) expect(Math.abs(v)).toBe(8);
      // Zero bytes would be loud: the reason this is format-aware.
      expect(Math.abs(decodeMulaw(new Uint8Array([0]))[0]!)).toBe(32124);
      expect(Math.abs(decodeAlaw(new Uint8Array([0]))[0]!)).toBe(5504);
    });

    it('pcm_N: 80 ms of s16le zeros at N Hz; pcm is 24 kHz on STT input (3840 bytes)', () => {
      const cases: Array<[string, number]> = [
        ['pcm', 3840],
        ['pcm_8000', 1280],
        ['pcm_16000', 2560],
        ['pcm_22050', 3528],
        ['pcm_24000', 3840],
        ['pcm_44100', 7056],
        ['pcm_48000', 7680],
      ];
      for (const [name, bytes] of cases) {
        const f = frames(name);
        expect(f.map((x) => x.length), name).toEqual([bytes, bytes, bytes]);
        for (const x of f) expect(x.every((b) => b === 0)).toBe(true);
      }
    });

    it('wav: raw zero PCM (after the header already sent) at the WAV’s rate and depth', () => {
      expect(frames('wav').map((x) => x.length)).toEqual([3840, 3840, 3840]);
      expect(frames('wav', { wavSampleRate: 16000 })[0]!.length).toBe(2560);
      expect(frames('wav', { wavSampleRate: 44100, wavBitsPerSample: 24 })[0]!.length).toBe(3528 * 3);
      expect(frames('wav', { wavSampleRate: 16000 })[0]!.every((b) => b === 0)).toBe(true);
    });

    it('opus: needs the client’s encoder (encodeSilence), which gets 80 ms of zeros at 48 kHz per frame', () => {
      expect(() => frames('opus')).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('encodeSilence') }));
      const calls: Array<[number, number, boolean]> = [];
      const f = frames('opus', {
        encodeSilence: (pcm: Int16Array, rate: number) => {
          calls.push([pcm.length, rate, pcm.every((v) => v === 0)]);
          return new Uint8Array([calls.length]);
        },
      });
      expect(calls).toEqual([
        [3840, 48000, true],
        [3840, 48000, true],
        [3840, 48000, true],
      ]);
      expect(f.map((x) => x[0])).toEqual([1, 2, 3]);
    });

    it('an unknown input_format is a VoicewireError at creation', () => {
      expect(() => createTurnTaking({ inputFormat: 'mp3' })).toThrow(expect.objectContaining({ code: 'FORMAT_UNKNOWN' }));
      expect(() => createTurnTaking({ inputFormat: 'wav', wavBitsPerSample: 8 as never })).toThrow(VoicewireError);
    });
  });

  it('rejects bad options', () => {
    for (const o of [{ threshold: 1.5 }, { smoothing: 0 }, { warmupSteps: -1 }, { horizonIndex: 0.5 }]) {
      expect(() => createTurnTaking(o)).toThrow(VoicewireError);
    }
  });
});

describe('drain machine (docs/api.md §3.1)', () => {
  it('serving ⇄ draining; readyz 200 / 503', () => {
    let s = drainInitialState();
    expect(readiness(s)).toEqual({ status: 200, body: { status: 'ready' } });
    let r = drainTransition(s, { type: 'session_opened' });
    s = r.state;
    r = drainTransition(s, { type: 'drain' }); // enable defaults to true
    expect(r.effects).toEqual([{ type: 'readiness', status: 503 }]);
    s = r.state;
    expect(readiness(s).status).toBe(503);
    expect(() => assertAcceptingSessions(s)).toThrow(expect.objectContaining({ code: 'PROTOCOL_DRAINING' }));
    expect(drainTransition(s, { type: 'drain', enable: true }).effects).toEqual([]);
    r = drainTransition(s, { type: 'session_closed' });
    expect(r.effects).toEqual([{ type: 'drained' }]);
    s = r.state;
    r = drainTransition(s, { type: 'drain', enable: false });
    expect(r.effects).toEqual([{ type: 'readiness', status: 200 }]);
    expect(readiness(r.state).status).toBe(200);
    expect(() => assertAcceptingSessions(r.state)).not.toThrow();
  });

  it('random event sequences: readiness follows the last drain command; drained fires when draining with no sessions', () => {
    const event = fc.oneof(
      fc.constant<DrainEvent>({ type: 'session_opened' }),
      fc.constant<DrainEvent>({ type: 'session_closed' }),
      fc.option(fc.boolean(), { nil: undefined }).map((enable): DrainEvent => (enable === undefined ? { type: 'drain' } : { type: 'drain', enable })),
    );
    fc.assert(
      fc.property(fc.array(event, { maxLength: 30 }), (events) => {
        let s = drainInitialState();
        let draining = false;
        let sessions = 0;
        for (const e of events) {
          const r = drainTransition(s, e);
          const wasDraining = draining;
          const before = sessions;
          if (e.type === 'drain') draining = e.enable !== false;
          if (e.type === 'session_opened') sessions++;
          if (e.type === 'session_closed') sessions = Math.max(0, sessions - 1);
          expect(readiness(r.state).status).toBe(draining ? 503 : 200);
          const drained = r.effects.some((x) => x.type === 'drained');
          const expectDrained = draining && sessions === 0 && (!wasDraining || before > 0);
          expect(drained).toBe(expectDrained);
          s = r.state;
        }
      }),
      { numRuns: 200 },
    );
  });

  it('parses the enable query like pydantic', () => {
    expect(parseDrainQuery(new URLSearchParams(''))).toEqual({ enable: true });
    for (const [v, b] of [['true', true], ['False', false], ['0', false], ['yes', true], ['off', false]] as const) {
      expect(parseDrainQuery({ enable: v })).toEqual({ enable: b });
    }
    try {
      parseDrainQuery({ enable: 'maybe' });
      throw new Error('no throw');
    } catch (e) {
      expect((e as VoicewireError).code).toBe('VALIDATION_FAILED');
      expect((e as VoicewireError).details).toEqual({
        detail: [{ loc: ['query', 'enable'], msg: 'Input should be a valid boolean, unable to interpret input', type: 'bool_parsing', input: 'maybe' }],
      });
    }
  });
});
