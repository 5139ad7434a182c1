/**
 * A TTS engine for fault tests: the tone engine, counting streams opened and closed, that throws,
 * hangs or emits after close when the text says so (`THROW`, `HANG`, `LATE`). Registered in the
 * engine registry under a name of its own so `createVoiceServer({ tts })` picks it.
 */
import { TTS_ENGINES } from '../../../src/engines/registry.js';
import { createToneTtsEngine } from '../../../src/engines/tone.js';
import type { TtsEngine, TtsEngineEvent, TtsEngineStream } from '../../../src/sessions/engine.js';

export interface EngineCounts {
  opened: number;
  closed: number;
  /** Events emitted after close (a faulty engine's), and how many reached a socket is the test's to check. */
  lateEmits: number;
  /** Time each stream was closed (performance.now()), by open order. */
  closedAt: number[];
}

export function registerFaultyEngine(name: string): EngineCounts {
  const counts: EngineCounts = { opened: 0, closed: 0, lateEmits: 0, closedAt: [] };
  const base = TTS_ENGINES['tone']!;
  TTS_ENGINES[name] = {
    catalogVoices: base.catalogVoices,
    create(context) {
      const inner: TtsEngine = createToneTtsEngine(context);
      return {
        async open(config, emit: (e: TtsEngineEvent) => void) {
          const stream = await inner.open(config, emit);
          const index = counts.opened++;
          let closed = false;
          const s: TtsEngineStream = {
            info: stream.info,
            text(text) {
              if (text.includes('THROW')) throw new Error('engine exploded');
              if (text.includes('HANG')) return new Promise<void>(() => {});
              if (text.includes('LATE')) {
                // Emits a frame after the runner closed the stream.
                setTimeout(() => {
                  counts.lateEmits++;
                  emit({ type: 'audio', pcm: new Int16Array(3840).fill(1000) });
                  emit({ type: 'word', text: 'late', start_s: 0, stop_s: 0.08 });
                }, 100);
                throw new Error('engine failed, then keeps emitting');
              }
              return stream.text(text);
            },
            pause: (sec) => stream.pause(sec),
            flush: () => stream.flush(),
            end: () => stream.end(),
            close() {
              if (closed) return;
              closed = true;
              counts.closed++;
              counts.closedAt[index] = performance.now();
              stream.close();
            },
          };
          return s;
        },
      };
    },
  };
  return counts;
}

/** Resolves once `pred` holds, polling every 10 ms; rejects after `ms`. */
export async function until(pred: () => boolean, ms: number, what = 'condition'): Promise<void> {
  const t0 = Date.now();
  while (!pred()) {
    if (Date.now() - t0 > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
