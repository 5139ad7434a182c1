/**
 * TTS output pipeline: every API output format checked against external tools (sox and ffmpeg
 * resample, decode G.711 and parse WAV; opus-tools validate and decode Ogg Opus), chunking
 * equivalence (fast-check), timing and word-timestamp alignment measured on decoded output, and
 * barge-in.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { createAudioEncoder, encodeAudio, type AudioEncoderInput } from '../../src/pipelines/audio-encoder.js';
import { VoicewireError } from '../../src/util/errors.js';
import { TTS_OUTPUT_FORMATS } from '../../src/audio/format.js';
import { createInt16Resampler, resampleInt16 } from '../../src/audio/resampler.js';
import { createTtsAudioEncoder, createTtsOutputEncoder, type TtsAudioChunk } from '../../src/pipelines/tts-audio-encoder.js';
import { decodeWav } from '../../src/audio/wav.js';
import { createAudioEncodeTransform } from '../../src/node/pipelines.js';
import type { TtsServerSessionOptions } from '../../src/sessions/server.js';
import { concat, cutsArb, oneByOne, splitAt } from '../helpers/chunks.js';
import { has, needs, run, runText } from '../helpers/tools.js';
import { caught } from '../helpers/errors.js';

const FIX = new URL('../../fixtures/', import.meta.url);
const SPEECH48_FILE = new URL('speech/en_48k.wav', FIX).pathname;
const SPEECH48 = decodeWav(readFileSync(SPEECH48_FILE), { output: 'int16', mono: true }).samples;
const TMP = mkdtempSync(join(tmpdir(), 'vw-tts-'));
afterAll(() => rmSync(TMP, { recursive: true, force: true }));

// ---------------------------------------------------------------------------------------------
// Helpers (naive and independent of the code under test)
// ---------------------------------------------------------------------------------------------

function i16(bytes: Uint8Array): Int16Array {
  const c = bytes.slice(0, bytes.length & ~1);
  return new Int16Array(c.buffer, 0, c.length >> 1);
}

function bytesOfI16(x: Int16Array): Uint8Array {
  return new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
}

/** Fast exact comparison of two typed arrays (vitest's deep equality is slow on 100k elements). */
function expectSame(actual: ArrayLike<number>, expected: ArrayLike<number>): void {
  expect(actual.length).toBe(expected.length);
  let i = 0;
  while (i < actual.length && actual[i] === expected[i]) i++;
  expect(i === actual.length ? null : { index: i, actual: actual[i], expected: expected[i] }).toBeNull();
}

/** Signal-to-noise ratio of `x` against `ref`, dB, over the common length. */
function snr(ref: ArrayLike<number>, x: ArrayLike<number>): number {
  let s = 0;
  let e = 0;
  const n = Math.min(ref.length, x.length);
  for (let i = 0; i < n; i++) {
    const d = ref[i]! - x[i]!;
    s += ref[i]! * ref[i]!;
    e += d * d;
  }
  return 10 * Math.log10(s / Math.max(e, 1e-9));
}

/** Encodes `pcm` in frames of `frame` samples: one chunk per frame, then end(). */
function encodeFrames(format: string, pcm: Int16Array, frame = 3840, options: Parameters<typeof createTtsAudioEncoder>[1] = {}) {
  const enc = createTtsAudioEncoder(format, options);
  const chunks: TtsAudioChunk[] = [];
  for (let i = 0; i < pcm.length; i += frame) chunks.push(enc.encode(pcm.subarray(i, i + frame)));
  const last = enc.end();
  const all = concat([...chunks.map((c) => c.bytes), last.bytes]);
  return { enc, chunks, last, all };
}

/** A naive Ogg page walker (RFC 3533 §6): flags, granule, and the page's byte range. */
function oggPages(bytes: Uint8Array): { flags: number; granule: bigint; start: number; end: number }[] {
  const pages = [];
  let at = 0;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  while (at < bytes.length) {
    expect(String.fromCharCode(...bytes.subarray(at, at + 4))).toBe('OggS');
    const nseg = bytes[at + 26]!;
    let body = 0;
    for (let i = 0; i < nseg; i++) body += bytes[at + 27 + i]!;
    const end = at + 27 + nseg + body;
    pages.push({ flags: bytes[at + 5]!, granule: view.getBigInt64(at + 6, true), start: at, end });
    at = end;
  }
  return pages;
}

/** Decoded samples the bytes of chunks 0..i carry: from byte counts, or granules for Opus. */
function cumulativeSamples(format: string, chunks: TtsAudioChunk[], preSkip: number): number[] {
  const out: number[] = [];
  if (format === 'opus') {
    let g = 0;
    for (const c of chunks) {
      for (const p of c.bytes.length > 0 ? oggPages(c.bytes) : []) if (p.granule >= 0n) g = Number(p.granule);
      out.push(Math.max(0, g - preSkip));
    }
    return out;
  }
  const perSample = format.startsWith('ulaw') || format.startsWith('mulaw') || format.startsWith('alaw') ? 1 : 2;
  let n = 0;
  for (const [i, c] of chunks.entries()) {
    n += (c.bytes.length - (format === 'wav' && i === 0 ? 44 : 0)) / perSample;
    out.push(n);
  }
  return out;
}

const soxRaw = (rate: number) => ['-t', 'raw', '-e', 'signed', '-b', '16', '-c', '1', '-r', String(rate)];
/** sox's resampling of raw s16 at 48 kHz (no dither: -D). */
function soxResample(pcm48: Int16Array, rate: number): Int16Array {
  return i16(run('sox', ['-D', ...soxRaw(48000), '-', ...soxRaw(rate), '-'], bytesOfI16(pcm48)));
}

// Speech low-passed by sox at 3.2 kHz (inside every format's passband, ≤ 0.8× the 8 kHz
// Nyquist): there two correct resamplers must agree to within int16 rounding.
const LOWPASSED = has('sox') ? i16(run('sox', ['-D', SPEECH48_FILE, ...soxRaw(48000), '-', 'sinc', '-3200'])) : new Int16Array(0);

// ---------------------------------------------------------------------------------------------

describe('createTtsAudioEncoder: one chunk per frame, every format', () => {
  it.each([...TTS_OUTPUT_FORMATS])('%s: one chunk per 3840-sample frame, contiguous timing ending at the input length', (format) => {
    const { chunks, last, enc } = encodeFrames(format, SPEECH48);
    expect(chunks).toHaveLength(Math.ceil(SPEECH48.length / 3840));
    let prev = 0;
    for (const c of chunks) {
      expect(c.start_s).toBe(prev);
      expect(c.stop_s).toBeGreaterThanOrEqual(c.start_s);
      expect(c.stop_s).toBeLessThanOrEqual(SPEECH48.length / 48000 + 1e-9);
      prev = c.stop_s;
    }
    expect(last.start_s).toBe(prev);
    // The whole input comes out: round(N·rate/48000) samples at the output rate.
    const rate = enc.outputRate;
    expect(last.stop_s).toBeCloseTo(Math.round((SPEECH48.length * rate) / 48000) / rate, 9);
    if (format === 'opus') for (const c of chunks) expect(c.bytes.length).toBeGreaterThan(0); // a page per frame
  });

  it('pcm and pcm_48000 are the frames as they are, zero copy', () => {
    for (const format of ['pcm', 'pcm_48000']) {
      const { all, chunks } = encodeFrames(format, SPEECH48);
      expectSame(all, bytesOfI16(SPEECH48));
      expect(chunks[0]!.bytes.buffer).toBe(SPEECH48.buffer);
    }
  });

  it.each([8000, 16000, 22050, 24000, 44100])('pcm_%i: bit-identical to resampling the whole (no seams), length round(N·rate/48000)', (rate) => {
    const { all } = encodeFrames(`pcm_${rate}`, SPEECH48);
    expect(all.length / 2).toBe(Math.round((SPEECH48.length * rate) / 48000));
    expectSame(i16(all), resampleInt16(SPEECH48, 48000, rate));
  });

  it('mulaw_8000 is ulaw_8000', () => {
    expectSame(encodeFrames('mulaw_8000', SPEECH48).all, encodeFrames('ulaw_8000', SPEECH48).all);
  });

  it('accepts Float32 frames (×32767, clamped) and s16le bytes like their Int16 form', () => {
    const f32 = new Float32Array(7680);
    for (let i = 0; i < f32.length; i++) f32[i] = 1.2 * Math.sin(i / 9); // clamps
    const asI16 = new Int16Array(f32.length);
    for (let i = 0; i < f32.length; i++) asI16[i] = Math.max(-32768, Math.min(32767, Math.round(f32[i]! * 32767)));
    const a = createTtsAudioEncoder('pcm_16000');
    const b = createTtsAudioEncoder('pcm_16000');
    const c = createTtsAudioEncoder('pcm_16000');
    const fromF32 = concat([a.encode(f32.subarray(0, 3840)).bytes, a.encode(f32.subarray(3840)).bytes, a.end().bytes]);
    const fromI16 = concat([b.encode(asI16.subarray(0, 3840)).bytes, b.encode(asI16.subarray(3840)).bytes, b.end().bytes]);
    const raw = bytesOfI16(asI16);
    const fromBytes = concat([c.encode(raw.subarray(0, 7681)).bytes, c.encode(raw.subarray(7681)).bytes, c.end().bytes]);
    expectSame(fromF32, fromI16);
    expectSame(fromBytes, fromI16);
  });
});

describe.skipIf(!has('sox'))(needs('sox', 'pcm_N against sox'), () => {
  // > 60 dB: the default resampler ('high', alias-free) allows ±0.01 dB of passband ripple
  // (issue 12 §2; designed ±0.007 dB, a gain error of 8e-4 = −62 dB), where sox is flat to 1e-5.
  it.each([8000, 16000, 22050, 24000, 44100])('pcm_%i: same length as sox, > 60 dB SNR in the passband', (rate) => {
    const ours = i16(encodeFrames(`pcm_${rate}`, LOWPASSED).all);
    const sox = soxResample(LOWPASSED, rate);
    expect(ours.length).toBe(sox.length);
    expect(snr(sox, ours)).toBeGreaterThan(60);
    // And on raw speech (content up to the band edge, where the two filters differ): still close.
    expect(snr(soxResample(SPEECH48, rate), i16(encodeFrames(`pcm_${rate}`, SPEECH48).all))).toBeGreaterThan(30);
  });
});

describe.skipIf(!has(['ffmpeg', 'sox']))(needs(['ffmpeg', 'sox'], 'G.711 decoded back by ffmpeg, against sox'), () => {
  it.each([
    ['ulaw_8000', 'mulaw', 'u-law'],
    ['alaw_8000', 'alaw', 'a-law'],
  ])('%s: ffmpeg decodes it to the sox-resampled signal (G.711 SNR), and like sox’s own G.711', (format, ffFormat, soxEncoding) => {
    const ours = encodeFrames(format, LOWPASSED).all;
    expect(ours.length).toBe(Math.round(LOWPASSED.length / 6));
    const decoded = i16(run('ffmpeg', ['-v', 'error', '-f', ffFormat, '-ar', '8000', '-ac', '1', '-i', '-', '-f', 's16le', '-'], ours));
    expect(decoded.length).toBe(ours.length);
    const reference = soxResample(LOWPASSED, 8000);
    const ourSnr = snr(reference, decoded);
    expect(ourSnr).toBeGreaterThan(33); // G.711 on speech: ~35-38 dB
    // sox's own resample + G.711 encode of the same input, decoded by ffmpeg the same way.
    const soxG711 = run('sox', ['-D', ...soxRaw(48000), '-', '-t', 'raw', '-e', soxEncoding, '-b', '8', '-c', '1', '-r', '8000', '-'], bytesOfI16(LOWPASSED));
    const soxDecoded = i16(run('ffmpeg', ['-v', 'error', '-f', ffFormat, '-ar', '8000', '-ac', '1', '-i', '-', '-f', 's16le', '-'], soxG711));
    expect(Math.abs(ourSnr - snr(reference, soxDecoded))).toBeLessThan(1.5);
  });
});

describe.skipIf(!has('ffmpeg'))(needs('ffmpeg', 'wav parsed by ffprobe and ffmpeg'), () => {
  it('a 44-byte streaming header (sizes 0xFFFFFFFF), 48 kHz s16 mono, then the PCM exactly', () => {
    const { all, chunks } = encodeFrames('wav', SPEECH48);
    const v = new DataView(all.buffer, all.byteOffset);
    expect(String.fromCharCode(...all.subarray(0, 4))).toBe('RIFF');
    expect(v.getUint32(4, true)).toBe(0xffffffff);
    expect(String.fromCharCode(...all.subarray(36, 40))).toBe('data');
    expect(v.getUint32(40, true)).toBe(0xffffffff);
    expect(chunks[0]!.bytes.length).toBe(44 + 7680);
    const probe = JSON.parse(new TextDecoder().decode(run('ffprobe', ['-v', 'error', '-show_streams', '-of', 'json', '-i', '-'], all))) as { streams: Record<string, unknown>[] };
    expect(probe.streams[0]).toMatchObject({ codec_name: 'pcm_s16le', sample_rate: '48000', channels: 1 });
    const decoded = i16(run('ffmpeg', ['-v', 'error', '-i', '-', '-f', 's16le', '-'], all));
    expectSame(decoded, SPEECH48);
  });
});

describe.skipIf(!has(['opusinfo', 'opusdec', 'opusenc']))(needs(['opusinfo', 'opusdec', 'opusenc'], 'opus validated by opusinfo, decoded by opusdec'), () => {
  it('a valid Ogg Opus stream: header pages first, a page per frame, EOS with granule = input + pre-skip', () => {
    const { all, chunks, last, enc } = encodeFrames('opus', SPEECH48, 3840, { opus: { bitrate: 32000, serial: 7 } });
    const pages = oggPages(all);
    expect(pages[0]!.flags & 2).toBe(2); // BOS
    expect(String.fromCharCode(...all.subarray(pages[0]!.start + 28, pages[0]!.start + 36))).toBe('OpusHead');
    expect(String.fromCharCode(...all.subarray(pages[1]!.start + 28, pages[1]!.start + 36))).toBe('OpusTags');
    expect(pages.at(-1)!.flags & 4).toBe(4); // EOS
    expect(pages.at(-1)!.granule).toBe(BigInt(SPEECH48.length + enc.preSkip));
    expect(oggPages(chunks[0]!.bytes)).toHaveLength(3); // OpusHead, OpusTags, the frame's page
    for (const c of chunks.slice(1)) expect(oggPages(c.bytes)).toHaveLength(1);
    expect(oggPages(last.bytes).at(-1)!.flags & 4).toBe(4);

    const file = join(TMP, 'ours.opus');
    writeFileSync(file, all);
    const info = runText('opusinfo', [file]);
    expect(info).toContain('Pre-skip: 312');
    expect(info).not.toMatch(/WARNING|ERROR|corrupt/i);
    const decoded = i16(run('opusdec', ['--quiet', file, '--rate', '48000', '-']));
    expect(decoded.length).toBe(SPEECH48.length); // pre-skip and end trimming honoured

    // No worse than opus-tools' own encoder at the same bitrate (waveform SNR of the decodes).
    const ref = join(TMP, 'ref.opus');
    run('opusenc', ['--quiet', '--bitrate', '32', SPEECH48_FILE, ref]);
    const refDecoded = i16(run('opusdec', ['--quiet', ref, '--rate', '48000', '-']));
    expect(snr(SPEECH48, decoded)).toBeGreaterThan(snr(SPEECH48, refDecoded) - 3);
  });
});

// ---------------------------------------------------------------------------------------------

describe('chunking equivalence: any split of the input gives byte-identical output', () => {
  const clip = SPEECH48.subarray(20000, 20000 + 9000); // 187.5 ms: no frame or packet alignment
  const oneShot = (format: string, inputRate: number, pcm: Int16Array) => encodeAudio(pcm, { format, inputRate, opus: { serial: 5 } });
  const streamed = (format: string, inputRate: number, parts: AudioEncoderInput[]) => {
    const enc = createAudioEncoder({ format, inputRate, opus: { serial: 5 } });
    const out: Uint8Array[] = [];
    for (const p of parts) out.push(...enc.push(p));
    out.push(...enc.flush());
    for (const b of out) expect(b.length).toBeGreaterThan(0);
    return concat(out);
  };
  const cases: [string, number][] = [
    ['pcm_16000', 48000],
    ['ulaw_8000', 48000],
    ['alaw_8000', 24000],
    ['wav', 22050],
    ['pcm', 44100],
    ['opus', 48000],
    ['opus', 24000],
  ];

  it.each(cases)('%s from %i Hz: random sample splits and random byte splits (odd cuts too)', (format, rate) => {
    const pcm = rate === 48000 ? clip : resampleInt16(clip, 48000, rate);
    const whole = oneShot(format, rate, pcm);
    fc.assert(
      fc.property(cutsArb(pcm.length, 12), cutsArb(pcm.length * 2, 12), (sampleCuts, byteCuts) => {
        expectSame(streamed(format, rate, splitAt(pcm, sampleCuts)), whole);
        expectSame(streamed(format, rate, splitAt(bytesOfI16(pcm), byteCuts)), whole);
      }),
      { numRuns: format === 'opus' ? 6 : 15 },
    );
  });

  it('one sample at a time, and empty chunks in between', () => {
    const pcm = clip.subarray(0, 3000);
    for (const format of ['pcm_22050', 'ulaw_8000', 'opus']) {
      const whole = oneShot(format, 48000, pcm);
      const parts: AudioEncoderInput[] = [];
      for (const s of oneByOne(pcm)) parts.push(s, new Int16Array(0));
      expectSame(streamed(format, 48000, parts), whole);
    }
  });

  it('pcm_N from any input rate equals the one-shot resampler', () => {
    const pcm = resampleInt16(clip, 48000, 44100);
    expectSame(i16(oneShot('pcm_16000', 44100, pcm)), resampleInt16(pcm, 44100, 16000));
  });
});

// ---------------------------------------------------------------------------------------------

describe('timing and word timestamps', () => {
  const rateOf = (f: string) => (f === 'opus' || f === 'wav' || f === 'pcm' ? 48000 : f.includes('law') ? 8000 : Number(f.split('_')[1]));

  it.each(['pcm_16000', 'pcm_44100', 'ulaw_8000', 'opus', 'wav'])('%s: chunk stop_s is the decoded length its bytes carry; mapTime names the chunk completing each instant', (format) => {
    const { chunks, last, enc } = encodeFrames(format, SPEECH48);
    const rate = rateOf(format);
    expect(enc.outputRate).toBe(rate);
    const cum = cumulativeSamples(format, [...chunks, last], enc.preSkip);
    for (const [i, c] of chunks.entries()) expect(c.stop_s).toBeCloseTo(cum[i]! / rate, 9);
    fc.assert(
      // Instants whose audio needs input within the whole frames (the last, partial frame's
      // tail is completed by end(), which mapTime cannot foresee).
      fc.property(fc.integer({ min: 1, max: Math.floor(SPEECH48.length / 3840) * 3840 - 1000 }), (s48) => {
        const t = s48 / 48000;
        const p = enc.mapTime(t);
        const need = Math.ceil(t * rate - 1e-9);
        expect(p.time_s).toBeCloseTo(t, 12);
        expect(p.sample).toBe(Math.round(t * rate));
        expect(p.granule).toBe(format === 'opus' ? s48 + 312 : null);
        // The named chunk completes the audio up to t, the one before does not.
        if (p.chunk < chunks.length) expect(cum[p.chunk]!).toBeGreaterThanOrEqual(need);
        if (p.chunk > 0) expect(cum[p.chunk - 1]!).toBeLessThan(need);
      }),
      { numRuns: 200 },
    );
  });

  it('latency: the resampler delay of the stage, Opus look-ahead 6.5 ms, no packet or page wait for 80 ms frames', () => {
    const r = createInt16Resampler({ from: 48000, to: 8000 });
    expect(createTtsAudioEncoder('ulaw_8000').latency).toEqual({ resamplerMs: r.delaySeconds * 1000, codecMs: 0, packetMs: 0, pageMs: 0, totalMs: r.delaySeconds * 1000 });
    expect(createTtsAudioEncoder('opus').latency).toEqual({ resamplerMs: 0, codecMs: 6.5, packetMs: 0, pageMs: 0, totalMs: 6.5 });
    expect(createTtsAudioEncoder('pcm').latency.totalMs).toBe(0);
    // The general encoder with unaligned input reports the packet fill and the 80 ms page grouping.
    expect(createAudioEncoder({ format: 'opus', inputRate: 48000 }).latency).toMatchObject({ codecMs: 6.5, packetMs: 20, pageMs: 60 });
  });

  // A tone burst that starts at engine time 0.4 s (a word's start on the 80 ms grid): decoded by
  // an external decoder, it must start at mapWord(...).start_s on the output timeline.
  const burst = new Int16Array(48000);
  for (let i = 19200; i < 19200 + 7680; i++) burst[i] = Math.round(16000 * Math.sin((2 * Math.PI * 1000 * (i - 19200)) / 48000));
  const onset = (x: Int16Array, rate: number) => x.findIndex((v) => Math.abs(v) > 8000) / rate;

  it.skipIf(!has('ffmpeg'))(needs('ffmpeg', 'a word stays aligned with its audio after resampling (pcm_16000, ulaw_8000)'), () => {
    for (const [format, ff, rate] of [
      ['pcm_16000', 's16le', 16000],
      ['ulaw_8000', 'mulaw', 8000],
    ] as const) {
      const { all, enc } = encodeFrames(format, burst);
      const decoded = i16(run('ffmpeg', ['-v', 'error', '-f', ff, '-ar', String(rate), '-ac', '1', '-i', '-', '-f', 's16le', '-'], all));
      const word = enc.mapWord({ text: 'hello', start_s: 0.4, stop_s: 0.56 });
      expect(word.text).toBe('hello');
      expect(Math.abs(onset(decoded, rate) - word.start_s)).toBeLessThan(0.0006);
    }
  });

  it.skipIf(!has('opusdec'))(needs('opusdec', 'a word stays aligned with its audio after Opus pre-skip'), () => {
    const { all, enc } = encodeFrames('opus', burst, 3840, { opus: { bitrate: 64000 } });
    const file = join(TMP, 'burst.opus');
    writeFileSync(file, all);
    const decoded = i16(run('opusdec', ['--quiet', file, '--rate', '48000', '-']));
    const word = enc.mapWord({ start_s: 0.4, stop_s: 0.56 });
    expect(Math.abs(onset(decoded, 48000) - word.start_s)).toBeLessThan(0.0006);
    expect(word.chunk).toBe(7); // 0.56 s + 6.5 ms look-ahead is complete after frame 7 (0.64 s)
  });
});

// ---------------------------------------------------------------------------------------------

describe('reset (barge-in)', () => {
  it('drops the resampler tail; the next segment is the one-shot resampling of its own input, on a timeline that goes on', () => {
    const a = SPEECH48.subarray(0, 3840 * 5);
    const b = SPEECH48.subarray(40000, 40000 + 3840 * 6);
    const enc = createTtsAudioEncoder('pcm_16000');
    const first = [];
    for (let i = 0; i < a.length; i += 3840) first.push(enc.encode(a.subarray(i, i + 3840)));
    const before = first.at(-1)!.stop_s;
    enc.reset();
    expect(enc.mapTime(0).time_s).toBe(before);
    const points = [0.01, 0.1, 0.2, 0.3].map((t) => enc.mapTime(t));
    const second = [];
    for (let i = 0; i < b.length; i += 3840) second.push(enc.encode(b.subarray(i, i + 3840)));
    // Chunk indices count from the stream start: the new segment's first chunk is chunk 5.
    let n = 0;
    const cum = second.map((c) => (n += c.bytes.length / 2));
    for (const [k, t] of [0.01, 0.1, 0.2, 0.3].entries()) {
      const need = Math.ceil(t * 16000 - 1e-9);
      const first = cum.findIndex((c) => c >= need);
      expect(points[k]!.chunk).toBe(5 + first);
    }
    second.push(enc.end());
    expect(second[0]!.start_s).toBe(before);
    expectSame(i16(concat(second.map((c) => c.bytes))), resampleInt16(b, 48000, 16000));
    expect(second.at(-1)!.stop_s).toBeCloseTo(before + resampleInt16(b, 48000, 16000).length / 16000, 9);
  });

  it.skipIf(!has('opusdec'))(needs('opusdec', 'an Opus stream reset mid-way stays one valid stream'), () => {
    const enc = createTtsAudioEncoder('opus');
    const parts: Uint8Array[] = [];
    for (let i = 0; i < 10; i++) parts.push(enc.encode(SPEECH48.subarray(i * 3840, (i + 1) * 3840)).bytes);
    enc.reset();
    expect(enc.mapTime(0).time_s).toBe(0.8);
    for (let i = 10; i < 20; i++) parts.push(enc.encode(SPEECH48.subarray(i * 3840, (i + 1) * 3840)).bytes);
    parts.push(enc.end().bytes);
    const file = join(TMP, 'reset.opus');
    writeFileSync(file, concat(parts));
    expect(i16(run('opusdec', ['--quiet', file, '--rate', '48000', '-'])).length).toBe(20 * 3840);
  });

  it('after end() the encoder starts a new stream (a new header)', () => {
    const enc = createTtsAudioEncoder('wav');
    enc.encode(SPEECH48.subarray(0, 3840));
    enc.end();
    const again = enc.encode(SPEECH48.subarray(0, 3840));
    expect(again.start_s).toBe(0);
    expect(again.bytes.length).toBe(44 + 7680);
  });
});

describe('adapters and errors', () => {
  it('createTtsOutputEncoder (the protocol server’s factory shape) gives the same bytes', () => {
    const s = createTtsOutputEncoder('alaw_8000', 48000);
    const parts = [];
    for (let i = 0; i < SPEECH48.length; i += 3840) parts.push(s.push(SPEECH48.subarray(i, i + 3840)).bytes);
    parts.push(s.end().bytes);
    expectSame(concat(parts), encodeFrames('alaw_8000', SPEECH48).all);
  });

  it('the general encoder as a Node stream (createAudioEncodeTransform) equals the one-shot encode', async () => {
    const pcm = SPEECH48.subarray(0, 30000);
    const t = createAudioEncodeTransform({ format: 'alaw_8000', inputRate: 48000 });
    const parts: Buffer[] = [];
    t.on('data', (b: Buffer) => parts.push(b));
    const done = new Promise((r) => t.on('end', r));
    t.write(Buffer.from(bytesOfI16(pcm).subarray(0, 777)));
    t.end(Buffer.from(bytesOfI16(pcm).subarray(777)));
    await done;
    expectSame(Buffer.concat(parts), encodeAudio(pcm, { format: 'alaw_8000', inputRate: 48000 }));
  });

  it('the factories fit the protocol server’s options (type-checked)', () => {
    const tts: NonNullable<TtsServerSessionOptions['createOutputEncoder']> = createTtsOutputEncoder;
    expect(tts('pcm', 48000).push(new Int16Array(4)).bytes.length).toBe(8);
  });

  it('an engine at 24 kHz: frames are resampled to the format', () => {
    const pcm24 = resampleInt16(SPEECH48, 48000, 24000);
    const { all, chunks } = encodeFrames('pcm_16000', pcm24, 1920, { sampleRate: 24000 });
    expect(chunks).toHaveLength(Math.ceil(pcm24.length / 1920));
    expectSame(i16(all), resampleInt16(pcm24, 24000, 16000));
  });

  it('errors are VoicewireErrors with codes', () => {
    const unknown = caught(() => createTtsAudioEncoder('mp3'));
    expect(unknown.code).toBe('FORMAT_UNKNOWN');
    expect(unknown.closeCode).toBe(1008);
    expect(unknown.message).toContain('pcm_16000');
    expect(caught(() => createTtsAudioEncoder('pcm', { sampleRate: 0 })).code).toBe('INVALID_ARGUMENT');
    expect(caught(() => createTtsAudioEncoder('pcm').encode([1, 2] as never)).code).toBe('INVALID_ARGUMENT');
    expect(caught(() => createTtsAudioEncoder('pcm').mapTime(-1)).code).toBe('INVALID_ARGUMENT');
    expect(caught(() => createAudioEncoder({ format: 'wav', inputRate: 1.5 })).code).toBe('INVALID_ARGUMENT');
  });
});
