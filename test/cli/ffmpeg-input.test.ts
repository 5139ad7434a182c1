/**
 * Containers only ffmpeg reads (issue 10 §2): decoded by ffmpeg at their own rate and resampled
 * by voicewire (so `--quality` applies), sample for sample what ffmpeg itself decodes; `info`
 * through ffprobe. Files are made with ffmpeg from a fixture, in the test.
 */
import { describe, expect, it, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { has, needs, run, runText } from '../helpers/tools.js';
import { resampledLength } from '../../src/audio/resampler.js';
import { cli, root } from './run-cli.js';

const FIXTURE = join(root, 'fixtures/speech/en_48k.wav');
let dir: string;
const file = (name: string): string => join(dir, name);

/** ffmpeg's own decode of a file, mono s16le (at `rate` when given). */
function ffmpegDecode(path: string, rate?: number): Uint8Array {
  return run('ffmpeg', ['-loglevel', 'error', '-i', path, '-f', 's16le', '-ac', '1', ...(rate === undefined ? [] : ['-ar', String(rate)]), '-']);
}

describe.skipIf(!has(['ffmpeg', 'ffprobe']))(needs(['ffmpeg', 'ffprobe'], 'convert and info of mp3, flac, m4a'), () => {
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'voicewire-cli-ff-'));
    run('ffmpeg', ['-loglevel', 'error', '-i', FIXTURE, file('s.mp3')]);
    run('ffmpeg', ['-loglevel', 'error', '-i', FIXTURE, file('s.flac')]);
    run('ffmpeg', ['-loglevel', 'error', '-i', FIXTURE, '-ar', '22050', '-ac', '2', file('s22.flac')]);
    run('ffmpeg', ['-loglevel', 'error', '-i', FIXTURE, '-c:a', 'flac', file('s.oga')]); // Ogg FLAC: Ogg, but not Opus
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each(['s.mp3', 's.flac'])('%s at its own rate: byte for byte what ffmpeg decodes (the mp3 was 627 samples longer through a pipe)', (name) => {
    const r = cli(['convert', file(name), '--to', 'pcm_48000']);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const theirs = ffmpegDecode(file(name));
    expect(r.stdout.length).toBe(theirs.length);
    expect(Buffer.from(r.stdout).equals(Buffer.from(theirs))).toBe(true);
  });

  it.each(['s.mp3', 's.flac', 's22.flac'])('%s resampled: as many samples as ffmpeg -ar gives', (name) => {
    const r = cli(['convert', file(name), '--to', 'pcm_16000']);
    expect(r.status).toBe(0);
    const nativeRate = name === 's22.flac' ? 22050 : 48000;
    const native = ffmpegDecode(file(name)).length / 2;
    expect(r.stdout.length / 2).toBe(resampledLength(native, nativeRate, 16000));
    // ffmpeg's swresample rounds its length its own way: at most one sample apart.
    expect(Math.abs(r.stdout.length / 2 - ffmpegDecode(file(name), 16000).length / 2)).toBeLessThanOrEqual(1);
  });

  it('--quality applies: the output is voicewire resampling ffmpeg\'s native decode', () => {
    const wav = file('native.wav');
    run('ffmpeg', ['-loglevel', 'error', '-i', file('s22.flac'), '-c:a', 'pcm_s16le', wav]);
    const outputs = (['fast', 'best'] as const).map((q) => {
      const viaFfmpeg = cli(['convert', file('s22.flac'), '--to', 'pcm_16000', '--quality', q]);
      const fromWav = cli(['convert', wav, '--to', 'pcm_16000', '--quality', q]);
      expect(viaFfmpeg.status).toBe(0);
      expect(Buffer.from(viaFfmpeg.stdout).equals(Buffer.from(fromWav.stdout)), q).toBe(true);
      return Buffer.from(viaFfmpeg.stdout);
    });
    expect(outputs[0]!.equals(outputs[1]!)).toBe(false);
  });

  it('Ogg that is not Opus goes to ffmpeg too (convert and info)', () => {
    const r = cli(['convert', file('s.oga'), '--to', 'pcm_48000']);
    expect(r.stderr).toBe('');
    expect(Buffer.from(r.stdout).equals(Buffer.from(ffmpegDecode(file('s.oga'))))).toBe(true);
    const piped = cli(['convert', '-', '--to', 'pcm_48000'], { input: readFileSync(file('s.oga')) });
    expect(Buffer.from(piped.stdout).equals(Buffer.from(r.stdout))).toBe(true);
    const info = JSON.parse(new TextDecoder().decode(cli(['info', file('s.oga')]).stdout));
    expect(info).toMatchObject({ container: 'ogg', codec: 'flac', sampleRate: 48000, channels: 1 });
  });

  it('streams stdin into ffmpeg (flac through a pipe)', () => {
    const r = cli(['convert', '-', '--to', 'pcm_48000'], { input: readFileSync(file('s.flac')) });
    expect(r.stderr).toBe('');
    expect(Buffer.from(r.stdout).equals(Buffer.from(ffmpegDecode(file('s.flac'))))).toBe(true);
  });

  it('info reads mp3 and flac through ffprobe', () => {
    const frames = Number(runText('soxi', ['-s', FIXTURE]).trim());
    const flac = JSON.parse(new TextDecoder().decode(cli(['info', file('s.flac')]).stdout));
    expect(flac).toEqual({ container: 'flac', codec: 'flac', sampleRate: 48000, channels: 1, bitsPerSample: 16, frames, durationS: frames / 48000 });
    const stereo = JSON.parse(new TextDecoder().decode(cli(['info', file('s22.flac')]).stdout));
    expect(stereo).toMatchObject({ sampleRate: 22050, channels: 2 });
    const mp3 = JSON.parse(new TextDecoder().decode(cli(['info', file('s.mp3')]).stdout));
    expect(mp3).toMatchObject({ container: 'mp3', codec: 'mp3', sampleRate: 48000, channels: 1, bitsPerSample: null });
    // mp3 frames are ffprobe's estimate from the container (the encoder's padding included).
    expect(mp3.durationS).toBeCloseTo(frames / 48000, 1);
    const piped = JSON.parse(new TextDecoder().decode(cli(['info', '-'], { input: readFileSync(file('s.flac')) }).stdout));
    expect(piped).toMatchObject({ codec: 'flac', sampleRate: 48000 });
  });

  it('info says ffprobe is needed when it is missing', () => {
    const r = cli(['info', file('s.mp3')], { env: { ...process.env, PATH: '/nonexistent' } });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/needs ffprobe .*\[FFMPEG_NOT_FOUND\]\n$/);
  });
});
