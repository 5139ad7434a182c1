/**
 * The 80 ms framer against a naive reference written here (concatenate everything, slice every
 * frameBytes, treat the tail per option). Streaming must equal one-shot for any split: random
 * cuts, 1-byte chunks, empty chunks; frames are views when inside one chunk and copies when they
 * straddle; a frame leaves on the push that completes it.
 */
import { seededBytes } from '../helpers/seeded.js';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  MAX_FRAME_BYTES,
  STT_FRAME,
  TTS_FRAME,
  createFramer,
  createFramerStream,
  createSilenceFrames,
  silenceFrame,
  splitIntoFrames,
  type FramerOptions,
  type FramerPartial,
} from '../../src/audio/framer.js';
import { createFramerTransform } from '../../src/node/framer.js';
import { VoicewireError } from '../../src/util/errors.js';
import { int16View } from '../../src/util/bytes.js';
import * as nodeIndex from '../../src/node/index.js';
import { concat, oneByOne, splitAt } from '../helpers/chunks.js';
import { expectCode } from '../helpers/errors.js';

// ---------------------------------------------------------------------------------------------
// Naive reference
// ---------------------------------------------------------------------------------------------

function naiveFrames(data: Uint8Array, o: FramerOptions): Uint8Array[] {
  const sampleBytes = o.bytesPerSample * (o.channels ?? 1);
  const size = o.frameSamples * sampleBytes;
  const out: Uint8Array[] = [];
  let i = 0;
  for (; i + size <= data.length; i += size) out.push(Uint8Array.from(data.subarray(i, i + size)));
  const rest = data.length - i;
  if (rest > 0) {
    const partial = o.partial ?? 'pad';
    if (partial === 'pad') {
      const f = new Uint8Array(size);
      f.set(data.subarray(i));
      out.push(f);
    } else if (partial === 'short') {
      const f = new Uint8Array(Math.ceil(rest / sampleBytes) * sampleBytes);
      f.set(data.subarray(i));
      out.push(f);
    }
  }
  return out;
}

const randomBytes = seededBytes;

/** Gives every chunk its own ArrayBuffer, so a view can be traced to the chunk it aliases. */
function ownBuffers(chunks: Uint8Array[]): Uint8Array[] {
  return chunks.map((c) => c.slice());
}

interface Traced {
  frames: Uint8Array[];
  /** For each frame: index of the push that returned it (-1 for flush). */
  pushIndex: number[];
}

/** Streams `chunks` through a framer, checking the latency and `buffered` contract on every push. */
function streamThrough(chunks: Uint8Array[], o: FramerOptions): Traced {
  const framer = createFramer(o);
  const frames: Uint8Array[] = [];
  const pushIndex: number[] = [];
  let total = 0;
  chunks.forEach((c, k) => {
    for (const f of framer.push(c)) {
      frames.push(f);
      pushIndex.push(k);
    }
    total += c.length;
    // Emitted as soon as the last byte arrives, never later; holds back only the remainder.
    // (Plain checks: expect() per push would dominate the 1-byte-chunk runs.)
    if (frames.length !== Math.floor(total / framer.frameBytes)) expect.fail(`push ${k}: ${frames.length} frames after ${total} bytes`);
    if (framer.buffered !== total % framer.frameBytes) expect.fail(`push ${k}: buffered ${framer.buffered} after ${total} bytes`);
  });
  for (const f of framer.flush()) {
    frames.push(f);
    pushIndex.push(-1);
  }
  expect(framer.buffered).toBe(0);
  return { frames, pushIndex };
}

/** Checks view-vs-copy: a whole frame inside one chunk is a view of it; a straddling one is not. */
function checkViews(chunks: Uint8Array[], traced: Traced, frameBytes: number): void {
  const starts: number[] = [];
  let at = 0;
  for (const c of chunks) {
    starts.push(at);
    at += c.length;
  }
  traced.frames.forEach((frame, i) => {
    const k = traced.pushIndex[i]!;
    if (k < 0) return; // the flushed frame is always a copy
    const begin = i * frameBytes;
    const chunk = chunks[k]!;
    const inside = begin >= starts[k]! && begin + frameBytes <= starts[k]! + chunk.length;
    if (inside) {
      expect(frame.buffer).toBe(chunk.buffer);
      expect(frame.byteOffset).toBe(chunk.byteOffset + begin - starts[k]!);
    } else {
      if (chunks.some((c) => c.buffer === frame.buffer)) expect.fail(`frame ${i} straddles chunks but aliases one`);
      expect(frame.byteLength).toBe(frameBytes);
    }
  });
}

const sameFrames = (a: Uint8Array[], b: Uint8Array[]): void => {
  expect(a.length).toBe(b.length);
  a.forEach((f, i) => expect(Buffer.from(f).equals(Buffer.from(b[i]!))).toBe(true));
};

const configArb = fc.record({
  frameSamples: fc.integer({ min: 1, max: 700 }),
  bytesPerSample: fc.integer({ min: 1, max: 4 }),
  channels: fc.integer({ min: 1, max: 2 }),
  partial: fc.constantFrom<FramerPartial>('pad', 'short', 'drop'),
});

// ---------------------------------------------------------------------------------------------

describe('presets (docs/api.md §4.2, §4.4)', () => {
  it('are 80 ms of s16le mono', () => {
    for (const p of [STT_FRAME, TTS_FRAME]) {
      expect(p.frameSamples / p.sampleRate).toBeCloseTo(0.08, 12);
      expect(p.frameBytes).toBe(p.frameSamples * p.bytesPerSample * p.channels);
    }
    expect([STT_FRAME.frameSamples, STT_FRAME.sampleRate, STT_FRAME.frameBytes]).toEqual([1920, 24000, 3840]);
    expect([TTS_FRAME.frameSamples, TTS_FRAME.sampleRate, TTS_FRAME.frameBytes]).toEqual([3840, 48000, 7680]);
    expect(createFramer(STT_FRAME).frameBytes).toBe(3840);
    expect(createFramer(TTS_FRAME).frameBytes).toBe(7680);
  });
  it('report the worst-case delay: one frame minus one sample', () => {
    const f = createFramer(STT_FRAME);
    expect(f.delay).toBe(1919);
    expect(f.delaySeconds).toBeCloseTo(1919 / 24000, 12);
    expect(createFramer({ frameSamples: 10, bytesPerSample: 2 }).delaySeconds).toBeNull();
  });
});

describe('streaming equals one-shot (naive reference)', () => {
  it('property: random configs, data and splits (with empty chunks) give identical frames, views and timing', () => {
    fc.assert(
      fc.property(
        configArb,
        fc.integer({ min: 0, max: 12000 }),
        fc.integer({ min: 1, max: 1 << 30 }),
        fc.array(fc.integer({ min: 0, max: 12000 }), { maxLength: 30 }),
        (o, len, seed, rawCuts) => {
          const data = randomBytes(len, seed);
          const chunks = ownBuffers(splitAt(data, rawCuts.map((c) => c % (len + 1))));
          const traced = streamThrough(chunks, o);
          sameFrames(traced.frames, naiveFrames(data, o));
          checkViews(chunks, traced, createFramer(o).frameBytes);
        },
      ),
      { numRuns: 150 },
    );
  });

  it.each(['pad', 'short', 'drop'] as const)('1-byte chunks, STT frames, partial %s', (partial) => {
    const o = { ...STT_FRAME, partial };
    const data = randomBytes(3840 * 3 + 1001, 7);
    const chunks = ownBuffers(oneByOne(data));
    const traced = streamThrough(chunks, o);
    sameFrames(traced.frames, naiveFrames(data, o));
    const chunkBuffers = new Set(chunks.map((c) => c.buffer));
    expect(traced.frames.filter((f) => chunkBuffers.has(f.buffer)).length).toBe(0); // all straddle: copies
  });

  it('empty chunks between every byte-range change nothing', () => {
    const data = randomBytes(7680 * 2 + 5, 3);
    const chunks: Uint8Array[] = [new Uint8Array(0)];
    for (const c of splitAt(data, [1, 7679, 7680, 7681, 9000, 15360])) chunks.push(c.slice(), new Uint8Array(0), new Uint8Array(0));
    sameFrames(streamThrough(chunks, TTS_FRAME).frames, naiveFrames(data, TTS_FRAME));
  });

  it('odd byte counts: 3841, 1, 3839, 3, 3837 … on 3840-byte frames', () => {
    const sizes = [3841, 1, 3839, 3, 3837, 7681, 2, 1];
    const data = randomBytes(sizes.reduce((a, b) => a + b, 0), 11);
    const cuts: number[] = [];
    let at = 0;
    for (const s of sizes) cuts.push((at += s));
    const chunks = ownBuffers(splitAt(data, cuts));
    const traced = streamThrough(chunks, STT_FRAME);
    sameFrames(traced.frames, naiveFrames(data, STT_FRAME));
    checkViews(chunks, traced, 3840);
    // The 7681-byte chunk starts mid-frame, so exactly one of its frames is a view.
    expect(traced.frames.filter((f) => chunks.some((c) => c.buffer === f.buffer)).length).toBeGreaterThan(0);
  });

  it('whole frames inside a chunk are views of that chunk (frame.buffer === chunk.buffer)', () => {
    const chunk = randomBytes(3840 * 4, 5);
    const frames = createFramer(STT_FRAME).push(chunk);
    expect(frames.length).toBe(4);
    frames.forEach((f, i) => {
      expect(f.buffer).toBe(chunk.buffer);
      expect(f.byteOffset).toBe(i * 3840);
    });
  });

  it('splitIntoFrames is the same as push + flush', () => {
    const data = randomBytes(10000, 9);
    sameFrames(splitIntoFrames(data, STT_FRAME), naiveFrames(data, STT_FRAME));
  });
});

describe('the final partial frame', () => {
  const o = { frameSamples: 4, bytesPerSample: 2 } as const; // 8-byte frames
  const data = Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
  it('is zero-padded by default', () => {
    expect(splitIntoFrames(data, o).map((f) => [...f])).toEqual([[1, 2, 3, 4, 5, 6, 7, 8], [9, 10, 11, 0, 0, 0, 0, 0]]);
  });
  it("is emitted short (rounded up to whole samples) with partial: 'short'", () => {
    expect(splitIntoFrames(data, { ...o, partial: 'short' }).map((f) => [...f])).toEqual([[1, 2, 3, 4, 5, 6, 7, 8], [9, 10, 11, 0]]);
    const short = splitIntoFrames(data.subarray(0, 10), { ...o, partial: 'short' })[1]!;
    expect([...short]).toEqual([9, 10]);
    expect(int16View(short).length).toBe(1);
    // s24 stereo: 6-byte sample frames.
    expect(splitIntoFrames(data.subarray(0, 7), { frameSamples: 2, bytesPerSample: 3, channels: 2, partial: 'short' })[0]!.length).toBe(12);
  });
  it("is dropped with partial: 'drop'", () => {
    expect(splitIntoFrames(data, { ...o, partial: 'drop' }).map((f) => [...f])).toEqual([[1, 2, 3, 4, 5, 6, 7, 8]]);
  });
  it('nothing is emitted on flush when nothing is buffered', () => {
    expect(splitIntoFrames(data.subarray(0, 8), o).length).toBe(1);
    expect(createFramer(o).flush()).toEqual([]);
  });
});

describe('state', () => {
  it('reset() drops the buffered partial frame (barge-in)', () => {
    const f = createFramer({ frameSamples: 4, bytesPerSample: 1 });
    expect(f.push(Uint8Array.from([1, 2, 3]))).toEqual([]);
    expect(f.buffered).toBe(3);
    f.reset();
    expect(f.buffered).toBe(0);
    expect(f.push(Uint8Array.from([4, 5, 6, 7])).map((x) => [...x])).toEqual([[4, 5, 6, 7]]);
    expect(f.flush()).toEqual([]);
  });
  it('flush() empties the framer, which then takes a new stream', () => {
    const f = createFramer({ frameSamples: 4, bytesPerSample: 1 });
    f.push(Uint8Array.from([1, 2]));
    expect(f.flush().map((x) => [...x])).toEqual([[1, 2, 0, 0]]);
    expect(f.push(Uint8Array.from([9, 9, 9, 9, 8])).map((x) => [...x])).toEqual([[9, 9, 9, 9]]);
    expect(f.flush().map((x) => [...x])).toEqual([[8, 0, 0, 0]]);
  });
  it('keeps no reference to a pushed chunk: overwriting it later does not change buffered bytes', () => {
    const f = createFramer({ frameSamples: 4, bytesPerSample: 1 });
    const reused = Uint8Array.from([1, 2, 3, 4, 5, 6]);
    const first = f.push(reused);
    expect([...first[0]!]).toEqual([1, 2, 3, 4]); // a view: aliases `reused` (documented)
    reused.fill(0xee);
    expect([...f.push(Uint8Array.from([7, 8]))[0]!]).toEqual([5, 6, 7, 8]);
  });
  it('accepts an ArrayBuffer, a Buffer and other typed arrays as bytes', () => {
    const f = createFramer({ frameSamples: 2, bytesPerSample: 2 });
    expect(f.push(new Int16Array([1, 2]) as never)[0]!.length).toBe(4);
    expect(f.push(new ArrayBuffer(4) as never).length).toBe(1);
    expect(f.push(Buffer.alloc(4)).length).toBe(1);
  });
});

describe('errors', () => {
  const bad: [string, () => unknown][] = [
    ['frameSamples 0', () => createFramer({ frameSamples: 0, bytesPerSample: 2 })],
    ['frameSamples 1.5', () => createFramer({ frameSamples: 1.5, bytesPerSample: 2 })],
    ['frameSamples NaN', () => createFramer({ frameSamples: NaN, bytesPerSample: 2 })],
    ['bytesPerSample -2', () => createFramer({ frameSamples: 10, bytesPerSample: -2 })],
    ['bytesPerSample "2"', () => createFramer({ frameSamples: 10, bytesPerSample: '2' as never })],
    ['channels 0', () => createFramer({ frameSamples: 10, bytesPerSample: 2, channels: 0 })],
    ['partial "zero"', () => createFramer({ frameSamples: 10, bytesPerSample: 2, partial: 'zero' as never })],
    ['sampleRate 0', () => createFramer({ frameSamples: 10, bytesPerSample: 2, sampleRate: 0 })],
    ['huge frame', () => createFramer({ frameSamples: MAX_FRAME_BYTES, bytesPerSample: 2 })],
    ['no options', () => createFramer(undefined as never)],
    ['push a string', () => createFramer(STT_FRAME).push('abc' as never)],
    ['push null', () => createFramer(STT_FRAME).push(null as never)],
    ['silence count -1', () => createSilenceFrames(-1)],
    ['silence count 1.5', () => createSilenceFrames(1.5)],
    ['silence frameBytes 0', () => createSilenceFrames(2, 0)],
    ['silenceFrame NaN', () => silenceFrame(NaN)],
  ];
  it.each(bad)('%s → INVALID_ARGUMENT', (_name, f) => {
    expectCode(f, 'INVALID_ARGUMENT');
  });
  it('a rejected push leaves the framer working', () => {
    const f = createFramer({ frameSamples: 2, bytesPerSample: 1 });
    f.push(Uint8Array.from([1]));
    expect(() => f.push(42 as never)).toThrow(VoicewireError);
    expect([...f.push(Uint8Array.from([2]))[0]!]).toEqual([1, 2]);
  });
});

describe('silence', () => {
  it('createSilenceFrames(n) gives n distinct zero frames of 3840 bytes by default', () => {
    const frames = createSilenceFrames(5);
    expect(frames.length).toBe(5);
    for (const f of frames) {
      expect(f.length).toBe(3840);
      expect(f.every((b) => b === 0)).toBe(true);
    }
    frames[0]!.fill(1); // distinct: modifying one leaves the others silent
    expect(frames[1]!.every((b) => b === 0)).toBe(true);
    expect(createSilenceFrames(3, 7680).map((f) => f.length)).toEqual([7680, 7680, 7680]);
    expect(createSilenceFrames(0)).toEqual([]);
  });
  it('silenceFrame(n) is n zero bytes (a shared read-only view)', () => {
    expect(silenceFrame().length).toBe(3840);
    const a = silenceFrame(7680);
    expect(a.length).toBe(7680);
    expect(a.every((b) => b === 0)).toBe(true);
    expect(silenceFrame(100).buffer).toBe(silenceFrame(200).buffer);
    expect(int16View(silenceFrame(3840)).every((s) => s === 0)).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------
// Streams
// ---------------------------------------------------------------------------------------------

describe('web TransformStream', () => {
  it('equals one-shot for random chunks, and backpressure bounds what is in flight', async () => {
    const data = randomBytes(3840 * 200 + 77, 21);
    const chunks = ownBuffers(splitAt(data, Array.from({ length: 300 }, (_, i) => (i * 2617 + 13) % data.length)));
    let produced = 0;
    let consumed = 0;
    let maxInFlight = 0;
    let next = 0;
    const source = new ReadableStream<Uint8Array>(
      {
        pull(controller) {
          if (next === chunks.length) return controller.close();
          const c = chunks[next++]!;
          produced += c.length;
          controller.enqueue(c);
        },
      },
      { highWaterMark: 1 },
    );
    const out: Uint8Array[] = [];
    const sink = new WritableStream<Uint8Array>(
      {
        async write(frame) {
          out.push(frame);
          consumed += frame.length;
          maxInFlight = Math.max(maxInFlight, produced - consumed);
          if (out.length % 8 === 0) await new Promise((r) => setTimeout(r, 0)); // a slow consumer
        },
      },
      { highWaterMark: 1 },
    );
    await source.pipeThrough(createFramerStream(STT_FRAME)).pipeTo(sink);
    sameFrames(out, naiveFrames(data, STT_FRAME));
    // Without backpressure the source would run ~all 768 KB ahead; allow a few chunks + frames.
    expect(maxInFlight).toBeLessThan(64 * 1024);
  });
  it('a bad chunk errors the stream with the VoicewireError', async () => {
    const ts = createFramerStream(STT_FRAME);
    const writer = ts.writable.getWriter();
    const reading = ts.readable.getReader().read();
    await expect(writer.write('nope' as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(reading).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});

describe('Node Transform (voicewire/node)', () => {
  it('is exported from the node entry', () => {
    expect(nodeIndex.createFramerTransform).toBe(createFramerTransform);
    expect(nodeIndex.createFramer).toBe(createFramer);
  });

  it('emits one Buffer per frame, equal to one-shot, the last one padded', async () => {
    const data = randomBytes(7680 * 5 + 999, 31);
    const t = createFramerTransform(TTS_FRAME);
    const out: Buffer[] = [];
    await pipeline(Readable.from(ownBuffers(splitAt(data, [1, 500, 7000, 7681, 20000, 30000])).map((c) => Buffer.from(c.buffer))), t, async (frames: AsyncIterable<Buffer>) => {
      for await (const f of frames) out.push(f);
    });
    for (const f of out) expect(Buffer.isBuffer(f)).toBe(true);
    sameFrames(out, naiveFrames(data, TTS_FRAME));
    expect(t.framer.delay).toBe(3839);
  });

  it('byte mode (readableObjectMode: false) carries the same bytes', async () => {
    const data = randomBytes(3840 * 3 + 10, 41);
    const t = createFramerTransform({ ...STT_FRAME, partial: 'short' }, { readableObjectMode: false });
    const out: Buffer[] = [];
    await pipeline(Readable.from([Buffer.from(data.subarray(0, 5000)), Buffer.from(data.subarray(5000))]), t, async (s: AsyncIterable<Buffer>) => {
      for await (const b of s) out.push(b);
    });
    expect(Buffer.concat(out).equals(Buffer.concat(naiveFrames(data, { ...STT_FRAME, partial: 'short' })))).toBe(true);
  });

  it('honours backpressure: with a slow consumer the writer is paused and memory stays bounded', async () => {
    const total = 4 * 1024 * 1024;
    const chunkSize = 5000; // not a multiple of the frame size
    let produced = 0;
    let consumed = 0;
    let maxInFlight = 0;
    let maxReadable = 0;
    const t = createFramerTransform(STT_FRAME);
    const source = new Readable({
      highWaterMark: 16 * 1024,
      read() {
        if (produced >= total) return void this.push(null);
        const n = Math.min(chunkSize, total - produced);
        produced += n;
        this.push(Buffer.alloc(n, produced & 0xff));
      },
    });
    let frames = 0;
    const sink = new Writable({
      objectMode: true,
      highWaterMark: 1,
      write(frame: Buffer, _enc, cb) {
        consumed += frame.length;
        frames++;
        maxInFlight = Math.max(maxInFlight, produced - consumed);
        maxReadable = Math.max(maxReadable, t.readableLength);
        if (frames % 16 === 0) setTimeout(cb, 0);
        else setImmediate(cb);
      },
    });
    await pipeline(source, t, sink);
    expect(consumed).toBe(Math.ceil(total / 3840) * 3840);
    // The readable side holds its highWaterMark (16 frames, object mode) plus what the writable
    // side held when the consumer drained it: each frame read lets the next buffered write through
    // in the same turn. Node's default writable highWaterMark is 16 KiB on Node 20 and 64 KiB from
    // Node 22 (bytes: ~5 or ~18 frames); a bound written for 16 KiB failed there with 33 frames.
    const heldWritable = Math.ceil(t.writableHighWaterMark / 3840);
    expect(maxReadable).toBeLessThanOrEqual(t.readableHighWaterMark + heldWritable + 2);
    // Source buffer (16 KiB) + the transform's writable side + those frames: far below 4 MB.
    expect(maxInFlight).toBeLessThan(16 * 1024 + t.writableHighWaterMark + (t.readableHighWaterMark + 2) * 3840 + chunkSize);
    expect(maxInFlight).toBeLessThan(256 * 1024);
  });

  it('a bad chunk in object mode becomes an error event with the VoicewireError', async () => {
    const t = createFramerTransform(STT_FRAME, { writableObjectMode: true });
    const done = pipeline(Readable.from([{ not: 'bytes' }], { objectMode: true }), t, new Writable({ objectMode: true, write: (_c, _e, cb) => cb() }));
    await expect(done).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('reset() through the transform drops buffered audio (barge-in)', () => {
    const t = createFramerTransform({ frameSamples: 4, bytesPerSample: 1 });
    t.write(Buffer.from([1, 2, 3]));
    expect(t.framer.buffered).toBe(3);
    t.framer.reset();
    t.write(Buffer.from([4, 5, 6, 7]));
    const f = t.read() as Buffer;
    expect([...f]).toEqual([4, 5, 6, 7]);
    t.destroy();
  });
});

it('naive reference sanity: its frames concatenate back to the input', () => {
  const data = randomBytes(1000, 2);
  expect([...concat(naiveFrames(data, { frameSamples: 100, bytesPerSample: 1 }))]).toEqual([...data]);
});
