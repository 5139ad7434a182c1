/**
 * Lengths read from containers before any work (src/server/routes/openai/audio-length.ts, issue 31
 * §5): WAV headers, Ogg Opus granules, MP3 frame counts and constant bitrates; files made by
 * ffmpeg here (the command lines below), each checked against ffprobe's reading of the file.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { cutsArb, splitAt } from '../helpers/chunks.js';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { encodeWav, wavStreamHeader } from '../../src/audio/wav.js';
import { mp3Seconds, oggOpusSeconds, wavSeconds } from '../../src/server/routes/openai/audio-length.js';
import { isFfmpegAvailable } from '../../src/node/ffmpeg.js';

const dir = mkdtempSync(join(tmpdir(), 'voicewire-length-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A file made by `ffmpeg -f lavfi -i <source> <args> out.<ext>`. */
function made(name: string, source: string, args: string[]): Uint8Array {
  const out = join(dir, name);
  execFileSync('ffmpeg', ['-y', '-v', 'error', '-f', 'lavfi', '-i', source, ...args, out]);
  return readFileSync(out);
}

/** `bytes` cut into pieces of `n` (the length must not depend on how the upload was chunked). */
const pieces = (bytes: Uint8Array, n: number): Uint8Array[] => Array.from({ length: Math.ceil(bytes.length / n) }, (_, i) => bytes.subarray(i * n, (i + 1) * n));

describe('wavSeconds', () => {
  it('reads the header whole or in 7-byte pieces; a streaming header (no size) counts the bytes held; garbage is null', () => {
    const wav = encodeWav(new Int16Array(16000 * 7), { sampleRate: 16000, channels: 1 });
    expect(wavSeconds([wav], wav.length)).toBe(7);
    expect(wavSeconds(pieces(wav, 7), wav.length)).toBe(7);
    const head = wavStreamHeader({ sampleRate: 8000, channels: 2 });
    const streamed = [head, new Uint8Array(8000 * 4 * 3)];
    expect(wavSeconds(streamed, head.length + 8000 * 4 * 3)).toBe(3);
    expect(wavSeconds([new TextEncoder().encode('RIFF....WAVEjunk')], 16)).toBeNull();
  });

  it('a header that declares more than was sent counts what was sent', () => {
    const wav = encodeWav(new Int16Array(16000 * 10), { sampleRate: 16000, channels: 1 });
    const cut = wav.subarray(0, 44 + 16000 * 2 * 4);
    expect(wavSeconds([cut], cut.length)).toBe(4);
  });
});

describe.runIf(isFfmpegAvailable())('lengths of files ffmpeg made', () => {
  it('Ogg Opus: the last granule less the pre-skip', () => {
    const opus = made('a.opus', 'sine=frequency=440:sample_rate=48000:duration=12', ['-c:a', 'libopus']);
    const whole = oggOpusSeconds([opus], opus.length);
    expect(whole).toBeCloseTo(12, 1);
    // Any chunking of the upload, the same length.
    fc.assert(fc.property(cutsArb(opus.length), (cuts) => oggOpusSeconds(splitAt(opus, cuts), opus.length) === whole), { numRuns: 50 });
    expect(oggOpusSeconds([opus.subarray(0, 20)], 20)).toBeNull();
  });

  it('MP3 with a Xing/Info frame (LAME, CBR and VBR), CBR without one, and a VBR one without a count (null: its first frames would lie)', () => {
    const tone = 'sine=frequency=440:sample_rate=16000:duration=120';
    expect(mp3Seconds(pieces(made('cbr.mp3', tone, ['-c:a', 'libmp3lame', '-b:a', '32k']), 65536), readFileSync(join(dir, 'cbr.mp3')).length)).toBeCloseTo(120, 0);
    const vbr = made('vbr.mp3', tone, ['-c:a', 'libmp3lame', '-q:a', '5']);
    expect(mp3Seconds([vbr], vbr.length)).toBeCloseTo(120, 0);
    fc.assert(fc.property(cutsArb(vbr.length), (cuts) => mp3Seconds(splitAt(vbr, cuts), vbr.length) === mp3Seconds([vbr], vbr.length)), { numRuns: 50 });
    const noXing = made('noxing.mp3', 'sine=frequency=440:sample_rate=44100:duration=120', ['-ac', '2', '-c:a', 'libmp3lame', '-b:a', '128k', '-write_xing', '0']);
    expect(mp3Seconds([noXing], noXing.length)).toBeCloseTo(120, 0);
    // 3 s of silence then noise, VBR, no Xing: ffprobe itself reads 175 s from the first frames' bitrate.
    const out = join(dir, 'vbr-noxing.mp3');
    execFileSync('ffmpeg', ['-y', '-v', 'error', '-f', 'lavfi', '-i', 'anullsrc=r=44100:cl=mono:d=3', '-f', 'lavfi', '-i', 'anoisesrc=r=44100:d=60', '-filter_complex', '[0][1]concat=n=2:v=0:a=1', '-c:a', 'libmp3lame', '-q:a', '2', '-write_xing', '0', out]);
    const lying = readFileSync(out);
    expect(mp3Seconds([lying], lying.length)).toBeNull();
  });

  it('other containers are not MP3: FLAC, MP4, Ogg Vorbis, ADTS AAC', () => {
    const tone = 'sine=frequency=440:sample_rate=16000:duration=5';
    for (const [name, args] of [['a.flac', []], ['a.m4a', ['-c:a', 'aac']], ['a.ogg', ['-c:a', 'libvorbis']], ['a.aac', ['-c:a', 'aac', '-f', 'adts']]] as const) {
      const b = made(name, tone, [...args]);
      expect(mp3Seconds([b], b.length), name).toBeNull();
    }
  });
});

describe('garbage', () => {
  it('any bytes give a length ≥ 0 or null, never a throw', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 4096 }), fc.constantFrom('RIFF', 'OggS', 'ID3\x04', '\xff\xfb'), (rest, magic) => {
        const bytes = new Uint8Array([...Array.from(magic, (c) => c.charCodeAt(0)), ...rest]);
        for (const f of [wavSeconds, oggOpusSeconds, mp3Seconds]) {
          const v = f([bytes], bytes.length);
          if (v !== null && !(v >= 0)) return false;
        }
        return true;
      }),
      { numRuns: 300 },
    );
  });
});
