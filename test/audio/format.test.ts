/**
 * The format registry against the published API tables (docs/api.md §4.2, §4.4, §4.5) and
 * protocol-notes.md ("mulaw_8000 is an alias of ulaw_8000"). The expected rows below are copied
 * from those documents, not computed.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  AUDIO_FORMAT_NAMES,
  STT_INPUT_FORMATS,
  TTS_OUTPUT_FORMATS,
  TTS_STREAMING_OUTPUT_FORMATS,
  isAudioFormatName,
  parseAudioFormat,
  type AudioFormatDirection,
} from '../../src/audio/format.js';
import { VoicewireError } from '../../src/util/errors.js';
import * as index from '../../src/index.js';
import { caught } from '../helpers/errors.js';

// §4.2 output_format list, verbatim order.
const SPEC_4_2 = ['wav', 'pcm', 'opus', 'ulaw_8000', 'mulaw_8000', 'alaw_8000', 'pcm_8000', 'pcm_16000', 'pcm_22050', 'pcm_24000', 'pcm_44100', 'pcm_48000'];
// §4.4 input_format "Allowed" list, verbatim order.
const SPEC_4_4 = ['pcm', 'pcm_8000', 'pcm_16000', 'pcm_22050', 'pcm_24000', 'pcm_44100', 'pcm_48000', 'wav', 'opus', 'ulaw_8000', 'mulaw_8000', 'alaw_8000'];
// §4.5 "shorter list named for streaming", verbatim order.
const SPEC_4_5 = ['pcm', 'wav', 'opus', 'ulaw_8000', 'alaw_8000', 'pcm_8000', 'pcm_16000', 'pcm_24000'];

type Row = [name: string, canonical: string, codec: string, container: string, rate: number | null, bytesPerSample: number | null];
// TTS output: §4.2 "pcm: 48000 Hz, 16-bit signed integer, mono", "wav: 48 kHz, 16-bit signed, mono",
// "opus: Opus in an Ogg container"; pcm_N is N Hz s16le (protocol-notes "Output encodings").
const TTS_ROWS: Row[] = [
  ['wav', 'wav', 'pcm_s16le', 'wav', 48000, 2],
  ['pcm', 'pcm', 'pcm_s16le', 'raw', 48000, 2],
  ['opus', 'opus', 'opus', 'ogg', 48000, null],
  ['ulaw_8000', 'ulaw_8000', 'mulaw', 'raw', 8000, 1],
  ['mulaw_8000', 'ulaw_8000', 'mulaw', 'raw', 8000, 1],
  ['alaw_8000', 'alaw_8000', 'alaw', 'raw', 8000, 1],
  ['pcm_8000', 'pcm_8000', 'pcm_s16le', 'raw', 8000, 2],
  ['pcm_16000', 'pcm_16000', 'pcm_s16le', 'raw', 16000, 2],
  ['pcm_22050', 'pcm_22050', 'pcm_s16le', 'raw', 22050, 2],
  ['pcm_24000', 'pcm_24000', 'pcm_s16le', 'raw', 24000, 2],
  ['pcm_44100', 'pcm_44100', 'pcm_s16le', 'raw', 44100, 2],
  ['pcm_48000', 'pcm_48000', 'pcm_s16le', 'raw', 48000, 2],
];
// STT input: §4.4 "PCM input: 24000 Hz, 16-bit signed little-endian, mono"; "wav input: a valid
// WAV file with PCM data (AudioFormat 1). Bits per sample may be 16, 24 or 32" (from the header).
const STT_ROWS: Row[] = TTS_ROWS.map((r): Row => {
  if (r[0] === 'pcm') return ['pcm', 'pcm', 'pcm_s16le', 'raw', 24000, 2];
  if (r[0] === 'wav') return ['wav', 'wav', 'pcm_s16le', 'wav', null, null];
  return r;
});


describe('AUDIO_FORMAT_NAMES and the route lists', () => {
  it('are the lists of docs/api.md §4.2, §4.4 and §4.5', () => {
    expect([...AUDIO_FORMAT_NAMES]).toEqual(SPEC_4_2);
    expect([...TTS_OUTPUT_FORMATS]).toEqual(SPEC_4_2);
    expect([...STT_INPUT_FORMATS]).toEqual(SPEC_4_4);
    expect([...TTS_STREAMING_OUTPUT_FORMATS]).toEqual(SPEC_4_5);
  });
  it('every listed name parses in both directions', () => {
    for (const name of [...SPEC_4_2, ...SPEC_4_4, ...SPEC_4_5]) {
      expect(isAudioFormatName(name)).toBe(true);
      expect(parseAudioFormat(name).name).toBe(name);
      expect(parseAudioFormat(name, { direction: 'stt-input' }).name).toBe(name);
    }
  });
  it('are exported from the package entry', () => {
    expect(index.parseAudioFormat).toBe(parseAudioFormat);
    expect(index.AUDIO_FORMAT_NAMES).toBe(AUDIO_FORMAT_NAMES);
  });
});

describe.each([
  ['tts-output', TTS_ROWS],
  ['stt-input', STT_ROWS],
] as [AudioFormatDirection, Row[]][])('parseAudioFormat, direction %s', (direction, rows) => {
  it.each(rows)('%s', (name, canonical, codec, container, sampleRate, bytesPerSample) => {
    const f = parseAudioFormat(name, { direction });
    expect(f).toEqual({ name, canonical, codec, container, sampleRate, channels: 1, bytesPerSample, direction });
    expect(Object.isFrozen(f)).toBe(true);
    expect(parseAudioFormat(name, { direction })).toBe(f); // shared, built once
  });
});

describe('parseAudioFormat defaults and directions', () => {
  it('defaults to the TTS output direction (pcm = 48 kHz, §4.2)', () => {
    expect(parseAudioFormat('pcm')).toBe(parseAudioFormat('pcm', { direction: 'tts-output' }));
    expect(parseAudioFormat('pcm').sampleRate).toBe(48000);
    expect(parseAudioFormat('pcm', {}).sampleRate).toBe(48000);
  });
  it('pcm is 24 kHz on STT input (§4.4) and wav takes its rate from the header', () => {
    expect(parseAudioFormat('pcm', { direction: 'stt-input' }).sampleRate).toBe(24000);
    expect(parseAudioFormat('wav', { direction: 'stt-input' }).sampleRate).toBeNull();
    expect(parseAudioFormat('wav').sampleRate).toBe(48000);
  });
  it('mulaw_8000 is the same format as ulaw_8000 under another name', () => {
    const a = parseAudioFormat('mulaw_8000');
    const b = parseAudioFormat('ulaw_8000');
    expect(a.canonical).toBe('ulaw_8000');
    expect({ ...a, name: 'x' }).toEqual({ ...b, name: 'x' });
  });
  it('rejects an unknown direction with INVALID_ARGUMENT', () => {
    const e = caught(() => parseAudioFormat('pcm', { direction: 'tts' as never }));
    expect(e.code).toBe('INVALID_ARGUMENT');
    expect(e.message).toMatch(/tts-output.*stt-input/);
  });
});

describe('unknown names', () => {
  const BAD = ['', 'PCM', 'Wav', ' wav', 'wav ', 'pcm_11025', 'pcm_8000 ', 'mp3', 'ulaw', 'mulaw', 'alaw_16000', 'opus_48000', '__proto__', 'constructor', 'toString', 'hasOwnProperty', 'x'.repeat(10_000)];
  it.each(BAD.map((b) => [b.length > 20 ? `${b.slice(0, 20)}… (${b.length} chars)` : JSON.stringify(b), b]))('%s → FORMAT_UNKNOWN listing the valid names', (_label, bad) => {
    expect(isAudioFormatName(bad)).toBe(false);
    for (const direction of ['tts-output', 'stt-input'] as const) {
      const e = caught(() => parseAudioFormat(bad, { direction }));
      expect(e.code).toBe('FORMAT_UNKNOWN');
      expect(e.closeCode).toBe(1008);
      for (const name of SPEC_4_2) expect(e.message).toContain(name);
      expect(e.message.length).toBeLessThan(300); // a 10 kB name is not echoed whole
    }
  });
  it('non-strings are INVALID_ARGUMENT', () => {
    for (const bad of [undefined, null, 8000, {}, ['pcm'], Symbol('pcm')]) {
      expect(isAudioFormatName(bad)).toBe(false);
      expect(caught(() => parseAudioFormat(bad as never)).code).toBe('INVALID_ARGUMENT');
    }
  });
  it('fuzz: any string either is a listed name or raises FORMAT_UNKNOWN', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.constantFrom(...SPEC_4_2).map((s) => s + 'x'), fc.constantFrom(...SPEC_4_2)), (s) => {
        if (SPEC_4_2.includes(s)) expect(parseAudioFormat(s).name).toBe(s);
        else expect(caught(() => parseAudioFormat(s)).code).toBe('FORMAT_UNKNOWN');
      }),
      { numRuns: 300 },
    );
  });
});
