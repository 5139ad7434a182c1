/**
 * The CLI never loses data and is safe with hostile names (issue 10 §2, issue 11 §14): outputs
 * appear only when complete, the input is never its own output, stdout redirected to a file gets
 * a WAV with real sizes, a terminal gets no binary, and an error is always exactly one line.
 */
import { describe, expect, it, beforeAll, afterAll } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync, closeSync, existsSync, linkSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync, writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { has, needs, runText } from '../helpers/tools.js';
import { escapeControl, errorLine } from '../../src/cli/escape.js';
import { VoicewireError } from '../../src/util/errors.js';
import { cli, CLI_NODE_ARGS, root } from './run-cli.js';

const FIXTURE = join(root, 'fixtures/speech/en_24k.wav');
const FRAMES_48K = 111164; // en_24k.wav (55582 frames at 24 kHz) as 48 kHz
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'voicewire-cli-safety-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Files the CLI left in `dir` besides the expected ones (temporary files must never stay). */
const leftovers = (): string[] => readdirSync(dir).filter((f) => f.includes('.voicewire-'));

describe('-o naming the input is refused, the input untouched', () => {
  const raw = new Uint8Array(48000).map((_, i) => (i * 7) & 0xff);

  it.each([
    ['the same path', (p: string) => p],
    ['another spelling of the path', (p: string) => join(dir, '.', 'sub', '..', p.slice(dir.length + 1))],
    ['a symlink to it', (p: string) => {
      const l = `${p}.link`;
      symlinkSync(p, l);
      return l;
    }],
    ['a hard link to it', (p: string) => {
      const l = `${p}.hard`;
      linkSync(p, l);
      return l;
    }],
  ])('%s', (name, outputOf) => {
    const input = join(dir, `in-${name.replace(/\W/g, '')}.raw`);
    writeFileSync(input, raw);
    const r = cli(['convert', input, '--from', 'pcm_24000', '--to', 'pcm_16000', '-o', outputOf(input)]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/the input file .*\[CLI_USAGE\]\n$/);
    expect(new Uint8Array(readFileSync(input))).toEqual(raw);
    expect(leftovers()).toEqual([]);
  });

  it('stdout redirected to the input (>> in.raw would grow forever) is refused too', () => {
    const input = join(dir, 'in-stdout.raw');
    writeFileSync(input, raw);
    const fd = openSync(input, 'a');
    try {
      const r = cli(['convert', input, '--from', 'pcm_24000', '--to', 'pcm_16000'], { stdio: ['ignore', fd, 'pipe'] });
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/stdout is redirected to the input file .*\[CLI_USAGE\]/);
    } finally {
      closeSync(fd);
    }
    expect(new Uint8Array(readFileSync(input))).toEqual(raw);
  });

  it('a WAV converted onto itself keeps the input (it was lost before)', () => {
    const input = join(dir, 'self.wav');
    writeFileSync(input, readFileSync(FIXTURE));
    const r = cli(['convert', input, '--to', 'ulaw_8000', '-o', input]);
    expect(r.status).toBe(1);
    expect(readFileSync(input).equals(readFileSync(FIXTURE))).toBe(true);
  });
});

describe('an output appears only when complete', () => {
  it('a failed conversion leaves an existing output as it was, and no partial or temporary file', () => {
    const out = join(dir, 'kept.wav');
    writeFileSync(out, 'precious');
    const truncated = readFileSync(FIXTURE).subarray(0, 40000);
    // pcm_16000 streams: the decoded part is written before the truncation is found at the end.
    const r = cli(['convert', '-', '--to', 'pcm_16000', '-o', out], { input: truncated });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/\[WAV_SIZE_MISMATCH\]/);
    expect(readFileSync(out, 'utf8')).toBe('precious');
    expect(leftovers()).toEqual([]);
    const fresh = join(dir, 'fresh.wav');
    expect(cli(['convert', '-', '--to', 'pcm_16000', '-o', fresh], { input: truncated }).status).toBe(1);
    expect(existsSync(fresh)).toBe(false);
  });

  it('a replaced output keeps its permissions, and a symlinked output keeps its link', () => {
    const out = join(dir, 'private.raw');
    writeFileSync(out, 'old');
    chmodSync(out, 0o600);
    expect(cli(['convert', FIXTURE, '--to', 'pcm_24000', '-o', out]).status).toBe(0);
    expect(statSync(out).mode & 0o777).toBe(0o600);
    expect(statSync(out).size).toBe(55582 * 2);
    const target = join(dir, 'target.raw');
    const link = join(dir, 'link.raw');
    writeFileSync(target, 'old');
    symlinkSync(target, link);
    expect(cli(['convert', FIXTURE, '--to', 'pcm_24000', '-o', link]).status).toBe(0);
    expect(statSync(target).size).toBe(55582 * 2);
    expect(readFileSync(link).equals(readFileSync(target))).toBe(true);
    expect(leftovers()).toEqual([]);
  });
});

describe('Ctrl-C during a conversion', () => {
  it('removes the temporary file and leaves no output', async () => {
    const out = join(dir, 'interrupted.raw');
    const child = spawn(process.execPath, [...CLI_NODE_ARGS, 'convert', '-', '--from', 'pcm_16000', '--to', 'pcm_8000', '-o', out], { cwd: root, stdio: ['pipe', 'ignore', 'pipe'] });
    // Endless input, written only while the CLI keeps up.
    const block = new Uint8Array(32000);
    let stop = false;
    const feed = (): void => {
      while (!stop && child.stdin.write(block));
      if (!stop) child.stdin.once('drain', feed);
    };
    child.stdin.on('error', () => {});
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    // Listened for from the start: a child that ends early must fail the test, not hang it (issue 25).
    // 'exit', not 'close': a helper process of the child (tsx's esbuild service) may hold stderr open a while.
    let ended = false;
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => ((ended = true), resolve(code))));
    feed();
    // Generous bounds: they catch a hang, and the CLI runs through tsx, whose start under two CPU hogs
    // and a parallel suite took most of the old 60 s (issue 25, run 6: 19 tests of this file in 103 s).
    const deadline = Date.now() + 90_000;
    while (leftovers().length === 0 && !ended && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(ended, `the CLI ended before Ctrl-C: ${stderr}`).toBe(false);
    expect(leftovers()).toHaveLength(1);
    child.kill('SIGINT');
    const code = await exited;
    stop = true;
    expect(code, stderr).toBe(130);
    expect(leftovers()).toEqual([]);
    expect(existsSync(out)).toBe(false);
  }, 180_000);
});

describe('--to wav with stdout redirected to a file gets real sizes', () => {
  function toFile(flags: 'w' | 'a', prefix: string): Buffer {
    const out = join(dir, `stdout-${flags}.wav`);
    rmSync(out, { force: true });
    const fd = openSync(out, flags);
    try {
      if (prefix !== '') writeSync(fd, prefix); // as `{ echo …; voicewire …; } > out` would
      const r = cli(['convert', FIXTURE, '--to', 'wav'], { stdio: ['ignore', fd, 'pipe'] });
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
    } finally {
      closeSync(fd);
    }
    return readFileSync(out);
  }

  it.skipIf(!has(['soxi', 'ffprobe']))(needs(['soxi', 'ffprobe'], '`> out.wav`: soxi and ffprobe read the true duration'), () => {
    const bytes = toFile('w', '');
    expect(bytes.length).toBe(44 + FRAMES_48K * 2);
    expect(bytes.readUInt32LE(4)).toBe(bytes.length - 8);
    expect(bytes.readUInt32LE(40)).toBe(FRAMES_48K * 2);
    const out = join(dir, 'stdout-w.wav');
    expect(Number(runText('soxi', ['-s', out]).trim())).toBe(FRAMES_48K);
    const probed = runText('ffprobe', ['-v', 'error', '-show_entries', 'stream=duration_ts', '-of', 'csv=p=0', out]).trim();
    expect(Number(probed)).toBe(FRAMES_48K);
  });

  it('after bytes already in the file, the sizes are patched where the WAV starts', () => {
    const bytes = toFile('w', 'hi\n');
    expect(bytes.subarray(0, 3).toString()).toBe('hi\n');
    expect(bytes.readUInt32LE(3 + 4)).toBe(bytes.length - 3 - 8);
    expect(bytes.readUInt32LE(3 + 40)).toBe(FRAMES_48K * 2);
  });

  it('`>> out.wav` (O_APPEND, where a positional write would append) keeps the streaming sizes', () => {
    const bytes = toFile('a', '');
    expect(bytes.length).toBe(44 + FRAMES_48K * 2);
    expect(bytes.readUInt32LE(4)).toBe(0xffffffff);
  });
});

describe.skipIf(!has('script'))(needs('script', 'binary output to a terminal'), () => {
  /** Runs the CLI with stdout on a pseudo-terminal (util-linux `script`); returns its exit code and what the terminal showed. */
  function onTerminal(args: string[]): { status: number | null; shown: string } {
    const quote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;
    const command = [process.execPath, ...CLI_NODE_ARGS, ...args].map(quote).join(' ');
    const r = spawnSync('script', ['-qec', `${command} 2>&1`, '/dev/null'], { cwd: root, encoding: 'latin1', timeout: 30_000 });
    return { status: r.status, shown: r.stdout };
  }

  it('is refused unless -o - asks for it', () => {
    const refused = onTerminal(['convert', FIXTURE, '--to', 'pcm_8000']);
    expect(refused.status).toBe(1);
    expect(refused.shown).toMatch(/refusing to write binary audio to a terminal.*\[CLI_USAGE\]/);
    const forced = onTerminal(['convert', FIXTURE, '--to', 'ulaw_8000', '-o', '-']);
    expect(forced.status).toBe(0);
    expect(forced.shown.length).toBeGreaterThan(10000);
  });
});

describe('error lines cannot be forged or drive the terminal', () => {
  it('escapeControl escapes C0, DEL, C1, line separators and bidi controls, JSON-style', () => {
    expect(escapeControl('a\nb\r\tc')).toBe('a\\nb\\r\\tc');
    expect(escapeControl('\u001b[31mred\u0007\u0000\u007f')).toBe('\\x1b[31mred\\x07\\x00\\x7f');
    expect(escapeControl('\u009b31m\u0085')).toBe('\\x9b31m\\x85');
    expect(escapeControl('x\u2028y\u202ez')).toBe('x\\u2028y\\u202ez');
    expect(escapeControl('plain café \\n 日本')).toBe('plain café \\n 日本');
    expect(errorLine(new VoicewireError('IO_ERROR', 'bad\nname'))).toBe('voicewire: bad\\nname [IO_ERROR]\n');
  });

  it('a file name with a newline and an ANSI escape yields exactly one stderr line, escaped', () => {
    const name = join(dir, 'x\nvoicewire: all good [OK]\u001b[2J');
    const r = cli(['convert', name, '--to', 'wav', '-o', join(dir, 'never.wav')]);
    expect(r.status).toBe(1);
    expect(r.stderr.split('\n')).toEqual([expect.stringContaining('[IO_ERROR]'), '']);
    expect(r.stderr).toContain('x\\nvoicewire: all good [OK]\\x1b[2J');
    expect(r.stderr).not.toContain('\u001b');
  });

  it.skipIf(!has('ffmpeg'))(needs('ffmpeg', 'ffmpeg\'s complaint about such a name is one line too'), () => {
    const name = join(dir, 'junk\n\u001b[31mred.bin');
    writeFileSync(name, new Uint8Array(2000).fill(0x41));
    const r = cli(['convert', name, '--to', 'wav', '-o', join(dir, 'never.wav')]);
    expect(r.status).toBe(1);
    expect(r.stderr.split('\n')).toEqual([expect.stringContaining('[FFMPEG_FAILED]'), '']);
    expect(r.stderr).not.toContain('\u001b');
  });

  it('an unknown option or format named with control characters is one line', () => {
    for (const args of [['convert', FIXTURE, '--to', 'wav\n\u001b[0m'], ['convert', FIXTURE, '--x\ny', '1']]) {
      const r = cli(args);
      expect(r.status).toBe(1);
      expect(r.stderr.split('\n')).toHaveLength(2);
      expect(r.stderr).not.toContain('\u001b');
    }
  });
});

describe('format names and --bitrate', () => {
  it('format names in any case', () => {
    const r = cli(['convert', FIXTURE, '--to', 'PCM_16000']);
    expect(r.stderr).toBe('');
    expect(r.stdout.length).toBe(2 * 37055);
  });

  it('--bitrate sets the Opus bitrate', () => {
    const size = (bps: string): number => {
      const out = join(dir, `b${bps}.opus`);
      const r = cli(['convert', FIXTURE, '--to', 'opus', '--bitrate', bps, '-o', out]);
      expect(r.stderr).toBe('');
      return statSync(out).size;
    };
    const low = size('12000');
    const high = size('96k');
    // 2.3 s of audio: about 3.5 kB at 12 kbit/s, 28 kB at 96 kbit/s (plus headers and pages).
    expect(low).toBeLessThan(6000);
    expect(high).toBeGreaterThan(4 * low);
  });
});
