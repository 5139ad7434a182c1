/** Runs the espeak engine over a script of calls and collects what it emits. */
import { createEspeakTtsEngine, type EspeakTtsOptions, type EspeakVoice } from '../../src/engines/espeak-tts.js';
import type { EngineDictionary } from '../../src/engines/context.js';
import { catalogVoices } from '../../src/engines/espeak-voices.js';
import type { TtsEngineConfig, TtsEngineEvent } from '../../src/sessions/engine.js';

export type Call = string | { pause: number } | 'flush';

export interface Spoken {
  pcm: Int16Array;
  frames: Int16Array[];
  words: { text: string; start_s: number; stop_s: number }[];
  events: TtsEngineEvent[];
}

export function testContext(extra: { voices?: EspeakVoice[]; dicts?: EngineDictionary[] } = {}) {
  const voices: EspeakVoice[] = [...catalogVoices(), ...(extra.voices ?? [])];
  return {
    resolveVoice: async (id: string | null) => (id === null ? voices[0] : voices.find((v) => v.uid === id)),
    resolvePronunciation: async (id: string) => extra.dicts?.find((d) => d.uid === id),
  };
}

export function voiceOf(language: string): string {
  return catalogVoices().find((v) => v.language === language)!.uid;
}

export async function speak(calls: Call[], config: Partial<TtsEngineConfig> = {}, ctx = testContext(), options: EspeakTtsOptions = {}): Promise<Spoken> {
  const engine = createEspeakTtsEngine(ctx, options);
  const events: TtsEngineEvent[] = [];
  const stream = await engine.open({ modelName: 'default', outputFormat: 'pcm', jsonConfig: {}, ...config }, (e) => events.push(e));
  for (const c of calls) {
    if (c === 'flush') await stream.flush();
    else if (typeof c === 'string') await stream.text(c);
    else await stream.pause(c.pause);
  }
  await stream.end();
  stream.close();
  const frames = events.filter((e) => e.type === 'audio').map((e) => (e as { pcm: Int16Array }).pcm);
  const pcm = new Int16Array(frames.reduce((n, f) => n + f.length, 0));
  let o = 0;
  for (const f of frames) {
    pcm.set(f, o);
    o += f.length;
  }
  const words = events.filter((e) => e.type === 'word').map((e) => {
    const w = e as { text: string; start_s: number; stop_s: number };
    return { text: w.text, start_s: w.start_s, stop_s: w.stop_s };
  });
  return { pcm, frames, words, events };
}

/** Silent stretches (5 ms windows at most `level` peak) of at least `minS` seconds, inside the sound. */
export function silences(pcm: Int16Array, rate: number, minS: number, level = 64): { from: number; to: number }[] {
  const win = Math.round(rate * 0.005);
  const loud: boolean[] = [];
  for (let i = 0; i < pcm.length; i += win) {
    let p = 0;
    for (let j = i; j < Math.min(pcm.length, i + win); j++) p = Math.max(p, Math.abs(pcm[j]!));
    loud.push(p > level);
  }
  const first = loud.indexOf(true);
  const last = loud.lastIndexOf(true);
  const out: { from: number; to: number }[] = [];
  let start = -1;
  for (let i = first; i <= last; i++) {
    if (!loud[i] && start < 0) start = i;
    if (loud[i] && start >= 0) {
      if ((i - start) * 0.005 >= minS) out.push({ from: (start * win) / rate, to: (i * win) / rate });
      start = -1;
    }
  }
  return out;
}
