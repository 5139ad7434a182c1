/**
 * `voicewire serve` (the built dist/cli.js, a child process) with sherpa-onnx models made by the
 * test suite (issue 24): every folder sherpa-onnx would die on is refused at start with a message
 * naming it; a long synthesis leaves /healthz answering; RSS stays flat over repeated requests;
 * TTS and STT work on both transports.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI, built, fetchFresh, rssOf, root, startBuiltServer, type BuiltServer } from '../product/built-server.js';
import { createClient } from '../../src/node/client.js';
import { ModelFolders, type ModelBreak } from '../helpers/sherpa-models.js';

const folders = new ModelFolders();
afterAll(() => folders.cleanup());

/** `serve` with `args`, which must refuse to start: its exit code and stderr. */
function refusedStart(args: string[]): { status: number | null; stderr: string; stdout: string } {
  const r = spawnSync(process.execPath, [CLI, 'serve', '--port', '0', '--store', 'memory:', ...args], { cwd: root, encoding: 'utf8', timeout: 150_000 });
  return { status: r.status, stderr: r.stderr, stdout: r.stdout };
}

describe.skipIf(!built)(built ? 'serve with sherpa-onnx models' : 'serve with sherpa-onnx models [SKIPPED: run npm run build]', () => {
  describe('a model sherpa-onnx cannot load is a clear refusal at start', () => {
    const breaks: ModelBreak[] = ['no-metadata', 'bad-tokens', 'no-tokens', 'corrupt-onnx'];
    for (const broken of breaks) {
      it(`TTS and STT folders with ${broken}`, () => {
        const tts = folders.make('piper', { broken });
        const stt = folders.make('nemo-ctc', { broken });
        if (broken === 'bad-tokens') writeFileSync(join(stt, 'tokens.txt'), 'a 0\nb 1\n'); // no blank
        for (const args of [['--tts', 'sherpa-onnx', '--tts-model', tts], ['--stt', 'sherpa-onnx', '--stt-model', stt]]) {
          const r = refusedStart(args);
          expect(r.status).toBe(1);
          expect(r.stdout).not.toMatch(/listening on/);
          expect(r.stderr).toMatch(/\[MODEL_INVALID\]\n$/);
          expect(r.stderr).toContain(`model folder ${args[3]}`);
          // One line, no stack, no native abort.
          expect(r.stderr.trim().split('\n')).toHaveLength(1);
        }
      }, 180_000);
    }

    it('a forced family the model does not fit is refused before the server loads it', () => {
      // The graph's declared shapes say so (NeMo features are [N, 80, T]); before, the child check died on "Expected: 80".
      const r = refusedStart(['--stt', 'sherpa-onnx', '--stt-model-type', 'zipformer2-ctc', '--stt-model', folders.make('nemo-ctc')]);
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/model\.onnx input 0 is \[N, 80, T\]: a Zipformer CTC model takes fbank features \[N, T, 80\] \[MODEL_INVALID\]\n$/);
    }, 180_000);

    it('a streaming model sherpa-onnx would die on is refused at start, and so is a bad VAD beside one', () => {
      for (const broken of ['no-metadata', 'corrupt-onnx'] as const) {
        const dir = folders.make('nemo-ctc-online', { broken });
        const r = refusedStart(['--stt', 'sherpa-onnx', '--stt-model', dir]);
        expect(r.status).toBe(1);
        expect(r.stdout).not.toMatch(/listening on/);
        expect(r.stderr).toContain(`model folder ${dir}`);
        expect(r.stderr).toMatch(broken === 'no-metadata' ? /lacks the metadata "cache_last_time_dim3" a streaming NeMo CTC model needs/ : /not a complete ONNX file/);
        expect(r.stderr.trim().split('\n')).toHaveLength(1);
      }
      // Issue 33: a VAD beside a streaming model drives its steps (not its endpoints); a bad one is refused.
      const vad = folders.makeVad({ broken: 'bad-names' });
      const r = refusedStart(['--stt', 'sherpa-onnx', '--stt-model', folders.make('nemo-ctc-online'), '--vad-model', vad]);
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/\[MODEL_INVALID\]\n$/);
      expect(r.stderr).toContain(`VAD model ${vad}`);
    }, 180_000);

    it('without the native binary, serve refuses at start naming the package and how to install it', () => {
      // An install without sherpa-onnx-linux-x64 (npm install --omit=optional keeps neither; a copy
      // of the wrapper alone is the harder case): the built CLI in a folder whose node_modules has
      // every package but the binary. Copied, not linked: Node resolves a link to its real folder.
      const install = mkdtempSync(join(tmpdir(), 'vw-no-binary-'));
      try {
        cpSync(join(root, 'dist'), join(install, 'dist'), { recursive: true });
        cpSync(join(root, 'package.json'), join(install, 'package.json'));
        mkdirSync(join(install, 'node_modules'));
        for (const name of readdirSync(join(root, 'node_modules'))) {
          if (name === 'sherpa-onnx-linux-x64' || name === '.bin') continue;
          if (name === 'sherpa-onnx-node') cpSync(join(root, 'node_modules', name), join(install, 'node_modules', name), { recursive: true });
          else symlinkSync(join(root, 'node_modules', name), join(install, 'node_modules', name));
        }
        const stt = folders.make('nemo-ctc');
        for (const args of [['--stt', 'sherpa-onnx', '--stt-model', stt], ['--tts-model', folders.make('piper')]]) {
          const r = spawnSync(process.execPath, [join(install, 'dist', 'cli.js'), 'serve', '--port', '0', '--store', 'memory:', ...args], { cwd: install, encoding: 'utf8', timeout: 150_000 });
          expect(r.status).toBe(1);
          expect(r.stdout).not.toMatch(/listening on/);
          expect(r.stderr).toMatch(/need the npm package sherpa-onnx-linux-x64 \(sherpa-onnx's native binary for linux-x64\), which is not installed: install both with `npm install sherpa-onnx-node@1\.13\.8 sherpa-onnx-linux-x64@1\.13\.8`.* \[ENGINE_UNAVAILABLE\]\n$/);
          // One line, no stack, no native abort.
          expect(r.stderr.trim().split('\n')).toHaveLength(1);
        }
      } finally {
        rmSync(install, { recursive: true, force: true });
      }
    }, 180_000);

    it('usage errors name the missing flag', () => {
      expect(refusedStart(['--tts', 'sherpa-onnx']).stderr).toMatch(/--tts sherpa-onnx needs --tts-model DIR.*\[CLI_USAGE\]/);
      expect(refusedStart(['--stt', 'sherpa-onnx']).stderr).toMatch(/--stt sherpa-onnx needs --stt-model DIR.*\[CLI_USAGE\]/);
      expect(refusedStart(['--tts', 'espeak', '--tts-model', '/x']).stderr).toMatch(/not --tts espeak.*\[CLI_USAGE\]/);
      expect(refusedStart(['--stt', 'sherpa-onnx', '--stt-model', '/x', '--stt-language', 'en,xx']).stderr).toMatch(/--stt-language must be a comma-separated list of en, fr, de, es, pt, got en,xx.*\[CLI_USAGE\]/);
      expect(refusedStart(['--stt-language', 'fr']).stderr).toMatch(/--stt-language is for --stt sherpa-onnx.*\[CLI_USAGE\]/);
      // A narrower set than the model declares, never another one.
      const r = refusedStart(['--stt', 'sherpa-onnx', '--stt-model', folders.make('nemo-ctc', { language: 'de' }), '--stt-language', 'fr']);
      expect(r.stderr).toMatch(/--stt-language fr: the model serves de \(its languages: de\) \[MODEL_INVALID\]\n$/);
    }, 180_000);
  });

  describe('a running server', () => {
    let s: BuiltServer;
    let dataDir: string;
    beforeAll(async () => {
      dataDir = mkdtempSync(join(tmpdir(), 'vw-sherpa-serve-'));
      // A slow voice (2000 matrix products per token: ~0.2–0.5 s a sentence on one core) makes a long synthesis.
      const voice = folders.make('piper', { loops: 2000 });
      const asr = folders.make('nemo-ctc');
      s = await startBuiltServer({ dataDir, maxRssBytes: 1.5 * 2 ** 30, args: ['--tts', 'sherpa-onnx', '--tts-model', voice, '--stt', 'sherpa-onnx', '--stt-model', asr] });
    }, 180_000);
    afterAll(async () => {
      expect(await s?.stop()).toBe(0);
      rmSync(dataDir, { recursive: true, force: true });
    });

    it('answers /healthz within 50 ms (median) while it synthesizes a long text', async () => {
      const text = Array.from({ length: 16 }, (_, i) => `Sentence number ${i + 1} is spoken by a small random voice.`).join(' ');
      let done = false;
      const t0 = performance.now();
      const synthesis = fetchFresh(`${s.base}/post/speech/tts`, { method: 'POST', headers: { 'x-api-key': s.key, 'content-type': 'application/json' }, body: JSON.stringify({ text, output_format: 'pcm' }) })
        .then((r) => r.arrayBuffer())
        .finally(() => (done = true));
      const latencies: number[] = [];
      while (!done) {
        const a = performance.now();
        const r = await fetchFresh(`${s.base}/healthz`);
        await r.text();
        latencies.push(performance.now() - a);
        await new Promise((r) => setTimeout(r, 50));
      }
      const bytes = (await synthesis).byteLength;
      const synthesisMs = performance.now() - t0;
      latencies.sort((a, b) => a - b);
      const p90 = latencies[Math.floor(latencies.length * 0.9)]!;
      console.log(`healthz during a ${(synthesisMs / 1000).toFixed(1)} s synthesis: ${latencies.length} probes, median ${latencies[latencies.length >> 1]!.toFixed(1)} ms, p90 ${p90.toFixed(1)} ms, max ${latencies.at(-1)!.toFixed(1)} ms`);
      expect(bytes).toBeGreaterThan(48000); // NDJSON with the audio of 16 sentences
      expect(synthesisMs).toBeGreaterThan(1500);
      expect(latencies.length).toBeGreaterThan(10);
      // The median is the goal (≤ 50 ms); the tail has room for a machine shared with the suite and
      // two CPU hogs (measured there: median 23 ms, p90 70 ms; on a quiet machine p90 under 50 ms).
      expect(latencies[latencies.length >> 1]!).toBeLessThanOrEqual(50);
      expect(p90).toBeLessThanOrEqual(250);
    }, 180_000);

    it('speaks and hears on both transports, several requests at once through the pool', async () => {
      const c = createClient({ baseUrl: s.base, apiKey: s.key, retry: { attempts: 1 } });
      const wav = readFileSync(join(root, 'fixtures', 'speech', 'en_24k.wav'));
      const [a, b, d, e] = await Promise.all([
        c.tts({ text: 'First request. It has two sentences.', outputFormat: 'wav', http: true }),
        c.tts({ text: 'Second request. It has two sentences.', outputFormat: 'wav' }),
        c.stt(wav, { inputFormat: 'wav', language: 'en' }),
        c.stt(wav, { inputFormat: 'wav', language: 'en', http: true }),
      ]);
      expect(a.words.map((w) => w.text)).toEqual(['First', 'request.', 'It', 'has', 'two', 'sentences.']);
      expect(b.words.map((w) => w.text)).toEqual(['Second', 'request.', 'It', 'has', 'two', 'sentences.']);
      expect(d.words.length).toBeGreaterThan(0);
      expect(e.text).toBe(d.text);
    }, 180_000);

    it('keeps its RSS flat over repeated requests', async () => {
      const c = createClient({ baseUrl: s.base, apiKey: s.key, retry: { attempts: 1 } });
      const wav = readFileSync(join(root, 'fixtures', 'speech', 'en_24k.wav'));
      const round = async (n: number): Promise<void> => {
        for (let i = 0; i < n; i++) {
          await c.tts({ text: `Request ${i}. Short.`, outputFormat: 'wav', http: i % 2 === 0 });
          await c.stt(wav, { inputFormat: 'wav', language: 'en', http: i % 2 === 1 });
        }
      };
      await round(10); // warm-up: pools, allocator arenas
      const before = rssOf(s.child.pid!);
      await round(30);
      const after = rssOf(s.child.pid!);
      console.log(`RSS over 30 TTS + 30 STT requests after warm-up: ${(before / 2 ** 20).toFixed(0)} → ${(after / 2 ** 20).toFixed(0)} MB`);
      expect(after - before).toBeLessThan(40 * 2 ** 20);
    }, 300_000);
  });
});
