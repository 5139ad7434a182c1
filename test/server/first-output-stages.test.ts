/**
 * The time to first audio, broken down by stage (src/server/first-output-stages.ts): with an
 * engine that takes 80 ms before its first audio, /metrics puts those 80 ms in `engine`, not in
 * `input` or `output`, and the three stages add up to the time-to-first-audio histogram.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { TTS_ENGINES } from '../../src/engines/registry.js';
import { createToneTtsEngine } from '../../src/engines/tone.js';
import type { TtsEngineStream } from '../../src/sessions/engine.js';
import { connect, startServer, type Harness } from './harness.js';

const ENGINE_DELAY_MS = 80;

// The tone engine, waiting ENGINE_DELAY_MS inside its first text() before producing audio.
TTS_ENGINES['slow-start'] = {
  catalogVoices: TTS_ENGINES['tone']!.catalogVoices,
  create(context) {
    const inner = createToneTtsEngine(context);
    return {
      async open(config, emit) {
        const s = await inner.open(config, emit);
        let first = true;
        const stream: TtsEngineStream = {
          info: s.info,
          async text(text) {
            if (first) await new Promise((r) => setTimeout(r, ENGINE_DELAY_MS));
            first = false;
            return s.text(text);
          },
          pause: (seconds) => s.pause(seconds),
          flush: () => s.flush(),
          end: () => s.end(),
          close: () => s.close(),
        };
        return stream;
      },
    };
  },
};

/** `name{labels} value` lines of a Prometheus text exposition, as sum and count per stage. */
function stageSums(metrics: string, route: string): Record<string, { sum: number; count: number }> {
  const out: Record<string, { sum: number; count: number }> = {};
  for (const m of metrics.matchAll(/^voicewire_first_output_stage_seconds_(sum|count)\{route="([^"]+)",stage="([^"]+)"\} ([\d.e+-]+)$/gm)) {
    if (m[2] !== route) continue;
    const entry = (out[m[3]!] ??= { sum: 0, count: 0 });
    entry[m[1] as 'sum' | 'count'] = Number(m[4]);
  }
  return out;
}

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('time to first audio by stage', () => {
  it("a slow engine's delay lands in the engine stage, and the stages add up to the time to first audio", async () => {
    h = await startServer({ tts: 'slow-start' });
    const sessions = 3;
    for (let i = 0; i < sessions; i++) {
      const c = connect(`${h.wsBase}/speech/tts`, { 'x-api-key': h.apiKey });
      c.send({ type: 'setup', output_format: 'pcm' });
      c.send({ type: 'text', text: 'hello there' });
      c.send({ type: 'end_of_stream' });
      await c.waitFor((m) => m['type'] === 'audio');
      c.ws.close();
      await c.closed;
    }
    const metrics = await (await fetch(h.base.replace('/api', '/metrics'))).text();
    const stages = stageSums(metrics, 'tts_ws');
    for (const stage of ['auth', 'input', 'engine', 'output']) expect(stages[stage]?.count, stage).toBe(sessions);
    expect(stages['engine']!.sum / sessions).toBeGreaterThanOrEqual((ENGINE_DELAY_MS - 5) / 1000);
    expect(stages['input']!.sum / sessions).toBeLessThan(ENGINE_DELAY_MS / 2 / 1000);
    expect(stages['output']!.sum / sessions).toBeLessThan(ENGINE_DELAY_MS / 2 / 1000);
    const ttfa = Number(/^voicewire_time_to_first_audio_seconds_sum\{route="tts_ws"\} ([\d.e+-]+)$/m.exec(metrics)![1]);
    const parts = stages['input']!.sum + stages['engine']!.sum + stages['output']!.sum;
    // The stages span first frame → socket, as the histogram does; the clocks are read a few statements apart.
    expect(Math.abs(parts - ttfa)).toBeLessThan(0.002 * sessions);
  });
});
