// Resampling, one-shot and streaming: `npx tsx examples/resample.ts`.
import { resample, createResampler } from 'voicewire';

const tone = (rate: number, seconds: number) =>
  Float32Array.from({ length: rate * seconds }, (_, i) => 0.5 * Math.sin((2 * Math.PI * 440 * i) / rate));

const y = resample(tone(48000, 1), 48000, 8000);        // exactly round(N·to/from), zero lag
console.log(`one-shot: ${y.length} samples`);

const input = tone(24000, 1);
const r = createResampler({ from: 24000, to: 16000 });  // channels?, quality: 'high' | 'best' | 'folding' | 'fast'
const out: number[] = [];
for (let i = 0; i < input.length; i += 1920) out.push(...r.push(input.subarray(i, i + 1920))); // 80 ms chunks
out.push(...r.flush());                                  // the tail; r.reset() on barge-in
const same = resample(input, 24000, 16000).every((v, i) => v === out[i]);
console.log(`streamed: ${out.length} samples, identical to one-shot: ${same}, delay ${(r.delaySeconds * 1000).toFixed(1)} ms`);
