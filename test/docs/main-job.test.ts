/**
 * The README's main job runs as written, through dist/cli.js (the file `npx voicewire` runs in the
 * clone): `voicewire serve` starts (on a free port and a temporary data folder instead of 8080 and
 * ./voicewire-data) and prints its key on stdout; then every command of the section — the client commands
 * and the curl lines — runs against it with that key; then SIGTERM stops it with exit 0. The
 * "Convert audio" commands run too, each output landing in a temporary folder.
 */
import { describe, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { has, needs } from '../helpers/tools.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const cli = join(root, 'dist', 'cli.js');
const built = existsSync(cli);
const readme = readFileSync(join(root, 'README.md'), 'utf8');

/** The sh blocks of the section that starts with `heading`, as command lines (continuations joined, comments dropped). */
function shBlocks(heading: string): string[][] {
  const start = readme.indexOf(heading);
  const section = readme.slice(start, readme.indexOf('\n## ', start + heading.length));
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) =>
    m[1]!
      .replace(/\\\n\s*/g, ' ')
      .split('\n')
      .map((l) => l.replace(/(^|\s)#.*$/, '').trim())
      .filter(Boolean),
  );
}

const voicewireArgs = (line: string) => line.split(/\s+/).slice(2);

describe('the README main job', () => {
  const [serveBlock = [], useBlock = []] = shBlocks('## The main job');

  it('starts the service, then uses it', () => {
    expect(serveBlock.map(voicewireArgs)).toEqual([['serve']]);
    expect(useBlock.filter((l) => l.startsWith('npx voicewire ')).map((l) => voicewireArgs(l)[0])).toEqual(['tts', 'stt', 'voices']);
    expect(useBlock.filter((l) => l.startsWith('curl '))).toHaveLength(2);
  });

  const ready = built && has('pocketsphinx_continuous');
  const name = !built ? 'serve, then every command of the section [SKIPPED: dist/ not built; npm run build]' : needs('pocketsphinx_continuous', 'serve, then every command of the section, then SIGTERM exits 0');
  it.skipIf(!ready)(name, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'voicewire-main-job-'));
    const server = spawn(process.execPath, [cli, ...voicewireArgs(serveBlock[0]!), '--port', '0', '--data', join(dir, 'data')], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      let stdout = '';
      let stderr = '';
      server.stdout.on('data', (d) => (stdout += d));
      server.stderr.on('data', (d) => (stderr += d));
      const port = await new Promise<string>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`serve did not start:\n${stderr}`)), 30_000);
        server.stdout.on('data', () => {
          const m = /listening on http:\/\/127\.0\.0\.1:(\d+)\/api\n/.exec(stdout);
          if (m) {
            clearTimeout(t);
            resolve(m[1]!);
          }
        });
      });
      // The keys are on stdout, before the listening line; the JSON logs on stderr never hold them.
      expect(stdout.split('\n').filter(Boolean).at(-1)).toMatch(/^listening on /);
      const key = /^API key \(x-api-key\): (\S+)$/m.exec(stdout)?.[1];
      expect(stderr).not.toContain(key);
      expect(key).toMatch(/^vw_/);
      const env = { ...process.env, VOICEWIRE_API_KEY: key!, VOICEWIRE_BASE_URL: `http://127.0.0.1:${port}/api` };
      const at = (p: string) => join(dir, p);
      for (const line of useBlock) {
        if (line.startsWith('export ')) continue;
        if (line.startsWith('npx voicewire ')) {
          // Run by the shell, as a reader would type it (quotes and all), with outputs in the temp folder.
          const argv = voicewireArgs(line);
          const out = argv.includes('-o') ? at(argv[argv.indexOf('-o') + 1]!) : undefined;
          const cmd = line.replace(/^npx voicewire/, `"${process.execPath}" "${cli}"`).replace(/ -o (\S+)/, (_, f: string) => ` -o ${at(f)}`);
          const r = spawnSync('bash', ['-c', cmd], { cwd: root, encoding: 'utf8', timeout: 90_000, env });
          expect(r.stderr, line).toBe('');
          expect(r.status, line).toBe(0);
          if (out !== undefined) expect(statSync(out).size).toBeGreaterThan(20_000);
          // "he was not an ill disposed young man": pocketsphinx gets most of it (README "Engines": ~40 % WER).
          if (argv[0] === 'stt') expect(r.stdout.split(/\s+/).filter((w) => ['he', 'was', 'not', 'an', 'ill', 'disposed', 'young', 'man'].includes(w)).length).toBeGreaterThanOrEqual(3);
          if (argv[0] === 'voices') expect(r.stdout.split('\n').filter(Boolean).length).toBeGreaterThanOrEqual(15);
        } else {
          const cmd = line.replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`).replace('-o hello.wav', `-o ${at('hello.wav')}`).replace('@hello.wav', `@${at('hello.wav')}`);
          const r = spawnSync('bash', ['-c', cmd], { cwd: root, encoding: 'utf8', timeout: 90_000, env });
          expect(r.status, line).toBe(0);
          if (cmd.includes('/post/speech/tts')) expect(statSync(at('hello.wav')).size).toBeGreaterThan(20_000);
          else expect(r.stdout).toMatch(/"type":"end_of_stream"/);
        }
      }
      const exited = new Promise<number | null>((resolve) => server.once('exit', (code) => resolve(code)));
      server.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      server.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);
});

describe('the README "Convert audio" commands', () => {
  const commands = (shBlocks('## Convert audio')[0] ?? []).filter((l) => l.startsWith('npx voicewire ')).map(voicewireArgs);

  it('has npx voicewire commands to run', () => {
    expect(commands.map((c) => c[0])).toEqual(expect.arrayContaining(['convert', 'info']));
  });

  it.skipIf(!built)(built ? 'each command runs and writes what it names' : 'each command runs [SKIPPED: dist/ not built; npm run build]', () => {
    const out = mkdtempSync(join(tmpdir(), 'voicewire-convert-'));
    try {
      for (const argv of commands) {
        const o = argv.indexOf('-o');
        if (o >= 0) argv[o + 1] = join(out, argv[o + 1]!);
        const r = spawnSync(process.execPath, [cli, ...argv], { cwd: root, encoding: 'utf8', timeout: 20_000 });
        expect(r.stderr, argv.join(' ')).toBe('');
        expect(r.status, argv.join(' ')).toBe(0);
        if (o >= 0) expect(statSync(argv[o + 1]!).size).toBeGreaterThan(1000);
        if (argv[0] === 'info') expect(JSON.parse(r.stdout)).toMatchObject({ sampleRate: 48000 });
      }
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
