/**
 * The delay an STT request asks for (src/sessions/stt-delay.ts, issue 35): an engine slower than
 * nothing gets its events held the frames the request adds, `ready` reports the delay asked for,
 * and the end releases what is still held. New in issue 35: before it, `delay_in_frames` other than
 * the model's own was refused at setup.
 */
import { describe, expect, it } from 'vitest';
import { createScriptedSttEngine, type SttEngineEvent } from '../../src/index.js';
import { delayedSttEngine } from '../../src/sessions/stt-delay.js';

const config = (delay?: number) => ({ modelName: 'default', inputFormat: 'pcm' as const, jsonConfig: delay === undefined ? {} : { delay_in_frames: delay } });

/** Pushes `frames` frames (and ends) through a delayed scripted engine; the events in order. */
async function run(delay: number | undefined, frames: number, async = false): Promise<{ delayInFrames: number; events: SttEngineEvent[] }> {
  const inner = createScriptedSttEngine({
    delayInFrames: 2,
    async,
    frames: { 1: [{ type: 'text', text: 'a', start_s: 0 }], 3: [{ type: 'end_text', stop_s: 0.1 }, { type: 'text', text: 'b', start_s: 0.2 }] },
    atEnd: [{ type: 'end_text', stop_s: 0.3 }],
  });
  const events: SttEngineEvent[] = [];
  const s = await delayedSttEngine(inner).open(config(delay), (e) => events.push(e));
  for (let i = 0; i < frames; i++) await s.push(new Int16Array(1920));
  await s.end?.();
  s.close();
  return { delayInFrames: s.info.delayInFrames, events };
}

/** Each non-step event with the index of the step it came before. */
const placed = (events: SttEngineEvent[]): Array<[string, number]> => {
  let steps = 0;
  const out: Array<[string, number]> = [];
  for (const e of events) {
    if (e.type === 'step') steps++;
    else out.push([e.type === 'text' ? `text ${e.text}` : `end_text ${e.stop_s}`, steps]);
  }
  return out;
};

describe('delayedSttEngine', () => {
  it('without delay_in_frames, or at the engine\'s own, the engine is as it is', async () => {
    for (const d of [undefined, 2]) {
      const r = await run(d, 6);
      expect(r.delayInFrames).toBe(2);
      expect(placed(r.events)).toEqual([['text a', 1], ['end_text 0.1', 3], ['text b', 3], ['end_text 0.3', 6]]);
    }
  });

  it('delay 7 on an engine of 2 holds each event 5 frames more; ready says 7', async () => {
    for (const async of [false, true]) {
      const r = await run(7, 12, async);
      expect(r.delayInFrames).toBe(7);
      expect(placed(r.events)).toEqual([['text a', 6], ['end_text 0.1', 8], ['text b', 8], ['end_text 0.3', 12]]);
    }
  });

  it('what is still held when the stream ends goes out at the end, in order', async () => {
    const r = await run(24, 4);
    expect(placed(r.events)).toEqual([['text a', 4], ['end_text 0.1', 4], ['text b', 4], ['end_text 0.3', 4]]);
  });

  it('an engine already slower than the delay asked for keeps its own', async () => {
    const inner = createScriptedSttEngine({ delayInFrames: 10 });
    const s = await delayedSttEngine(inner).open(config(7), () => undefined);
    expect(s.info.delayInFrames).toBe(10);
  });
});
