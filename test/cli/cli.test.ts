/**
 * The `voicewire` CLI, run as a process from source (tsx), checked with sox, ffmpeg and opus-tools.
 */
import { describe, expect, it, beforeAll } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { has, needs, run, runText } from '../helpers/tools.js';
import { decodeMulaw } from '../../src/audio/g711.js';

const root = new URL('../..', import.meta.url).pathname;
const FIXTURE = join(root, 'fixtures/speech/en_48k.wav');
let dir: string;

function cli(args: string[], input?: Uint8Array, env: NodeJS.ProcessEnv = process.env) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'src/cli/main.ts'), ...args], {
    cwd: root,
    input,
    env,
    maxBuffer: 1 << 26,
  });
  return { status: r.status, stdout: new Uint8Array(r.stdout), stderr: r.stderr.toString() };
}

/** SNR in dB of `test` against `ref` (same length). */
function snr(ref: ArrayLike<number>, test: ArrayLike<number>): number {
  let s = 0;
  let n = 0;
  for (let i = 0; i < ref.length; i++) {
    s += ref[i]! * ref[i]!;
    n += (ref[i]! - test[i]!) ** 2;
  }
  return 10 * Math.log10(s / n);
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'voicewire-cli-'));
});

describe.skipIf(!has('sox'))(needs('sox', 'voicewire info / convert'), () => {
  const frames = Number(runText('soxi', ['-s', FIXTURE]).trim());

  it('info prints the header facts soxi reports', () => {
    const r = cli(['info', FIXTURE]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const info = JSON.parse(new TextDecoder().decode(r.stdout));
    expect(info).toMatchObject({ container: 'riff', codec: 'pcm_s16le', channels: 1, bitsPerSample: 16, frames });
    expect(info.sampleRate).toBe(Number(runText('soxi', ['-r', FIXTURE]).trim()));
    expect(info.durationS).toBeCloseTo(frames / 48000, 9);
  });

  it('converts to ulaw_8000: exact length, and close to sox doing the same job', () => {
    const r = cli(['convert', FIXTURE, '--to', 'ulaw_8000']);
    expect(r.status).toBe(0);
    expect(r.stdout.length).toBe(Math.round((frames * 8000) / 48000));
    // sox resamples with its own filter and rounds G.711 differently: compare decoded audio by SNR.
    const soxCodes = run('sox', [FIXTURE, '-r', '8000', '-e', 'u-law', '-t', 'raw', '-']);
    const ours = decodeMulaw(r.stdout);
    const theirs = decodeMulaw(soxCodes.subarray(0, ours.length));
    expect(snr(theirs, ours)).toBeGreaterThan(25);
  });

  it('converts to a WAV file with exact sizes that sox reads back at 48 kHz', () => {
    const out = join(dir, 'out.wav');
    const r = cli(['convert', join(root, 'fixtures/speech/en_24k.wav'), '--to', 'wav', '-o', out]);
    expect(r.status).toBe(0);
    expect(runText('soxi', ['-r', out]).trim()).toBe('48000');
    const inFrames = Number(runText('soxi', ['-s', join(root, 'fixtures/speech/en_24k.wav')]).trim());
    expect(Number(runText('soxi', ['-s', out]).trim())).toBe(inFrames * 2);
    const bytes = readFileSync(out);
    expect(bytes.readUInt32LE(4)).toBe(bytes.length - 8); // RIFF size is exact, not 0xFFFFFFFF
  });

  it('streams stdin to stdout for raw input named with --from', () => {
    const raw = run('sox', [join(root, 'fixtures/speech/en_24k.wav'), '-t', 's16', '-']);
    const r = cli(['convert', '-', '--from', 'pcm_24000', '--to', 'pcm_16000'], raw);
    expect(r.status).toBe(0);
    expect(r.stdout.length).toBe(2 * Math.round(((raw.length / 2) * 16000) / 24000));
  });
});

describe.skipIf(!has(['opusinfo', 'opusdec', 'sox']))(needs(['opusinfo', 'opusdec', 'sox'], 'voicewire convert --to opus'), () => {
  it('writes Ogg Opus that opusinfo accepts and opusdec decodes to the input length', () => {
    const out = join(dir, 'out.opus');
    expect(cli(['convert', FIXTURE, '--to', 'opus', '-o', out]).status).toBe(0);
    const report = runText('opusinfo', [out]);
    expect(report).not.toMatch(/WARNING|ERROR/);
    const decoded = run('opusdec', ['--quiet', '--rate', '48000', out, '-']);
    const inFrames = Number(runText('soxi', ['-s', FIXTURE]).trim());
    // opusdec writes raw s16le when its output is stdout.
    expect(decoded.length / 2).toBe(inFrames);
  });
});

describe.skipIf(!has(['ffmpeg', 'sox']))(needs(['ffmpeg', 'sox'], 'voicewire convert of containers the API does not name'), () => {
  it('reads mp3 through ffmpeg', () => {
    const mp3 = join(dir, 'in.mp3');
    run('ffmpeg', ['-loglevel', 'error', '-y', '-i', FIXTURE, mp3]);
    const r = cli(['convert', mp3, '--to', 'pcm_16000']);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout.length / 2 / 16000).toBeCloseTo(Number(runText('soxi', ['-D', FIXTURE]).trim()), 1);
  });

  it('garbage input fails with one line naming ffmpeg\'s complaint', () => {
    const junk = join(dir, 'junk.bin');
    writeFileSync(junk, new Uint8Array(1000).fill(0x41));
    const r = cli(['convert', junk, '--to', 'wav']);
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/\[FFMPEG_FAILED\]/);
  });
});

describe('voicewire errors', () => {
  it('bad arguments and bad input: one line on stderr, exit 1, no stack trace', () => {
    writeFileSync(join(dir, 'empty.bin'), new Uint8Array(0));
    for (const [args, code] of [
      [['convert', FIXTURE, '--to', 'mp3'], 'FORMAT_UNKNOWN'],
      [['convert', FIXTURE], 'CLI_USAGE'],
      [['convert', join(dir, 'missing.wav'), '--to', 'wav'], 'IO_ERROR'],
      [['info', join(dir, 'empty.bin')], 'AUDIO_FORMAT_UNDETECTED'],
    ] as const) {
      const r = cli([...args]);
      expect(r.status, args.join(' ')).toBe(1);
      expect(r.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
      expect(r.stderr).toContain(`[${code}]`);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
  });

  it('an output that cannot be written is one IO_ERROR line; a failed input leaves no file behind', () => {
    for (const target of [dir, join(dir, 'no', 'such', 'dir.raw')]) {
      const r = cli(['convert', FIXTURE, '--to', 'pcm', '-o', target]);
      expect(r.status, target).toBe(1);
      expect(r.stderr.trim().split('\n'), target).toHaveLength(1);
      expect(r.stderr).toContain('[IO_ERROR]');
    }
    const out = join(dir, 'never.raw');
    expect(cli(['convert', join(dir, 'missing.wav'), '--to', 'pcm', '-o', out]).status).toBe(1);
    expect(existsSync(out)).toBe(false);
  });

  it('a truncated WAV is reported, not converted silently short', () => {
    const bytes = readFileSync(FIXTURE).subarray(0, 5000);
    const r = cli(['convert', '-', '--to', 'pcm_16000'], bytes);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/\[WAV_SIZE_MISMATCH\]/);
  });

  it('without ffmpeg on the PATH, a non-WAV/Ogg input says ffmpeg is needed', () => {
    const mp3ish = new Uint8Array(2000).fill(0x55);
    const r = cli(['convert', '-', '--to', 'wav'], mp3ish, { ...process.env, PATH: '/nonexistent' });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/\[FFMPEG_NOT_FOUND\]/);
  });
});
