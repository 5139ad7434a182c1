/**
 * Backpressure of the pipeline streams: with a slow consumer the frames buffered inside stay
 * under the high-water mark (plus one slice) however much the producer offers, in Node Duplexes
 * and web stream pairs; the marks behave as hysteresis; reset() drops what is queued.
 */
import { readFileSync } from 'node:fs';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { toNodeTransform } from '../../src/node/transform.js';
import { createSttDecodeTransform, createTtsEncodeTransform } from '../../src/node/pipelines.js';
import { FramePump } from '../../src/pipelines/pipeline-stream.js';
import { createSttAudioDecoder, createSttDecoderStream, sttDecoderStreamCore } from '../../src/pipelines/stt-audio-decoder.js';
import { createTtsAudioEncoder, createTtsEncoderStream } from '../../src/pipelines/tts-audio-encoder.js';
import { decodeWav } from '../../src/audio/wav.js';
import { has, needs } from '../helpers/tools.js';

const SPEECH48 = decodeWav(readFileSync(new URL('../../fixtures/speech/en_48k.wav', import.meta.url)), { output: 'int16', mono: true }).samples;
/** 4.6 s of 24 kHz audio as s16le bytes (58 STT frames). */
const PCM24 = (() => {
  const x = new Int16Array(110400);
  for (let i = 0; i < x.length; i++) x[i] = SPEECH48[(i * 2) % SPEECH48.length]!;
  return new Uint8Array(x.buffer);
})();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A Node sink that takes one chunk per `ms` and records `probe()` at every chunk. */
function slowSink(ms: number, probe: () => number, objectMode: boolean) {
  const seen: number[] = [];
  const chunks: unknown[] = [];
  const sink = new Writable({
    objectMode,
    highWaterMark: 1,
    write(chunk, _enc, cb) {
      seen.push(probe());
      chunks.push(chunk);
      setTimeout(cb, ms);
    },
  });
  return { sink, seen, chunks };
}

describe('FramePump: high/low water marks as hysteresis', () => {
  it('stops the core at high, resumes only once the queue is down to low', () => {
    let pushes = 0;
    const core = { push: (x: number) => (pushes++, [x]), flush: () => [], reset: () => undefined };
    const delivered: number[] = [];
    let room = false;
    const pump = new FramePump<number, number>(core, {
      highWaterMark: 4,
      lowWaterMark: 1,
      slice: (n) => Array.from({ length: n }, (_, i) => i),
      sink: (x) => (delivered.push(x), room),
      onEnd: () => undefined,
      onError: () => undefined,
    });
    let done = false;
    pump.pull(); // downstream takes one at once
    pump.write(20, () => (done = true));
    expect(delivered).toEqual([0]);
    expect(pump.buffered).toBe(4); // ran until 4 waited
    expect(pushes).toBe(5);
    pump.pull(); // 3 left: above low, no production
    pump.pull(); // 2 left
    expect(pushes).toBe(5);
    expect(pump.buffered).toBe(2);
    pump.pull(); // 1 left = low: production resumes up to high
    expect(pump.buffered).toBe(4);
    expect(pushes).toBe(8);
    room = true;
    pump.pull(); // a fast consumer drains everything
    expect(done).toBe(true);
    expect(delivered).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });
});

describe('Node Duplexes with a slow consumer', () => {
  it('TTS: 60 frames offered at once, at most high + 1 frames inside; output complete and in order', async () => {
    const frames = Array.from({ length: 60 }, (_, i) => SPEECH48.subarray((i * 3840) % 100000, ((i * 3840) % 100000) + 3840));
    const t = createTtsEncodeTransform('pcm_16000', { highWaterMark: 6, lowWaterMark: 2 });
    const { sink, seen, chunks } = slowSink(2, () => t.bufferedFrames, false);
    await pipeline(Readable.from(frames), t, sink);
    expect(Math.max(...seen)).toBeLessThanOrEqual(7);
    expect(t.writableLength).toBe(0);
    const enc = createTtsAudioEncoder('pcm_16000');
    const want = Buffer.concat([...frames.map((f) => enc.encode(f).bytes), enc.end().bytes]);
    expect(Buffer.concat(chunks as Buffer[]).equals(want)).toBe(true);
  });

  it('STT: 4.6 s written in ONE chunk: bounded by the marks (the plain adapter buffers every frame)', async () => {
    const bounded = createSttDecodeTransform('pcm_24000', { highWaterMark: 4, lowWaterMark: 1 });
    const a = slowSink(2, () => bounded.bufferedFrames, false);
    await pipeline(Readable.from([Buffer.from(PCM24)]), bounded, a.sink);
    expect(a.chunks).toHaveLength(58);
    expect(Math.max(...a.seen)).toBeLessThanOrEqual(5);

    // The same core behind the platform's own backpressure: one write yields all 58 frames at once.
    const core = sttDecoderStreamCore('pcm_24000');
    const plain = toNodeTransform(core, {});
    const b = slowSink(1, () => plain.readableLength / 3840, false);
    await pipeline(Readable.from([Buffer.from(PCM24)]), plain, b.sink);
    expect(Math.max(...b.seen)).toBeGreaterThan(40);
  });

  it('reset() drops the queued frames (barge-in) and the stream ends normally', async () => {
    const t = createSttDecodeTransform('pcm_24000', { output: 'frames', highWaterMark: 4 });
    t.write(Buffer.from(PCM24));
    await sleep(5);
    expect(t.bufferedFrames).toBeLessThanOrEqual(5);
    t.reset();
    expect(t.bufferedFrames).toBeLessThanOrEqual(1);
    t.end();
    const got: Int16Array[] = [];
    for await (const f of t) got.push(f as Int16Array);
    expect(got.length).toBeLessThanOrEqual(2);
  });

  it.skipIf(!has('ffmpeg'))(needs('ffmpeg', 'ffmpeg input (mp3) also stays bounded'), async () => {
    const mp3 = readFileSync(new URL('../../fixtures/pipelines/en.mp3', import.meta.url));
    const t = createSttDecodeTransform('mp3', { highWaterMark: 3, lowWaterMark: 1 });
    const { sink, seen, chunks } = slowSink(1, () => t.bufferedFrames, false);
    await pipeline(Readable.from([mp3]), t, sink);
    expect(chunks.length).toBe(30); // nothing lost while ffmpeg is held back (29.09 frames of audio)
    expect(Math.max(...seen)).toBeLessThanOrEqual(5); // high + Node's one + the padded last frame
  });
});

describe('web streams with a slow reader', () => {
  async function drainSlowly<T>(readable: ReadableStream<T>, probe: () => number): Promise<{ got: T[]; max: number }> {
    const reader = readable.getReader();
    const got: T[] = [];
    let max = 0;
    for (;;) {
      await sleep(1);
      max = Math.max(max, probe());
      const { done, value } = await reader.read();
      if (done) break;
      got.push(value);
    }
    return { got, max };
  }

  it('STT: one 4.6 s chunk, at most high + 1 frames inside', async () => {
    const s = createSttDecoderStream('pcm', { highWaterMark: 5, lowWaterMark: 2 });
    const writer = s.writable.getWriter();
    const written = writer.write(PCM24).then(() => writer.close());
    const { got, max } = await drainSlowly(s.readable, () => s.bufferedFrames);
    await written;
    expect(got).toHaveLength(58);
    expect(max).toBeLessThanOrEqual(6);
    const want = createSttAudioDecoder('pcm');
    const frames = [...want.push(PCM24), ...want.flush()];
    got.forEach((f, i) => expect(Buffer.from(f.buffer, f.byteOffset, f.byteLength).equals(Buffer.from(frames[i]!.buffer, frames[i]!.byteOffset, 3840))).toBe(true));
  });

  it('TTS: a producer of 40 frames through pipeThrough, bounded; chunks carry timing', async () => {
    const frames = Array.from({ length: 40 }, (_, i) => SPEECH48.subarray(i * 2400, i * 2400 + 3840));
    const s = createTtsEncoderStream('ulaw_8000', { output: 'chunks', highWaterMark: 4, lowWaterMark: 1 });
    let offered = 0;
    const source = new ReadableStream<Int16Array>({
      pull(c) {
        if (offered < frames.length) c.enqueue(frames[offered++]!);
        else c.close();
      },
    });
    const out = source.pipeThrough(s);
    const { got, max } = await drainSlowly(out, () => s.bufferedFrames);
    expect(got).toHaveLength(41); // 40 frames + the resampler tail at the end
    expect(max).toBeLessThanOrEqual(5);
    expect(offered).toBe(40);
    const chunks = got as { start_s: number; stop_s: number }[];
    for (let i = 1; i < chunks.length; i++) expect(chunks[i]!.start_s).toBe(chunks[i - 1]!.stop_s);
  });

  it('an error in the core errors both sides', async () => {
    const s = createSttDecoderStream('wav');
    const writer = s.writable.getWriter();
    const reader = s.readable.getReader();
    await expect(writer.write(new Uint8Array(100).fill(7))).rejects.toMatchObject({ code: 'WAV_NOT_RIFF' });
    await expect(reader.read()).rejects.toMatchObject({ code: 'WAV_NOT_RIFF' });
  });
});
