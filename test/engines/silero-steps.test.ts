/**
 * Silero VAD for every STT engine's steps (issue 33 item 2, src/engines/silero-steps.ts), with the
 * real model (`@livekit/agents-plugin-silero`'s silero_vad.onnx): one step per frame in the
 * engine's order, Silero's horizons (not the engine's), which tell noise from speech where the
 * WebRTC VAD does not, the worker's stream freed on close, errors typed.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { resampleInt16 } from '../../src/audio/resampler.js';
import { decodeWav } from '../../src/audio/wav.js';
import { SileroStepsWorker, withSileroSteps } from '../../src/engines/silero-steps.js';
import { loadVad, VAD_HORIZONS, VoiceActivity } from '../../src/engines/vad.js';
import type { SttEngine, SttEngineEvent, SttEngineStream } from '../../src/sessions/engine.js';
import { VoicewireError } from '../../src/util/errors.js';
import { requireSileroModel, sileroTestsRun } from '../helpers/silero-model.js';

const LIBRIVOX = '/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0870.wav';
const FRAME = 1920; // 80 ms at 24 kHz
const MARK = [{ horizon_s: 99, inactivity_prob: 0.123 }];

/**
 * An engine that emits, per frame: a `text` before its step on even frames, the step (marked), and
 * on every third frame a `text` a little later (after the push has returned), as a model on a
 * thread does.
 */
function scriptedEngine(): SttEngine & { log: string[] } {
  const log: string[] = [];
  return {
    log,
    open(_config, emit) {
      let n = 0;
      let closed = false;
      const later: Array<Promise<void>> = [];
      const stream: SttEngineStream = {
        info: { sampleRate: 24000, frameSize: FRAME, delayInFrames: 0 },
        push() {
          const f = n++;
          const say = (e: SttEngineEvent) => {
            if (closed) return;
            log.push(e.type === 'step' ? `step${f}` : `${e.type}${f}`);
            emit(e);
          };
          if (f % 2 === 0) say({ type: 'text', text: `w${f}`, start_s: f * 0.08 });
          say({ type: 'step', vad: MARK });
          if (f % 3 === 0) later.push(new Promise((r) => setTimeout(r, 1)).then(() => say({ type: 'end_text', stop_s: f * 0.08 })));
        },
        async end() {
          await Promise.all(later);
        },
        close() {
          closed = true;
        },
      };
      return stream;
    },
  };
}

function label(e: SttEngineEvent, i: { step: number; other: Map<string, number> }): string {
  if (e.type === 'step') return `step${i.step++}`;
  const f = Math.round((e.type === 'text' ? e.start_s : e.stop_s) / 0.08);
  return `${e.type}${f}`;
}

/** Pushes 24 kHz `pcm` frame by frame as the session runner does (each push awaited); the events. */
async function run(engine: SttEngine, pcm: Int16Array): Promise<SttEngineEvent[]> {
  const events: SttEngineEvent[] = [];
  const stream = await engine.open({ modelName: 'default', inputFormat: 'pcm_s16le' as never, jsonConfig: {} }, (e) => events.push(e));
  try {
    for (let o = 0; o + FRAME <= pcm.length; o += FRAME) await stream.push(pcm.slice(o, o + FRAME));
    await stream.end?.();
  } finally {
    stream.close();
  }
  return events;
}

function librivox24k(): Int16Array {
  const wav = decodeWav(readFileSync(LIBRIVOX), { output: 'int16' });
  return resampleInt16(wav.samples, wav.format.sampleRate, 24000);
}

/** Loud white noise (deterministic), 24 kHz. */
function noise(seconds: number): Int16Array {
  let s = 12345;
  return new Int16Array(Math.round(seconds * 24000)).map(() => {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    return ((s / 0x7fffffff) * 2 - 1) * 9000;
  });
}

/** The WebRTC VAD's 2 s horizon per 80 ms frame of 24 kHz `pcm` (what engines emit today). */
async function webrtc2s(pcm: Int16Array): Promise<number[]> {
  const vad = new VoiceActivity(await loadVad());
  const pcm16 = resampleInt16(pcm, 24000, 16000);
  const out: number[] = [];
  for (let o = 0; o + 1280 <= pcm16.length; o += 1280) out.push(vad.frame(pcm16.subarray(o, o + 1280))[2]!.inactivity_prob);
  vad.free();
  return out;
}

const steps2s = (events: SttEngineEvent[]): number[] => events.flatMap((e) => (e.type === 'step' ? [e.vad[2]!.inactivity_prob] : []));
const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

describe.skipIf(!sileroTestsRun)('Silero VAD steps for any STT engine', () => {
  const workers: SileroStepsWorker[] = [];
  const worker = (): SileroStepsWorker => {
    const w = new SileroStepsWorker(requireSileroModel());
    workers.push(w);
    return w;
  };
  afterAll(async () => {
    for (const w of workers) await w.close();
  });

  it('keeps one step per frame and the engine\'s order of events, each step with Silero\'s horizons', async () => {
    const engine = scriptedEngine();
    const frames = 25;
    const events = await run(withSileroSteps(engine, worker()), noise(frames * 0.08));
    const counter = { step: 0, other: new Map<string, number>() };
    expect(events.map((e) => label(e, counter))).toEqual(engine.log);
    const steps = events.filter((e) => e.type === 'step');
    expect(steps).toHaveLength(frames);
    for (const s of steps) expect(s.vad.map((v) => v.horizon_s)).toEqual([...VAD_HORIZONS]);
  });

  it('hears speech in a LibriVox reading and none in loud noise, where the WebRTC VAD hears speech in both', async () => {
    const w = worker();
    const speech = librivox24k();
    const hiss = noise(3);
    const sileroSpeech = steps2s(await run(withSileroSteps(scriptedEngine(), w), speech)).slice(6);
    const sileroNoise = steps2s(await run(withSileroSteps(scriptedEngine(), w), hiss)).slice(6);
    const webrtcSpeech = (await webrtc2s(speech)).slice(6);
    const webrtcNoise = (await webrtc2s(hiss)).slice(6);
    // Speech: both near 0 (someone is talking).
    expect(mean(sileroSpeech)).toBeLessThan(0.3);
    expect(mean(webrtcSpeech)).toBeLessThan(0.3);
    // Noise: the WebRTC VAD takes it for speech; Silero hears nobody (the turn is free).
    expect(mean(webrtcNoise)).toBeLessThan(0.3);
    expect(mean(sileroNoise)).toBeGreaterThan(0.7);
  });

  it('frees the stream on close (also mid-stream), and the next stream works', async () => {
    const w = worker();
    const engine = withSileroSteps(scriptedEngine(), w);
    const stream = await engine.open({ modelName: 'default', inputFormat: 'pcm_s16le' as never, jsonConfig: {} }, () => {});
    expect(w.open).toBe(1);
    const inFlight = stream.push(new Int16Array(FRAME));
    stream.close();
    await inFlight; // a push the close overtook ends quietly
    expect(w.open).toBe(0);
    await expect(stream.push(new Int16Array(FRAME))).rejects.toMatchObject({ code: 'INVALID_STATE' });
    const events = await run(engine, noise(0.8));
    expect(events.filter((e) => e.type === 'step')).toHaveLength(10);
    expect(w.open).toBe(0);
  });

  it('errors are typed: a bad engine or worker, a missing file, a closed worker', async () => {
    expect(() => withSileroSteps({} as never, worker())).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => withSileroSteps(scriptedEngine(), {} as never)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => new SileroStepsWorker('/nonexistent/silero_vad.onnx')).toThrow(expect.objectContaining({ code: 'MODEL_INVALID' }));
    const w = worker();
    const stream = await withSileroSteps(scriptedEngine(), w).open({ modelName: 'default', inputFormat: 'pcm_s16le' as never, jsonConfig: {} }, () => {});
    await w.close();
    const err = await Promise.resolve(stream.push(new Int16Array(FRAME))).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(VoicewireError);
    expect((err as VoicewireError).code).toBe('INVALID_STATE');
    stream.close();
    await expect(withSileroSteps(scriptedEngine(), w).open({ modelName: 'default', inputFormat: 'pcm_s16le' as never, jsonConfig: {} }, () => {})).rejects.toMatchObject({ code: 'INVALID_STATE' });
  });
});
