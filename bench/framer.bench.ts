/**
 * Framing throughput: 1 s of 48 kHz s16le mono (96,000 bytes) cut into 80 ms TTS frames
 * (7680 bytes, 12.5 frames/s), delivered in random chunk sizes (1000-9000 bytes) and in 3840-byte
 * chunks; and 1 s of 24 kHz STT input in 3840-byte chunks (every frame a zero-copy view).
 * Beside it, the counter-example from the field: a framer that Buffer.concat's every chunk onto
 * its backlog. Reports ns per frame.
 */
import { TTS_FRAME, STT_FRAME, createFramer, type FramePreset } from '../src/audio/framer.js';
import { runGroup, save, type GroupResult } from './util.js';

function random(seed: number): () => number {
  let x = seed;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

/** 1 s of audio at `rate` split into chunks (each its own Buffer, as from a socket). */
function chunksOf(rate: number, sizeOf: () => number): Buffer[] {
  const total = rate * 2;
  const out: Buffer[] = [];
  for (let at = 0; at < total; ) {
    const n = Math.min(sizeOf(), total - at);
    const b = Buffer.alloc(n);
    for (let i = 0; i < n; i++) b[i] = (at + i) & 0xff;
    out.push(b);
    at += n;
  }
  return out;
}

/** The counter-example: concatenate the backlog with every chunk, then slice frames off it. */
function concatFramer(frameBytes: number) {
  let backlog = Buffer.alloc(0);
  return {
    push(chunk: Buffer): Buffer[] {
      backlog = Buffer.concat([backlog, chunk]);
      const frames: Buffer[] = [];
      while (backlog.length >= frameBytes) {
        frames.push(backlog.subarray(0, frameBytes));
        backlog = backlog.subarray(frameBytes);
      }
      return frames;
    },
    flush(): Buffer[] {
      if (backlog.length === 0) return [];
      const last = Buffer.alloc(frameBytes);
      backlog.copy(last);
      backlog = Buffer.alloc(0);
      return [last];
    },
  };
}

const rnd = random(12345);
const scenarios: { label: string; preset: FramePreset; chunks: Buffer[] }[] = [
  { label: '1 s of 48 kHz, random 1000-9000-byte chunks -> 7680-byte TTS frames', preset: TTS_FRAME, chunks: chunksOf(48000, () => 1000 + Math.floor(rnd() * 8001)) },
  { label: '1 s of 48 kHz, 3840-byte chunks -> 7680-byte TTS frames', preset: TTS_FRAME, chunks: chunksOf(48000, () => 3840) },
  { label: '1 s of 24 kHz, 3840-byte chunks -> 3840-byte STT frames (all views)', preset: STT_FRAME, chunks: chunksOf(24000, () => 3840) },
  { label: '1 s of 24 kHz, random 1000-9000-byte chunks -> 3840-byte STT frames', preset: STT_FRAME, chunks: chunksOf(24000, () => 1000 + Math.floor(rnd() * 8001)) },
];

const groups: GroupResult[] = [];
const summary: string[] = [];
let sink = 0;
for (const { label, preset, chunks } of scenarios) {
  const frames = Math.ceil(chunks.reduce((n, c) => n + c.length, 0) / preset.frameBytes);
  const framer = createFramer(preset);
  const g = runGroup(
    label,
    [
      {
        name: 'voicewire createFramer',
        fn: () => {
          for (const c of chunks) sink += framer.push(c).length;
          sink += framer.flush().length;
        },
      },
      {
        name: 'Buffer.concat per chunk',
        fn: () => {
          const naive = concatFramer(preset.frameBytes);
          for (const c of chunks) sink += naive.push(c).length;
          sink += naive.flush().length;
        },
      },
    ],
    1,
  );
  groups.push(g);
  const [ours, peer] = g.results;
  summary.push(`${label}: ${chunks.length} chunks, ${frames} frames; voicewire ${((ours!.medianUs * 1000) / frames).toFixed(0)} ns/frame, concat framer ${((peer!.medianUs * 1000) / frames).toFixed(0)} ns/frame (voicewire ${peer!.refSpeedup.toFixed(1)}x, p10-p90 ${peer!.refSpeedupP10.toFixed(1)}-${peer!.refSpeedupP90.toFixed(1)})`);
}
console.log('\nSummary');
for (const s of summary) console.log(`  ${s}`);
if (sink < 0) console.log(sink);
save('framer', groups);
