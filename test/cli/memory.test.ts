/**
 * Bounded memory on every path (issue 10 §2, issue 11 §9): long inputs generated on the fly and
 * piped into the CLI, its peak RSS recorded at exit (test/cli/maxrss-preload.mjs). The bound is
 * on growth over the same process converting a second of audio, so the tsx loader's own memory
 * does not count; before streaming, these inputs cost hundreds of MB.
 */
import { describe, expect, it, beforeAll } from 'vitest';
import { mkdtempSync, rmSync, statSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { has, needs } from '../helpers/tools.js';
import { cliPiped } from './run-cli.js';
import { seededBytes } from '../helpers/seeded.js';

/** Most a long conversion may add to peak RSS over a one-second one, bytes. */
const GROWTH_LIMIT = 50 << 20;

/**
 * A node child writing `seconds` of a 440 Hz tone at `rate` Hz, s16, after a header with unknown
 * sizes: `wav` (sizes 0xFFFFFFFF, as ffmpeg writes to a pipe) or `au` (Sun .snd, big-endian,
 * data size 0xFFFFFFFF: a container only ffmpeg reads here).
 */
const GENERATOR = `
const [kind, seconds, rate] = [process.argv[1], Number(process.argv[2]), Number(process.argv[3])];
const block = Buffer.alloc(rate * 2);
for (let i = 0; i < rate; i++) {
  const v = Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate));
  if (kind === 'au') block.writeInt16BE(v, 2 * i); else block.writeInt16LE(v, 2 * i);
}
let header;
if (kind === 'au') {
  header = Buffer.alloc(24);
  header.write('.snd', 0, 'latin1');
  header.writeUInt32BE(24, 4); header.writeUInt32BE(0xffffffff, 8); header.writeUInt32BE(3, 12);
  header.writeUInt32BE(rate, 16); header.writeUInt32BE(1, 20);
} else {
  header = Buffer.alloc(44);
  header.write('RIFF', 0, 'latin1'); header.writeUInt32LE(0xffffffff, 4); header.write('WAVEfmt ', 8, 'latin1');
  header.writeUInt32LE(16, 16); header.writeUInt16LE(1, 20); header.writeUInt16LE(1, 22);
  header.writeUInt32LE(rate, 24); header.writeUInt32LE(rate * 2, 28); header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34); header.write('data', 36, 'latin1'); header.writeUInt32LE(0xffffffff, 40);
}
process.stdout.on('error', () => process.exit(0));
let left = seconds;
process.stdout.write(header);
(function more() {
  while (left > 0) { left--; if (!process.stdout.write(block)) return void process.stdout.once('drain', more); }
  process.stdout.end();
})();
`;

const gen = (kind: 'wav' | 'au', seconds: number, rate: number): string[] => ['-e', GENERATOR, kind, String(seconds), String(rate)];

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'voicewire-cli-mem-'));
  return () => rmSync(dir, { recursive: true, force: true });
});

async function baseline(args: string[], kind: 'wav' | 'au'): Promise<number> {
  const r = await cliPiped(args, gen(kind, 1, 8000), join(dir, 'rss-base'));
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return r.maxRss;
}

describe('voicewire convert holds bounded memory for any input length', () => {
  it('--to wav -o FILE streams (header, data, sizes patched at the end): 20 min of 8 kHz through a pipe', async () => {
    const out = join(dir, 'long.wav');
    const args = ['convert', '-', '--to', 'wav', '--quality', 'fast', '-o', out];
    const base = await baseline(args, 'wav');
    const r = await cliPiped(args, gen('wav', 20 * 60, 8000), join(dir, 'rss'));
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const frames = 20 * 60 * 48000;
    expect(statSync(out).size).toBe(44 + 2 * frames);
    const head = readFileSync(out).subarray(0, 44);
    expect(head.readUInt32LE(4)).toBe(36 + 2 * frames);
    expect(head.readUInt32LE(40)).toBe(2 * frames);
    expect(r.maxRss - base, `peak RSS ${(r.maxRss / 2 ** 20).toFixed(0)} MB vs ${(base / 2 ** 20).toFixed(0)} MB for 1 s`).toBeLessThan(GROWTH_LIMIT);
    rmSync(out);
  });

  describe.skipIf(!has('ffmpeg'))(needs('ffmpeg', 'ffmpeg input'), () => {
    it('a 2-hour input only ffmpeg reads is streamed into ffmpeg and back (8 kHz .au through a pipe)', async () => {
      const out = join(dir, 'long.raw');
      const args = ['convert', '-', '--to', 'pcm_8000', '-o', out];
      const base = await baseline(args, 'au');
      const r = await cliPiped(args, gen('au', 2 * 3600, 8000), join(dir, 'rss'));
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      expect(statSync(out).size).toBe(2 * 3600 * 8000 * 2);
      expect(r.maxRss - base, `peak RSS ${(r.maxRss / 2 ** 20).toFixed(0)} MB vs ${(base / 2 ** 20).toFixed(0)} MB for 1 s`).toBeLessThan(GROWTH_LIMIT);
      rmSync(out);
    }, 40_000);

    // Seeded bytes, never /dev/urandom: whether ffmpeg's probe takes random bytes for a stream it
    // can decode depends on the bytes drawn, and an endless input it decodes never ends (issue 25).
    it.each([1, 2, 3, 4, 5])('seeded random bytes (seed %i): ffmpeg refuses them or decodes them, and the conversion ends in bounded memory', async (seed) => {
      const input = join(dir, `random-${seed}.bin`);
      writeFileSync(input, seededBytes(1 << 20, seed));
      const r = await cliPiped(['convert', input, '--to', 'pcm_16000', '-o', join(dir, 'random.raw')], null, join(dir, 'rss'));
      if (r.status !== 0) {
        expect(r.status).toBe(1);
        expect(r.stderr).toMatch(/^voicewire: ffmpeg .*\[FFMPEG_FAILED\]\n$/);
      }
      expect(r.maxRss).toBeLessThan(200 << 20);
      expect(r.ms).toBeLessThan(40_000);
      rmSync(input);
    });

    it('--max-seconds stops an endless input only ffmpeg reads (an .au stream that never ends)', async () => {
      const out = join(dir, 'endless.raw');
      const r = await cliPiped(['convert', '-', '--to', 'pcm_8000', '--max-seconds', '3', '-o', out], gen('au', Infinity, 8000), join(dir, 'rss'));
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      expect(statSync(out).size).toBe(3 * 8000 * 2);
      expect(r.maxRss).toBeLessThan(200 << 20);
      rmSync(out);
    });
  });

  it('--max-seconds stops an endless WAV stream and finishes the file with exact sizes', async () => {
    const out = join(dir, 'endless.wav');
    const r = await cliPiped(['convert', '-', '--to', 'wav', '--quality', 'fast', '--max-seconds', '2.5', '-o', out], gen('wav', Infinity, 8000), join(dir, 'rss'));
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const frames = 2.5 * 48000;
    expect(statSync(out).size).toBe(44 + 2 * frames);
    expect(readFileSync(out).subarray(0, 44).readUInt32LE(40)).toBe(2 * frames);
    expect(r.maxRss).toBeLessThan(200 << 20);
    rmSync(out);
  });

  describe.skipIf(!has('ffprobe'))(needs('ffprobe', 'info on endless input'), () => {
    it('info /dev/zero ends quickly in bounded memory', async () => {
      const r = await cliPiped(['info', '/dev/zero'], null, join(dir, 'rss'));
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/\[FFMPEG_FAILED\]\n$/);
      expect(r.maxRss).toBeLessThan(200 << 20);
      expect(r.ms).toBeLessThan(15_000);
    });
  });
});
