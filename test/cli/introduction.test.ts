/**
 * The CLI introduces itself (issue 23): `--help` and `help` list every command, `serve` first;
 * `serve` says what it started (page, API, engines and voices, data) before its `listening on`
 * line; a port in use and a data folder that cannot be made are said in words, at once; `tts`
 * says what it wrote.
 */
import { describe, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI_NODE_ARGS, root } from './run-cli.js';
import { startServer } from '../server/harness.js';

const run = (args: string[], env: NodeJS.ProcessEnv = process.env) =>
  spawnSync(process.execPath, [...CLI_NODE_ARGS, ...args], { cwd: root, encoding: 'utf8', timeout: 60_000, env });

describe('voicewire introduces itself', () => {
  it('--help and help list every command, one line each, serve first', () => {
    for (const args of [['--help'], ['help'], ['-h']]) {
      const r = run(args);
      expect(r.status, r.stderr).toBe(0);
      const listed = [...r.stdout.matchAll(/^ {2}(\w+) {2,}\S/gm)].map((m) => m[1]);
      expect(listed).toEqual(['serve', 'keys', 'pronunciations', 'tts', 'stt', 'voices', 'credits', 'convert', 'info', 'help']);
    }
  });

  it('serve says what it started, on stdout before the listening line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'voicewire-intro-'));
    const child = spawn(process.execPath, [...CLI_NODE_ARGS, 'serve', '--port', '0', '--data', join(dir, 'data'), '--tts', 'tone', '--stt', 'tone'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      let out = '';
      await new Promise<void>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`no listening line: ${out}`)), 60_000);
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          if (/^listening on /m.test(out)) (clearTimeout(t), resolve());
        });
      });
      const port = /listening on http:\/\/127\.0\.0\.1:(\d+)\/api/.exec(out)![1];
      expect(out).toContain(`page:    http://127.0.0.1:${port}/\n`);
      expect(out).toContain(`API:     http://127.0.0.1:${port}/api`);
      expect(out).toMatch(/TTS: {5}tone \(voices: en \d+, fr \d+, de \d+, es \d+, pt \d+\)/);
      expect(out).toContain('STT:     tone');
      expect(out).toContain(`data:    ${join(dir, 'data')} (SQLite)`);
      expect(out.trimEnd().split('\n').at(-1)).toMatch(/^listening on /);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);

  it('a port in use is said in words (ADDRESS_IN_USE), not as an internal error', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as { port: number }).port;
    try {
      const r = run(['serve', '--port', String(port), '--store', 'memory:', '--tts', 'tone', '--stt', 'tone']);
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(new RegExp(`127\\.0\\.0\\.1:${port} is already in use .*--port \\[ADDRESS_IN_USE\\]\\n$`));
    } finally {
      blocker.close();
    }
  }, 90_000);

  it('a data folder that cannot be made is refused at once, naming it (it hung under /proc)', () => {
    const r = run(['serve', '--port', '0', '--data', '/proc/voicewire-cannot-be-here', '--tts', 'tone', '--stt', 'tone']);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/cannot create the data folder \/proc\/voicewire-cannot-be-here: .*\[STORE_UNAVAILABLE\]/);
  }, 90_000);

  it('tts says what it wrote: the file, the duration and the format', async () => {
    const h = await startServer();
    const dir = mkdtempSync(join(tmpdir(), 'voicewire-intro-tts-'));
    try {
      const out = join(dir, 'hi.wav');
      const r = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
        const c = spawn(process.execPath, [...CLI_NODE_ARGS, 'tts', 'hello there', '-o', out, '--base-url', h.base, '--api-key', h.apiKey], { cwd: root });
        let stdout = '';
        let stderr = '';
        c.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
        c.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        c.on('exit', (status) => resolve({ status, stdout, stderr }));
      });
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^wrote ${out.replace(/[/.]/g, '\\$&')}: \\d+\\.\\d\\d s of wav, \\d+ bytes, 2 words, in \\d+\\.\\d\\d s\\n$`));
    } finally {
      await h.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
