/**
 * Issue 23: installed from the tarball, `serve` speaks. The packed package is installed in an empty
 * folder without the WebAssembly espeak-ng (an optional peer a plain `npm install voicewire` does
 * not bring); `voicewire serve` there picks the system library (Debian `libespeak-ng1`), says so,
 * and a TTS request gets speech — judged against the `espeak-ng` command's audio of the same
 * text and voice, not against a stored result. Without any espeak-ng, serve refuses to start and
 * names both installs, unless `--tts tone` is asked for. Then the README's main job runs there.
 */
import { correlation, envelope } from '../helpers/envelope.js';
import { describe, expect, it } from 'vitest';
import { execFile, execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { has, needs } from '../helpers/tools.js';
import { installPackedTarball, root } from '../helpers/tarball.js';

const built = existsSync(join(root, 'dist', 'cli.js'));
const ready = built && has('espeak-ng');
const name = (t: string) => (!built ? `${t} [SKIPPED: dist/ not built; npm run build]` : needs('espeak-ng', t));

interface Served {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  port: number;
}

function serve(cli: string, cwd: string, args: string[], env: Record<string, string> = {}): Promise<Served> {
  const child = spawn(process.execPath, [cli, 'serve', '--port', '0', ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`serve did not start:\n${out}\n${err}`)), 60_000);
    child.on('exit', (code) => {
      clearTimeout(t);
      reject(Object.assign(new Error(`serve exited ${code}`), { code, stdout: out, stderr: err }));
    });
    child.stdout!.on('data', () => {
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)\/api\n/.exec(out);
      if (m) {
        clearTimeout(t);
        resolve({ child, stdout: () => out, stderr: () => err, port: Number(m[1]) });
      }
    });
  });
}

/** SIGTERM, then its exit code; a server still running after 60 s is killed and named with its output (a hang shows its cause). */
async function stop(s: Served): Promise<number | null> {
  if (s.child.exitCode !== null) return s.child.exitCode;
  const exited = new Promise<number | null>((r) => s.child.once('exit', (code) => r(code)));
  s.child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      s.child.kill('SIGKILL');
      reject(new Error(`serve did not exit within 60 s of SIGTERM:\n${s.stdout()}\n${s.stderr().slice(-3000)}`));
    }, 60_000);
  });
  try {
    return await Promise.race([exited, hung]);
  } finally {
    clearTimeout(timer);
  }
}

/** fetch, bounded: a server that never answers fails the test with its output instead of hanging it. */
async function fetchFrom(s: Served, url: string, init: RequestInit = {}): Promise<Response> {
  try {
    return await fetch(url, { ...init, signal: AbortSignal.timeout(60_000) });
  } catch (err) {
    throw new Error(`${String(err)}: ${url}; server said:\n${s.stderr().slice(-3000)}`);
  }
}

/** The samples of a 16-bit mono WAV (its `data` chunk) and its rate. */
function wavSamples(wav: Buffer): { pcm: Int16Array; rate: number } {
  const rate = wav.readUInt32LE(24);
  let o = 12;
  while (o + 8 <= wav.length && wav.toString('ascii', o, o + 4) !== 'data') o += 8 + wav.readUInt32LE(o + 4);
  const start = o + 8;
  // A streamed WAV may say 0 or 0xffffffff for the data size: everything after the header.
  const bytes = Math.min(wav.length - start, wav.readUInt32LE(o + 4) || Infinity) & ~1;
  const copy = Buffer.from(wav.subarray(start, start + bytes));
  return { pcm: new Int16Array(copy.buffer, copy.byteOffset, bytes / 2), rate };
}

describe.skipIf(!ready)('the packed tarball, installed without the WebAssembly espeak-ng', () => {
  it(name('serve speaks with the system espeak-ng (the espeak-ng command is the oracle); without one it refuses, naming both installs; --tts tone starts; the README main job runs'), { timeout: 480_000 }, async () => {
    const pkg = installPackedTarball();
    let served: Served | undefined;
    try {
      // The optional peer is not installed there.
      expect(() => createRequire(join(pkg.installed, 'dist', 'cli.js')).resolve('@echogarden/espeak-ng-emscripten')).toThrow();

      served = await serve(pkg.cli, pkg.app, ['--data', join(pkg.app, 'voicewire-data')]);
      expect(served.stdout()).toMatch(/TTS: +espeak-system \(voices: en \d+, fr \d+, de \d+, es \d+, pt \d+\)/);
      const apiKey = /API key \(x-api-key\): (vw_\S+)/.exec(served.stdout())![1]!;
      const base = `http://127.0.0.1:${served.port}/api`;

      // No tone voice is offered.
      const voices = (await (await fetchFrom(served, `${base}/voices/`, { headers: { 'x-api-key': apiKey } })).json()) as { uid: string }[];
      expect(voices.map((v) => v.uid).filter((u) => u.startsWith('tone-'))).toEqual([]);

      // One sentence (ending with a space: spoken in one library call, as the command speaks it).
      const text = 'We are going to the park with our friends this afternoon. ';
      const res = await fetchFrom(served, `${base}/post/speech/tts`, { method: 'POST', headers: { 'x-api-key': apiKey, 'content-type': 'application/json' }, body: JSON.stringify({ text, voice_id: 'espeak-en-ava', output_format: 'wav', only_audio: true }) });
      expect(res.status).toBe(200);
      const ours = wavSamples(Buffer.from(await res.arrayBuffer()));
      expect(ours.rate).toBe(48000);
      // Ava: en-us, variant f2, 170 wpm, pitch 55 (src/engines/espeak-voices.ts).
      const cli = wavSamples(execFileSync('espeak-ng', ['-v', 'en-us+f2', '-s', '170', '-p', '55', '--stdout', text]));
      const [a, b] = [envelope(ours.pcm, ours.rate), envelope(cli.pcm, cli.rate)];
      expect(Math.abs(a.length - b.length) / b.length).toBeLessThan(0.1);
      expect(correlation(a, b)).toBeGreaterThan(0.85);

      // The README's main job, there: tts, stt, voices (and the curl TTS line above).
      const env = { ...process.env, VOICEWIRE_API_KEY: apiKey };
      const baseUrl = ['--base-url', base];
      const run = (args: string[]) => spawnSync(process.execPath, [pkg.cli, ...args, ...baseUrl], { cwd: pkg.app, encoding: 'utf8', timeout: 60_000, env });
      const tts = run(['tts', 'Bonjour à tous', '-o', 'b.wav', '--language', 'fr']);
      expect(tts.status, tts.stderr).toBe(0);
      expect(statSync(join(pkg.app, 'b.wav')).size).toBeGreaterThan(48000);
      const list = run(['voices']);
      expect(list.status, list.stderr).toBe(0);
      expect(list.stdout).toMatch(/espeak-fr-camille|Camille/);
      expect(list.stdout).not.toMatch(/tone-/);
      // `stt` of the LibriVox clip at the path the README gives an installed copy (it ships in the
      // package); pocketsphinx takes over a minute on a busy machine, hence its own bound.
      const clip = 'node_modules/voicewire/fixtures/speech/librivox-0880.wav';
      // Not spawnSync: the test must keep reading the server's output meanwhile (its logs of a
      // decoding fill a pipe, and a server blocked on it never answers).
      const heard = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) =>
        execFile(process.execPath, [pkg.cli, 'stt', clip, ...baseUrl], { cwd: pkg.app, encoding: 'utf8', timeout: 150_000, env }, (err, stdout, stderr) =>
          resolve({ status: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr }),
        ),
      );
      expect(heard.status, heard.stderr).toBe(0);
      expect(heard.stdout).toMatch(/young man/); // the reading: "he was not an ill disposed young man"
      expect(await stop(served)).toBe(0);
      served = undefined;

      // No espeak-ng at all (the system library hidden): a refusal naming both installs, nothing started.
      const none = { VOICEWIRE_ESPEAK_LIBRARY: '/nonexistent/libespeak-ng.so.1' };
      const refused = await serve(pkg.cli, pkg.app, ['--store', 'memory:'], none).then(
        (s) => {
          served = s;
          return undefined;
        },
        (e: { code?: number; stderr?: string; stdout?: string }) => e,
      );
      expect(refused?.code).toBe(1);
      expect(refused?.stderr).toContain('npm install @echogarden/espeak-ng-emscripten');
      expect(refused?.stderr).toContain('apt-get install libespeak-ng1');
      expect(refused?.stderr).toContain('--tts tone');
      expect(refused?.stdout).not.toMatch(/API key/);
      // Asked for, tones start.
      served = await serve(pkg.cli, pkg.app, ['--store', 'memory:', '--tts', 'tone'], none);
      expect(served.stdout()).toMatch(/TTS: +tone /);
      expect(await stop(served)).toBe(0);
      served = undefined;
      expect(readFileSync(join(pkg.installed, 'package.json'), 'utf8')).toContain('"koffi"');
    } finally {
      if (served) await stop(served);
      pkg.remove();
    }
  });
});
