/**
 * STT input pipeline: every input format decoded to exact 1920-sample 24 kHz frames, checked
 * against what external tools (ffmpeg, sox, opus-tools) decode from the same files; mp3 through
 * ffmpeg in the Node adapter; chunking equivalence; base64 messages; drain/reset; fuzzing.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { createAudioDecoder, decodeAudio } from '../../src/pipelines/audio-decoder.js';
import { VoicewireError } from '../../src/util/errors.js';
import { createSttAudioDecoder, createSttInputDecoder } from '../../src/pipelines/stt-audio-decoder.js';
import { resampleInt16 } from '../../src/audio/resampler.js';
import { decodeWav } from '../../src/audio/wav.js';
import { createAudioDecodeTransform, decodeSttAudio } from '../../src/node/pipelines.js';
import type { SttServerSessionOptions } from '../../src/sessions/server.js';
import { cutsArb, oneByOne, splitAt } from '../helpers/chunks.js';
import { has, needs, run } from '../helpers/tools.js';
import { caught } from '../helpers/errors.js';

const FIX = new URL('../../fixtures/', import.meta.url).pathname;
const EN = join(FIX, 'speech/en.wav'); // 22050 Hz s16 mono
const EN48 = join(FIX, 'speech/en_48k.wav');
const EN24 = decodeWav(readFileSync(join(FIX, 'speech/en_24k.wav')), { output: 'int16', mono: true }).samples;
const TMP = mkdtempSync(join(tmpdir(), 'vw-stt-'));
afterAll(() => rmSync(TMP, { recursive: true, force: true }));

function i16(bytes: Uint8Array): Int16Array {
  const c = bytes.slice(0, bytes.length & ~1);
  return new Int16Array(c.buffer, 0, c.length >> 1);
}
const bytesOf = (x: Int16Array) => new Uint8Array(x.buffer, x.byteOffset, x.byteLength);

function expectSame(actual: ArrayLike<number>, expected: ArrayLike<number>, tolerance = 0): void {
  expect(actual.length).toBe(expected.length);
  let i = 0;
  while (i < actual.length && Math.abs(actual[i]! - expected[i]!) <= tolerance) i++;
  expect(i === actual.length ? null : { index: i, actual: actual[i], expected: expected[i] }).toBeNull();
}

function snr(ref: ArrayLike<number>, x: ArrayLike<number>): number {
  let s = 0;
  let e = 0;
  for (let i = 0; i < Math.min(ref.length, x.length); i++) {
    const d = ref[i]! - x[i]!;
    s += ref[i]! * ref[i]!;
    e += d * d;
  }
  return 10 * Math.log10(s / Math.max(e, 1e-9));
}

/** Frames of a whole input through one decoder (one push, then flush). */
function decodeAll(format: string | undefined, bytes: Uint8Array) {
  const dec = createSttAudioDecoder(format);
  const frames = [...dec.push(bytes), ...dec.flush()];
  return { dec, frames, pcm: joinFrames(frames) };
}

function joinFrames(frames: Int16Array[]): Int16Array {
  const out = new Int16Array(frames.length * 1920);
  frames.forEach((f, i) => {
    expect(f.length).toBe(1920);
    out.set(f, i * 1920);
  });
  return out;
}

/** What the pipeline must emit for mono PCM at `rate`: resampled to 24 kHz, padded to whole frames. */
function expectedFrames(mono: Int16Array, rate: number): { samples: Int16Array; frames: number } {
  const samples = rate === 24000 ? mono : resampleInt16(mono, rate, 24000);
  const length = Math.round((mono.length * 24000) / rate); // computed here, not taken from the resampler
  expect(samples.length).toBe(length);
  return { samples, frames: Math.ceil(length / 1920) };
}

function checkFrames(pcm: Int16Array, frames: number, want: { samples: Int16Array; frames: number }, tolerance = 0): void {
  expect(frames).toBe(want.frames);
  expectSame(pcm.subarray(0, want.samples.length), want.samples, tolerance);
  expect(pcm.subarray(want.samples.length).every((v) => v === 0)).toBe(true); // zero padding
}

const ff = (args: string[], input?: Uint8Array) => run('ffmpeg', ['-nostdin', '-v', 'error', ...args], input);

// ---------------------------------------------------------------------------------------------

describe('raw formats', () => {
  it('pcm (24 kHz): frames are the input, the last one zero-padded; total_duration_s = frames × 0.08', () => {
    const { dec, frames, pcm } = decodeAll('pcm', bytesOf(EN24));
    checkFrames(pcm, frames.length, { samples: EN24, frames: Math.ceil(EN24.length / 1920) });
    expect(dec.total_duration_s).toBeCloseTo(frames.length * 0.08, 12);
    expect(dec.inputDuration_s).toBeCloseTo(EN24.length / 24000, 12);
    expect(dec.latency).toEqual({ resamplerMs: 0, framerMs: (1919 / 24000) * 1000, totalMs: (1919 / 24000) * 1000 });
  });

  it.skipIf(!has('sox'))(needs('sox', 'pcm_N at every API rate: exactly round(N·24000/rate) samples, framed'), () => {
    for (const rate of [8000, 16000, 22050, 24000, 44100, 48000]) {
      const input = i16(run('sox', ['-D', EN, '-t', 'raw', '-e', 'signed', '-b', '16', '-r', String(rate), '-']));
      const { frames, pcm, dec } = decodeAll(`pcm_${rate}`, bytesOf(input));
      checkFrames(pcm, frames.length, expectedFrames(input, rate));
      expect(dec.info).toMatchObject({ container: 'raw', codec: 'pcm_s16le', sampleRate: rate });
      // And close to sox's own conversion of the same input to 24 kHz (a different filter).
      const sox24 = i16(run('sox', ['-D', '-t', 'raw', '-e', 'signed', '-b', '16', '-c', '1', '-r', String(rate), '-', '-t', 'raw', '-r', '24000', '-'], bytesOf(input)));
      expect(snr(sox24, pcm)).toBeGreaterThan(rate === 8000 ? 25 : 30);
    }
  });

  it.skipIf(!has('ffmpeg'))(needs('ffmpeg', 'ulaw_8000 / mulaw_8000 / alaw_8000 (sox-written): decoded like ffmpeg, then resampled'), () => {
    for (const [format, file, ffFormat] of [
      ['ulaw_8000', 'en.ulaw', 'mulaw'],
      ['mulaw_8000', 'en.ulaw', 'mulaw'],
      ['alaw_8000', 'en.alaw', 'alaw'],
    ]) {
      const bytes = readFileSync(join(FIX, 'pipelines', file!));
      const reference = i16(ff(['-f', ffFormat!, '-ar', '8000', '-ac', '1', '-i', '-', '-f', 's16le', '-'], bytes));
      expect(reference.length).toBe(bytes.length);
      const { frames, pcm } = decodeAll(format, bytes);
      checkFrames(pcm, frames.length, expectedFrames(reference, 8000));
    }
  });

  it('a sample split across pushes is carried; a stray last byte is dropped and counted', () => {
    const dec = createAudioDecoder({ format: 'pcm_16000' });
    const b = bytesOf(new Int16Array([1000, -2000, 3000]));
    const out = [...dec.push(b.subarray(0, 3)), ...dec.push(b.subarray(3, 5)), ...dec.push(b.subarray(5))];
    expect(Array.from(out.flatMap((x) => Array.from(x)))).toEqual([1000, -2000, 3000]);
    dec.push(new Uint8Array([7]));
    expect(dec.flush()).toEqual([]);
    expect(dec.droppedBytes).toBe(1);
  });
});

describe.skipIf(!has('ffmpeg'))(needs('ffmpeg', 'wav variants written by ffmpeg and sox'), () => {
  const src48 = decodeWav(readFileSync(EN48), { output: 'int16', mono: true }).samples;
  // [name, ffmpeg args writing the file from EN (22050 Hz) or EN48, rate, reference, tolerance]
  const variants: [string, string[], number, 'ffmpeg' | 'src48', number][] = [
    ['s16 22050 Hz (the espeak file)', [], 22050, 'ffmpeg', 0],
    // amerge interleaves two copies without mixing, so both channels hold the source exactly.
    ['s24 stereo 48 kHz (EXTENSIBLE)', ['-i', EN48, '-filter_complex', '[0:a][0:a]amerge=inputs=2[a]', '-map', '[a]', '-c:a', 'pcm_s24le'], 48000, 'src48', 0],
    ['s32 48 kHz (EXTENSIBLE)', ['-i', EN48, '-c:a', 'pcm_s32le'], 48000, 'src48', 0],
    ['f32 48 kHz (float, fact chunk)', ['-i', EN48, '-c:a', 'pcm_f32le'], 48000, 'src48', 1],
    ['u8 8 kHz', ['-i', EN, '-ar', '8000', '-c:a', 'pcm_u8'], 8000, 'ffmpeg', 0],
    ['mu-law 8 kHz', ['-i', EN, '-ar', '8000', '-c:a', 'pcm_mulaw'], 8000, 'ffmpeg', 0],
    ['A-law 8 kHz', ['-i', EN, '-ar', '8000', '-c:a', 'pcm_alaw'], 8000, 'ffmpeg', 0],
    ['RF64 16 kHz', ['-i', EN, '-ar', '16000', '-rf64', 'always'], 16000, 'ffmpeg', 0],
    ['piped (sizes 0xFFFFFFFF) 44.1 kHz', ['-i', EN, '-ar', '44100', '-f', 'wav', 'pipe:'], 44100, 'ffmpeg', 0],
  ];

  it.each(variants)('%s: exact frames of the decoded audio', (_name, args, rate, ref, tolerance) => {
    const bytes = args.length === 0 ? new Uint8Array(readFileSync(EN)) : args.includes('pipe:') ? ff(args) : (ff([...args, '-y', join(TMP, 'v.wav')]), new Uint8Array(readFileSync(join(TMP, 'v.wav'))));
    const mono = ref === 'src48' ? src48 : i16(ff(['-i', '-', '-ac', '1', '-f', 's16le', '-'], bytes));
    const { frames, pcm, dec } = decodeAll('wav', bytes);
    expect(dec.inputDuration_s).toBeCloseTo(mono.length / rate, 9);
    checkFrames(pcm, frames.length, expectedFrames(mono, rate), tolerance * 2);
  });

  it.skipIf(!has('sox'))(needs('sox', 'a sox-written s16 WAV and a sox pipe WAV'), () => {
    for (const out of [join(TMP, 's.wav'), '-']) {
      const args = [EN, '-r', '16000', ...(out === '-' ? ['-t', 'wav', '-'] : [out])];
      const written = run('sox', ['-D', ...args]);
      const bytes = out === '-' ? written : new Uint8Array(readFileSync(out));
      const mono = i16(run('sox', ['-D', EN, '-r', '16000', '-t', 'raw', '-e', 'signed', '-b', '16', '-']));
      const { frames, pcm } = decodeAll(undefined, bytes); // sniffed
      checkFrames(pcm, frames.length, expectedFrames(mono, 16000));
    }
  });
});

describe.skipIf(!has('opusdec'))(needs('opusdec', 'Ogg Opus: decoded by libopus at 24 kHz, as opusdec --rate 24000'), () => {
  it.each([
    ['pipelines/en.opus', 'opusenc'],
    ['opus/ffmpeg_20ms.opus', 'ffmpeg, 20 ms packets'],
    ['opus/ffmpeg_60ms.opus', 'ffmpeg, 60 ms packets'],
    ['opus/opusenc_tags2pages.opus', 'opusenc, OpusTags over two pages'],
  ])('%s (%s): exact length, same audio', (file) => {
    const bytes = new Uint8Array(readFileSync(join(FIX, file)));
    const reference = i16(run('opusdec', ['--quiet', join(FIX, file), '--rate', '24000', '-']));
    for (const format of ['opus', undefined]) {
      const { frames, pcm, dec } = decodeAll(format, bytes);
      expect(frames.length).toBe(Math.ceil(reference.length / 1920));
      expect(dec.inputDuration_s).toBeCloseTo(reference.length / 24000, 9);
      expect(dec.latency.resamplerMs).toBe(0); // decoded at 24 kHz natively
      expect(snr(reference, pcm.subarray(0, reference.length))).toBeGreaterThan(40);
      expect(pcm.subarray(reference.length).every((v) => v === 0)).toBe(true);
    }
  });
});

describe.skipIf(!has('ffmpeg'))(needs('ffmpeg', 'formats the API does not name go through ffmpeg (voicewire/node)'), () => {
  const mp3 = new Uint8Array(readFileSync(join(FIX, 'pipelines/en.mp3')));
  // ffmpeg reading the same bytes from a pipe, as the bridge feeds it (from a file it would also
  // trim the encoder delay, which needs seeking to the LAME tag).
  const reference = () => i16(ff(['-i', '-', '-ac', '1', '-ar', '24000', '-f', 's16le', '-'], mp3));

  it('mp3, named or sniffed: the frames of ffmpeg’s own 24 kHz decode', async () => {
    const ref = reference();
    for (const format of ['mp3', undefined]) {
      const out = await decodeSttAudio(mp3, format);
      expect(out.decoder).toBe('ffmpeg');
      checkFrames(joinFrames(out.frames), out.frames.length, { samples: ref, frames: Math.ceil(ref.length / 1920) });
      expect(out.total_duration_s).toBeCloseTo(out.frames.length * 0.08, 12);
    }
  });

  it('API formats never go to ffmpeg; WAV is sniffed', async () => {
    const out = await decodeSttAudio(new Uint8Array(readFileSync(EN)));
    expect(out.decoder).toBe('core');
    expect(out.info).toMatchObject({ container: 'wav', sampleRate: 22050 });
  });

  it('input ffmpeg cannot read is FFMPEG_FAILED', async () => {
    await expect(decodeSttAudio(new Uint8Array(4096).fill(0x5a), 'flac')).rejects.toMatchObject({ code: 'FFMPEG_FAILED' });
  });
});

// ---------------------------------------------------------------------------------------------

describe('chunking equivalence: any split of the bytes gives the same frames', () => {
  const wav16 = new Uint8Array(readFileSync(join(FIX, 'wav/s16_list.wav'))); // ffmpeg-written, LIST chunk
  const opus = new Uint8Array(readFileSync(join(FIX, 'opus/ffmpeg_20ms.opus')));
  const ulaw = new Uint8Array(readFileSync(join(FIX, 'pipelines/en.ulaw'))).subarray(0, 6000);
  const pcm16 = bytesOf(resampleInt16(EN24.subarray(0, 12000), 24000, 16000));
  const cases: [string, string | undefined, Uint8Array][] = [
    ['wav', 'wav', wav16],
    ['sniffed wav', undefined, wav16],
    ['opus', 'opus', opus],
    ['ulaw_8000', 'ulaw_8000', ulaw],
    ['pcm_16000', 'pcm_16000', pcm16],
  ];

  it.each(cases)('%s: random splits, empty chunks', (_name, format, bytes) => {
    const whole = joinFrames(decodeAll(format, bytes).frames);
    fc.assert(
      fc.property(cutsArb(bytes.length, 16), (cuts) => {
        const dec = createSttAudioDecoder(format);
        const frames: Int16Array[] = [];
        for (const part of splitAt(bytes, cuts)) frames.push(...dec.push(part));
        frames.push(...dec.flush());
        expectSame(joinFrames(frames), whole);
      }),
      { numRuns: format === 'opus' ? 8 : 20 },
    );
  });

  it('one byte at a time (the WAV header and the Ogg pages split everywhere)', () => {
    for (const [format, bytes] of [
      ['wav', wav16.subarray(0, 3000)],
      ['opus', opus],
    ] as const) {
      const whole = joinFrames(createSttAudioDecoder(format).push(bytes)); // one push, no flush (a cut file)
      const dec = createSttAudioDecoder(format);
      const frames: Int16Array[] = [];
      for (const b of oneByOne(bytes)) frames.push(...dec.push(b));
      expectSame(joinFrames(frames), whole.subarray(0, frames.length * 1920));
      expect(frames.length).toBe(whole.length / 1920);
    }
  });
});

describe('STT audio messages', () => {
  const bytes = bytesOf(EN24.subarray(0, 10000));
  const base64 = (b: Uint8Array) => Buffer.from(b).toString('base64');

  it('pushBase64 and pushMessage (object or JSON text) give the frames of the bytes', () => {
    const want = decodeAll('pcm', bytes).frames;
    const a = createSttAudioDecoder('pcm');
    const b = createSttAudioDecoder('pcm');
    const gotA: Int16Array[] = [];
    const gotB: Int16Array[] = [];
    for (const part of splitAt(bytes, [999, 5001, 5001, 7777])) {
      gotA.push(...a.pushBase64(base64(part)));
      gotB.push(...b.pushMessage(JSON.stringify({ type: 'audio', audio: base64(part) })));
    }
    gotA.push(...a.flush());
    gotB.push(...b.flush());
    expectSame(joinFrames(gotA), joinFrames(want));
    expectSame(joinFrames(gotB), joinFrames(want));
    expect(createSttAudioDecoder('pcm').pushMessage({ type: 'audio', audio: base64(bytes.subarray(0, 3840)) })).toHaveLength(1);
  });

  it('bad base64, bad audio and non-audio messages are protocol errors (1008)', () => {
    const dec = createSttAudioDecoder('pcm');
    const bad = caught(() => dec.pushBase64('not base64!'));
    expect(bad.code).toBe('PROTOCOL_INVALID_AUDIO');
    expect(bad.closeCode).toBe(1008);
    expect(caught(() => dec.pushMessage({ type: 'flush', flush_id: 1 })).code).toBe('PROTOCOL_INVALID_MESSAGE');
    expect(caught(() => dec.pushMessage('{"type":"audio"')).code).toBe('PROTOCOL_INVALID_MESSAGE');
    expect(caught(() => dec.pushMessage({ type: 'audio', audio: 5 })).code).toBe('PROTOCOL_INVALID_MESSAGE');
    const wav = createSttAudioDecoder('wav');
    const notWav = caught(() => wav.pushBase64(base64(new Uint8Array(64).fill(1))));
    expect(notWav.code).toBe('PROTOCOL_INVALID_AUDIO');
    expect((notWav.cause as VoicewireError).code).toBe('WAV_NOT_RIFF');
  });
});

describe('drain, reset and the server adapter', () => {
  it('drain() ends a segment: the resampler tail and the padded frame, as if the input ended there', () => {
    const seg = resampleInt16(EN24.subarray(0, 7000), 24000, 16000);
    const dec = createSttAudioDecoder('pcm_16000');
    const frames = [...dec.push(bytesOf(seg)), ...dec.drain()];
    checkFrames(joinFrames(frames), frames.length, expectedFrames(seg, 16000));
    // The stream goes on: the next segment starts afresh.
    const next = [...dec.push(bytesOf(seg)), ...dec.drain()];
    expectSame(joinFrames(next), joinFrames(frames));
  });

  it('reset() drops the partial frame and the resampler state (barge-in)', () => {
    const dec = createSttAudioDecoder('pcm');
    expect(dec.push(bytesOf(EN24.subarray(0, 1000)))).toEqual([]);
    dec.reset();
    const frames = dec.push(bytesOf(EN24.subarray(5000, 5000 + 1920)));
    expect(frames).toHaveLength(1);
    expectSame(frames[0]!, EN24.subarray(5000, 5000 + 1920));
  });

  it('reset() keeps a WAV stream’s place: the rest of the file still decodes', () => {
    const wav = new Uint8Array(readFileSync(EN));
    const dec = createSttAudioDecoder('wav');
    const a = dec.push(wav.subarray(0, 20001));
    dec.reset();
    const b = [...dec.push(wav.subarray(20001)), ...dec.flush()];
    expect(a.length + b.length).toBeGreaterThan(20);
  });

  it('the general decoder as a Node stream (createAudioDecodeTransform): info, then mono s16 at the source rate', async () => {
    const wav = readFileSync(EN);
    const t = createAudioDecodeTransform({ format: 'wav' });
    let info: unknown = null;
    t.on('info', (i) => (info = i));
    const parts: Buffer[] = [];
    t.on('data', (b: Buffer) => parts.push(b));
    const done = new Promise((r) => t.on('end', r));
    t.end(wav);
    await done;
    expect(info).toMatchObject({ container: 'wav', sampleRate: 22050, channels: 1 });
    expectSame(i16(Buffer.concat(parts)), decodeWav(wav, { output: 'int16' }).samples);
  });

  it('createSttInputDecoder (the protocol server’s factory shape): 24 kHz PCM, unframed', () => {
    const fits: NonNullable<SttServerSessionOptions['createInputDecoder']> = createSttInputDecoder;
    expect(typeof fits).toBe('function');
    const seg = resampleInt16(EN24.subarray(0, 7000), 24000, 16000);
    const s = createSttInputDecoder('pcm_16000');
    const parts = [s.push(bytesOf(seg.subarray(0, 3333))), s.push(bytesOf(seg.subarray(3333))), s.end()];
    const all = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) all.set(p, (at += p.length) - p.length);
    expectSame(all, resampleInt16(seg, 16000, 24000));
  });
});

describe('fuzzing: garbage raises only VoicewireError, and the decoder works afterwards', () => {
  const good = new Uint8Array(readFileSync(join(FIX, 'wav/s16_list.wav')));
  const goodFrames = joinFrames(decodeAll('wav', good).frames);

  it.each(['wav', 'opus', undefined])('format %s', (format) => {
    const dec = createSttAudioDecoder(format);
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 600 }), fc.boolean(), (garbage, magic) => {
        if (magic && garbage.length >= 4) garbage.set(format === 'opus' ? [0x4f, 0x67, 0x67, 0x53] : [0x52, 0x49, 0x46, 0x46]);
        try {
          dec.push(garbage);
          dec.flush();
        } catch (e) {
          expect(e).toBeInstanceOf(VoicewireError);
          try {
            dec.flush(); // ends the broken stream (may report INVALID_STATE); a new one can follow
          } catch (e2) {
            expect(e2).toBeInstanceOf(VoicewireError);
          }
        }
        expectSame(joinFrames([...dec.push(good), ...dec.flush()]), goodFrames);
      }),
      { numRuns: 60 },
    );
  });

  it('no format and neither RIFF nor OggS: AUDIO_FORMAT_UNDETECTED; INVALID_STATE until flush', () => {
    const dec = createAudioDecoder();
    expect(() => dec.push(new TextEncoder().encode('ID3\u0004 not a wav'))).toThrow(expect.objectContaining({ code: 'AUDIO_FORMAT_UNDETECTED' }));
    expect(() => dec.push(good)).toThrow(expect.objectContaining({ code: 'INVALID_STATE' }));
    expect(() => dec.flush()).toThrow(expect.objectContaining({ code: 'INVALID_STATE' }));
    expect(decodeAudio(good).info).toMatchObject({ container: 'wav', sampleRate: 22050, codec: 'pcm_s16le' });
    expect(() => createSttAudioDecoder('mp3')).toThrow(expect.objectContaining({ code: 'FORMAT_UNKNOWN', closeCode: 1008 }));
  });
});

describe('a stream cut short (the client stopped recording mid-file)', () => {
  const opus = new Uint8Array(readFileSync(join(FIX, 'pipelines/en.opus')));
  const wav = new Uint8Array(readFileSync(EN48));
  // Cut the Ogg stream at a page boundary before its EOS page: the last "OggS" after the middle.
  const lastPage = (() => {
    for (let i = opus.length - 4; i > 0; i--) if (opus[i] === 0x4f && opus[i + 1] === 0x67 && opus[i + 2] === 0x67 && opus[i + 3] === 0x53) return i;
    return -1;
  })();
  const cutOpus = opus.subarray(0, lastPage);
  const cutWav = wav.subarray(0, 20000);

  it('the STT decoder transcribes what arrived by default (Ogg without EOS, WAV shorter than its header)', () => {
    for (const [format, bytes] of [['opus', cutOpus], ['wav', cutWav]] as const) {
      const stt = createSttAudioDecoder(format);
      const frames = [...stt.push(bytes), ...stt.flush()];
      expect(frames.length, format).toBeGreaterThan(2);
      for (const f of frames) expect(f.length).toBe(1920);
    }
  });

  it('the general decoder reports the cut unless told to accept it; damage is an error either way', () => {
    expect(() => decodeAudio(cutOpus)).toThrowError(expect.objectContaining({ code: 'OGG_TRUNCATED' }));
    expect(() => decodeAudio(cutWav)).toThrowError(expect.objectContaining({ code: 'WAV_SIZE_MISMATCH' }));
    expect(decodeAudio(cutOpus, { allowTruncated: true }).pcm.length).toBeGreaterThan(0);
    const damaged = opus.slice();
    damaged[lastPage + 27 + damaged[lastPage + 26]! + 5] ^= 0xff; // in the last page's payload: its CRC no longer matches
    const stt = createSttAudioDecoder('opus');
    expect(() => [...stt.push(damaged), ...stt.flush()]).toThrowError(expect.objectContaining({ code: 'OGG_CRC_MISMATCH' }));
  });
});
