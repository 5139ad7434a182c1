/**
 * WAV against external oracles and independent references:
 * (a) golden fixtures written and decoded by ffmpeg and sox (fixtures/wav.sh): every variant
 *     decodes to ffmpeg's samples, and its header reads as ffprobe reads it; sox cross-checks a few;
 * (b) streaming equals one-shot: whole, byte by byte, random splits with empty chunks (fast-check),
 *     and output no later than the bytes allow;
 * (c) files built here byte by byte (an independent writer) for every error code and edge case;
 * (d) what voicewire writes is read back by ffmpeg, ffprobe and sox;
 * (e) fuzzing: thousands of mutated fixtures raise only VoicewireError, streaming and one-shot agree.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  createWavDecoder,
  createWavDecoderStream,
  createWavEncoderStream,
  createWavStreamEncoder,
  decodeWav,
  encodeWav,
  isWav,
  wavInfo,
  wavStreamHeader,
  type WavDecoderEvent,
  type WavFormat,
  type WavSampleOutput,
} from '../../src/audio/wav.js';
import { createWavDecodeTransform, createWavEncodeTransform } from '../../src/node/wav.js';
import { float32ToInt16 } from '../../src/audio/pcm.js';
import { decodeAlaw, decodeMulaw, encodeAlaw, encodeMulaw } from '../../src/audio/g711.js';
import { VoicewireError } from '../../src/util/errors.js';
import { concat, cutsArb, oneByOne, splitAt } from '../helpers/chunks.js';
import { has, needs, run, runText } from '../helpers/tools.js';
import { expectCode } from '../helpers/errors.js';

// ---------------------------------------------------------------------------------------------
// Fixtures and helpers
// ---------------------------------------------------------------------------------------------

const dir = new URL('../../fixtures/wav/', import.meta.url);
const readBytes = (name: string): Uint8Array => new Uint8Array(readFileSync(new URL(name, dir))); // own, aligned copy
const readS16 = (name: string): Int16Array => new Int16Array(readBytes(name).buffer);
const readF32 = (name: string): Float32Array => new Float32Array(readBytes(name).buffer);

interface Fixture {
  name: string;
  /** Golden base name: `<golden>.s16` and/or `<golden>.f32` exist. */
  golden: string;
  container?: 'riff' | 'rf64';
  /** The writer left the data size unknown (pipe). */
  unknownSize?: boolean;
}

const FIXTURES: Fixture[] = [
  { name: 'u8', golden: 'u8' },
  { name: 's16_list', golden: 's16' },
  { name: 's16_sox', golden: 's16' },
  { name: 's24_ext', golden: 's24_ext' },
  { name: 's32_ext', golden: 's32_ext' },
  { name: 'f32_ext', golden: 'f32_ext' },
  { name: 'f32_sox', golden: 'f32_sox' },
  { name: 'f64_ext', golden: 'f64_ext' },
  { name: 'mulaw', golden: 'mulaw' },
  { name: 'mulaw_sox', golden: 'mulaw_sox' },
  { name: 'alaw', golden: 'alaw' },
  { name: 'stereo', golden: 'stereo' },
  { name: '6ch', golden: '6ch' },
  { name: 'rf64', golden: 's16', container: 'rf64' },
  { name: 'pipe_ffmpeg', golden: 's16', unknownSize: true },
  { name: 'pipe_rf64', golden: 's16', unknownSize: true },
  { name: 'pipe_sox', golden: 's16', unknownSize: true },
  { name: 'zero_sizes', golden: 's16', unknownSize: true },
  { name: 'odd_chunks', golden: 'u8' },
];

const hasFile = (name: string): boolean => {
  try {
    readFileSync(new URL(name, dir));
    return true;
  } catch {
    return false;
  }
};

const cache = new Map<string, unknown>();
function memo<T>(key: string, make: () => T): T {
  if (!cache.has(key)) cache.set(key, make());
  return cache.get(key) as T;
}
const fileOf = (f: Fixture): Uint8Array => memo(`wav:${f.name}`, () => readBytes(`${f.name}.wav`));
/** ffmpeg's float decode: the .f32 golden, or the .s16 golden / 32768 (ffmpeg's s16 → flt rule). */
const goldenFloat = (f: Fixture): Float32Array =>
  memo(`f32:${f.golden}`, () => (hasFile(`${f.golden}.f32`) ? readF32(`${f.golden}.f32`) : Float32Array.from(readS16(`${f.golden}.s16`), (x) => x / 32768)));
const goldenS16 = (f: Fixture): Int16Array | null => memo(`s16:${f.golden}`, () => (hasFile(`${f.golden}.s16`) ? readS16(`${f.golden}.s16`) : null));
const probeOf = (f: Fixture): { codec_name: string; sample_rate: string; channels: number; bits_per_sample: number } =>
  (JSON.parse(readFileSync(new URL(`${f.name}.probe.json`, dir), 'utf8')) as { streams: never[] }).streams[0]!;

type Samples = Uint8Array | Int16Array | Float32Array;
/** Element-wise equality that stays fast on long arrays; shows a small diff at the first mismatch. */
function expectSame(got: Samples, want: Samples): void {
  expect(got.length).toBe(want.length);
  for (let i = 0; i < want.length; i++) {
    const a = got[i]!;
    const b = want[i]!;
    if (a !== b && !(Number.isNaN(a) && Number.isNaN(b))) {
      expect({ at: i, got: Array.from(got.subarray(i, i + 6)) }).toEqual({ at: i, got: Array.from(want.subarray(i, i + 6)) });
    }
  }
}


/** Runs a decoder over chunks; returns the format and the concatenated samples. */
function decodeChunks(chunks: Uint8Array[], output: WavSampleOutput = 'float32', mono = false): { format: WavFormat | null; samples: Samples; events: WavDecoderEvent<Samples>[] } {
  const dec = createWavDecoder({ output, mono });
  const events: WavDecoderEvent<Samples>[] = [];
  for (const c of chunks) events.push(...dec.push(c));
  events.push(...dec.flush());
  let format: WavFormat | null = null;
  const parts: Samples[] = [];
  for (const e of events) {
    if (e.type === 'format') format = e.format;
    else parts.push(e.samples);
  }
  const empty = output === 'float32' ? new Float32Array(0) : output === 'int16' ? new Int16Array(0) : new Uint8Array(0);
  return { format, samples: parts.length ? concat(parts as Float32Array[]) : empty, events };
}

// --- an independent WAV writer, for hand-built files -------------------------------------------

const ascii = (s: string): Uint8Array => Uint8Array.from(s, (c) => c.charCodeAt(0));
function le(n: number, bytes: 2 | 4 | 8): Uint8Array {
  const out = new Uint8Array(bytes);
  let v = BigInt(n);
  for (let i = 0; i < bytes; i++) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return out;
}
/** A chunk: id, size (default: the body's), body, and a pad byte when the size is odd. */
function chunk(id: string, body: Uint8Array, size = body.length, pad = true): Uint8Array {
  return concat([ascii(id), le(size, 4), body, pad && body.length % 2 ? new Uint8Array(1) : new Uint8Array(0)]);
}
interface FmtSpec {
  tag?: number;
  channels?: number;
  rate?: number;
  bits?: number;
  blockAlign?: number;
  ext?: { subTag: number; validBits?: number; mask?: number; guidTail?: number[] };
}
function fmtBody(s: FmtSpec = {}): Uint8Array {
  const channels = s.channels ?? 1;
  const bits = s.bits ?? 16;
  const rate = s.rate ?? 8000;
  const blockAlign = s.blockAlign ?? channels * (bits / 8);
  const base = concat([le(s.ext ? 0xfffe : (s.tag ?? 1), 2), le(channels, 2), le(rate, 4), le(rate * blockAlign, 4), le(blockAlign, 2), le(bits, 2)]);
  if (!s.ext) return base;
  const tail = s.ext.guidTail ?? [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71];
  return concat([base, le(22, 2), le(s.ext.validBits ?? bits, 2), le(s.ext.mask ?? 4, 4), le(s.ext.subTag, 2), Uint8Array.from(tail)]);
}
function riff(chunks: Uint8Array[], magic = 'RIFF', size?: number): Uint8Array {
  const body = concat([ascii('WAVE'), ...chunks]);
  return concat([ascii(magic), le(size ?? body.length, 4), body]);
}
const s16Bytes = (xs: number[]): Uint8Array => new Uint8Array(Int16Array.from(xs).buffer);

// ---------------------------------------------------------------------------------------------
// (a) Golden fixtures
// ---------------------------------------------------------------------------------------------

describe('golden fixtures (written and decoded by ffmpeg / sox, fixtures/wav.sh)', () => {
  for (const f of FIXTURES) {
    it(`${f.name}: float32 and int16 decode equal the oracle's, header reads as ffprobe reads it`, () => {
      const bytes = fileOf(f);
      const a = decodeWav(bytes);
      const probe = probeOf(f);
      const ffCodec = a.format.codec === 'mulaw' ? 'pcm_mulaw' : a.format.codec === 'alaw' ? 'pcm_alaw' : a.format.codec;
      expect(ffCodec).toBe(probe.codec_name);
      expect(a.format.sampleRate).toBe(Number(probe.sample_rate));
      expect(a.format.channels).toBe(probe.channels);
      expect(a.format.bitsPerSample).toBe(probe.bits_per_sample);
      expect(a.format.container).toBe(f.container ?? 'riff');
      expect(a.format.dataSize === null).toBe(f.unknownSize === true);

      const want = goldenFloat(f);
      expectSame(a.samples, want);
      expect(a.frames).toBe(want.length / a.format.channels);
      expect(a.durationS).toBeCloseTo(a.frames / 22050, 12);

      const i16 = decodeWav(bytes, { output: 'int16' }).samples;
      const s16 = goldenS16(f);
      if (s16) {
        expectSame(i16, s16);
      } else if (f.name === 'f64_ext') {
        // ffmpeg's golden is the doubles rounded to float32; the int16 rule applies to the
        // doubles themselves, so a sample may land one step away at a rounding boundary.
        const ref = float32ToInt16(want);
        for (let i = 0; i < ref.length; i++) if (Math.abs(i16[i]! - ref[i]!) > 1) expect(i16[i]).toBe(ref[i]);
      } else {
        expectSame(i16, float32ToInt16(want)); // float files: the spec'd ×32767 rule on ffmpeg's floats
      }
    });
  }

  it('the loud float fixtures do exceed ±1.0, and int16 output clamps them', () => {
    const f = FIXTURES.find((x) => x.name === 'f32_ext')!;
    const want = goldenFloat(f);
    const over = want.filter((x) => Math.abs(x) > 1).length;
    expect(over).toBeGreaterThan(10);
    const i16 = decodeWav(fileOf(f), { output: 'int16' }).samples;
    for (let i = 0; i < want.length; i++) {
      if (want[i]! >= 1) expect(i16[i]).toBe(32767);
      if (want[i]! <= -32768 / 32767) expect(i16[i]).toBe(-32768);
    }
  });

  it('the hi-res fixtures use more than 16 bits (a low-byte bug could not hide)', () => {
    for (const name of ['s24_ext', 's32_ext']) {
      const fl = goldenFloat({ name, golden: name });
      expect(fl.some((x) => !Number.isInteger(x * 32768))).toBe(true);
    }
  });

  it('ffmpeg writes WAVE_FORMAT_EXTENSIBLE for 24/32-bit and float; the effective tag comes from the GUID', () => {
    const tags = Object.fromEntries(['s24_ext', 's32_ext', 'f32_ext', 'f64_ext', 'f32_sox', 'mulaw', 'alaw', 's16_sox'].map((n) => {
      const fm = decodeWav(readBytes(`${n}.wav`), { output: 'raw' }).format;
      return [n, [fm.formatTag, fm.subFormatTag]];
    }));
    expect(tags).toEqual({
      s24_ext: [0xfffe, 1],
      s32_ext: [0xfffe, 1],
      f32_ext: [0xfffe, 3],
      f64_ext: [0xfffe, 3],
      f32_sox: [3, 3],
      mulaw: [7, 7],
      alaw: [6, 6],
      s16_sox: [1, 1],
    });
    expect(decodeWav(readBytes('6ch.wav'), { output: 'raw' }).format.channelMask).toBe(0x3f); // 5.1
  });

  it('raw output exposes μ-law / A-law codes, which the G.711 tables decode to the golden', () => {
    for (const [name, dec] of [['mulaw', decodeMulaw], ['mulaw_sox', decodeMulaw], ['alaw', decodeAlaw]] as const) {
      const f = FIXTURES.find((x) => x.name === name)!;
      const bytes = fileOf(f);
      const raw = decodeWav(bytes, { output: 'raw' });
      expectSame(raw.samples, bytes.subarray(raw.format.dataOffset, raw.format.dataOffset + raw.frames));
      expectSame(dec(raw.samples), goldenS16(f)!);
    }
  });

  it('mono downmix of stereo and 5.1 is the average of the oracle\'s channels', () => {
    for (const name of ['stereo', '6ch']) {
      const f = FIXTURES.find((x) => x.name === name)!;
      const ch = name === 'stereo' ? 2 : 6;
      const s16 = goldenS16(f)!;
      const n = s16.length / ch;
      const wantF = new Float32Array(n);
      const wantI = new Int16Array(n);
      for (let i = 0; i < n; i++) {
        let sumF = 0;
        let sumI = 0;
        for (let c = 0; c < ch; c++) {
          sumF += s16[i * ch + c]! / 32768;
          sumI += s16[i * ch + c]!;
        }
        wantF[i] = sumF / ch;
        wantI[i] = Math.round(sumI / ch);
      }
      const mf = decodeWav(fileOf(f), { mono: true });
      expect(mf.channels).toBe(1);
      expect(mf.format.channels).toBe(ch);
      expectSame(mf.samples, wantF);
      expectSame(decodeWav(fileOf(f), { output: 'int16', mono: true }).samples, wantI);
      // The two channels of the stereo fixture really differ (en left, fr right).
      if (ch === 2) expect(s16.filter((x, i) => i % 2 === 0 && x !== s16[i + 1]).length).toBeGreaterThan(1000);
    }
  });

  it('wavInfo gives what `voicewire info` prints, frames counted for pipe-written files', () => {
    expect(wavInfo(readBytes('s24_ext.wav'))).toEqual({ container: 'riff', codec: 'pcm_s24le', sampleRate: 22050, channels: 1, bitsPerSample: 24, frames: 5513, durationS: 5513 / 22050 });
    expect(wavInfo(readBytes('pipe_ffmpeg.wav')).frames).toBe(5513);
    expect(wavInfo(readBytes('rf64.wav')).container).toBe('rf64');
    expect(wavInfo(readBytes('6ch.wav').buffer as ArrayBuffer).channels).toBe(6);
  });

  describe.skipIf(!has('sox'))(needs('sox', 'a second oracle agrees'), () => {
    for (const name of ['u8', 's24_ext', 'mulaw_sox', 'stereo', 'f32_sox']) {
      it(`${name}: sox -t f32 gives the same floats`, () => {
        const f = FIXTURES.find((x) => x.name === name)!;
        const soxOut = run('sox', [new URL(`${name}.wav`, dir).pathname, '-t', 'f32', '-']);
        expectSame(decodeWav(fileOf(f)).samples, new Float32Array(new Uint8Array(soxOut).buffer));
      });
    }
  });
});

// ---------------------------------------------------------------------------------------------
// (b) Streaming equals one-shot
// ---------------------------------------------------------------------------------------------

describe('incremental decoder: any chunking gives the one-shot result', () => {
  for (const f of FIXTURES) {
    it(`${f.name}: byte by byte equals whole, and each frame is out as soon as its bytes are in`, () => {
      const bytes = fileOf(f);
      const whole = decodeWav(bytes);
      const dec = createWavDecoder();
      const parts: Float32Array[] = [];
      let format: WavFormat | null = null;
      const ba = whole.format.blockAlign;
      const dataOffset = whole.format.dataOffset;
      for (let pushed = 1; pushed <= bytes.length; pushed++) {
        for (const e of dec.push(bytes.subarray(pushed - 1, pushed))) {
          if (e.type === 'format') {
            expect(format).toBeNull();
            expect(parts).toHaveLength(0);
            expect(pushed).toBe(dataOffset); // the push that completes the data chunk header
            format = e.format;
          } else {
            parts.push(e.samples);
          }
        }
        if (pushed >= dataOffset) {
          const ready = Math.min(whole.frames, Math.floor((pushed - dataOffset) / ba));
          if (dec.framesDecoded !== ready) expect([pushed, dec.framesDecoded]).toEqual([pushed, ready]);
          if (dec.framesDecoded < whole.frames && dec.bufferedBytes >= ba) expect(dec.bufferedBytes).toBeLessThan(ba);
        }
      }
      dec.flush();
      expect(format).toEqual(whole.format);
      expectSame(concat(parts), whole.samples);
    });
  }

  it('random splits with empty chunks, every output mode, equal one-shot (fast-check)', () => {
    const fx = FIXTURES.map((f) => f.name);
    fc.assert(
      fc.property(
        fc.constantFrom(...fx),
        fc.constantFrom<[WavSampleOutput, boolean]>(['float32', false], ['float32', true], ['int16', false], ['int16', true], ['raw', false]),
        fc.array(fc.integer({ min: 0, max: 200 }), { maxLength: 12 }),
        fc.array(fc.nat(), { maxLength: 25 }),
        (name, [output, mono], headerCuts, anyCuts) => {
          const f = FIXTURES.find((x) => x.name === name)!;
          const bytes = fileOf(f);
          const whole = decodeWav(bytes, { output, mono });
          // Cuts concentrated in the header, plus anywhere; duplicates make empty chunks.
          const cuts = [...headerCuts, ...anyCuts.map((c) => c % (bytes.length + 1))];
          const got = decodeChunks(splitAt(bytes, cuts), output, mono);
          expect(got.format).toEqual(whole.format);
          expectSame(got.samples, whole.samples);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('a 24-bit stereo file in 7-byte chunks holds back partial frames only (blockAlign 6)', () => {
    const f = FIXTURES.find((x) => x.name === 'stereo')!;
    const wav = encodeWav(decodeWav(fileOf(f), { output: 'int16' }).samples, { sampleRate: 22050, channels: 2, encoding: 's24le' });
    const dec = createWavDecoder({ output: 'int16' });
    const out: Int16Array[] = [];
    for (const c of splitAt(wav, Array.from({ length: Math.ceil(wav.length / 7) }, (_, i) => i * 7))) {
      for (const e of dec.push(c)) if (e.type === 'samples') out.push(e.samples);
      expect(dec.bufferedBytes).toBeLessThan(44);
    }
    dec.flush();
    expectSame(concat(out), goldenS16(f)!);
  });

  it('web TransformStream gives the one-shot events', async () => {
    const bytes = fileOf(FIXTURES[2]!);
    const whole = decodeWav(bytes, { output: 'int16' });
    const chunks = splitAt(bytes, [3, 30, 50, 51, 51, 700, 5000]);
    const src = new ReadableStream<Uint8Array>({
      start(c) {
        for (const ch of chunks) c.enqueue(ch);
        c.close();
      },
    });
    const events: WavDecoderEvent<Int16Array>[] = [];
    const reader = src.pipeThrough(createWavDecoderStream({ output: 'int16' })).getReader();
    for (;;) {
      const r = await reader.read();
      if (r.done) break;
      events.push(r.value);
    }
    expect(events[0]).toEqual({ type: 'format', format: whole.format });
    expectSame(concat(events.slice(1).map((e) => (e as { samples: Int16Array }).samples)), whole.samples);
  });

  it('Node Transform: bytes out, a format event first; events mode too; errors reach the stream', async () => {
    const f = FIXTURES.find((x) => x.name === 'stereo')!;
    const bytes = fileOf(f);
    const got: Buffer[] = [];
    let format: WavFormat | null = null;
    let bytesBeforeFormat = 0;
    const t = createWavDecodeTransform({ output: 'int16', mono: true });
    t.on('format', (fm: WavFormat) => (format = fm));
    await pipeline(
      Readable.from(splitAt(Buffer.from(bytes), [1, 17, 45, 999]), { objectMode: false }),
      t,
      new Writable({
        write(c: Buffer, _e, cb) {
          if (format === null) bytesBeforeFormat += c.length;
          got.push(c);
          cb();
        },
      }),
    );
    expect(bytesBeforeFormat).toBe(0);
    expect(format!.channels).toBe(2);
    const all = Buffer.concat(got);
    expectSame(new Int16Array(new Uint8Array(all).buffer), decodeWav(bytes, { output: 'int16', mono: true }).samples);

    const evs: unknown[] = [];
    await pipeline(Readable.from([Buffer.from(bytes)]), createWavDecodeTransform({ events: true }), new Writable({ objectMode: true, write: (e, _x, cb) => (evs.push(e), cb()) }));
    expect((evs[0] as WavDecoderEvent<Float32Array>).type).toBe('format');

    await expect(pipeline(Readable.from([Buffer.from('OggS\0\0\0\0\0\0\0\0')]), createWavDecodeTransform(), new Writable({ write: (_c, _e, cb) => cb() }))).rejects.toMatchObject({ code: 'WAV_NOT_RIFF' });
  });
});

// ---------------------------------------------------------------------------------------------
// (c) Hand-built files: edge cases and every error code
// ---------------------------------------------------------------------------------------------

describe('edge cases (hand-built files)', () => {
  const pcm = s16Bytes([1, -2, 3, -4, 5]);

  it('odd-sized unknown chunks before data are skipped with their pad byte', () => {
    const wav = riff([chunk('fmt ', fmtBody()), chunk('abc ', ascii('x')), chunk('LIST', ascii('INFOabc')), chunk('data', pcm)]);
    expect(Array.from(decodeWav(wav, { output: 'int16' }).samples)).toEqual([1, -2, 3, -4, 5]);
  });

  it('an odd data chunk without its final pad byte is fine; trailing chunks and garbage are ignored', () => {
    const u8 = Uint8Array.from([128, 255, 0]);
    const noPad = riff([chunk('fmt ', fmtBody({ bits: 8 })), chunk('data', u8, 3, false)]);
    expect(Array.from(decodeWav(noPad, { output: 'int16' }).samples)).toEqual([0, 127 << 8, -128 << 8]);
    const trailing = concat([riff([chunk('fmt ', fmtBody()), chunk('data', pcm), chunk('LIST', ascii('INFO'))]), ascii('garbage')]);
    expect(decodeWav(trailing, { output: 'int16' }).frames).toBe(5);
  });

  it('a declared data size that is not whole frames drops the partial frame', () => {
    const wav = riff([chunk('fmt ', fmtBody({ channels: 2 })), chunk('data', concat([pcm, new Uint8Array(3)]), 7)]);
    const a = decodeWav(wav, { output: 'int16' });
    expect(a.frames).toBe(1);
    expect(Array.from(a.samples)).toEqual([1, -2]);
    expect(a.format.dataSize).toBe(7);
  });

  it('a data size of 0 is read to the end only when the RIFF size ends at the data header', () => {
    const fmt = chunk('fmt ', fmtBody());
    const streaming = concat([ascii('RIFF'), le(36, 4), ascii('WAVE'), fmt, ascii('data'), le(0, 4), pcm]);
    expect(decodeWav(streaming, { output: 'int16' }).frames).toBe(5);
    const riff0 = concat([ascii('RIFF'), le(0, 4), ascii('WAVE'), fmt, ascii('data'), le(0, 4), pcm]);
    expect(decodeWav(riff0, { output: 'int16' }).frames).toBe(5);
    // A real empty data chunk, followed by a LIST chunk the RIFF size covers: no audio.
    const empty = riff([fmt, chunk('data', new Uint8Array(0)), chunk('LIST', ascii('INFOabcd'))]);
    const a = decodeWav(empty);
    expect(a.frames).toBe(0);
    expect(a.format.dataSize).toBe(0);
  });

  it('RF64: sizes come from ds64 (and BW64 is read the same way)', () => {
    const ds64 = (riffSize: number, dataSize: number): Uint8Array => chunk('ds64', concat([le(riffSize, 8), le(dataSize, 8), le(dataSize / 2, 8), le(0, 4)]));
    for (const magic of ['RF64', 'BW64']) {
      const wav = riff([ds64(100, 6), chunk('fmt ', fmtBody()), chunk('data', pcm, 0xffffffff), chunk('LIST', ascii('INFO'))], magic, 0xffffffff);
      const a = decodeWav(wav, { output: 'int16' });
      expect(a.format.container).toBe('rf64');
      expect(a.format.dataSize).toBe(6);
      expect(Array.from(a.samples)).toEqual([1, -2, 3]);
    }
    // ds64 sizes larger than 2^53 cannot be a real file.
    const huge = riff([chunk('ds64', concat([le(2n ** 60n as never, 8), le(6, 8), le(3, 8), le(0, 4)])), chunk('fmt ', fmtBody()), chunk('data', pcm, 0xffffffff)], 'RF64', 0xffffffff);
    expectCode(() => decodeWav(huge), 'WAV_SIZE_MISMATCH', /ds64/);
  });

  it('EXTENSIBLE with 24 valid bits in a 32-bit container reads as s32', () => {
    const body = new Uint8Array(Int32Array.from([0x12345600, -256]).buffer);
    const wav = riff([chunk('fmt ', fmtBody({ bits: 32, ext: { subTag: 1, validBits: 24 } })), chunk('data', body)]);
    const a = decodeWav(wav, { output: 'int16' });
    expect(a.format.validBitsPerSample).toBe(24);
    expect(Array.from(a.samples)).toEqual([0x1234, -1]);
  });

  it('isWav sniffs the 12-byte header', () => {
    expect(isWav(readBytes('u8.wav'))).toBe(true);
    expect(isWav(readBytes('rf64.wav'))).toBe(true);
    expect(isWav(ascii('RIFF\0\0\0\0AVI '))).toBe(false);
    expect(isWav(ascii('RIFF'))).toBe(false);
  });
});

describe('errors: specific codes, never a huge allocation', () => {
  const fmt = chunk('fmt ', fmtBody());
  const data = chunk('data', s16Bytes([1, 2, 3, 4]));

  it('WAV_NOT_RIFF as soon as the first wrong byte arrives', () => {
    expectCode(() => decodeWav(ascii('OggS\0\x02\0\0\0\0\0\0')), 'WAV_NOT_RIFF', /not a WAV file.*OggS/);
    expectCode(() => createWavDecoder().push(ascii('O')), 'WAV_NOT_RIFF');
    expectCode(() => createWavDecoder().push(ascii('RIFX')), 'WAV_NOT_RIFF'); // big-endian RIFF
    expectCode(() => decodeWav(ascii('RIFF\x04\0\0\0AVI ')), 'WAV_NOT_RIFF');
    expect(createWavDecoder().push(ascii('RIF'))).toEqual([]); // a prefix of RIFF: wait
  });

  it('WAV_TRUNCATED: empty input, or input ending inside the header', () => {
    const whole = riff([fmt, data]);
    expectCode(() => decodeWav(new Uint8Array(0)), 'WAV_TRUNCATED', /empty/);
    expectCode(() => decodeWav(whole.subarray(0, 7)), 'WAV_TRUNCATED', /RIFF header/);
    expectCode(() => decodeWav(whole.subarray(0, 16)), 'WAV_TRUNCATED', /chunk header/);
    expectCode(() => decodeWav(whole.subarray(0, 30)), 'WAV_TRUNCATED', /fmt/);
  });

  it('WAV_MISSING_FMT and WAV_MISSING_DATA', () => {
    expectCode(() => decodeWav(riff([data, fmt])), 'WAV_MISSING_FMT', /before any fmt/);
    expectCode(() => decodeWav(riff([chunk('LIST', ascii('INFOabc'))])), 'WAV_MISSING_FMT', /no fmt/);
    expectCode(() => decodeWav(riff([fmt])), 'WAV_MISSING_DATA');
    expectCode(() => decodeWav(riff([fmt, chunk('junk', ascii('abc'), 3, false)])), 'WAV_MISSING_DATA'); // only the final pad byte missing
  });

  it('WAV_INVALID_FMT: zero channels, zero rate, bad block align, short fmt, short EXTENSIBLE', () => {
    expectCode(() => decodeWav(riff([chunk('fmt ', fmtBody({ channels: 0, blockAlign: 2 })), data])), 'WAV_INVALID_FMT', /zero channels/);
    expectCode(() => decodeWav(riff([chunk('fmt ', fmtBody({ rate: 0 })), data])), 'WAV_INVALID_FMT', /zero sample rate/);
    expectCode(() => decodeWav(riff([chunk('fmt ', fmtBody({ channels: 2, blockAlign: 2 })), data])), 'WAV_INVALID_FMT', /block align 2.*need 4/);
    expectCode(() => decodeWav(riff([chunk('fmt ', fmtBody().subarray(0, 14)), data])), 'WAV_INVALID_FMT', /14 bytes/);
    expectCode(() => decodeWav(riff([chunk('fmt ', fmtBody({ ext: { subTag: 1 } }).subarray(0, 24)), data])), 'WAV_INVALID_FMT', /EXTENSIBLE/);
  });

  it('WAV_UNSUPPORTED_FORMAT: ADPCM, MP3, 12-bit PCM, 16-bit float, an unknown GUID', () => {
    expectCode(() => decodeWav(riff([chunk('fmt ', fmtBody({ tag: 2, bits: 4, blockAlign: 256 })), data])), 'WAV_UNSUPPORTED_FORMAT', /0x0002 \(MS ADPCM\)/);
    expectCode(() => decodeWav(riff([chunk('fmt ', fmtBody({ tag: 0x55, bits: 0, blockAlign: 1 })), data])), 'WAV_UNSUPPORTED_FORMAT', /MP3/);
    expectCode(() => decodeWav(riff([chunk('fmt ', fmtBody({ bits: 12, blockAlign: 2 })), data])), 'WAV_UNSUPPORTED_FORMAT', /12 bits/);
    expectCode(() => decodeWav(riff([chunk('fmt ', fmtBody({ tag: 3, bits: 16 })), data])), 'WAV_UNSUPPORTED_FORMAT');
    expectCode(() => decodeWav(riff([chunk('fmt ', fmtBody({ ext: { subTag: 1, guidTail: Array(14).fill(7) } })), data])), 'WAV_UNSUPPORTED_FORMAT', /GUID/);
  });

  it('WAV_SIZE_MISMATCH: data or another chunk declared larger than the input, without allocating it', () => {
    const before = process.memoryUsage().arrayBuffers;
    expectCode(() => decodeWav(riff([fmt, chunk('data', s16Bytes([1, 2]), 0xfffffff0)])), 'WAV_SIZE_MISMATCH', /declares 2147483640 frames.*holds 2/);
    expectCode(() => decodeWav(riff([fmt, chunk('LIST', ascii('INFO'), 0x7ffffff0), data])), 'WAV_SIZE_MISMATCH', /more bytes than the input/);
    expectCode(() => decodeWav(riff([chunk('fmt ', fmtBody({ channels: 65535, bits: 8 })), chunk('data', new Uint8Array(10), 0x7fffffff)])), 'WAV_SIZE_MISMATCH');
    const ds64 = chunk('ds64', concat([le(2 ** 52, 8), le(2 ** 52, 8), le(2 ** 51, 8), le(0, 4)]));
    expectCode(() => decodeWav(riff([ds64, fmt, chunk('data', s16Bytes([1, 2]), 0xffffffff)], 'RF64', 0xffffffff)), 'WAV_SIZE_MISMATCH');
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(16 << 20);
  });

  it('allowTruncated keeps what arrived of a data chunk cut short', () => {
    const cut = riff([fmt, chunk('data', s16Bytes([1, 2, 3, 4]))]).subarray(0, 44 + 5);
    expectCode(() => decodeWav(cut), 'WAV_SIZE_MISMATCH');
    expect(Array.from(decodeWav(cut, { output: 'int16', allowTruncated: true }).samples)).toEqual([1, 2]);
  });

  it('after an error: INVALID_STATE until reset(); after flush(): INVALID_STATE; reset() reuses', () => {
    const dec = createWavDecoder({ output: 'int16' });
    expectCode(() => dec.push(ascii('XXXX')), 'WAV_NOT_RIFF');
    const e = expectCode(() => dec.push(ascii('RIFF')), 'INVALID_STATE', /earlier error/);
    expect((e.cause as VoicewireError).code).toBe('WAV_NOT_RIFF');
    expectCode(() => dec.flush(), 'INVALID_STATE');
    dec.reset();
    const good = riff([fmt, data]);
    expect(dec.push(good).length).toBe(2);
    dec.flush();
    expectCode(() => dec.push(good), 'INVALID_STATE', /after flush/);
    dec.reset();
    expect(dec.format).toBeNull();
    expect(dec.push(good)[0]).toMatchObject({ type: 'format' });
  });

  it('bad options and inputs are INVALID_ARGUMENT', () => {
    expectCode(() => createWavDecoder({ output: 'f64' as never }), 'INVALID_ARGUMENT');
    expectCode(() => createWavDecoder({ output: 'raw', mono: true }), 'INVALID_ARGUMENT', /mono/);
    expectCode(() => createWavDecoder().push('RIFF' as never), 'INVALID_ARGUMENT');
    expectCode(() => decodeWav(null as never), 'INVALID_ARGUMENT');
  });
});

// ---------------------------------------------------------------------------------------------
// (d) Writing, read back by the tools
// ---------------------------------------------------------------------------------------------

/** Deterministic speech-like int16 test signal. */
function signal(n: number, seed = 1): Int16Array {
  const out = new Int16Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) {
    s = (s * 1103515245 + 12345) >>> 0;
    out[i] = Math.round(12000 * Math.sin(i / 7) + ((s >>> 16) % 4001) - 2000);
  }
  out[0] = 32767;
  out[1] = -32768;
  return out;
}

describe('encodeWav: exact sizes', () => {
  it('sizes follow the spec: RIFF = file - 8, data = samples × bytes, pad byte after odd data, fact = frames', () => {
    const x = signal(11);
    for (const [encoding, bytes, header] of [['s16le', 2, 44], ['s24le', 3, 44], ['s32le', 4, 44], ['f32le', 4, 58], ['mulaw', 1, 58], ['alaw', 1, 58]] as const) {
      const w = encodeWav(x, { sampleRate: 8000, encoding });
      const v = new DataView(w.buffer);
      const dataSize = 11 * bytes;
      expect(w.length).toBe(header + dataSize + (dataSize % 2));
      expect(v.getUint32(4, true)).toBe(w.length - 8);
      expect(v.getUint32(header - 4, true)).toBe(dataSize);
      expect(String.fromCharCode(...w.subarray(header - 8, header - 4))).toBe('data');
      if (header === 58) expect(v.getUint32(46, true)).toBe(11);
    }
  });

  it('round-trips through decodeWav: Int16 exactly for integer encodings, Float32 exactly for f32le (fast-check)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 3 }), fc.array(fc.integer({ min: -32768, max: 32767 }), { maxLength: 60 }), (ch, xs) => {
        const x = Int16Array.from(xs.slice(0, xs.length - (xs.length % ch)));
        for (const encoding of ['s16le', 's24le', 's32le'] as const) {
          expectSame(decodeWav(encodeWav(x, { sampleRate: 16000, channels: ch, encoding }), { output: 'int16' }).samples, x);
        }
        const fl = Float32Array.from(x, (v) => v / 40000);
        expectSame(decodeWav(encodeWav(fl, { sampleRate: 16000, channels: ch, encoding: 'f32le' })).samples, fl);
        expectSame(decodeWav(encodeWav(x, { sampleRate: 8000, channels: ch, encoding: 'mulaw' }), { output: 'int16' }).samples, decodeMulaw(encodeMulaw(x)));
      }),
      { numRuns: 60 },
    );
  });

  it('rejects bad arguments', () => {
    expectCode(() => encodeWav(new Int16Array(3), { sampleRate: 8000, channels: 2 }), 'PCM_PARTIAL_SAMPLE');
    expectCode(() => encodeWav(new Int16Array(2), { sampleRate: 0 }), 'INVALID_ARGUMENT', /sampleRate/);
    expectCode(() => encodeWav(new Int16Array(2), { sampleRate: 8000, channels: 0 }), 'INVALID_ARGUMENT', /channels/);
    expectCode(() => encodeWav(new Int16Array(2), { sampleRate: 8000, encoding: 'u8' as never }), 'PCM_UNSUPPORTED_ENCODING');
    expectCode(() => encodeWav([1, 2] as never, { sampleRate: 8000 }), 'INVALID_ARGUMENT');
  });

  describe.skipIf(!has('ffmpeg'))(needs('ffmpeg', 'ffmpeg and ffprobe read what encodeWav writes'), () => {
    const x = signal(2 * 1001, 9); // stereo, odd frame count
    for (const encoding of ['s16le', 's24le', 's32le', 'f32le', 'mulaw', 'alaw'] as const) {
      it(encoding, () => {
        const ch = encoding === 'mulaw' || encoding === 'alaw' ? 1 : 2;
        const w = encodeWav(x, { sampleRate: 16000, channels: ch, encoding });
        const out = run('ffmpeg', ['-v', 'error', '-f', 'wav', '-i', '-', '-f', 's16le', '-c:a', 'pcm_s16le', '-'], w);
        const want = encoding === 'mulaw' ? decodeMulaw(encodeMulaw(x)) : encoding === 'alaw' ? decodeAlaw(encodeAlaw(x)) : x;
        expectSame(new Int16Array(new Uint8Array(out).buffer), want);
        const probeOut = run('ffprobe', ['-v', 'error', '-show_entries', 'stream=sample_rate,channels', '-of', 'json', '-i', '-'], w);
        const probe = JSON.parse(new TextDecoder().decode(probeOut)) as { streams: { sample_rate: string; channels: number }[] };
        expect(probe.streams[0]).toMatchObject({ sample_rate: '16000', channels: ch });
      });
    }
  });

  describe.skipIf(!has('sox'))(needs('sox', 'sox reads the sizes without a warning'), () => {
    it('s24le mono with an odd data size (pad byte) and μ-law', () => {
      for (const encoding of ['s24le', 'mulaw'] as const) {
        const w = encodeWav(signal(1001, 3), { sampleRate: 8000, encoding });
        const path = join(tmpdir(), `voicewire-wav-test-${process.pid}-${encoding}.wav`);
        writeFileSync(path, w);
        try {
          expect(runText('soxi', ['-s', path]).trim()).toBe('1001');
          expect(runText('sox', ['-V2', path, '-n'])).not.toMatch(/WARN|FAIL/);
        } finally {
          unlinkSync(path);
        }
      }
    });
  });
});

describe('streaming WAV (the service\'s form)', () => {
  it('wavStreamHeader: 44 bytes, RIFF and data sizes 0xFFFFFFFF, a 16-byte fmt', () => {
    const h = wavStreamHeader({ sampleRate: 48000 });
    const v = new DataView(h.buffer);
    expect(h.length).toBe(44);
    expect(String.fromCharCode(...h.subarray(0, 4), ...h.subarray(8, 16), ...h.subarray(36, 40))).toBe('RIFFWAVEfmt data');
    expect([v.getUint32(4, true), v.getUint32(40, true)]).toEqual([0xffffffff, 0xffffffff]);
    expect([v.getUint32(16, true), v.getUint16(20, true), v.getUint16(22, true), v.getUint32(24, true), v.getUint32(28, true), v.getUint16(32, true), v.getUint16(34, true)]).toEqual([16, 1, 1, 48000, 96000, 2, 16]);
    const h24 = new DataView(wavStreamHeader({ sampleRate: 24000, channels: 2, bitsPerSample: 24 }).buffer);
    expect([h24.getUint16(22, true), h24.getUint16(32, true), h24.getUint16(34, true)]).toEqual([2, 6, 24]);
    expect(new DataView(wavStreamHeader({ sampleRate: 8000, encoding: 'f32le' }).buffer).getUint16(20, true)).toBe(3);
    expectCode(() => wavStreamHeader({ sampleRate: 8000, bitsPerSample: 8 as never }), 'INVALID_ARGUMENT');
    expectCode(() => wavStreamHeader({ sampleRate: -1 }), 'INVALID_ARGUMENT');
  });

  it('the stream encoder: header first, then PCM; empty stream = header only; decodes back with unknown size', () => {
    const x = signal(3840);
    const enc = createWavStreamEncoder({ sampleRate: 48000 });
    const out = [...enc.push(x.subarray(0, 1920)), ...enc.push(new Uint8Array(x.buffer, 3840, 3840)), ...enc.flush()];
    expect(out[0]).toEqual(wavStreamHeader({ sampleRate: 48000 }));
    const file = concat(out);
    expect(file.length).toBe(44 + 7680);
    const a = decodeWav(file, { output: 'int16' });
    expect(a.format.dataSize).toBeNull();
    expectSame(a.samples, x);
    expect(createWavStreamEncoder({ sampleRate: 8000 }).flush()).toEqual([wavStreamHeader({ sampleRate: 8000 })]);
    const f32 = createWavStreamEncoder({ sampleRate: 8000, encoding: 'f32le' });
    expectSame(decodeWav(concat([...f32.push(new Float32Array([0.5, -0.25])), ...f32.flush()])).samples, new Float32Array([0.5, -0.25]));
  });

  it('web and Node encoders produce the same stream', async () => {
    const x = signal(1000);
    const chunks = [x.subarray(0, 333), x.subarray(333)];
    const web: Uint8Array[] = [];
    const reader = new ReadableStream<Int16Array>({
      start(c) {
        for (const ch of chunks) c.enqueue(ch);
        c.close();
      },
    })
      .pipeThrough(createWavEncoderStream({ sampleRate: 24000 }))
      .getReader();
    for (let r = await reader.read(); !r.done; r = await reader.read()) web.push(r.value);
    const node: Buffer[] = [];
    await pipeline(
      Readable.from(chunks.map((c) => Buffer.from(c.buffer, c.byteOffset, c.byteLength))),
      createWavEncodeTransform({ sampleRate: 24000 }),
      new Writable({ write: (c: Buffer, _e, cb) => (node.push(c), cb()) }),
    );
    expectSame(concat(web), new Uint8Array(Buffer.concat(node)));
    expectSame(decodeWav(concat(web), { output: 'int16' }).samples, x);
  });

  it.skipIf(!has('ffmpeg'))(needs('ffmpeg', 'ffmpeg reads the streaming form to the end'), () => {
    const x = signal(4000, 5);
    const file = concat([wavStreamHeader({ sampleRate: 24000 }), new Uint8Array(x.buffer)]);
    const out = run('ffmpeg', ['-v', 'error', '-f', 'wav', '-i', '-', '-f', 's16le', '-c:a', 'pcm_s16le', '-'], file);
    expectSame(new Int16Array(new Uint8Array(out).buffer), x);
  });
});

// ---------------------------------------------------------------------------------------------
// (e) Fuzzing
// ---------------------------------------------------------------------------------------------

describe('fuzz: mutated fixtures raise only VoicewireError, and streaming agrees with one-shot', () => {
  type Op = { kind: 'set' | 'setHeader' | 'truncate' | 'insert' | 'delete' | 'size'; at: number; value: number; len: number };
  const opArb: fc.Arbitrary<Op> = fc.record({
    kind: fc.constantFrom('set', 'setHeader', 'setHeader', 'truncate', 'insert', 'delete', 'size', 'size'),
    at: fc.nat(),
    value: fc.nat(),
    len: fc.integer({ min: 1, max: 12 }),
  });
  function mutate(src: Uint8Array, ops: Op[]): Uint8Array {
    let b = src;
    for (const op of ops) {
      const at = op.at % (b.length + 1);
      const h = op.at % Math.min(b.length + 1, 120); // header region
      switch (op.kind) {
        case 'set':
          b = b.slice();
          if (at < b.length) b[at] = op.value & 0xff;
          break;
        case 'setHeader':
          b = b.slice();
          if (h < b.length) b[h] = op.value & 0xff;
          break;
        case 'truncate':
          b = b.subarray(0, at);
          break;
        case 'insert':
          b = concat([b.subarray(0, h), Uint8Array.from({ length: op.len }, (_, i) => (op.value >> (i % 24)) & 0xff), b.subarray(h)]);
          break;
        case 'delete':
          b = concat([b.subarray(0, h), b.subarray(Math.min(b.length, h + op.len))]);
          break;
        case 'size': {
          // Overwrite a plausible size field (after a fourcc) with a random or extreme value.
          b = b.slice();
          const pos = [4, 16, 40, 36, 76, 50, 64][op.len % 7]!;
          const val = [op.value, 0xffffffff, 0, 0x7ffff000, 0x80000000, 1][op.value % 6]!;
          if (pos + 4 <= b.length) new DataView(b.buffer, b.byteOffset).setUint32(pos, val >>> 0, true);
          break;
        }
      }
    }
    return b;
  }
  type Result = { code: string } | { format: WavFormat; samples: Samples };
  function outcome(fn: () => { format: WavFormat | null; samples: Samples }): Result {
    try {
      const r = fn();
      return { format: r.format!, samples: r.samples };
    } catch (err) {
      if (!(err instanceof VoicewireError)) throw err;
      return { code: err.code };
    }
  }
  const small = FIXTURES.filter((f) => fileOf(f).length <= 14000).map((f) => f.name);

  it('4,000 mutations', () => {
    let errors = 0;
    fc.assert(
      fc.property(
        fc.constantFrom(...small),
        fc.array(opArb, { minLength: 1, maxLength: 4 }),
        fc.constantFrom<WavSampleOutput>('float32', 'int16', 'raw'),
        cutsArb(14000, 6),
        (name, ops, output, cuts) => {
          const bytes = mutate(fileOf(FIXTURES.find((f) => f.name === name)!), ops);
          const one = outcome(() => decodeWav(bytes, { output }));
          const streamed = outcome(() => decodeChunks(splitAt(bytes, cuts), output));
          if ('code' in one) {
            errors++;
            expect(streamed).toEqual(one);
          } else {
            expect('code' in streamed).toBe(false);
            const s = streamed as { format: WavFormat; samples: Samples };
            expect(s.format).toEqual(one.format);
            expectSame(s.samples, one.samples);
            expect(one.samples.length).toBeLessThanOrEqual(bytes.length * 2); // output follows the input, not a declared size
          }
        },
      ),
      { numRuns: 4000 },
    );
    expect(errors).toBeGreaterThan(400); // the mutations do reach the parser
  });

  it('random garbage raises only VoicewireError, and the decoder works after reset()', () => {
    const good = fileOf(FIXTURES[0]!);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), fc.boolean(), (garbage, riffPrefix) => {
        const input = riffPrefix ? concat([ascii('RIFF'), le(garbage.length + 4, 4), ascii('WAVE'), garbage]) : garbage;
        const dec = createWavDecoder();
        try {
          dec.push(input);
          dec.flush();
        } catch (err) {
          expect(err).toBeInstanceOf(VoicewireError);
        }
        dec.reset();
        expect(decodeChunks([good]).samples.length).toBe(5513);
        dec.push(good);
        dec.flush();
        expect(dec.framesDecoded).toBe(5513);
      }),
      { numRuns: 1000 },
    );
  });
});
