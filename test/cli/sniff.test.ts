import { describe, expect, it } from 'vitest';
import { headOf, sniffReader, SNIFF_MAX } from '../../src/cli/sniff.js';
import { encodeOggOpus } from '../../src/audio/ogg-opus.js';

const bytes = (s: string): Uint8Array => Uint8Array.from(s, (c) => c.charCodeAt(0));

describe('sniffReader', () => {
  it('WAV, RF64 and BW64 are ours; anything else goes to ffmpeg', () => {
    for (const m of ['RIFF', 'RF64', 'BW64']) expect(sniffReader(bytes(`${m}....WAVE`), false)).toBe('wav');
    expect(sniffReader(bytes('ID3\u0004...'), false)).toBe('ffmpeg');
    expect(sniffReader(bytes('fLaC'), false)).toBe('ffmpeg');
    expect(sniffReader(bytes('RI'), false)).toBeNull();
    expect(sniffReader(bytes('RI'), true)).toBe('wav'); // too short: the decoder says so
  });

  it('Ogg is ours only when its first packet is OpusHead, decided in at most SNIFF_MAX bytes', () => {
    const opus = encodeOggOpus(new Int16Array(960));
    for (let n = 0; n < 27 + 1 + 8; n++) expect(sniffReader(opus.subarray(0, n), false), `${n} bytes`).toBeNull();
    expect(sniffReader(opus.subarray(0, 27 + 1 + 8), false)).toBe('ogg-opus');
    const vorbis = opus.slice(0, SNIFF_MAX);
    vorbis.set(bytes('\u0001vorbis\u0000'), 27 + vorbis[26]!);
    expect(sniffReader(vorbis, false)).toBe('ffmpeg');
    expect(sniffReader(opus.subarray(0, 20), true)).toBe('ogg-opus'); // truncated: the Ogg decoder reports it
  });

  it('headOf joins chunks up to SNIFF_MAX bytes', () => {
    const chunks = Array.from({ length: 400 }, (_, i) => new Uint8Array([i & 0xff]));
    const head = headOf(chunks);
    expect(head.length).toBe(SNIFF_MAX);
    expect(head[SNIFF_MAX - 1]).toBe((SNIFF_MAX - 1) & 0xff);
  });
});
