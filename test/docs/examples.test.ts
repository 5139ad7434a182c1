/**
 * The README's code runs: every examples/*.ts is a complete program that the README includes
 * verbatim (scripts/readme-examples.ts), `npm run typecheck` compiles (tsconfig "examples"), and
 * this file runs, bounded in time, checking what it prints.
 */
import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { checkReadme } from '../../scripts/readme-examples.js';
import { startServer } from '../server/harness.js';
import { pocketsphinxAvailable } from '../../src/engines/pocketsphinx-ffi.js';
import { docFiles, readDoc } from '../helpers/docs.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const docs = docFiles().map((path) => ({ path, text: readDoc(path) }));
const examples = readdirSync(new URL('examples/', `file://${root}`)).filter((f) => f.endsWith('.ts')).sort();

/** What each example must print (lines or fragments, in order). */
const EXPECTED: Record<string, (string | RegExp)[]> = {
  'wav-g711.ts': ['48000 Hz, 111164 samples', 'streamed: 111164 samples', 'stream header 44 bytes, file 48044 bytes', 'μ-law: 111164 bytes', 'ulaw_8000', '24000'],
  'resample.ts': ['one-shot: 8000 samples', 'streamed: 16000 samples, identical to one-shot: true, delay 3.0 ms'],
  'framer.ts': ['3 frames of 3840, 3840, 3840 bytes'],
  'opus.ts': [/\d+ pages, \d+ bytes/, 'decoded 24000 samples at 24 kHz'],
  'pipelines.ts': ['6 audio messages, last stop_s 0.4', "{ text: 'hi', start_s: 0.16, stop_s: 0.24, chunk: 3 }", 'STT: 3 frames of 1920 samples at 24 kHz'],
  'text.ts': [
    "[ { type: 'text', text: 'Bonjour ' } ]",
    "[ { type: 'break', seconds: 0.5 }, { type: 'text', text: ' à tous' } ]",
    "[ 'Hello' ]",
    "[ 'world! <flush>' ]",
    "[ 'How' ]",
    "{ type: 'text', text: 'hello', start_s: 0.5 }",
    "{ type: 'end_text', stop_s: 0.9 }",
  ],
  'client.ts': [/Emma: \d+ bytes, words Hello from voicewire\./, /heard: he was not an .*young man/ /* the reading: "he was not an ill disposed young man" */, /credits left: \d+/],
  'livekit-agent.ts': [/TTS: \d+ frames at 48000 Hz, words Hello from voicewire\./, /STT heard: he was not an .*young man/],
  'engines.ts': [/espeak-fr-\w+: \d+ frames of 80 ms/, 'Bonjour, comment allez-vous'],
  'stt-engine-module.ts': ['{"type":"step","vad":[{"horizon_s":0.5,"inactivity_prob":1}'],
  'stt-server.ts': ['{"type":"ready"', '{"type":"text","text":"hello","start_s":0}', '"step_idx":2', '{"type":"end_of_stream"}', 'closed 1000'],
};

/** Examples that talk to a running service get one (tone TTS, pocketsphinx for the human clip, a memory store) through the environment. */
const NEEDS_SERVER = new Set(['client.ts', 'livekit-agent.ts']);
const missingStt = pocketsphinxAvailable();

async function run(file: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const server = NEEDS_SERVER.has(file) ? await startServer({ stt: 'pocketsphinx' }) : undefined;
  const env = server ? { ...process.env, VOICEWIRE_BASE_URL: server.base, VOICEWIRE_API_KEY: server.apiKey } : process.env;
  try {
    return await runFile(file, env);
  } finally {
    await server?.close();
  }
}

function runFile(file: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', `examples/${file}`], { cwd: root, timeout: 90_000, encoding: 'utf8', env }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr }),
    );
  });
}

describe('README examples', () => {
  it('every ts block of the README and docs/ is an example, included verbatim', () => {
    const read = (p: string) => readFileSync(new URL(p, `file://${root}`), 'utf8');
    const results = docs.map((d) => checkReadme(d.text, read, d.path));
    expect(results.flatMap((r) => r.problems)).toEqual([]);
    expect(results.flatMap((r) => r.blocks.map((b) => b.example?.replace('examples/', ''))).sort()).toEqual(examples);
  });

  it('the check names a block that drifted from its example', () => {
    const doc = docs.find((d) => d.text.includes('createFramer(STT_FRAME);'))!;
    const drifted = doc.text.replace('createFramer(STT_FRAME);', 'createFramer(TTS_FRAME);');
    const result = checkReadme(drifted, (p) => readFileSync(new URL(p, `file://${root}`), 'utf8'), doc.path);
    expect(result.problems).toEqual([expect.stringContaining(`${doc.path}:`)]);
    expect(result.problems).toEqual([expect.stringContaining('differs from examples/framer.ts')]);
    expect(result.updated).toBe(doc.text);
  });

  it('every example has expected output listed here', () => {
    expect(Object.keys(EXPECTED).sort()).toEqual(examples);
  });

  describe.concurrent('runs', () => {
    for (const file of examples) {
      const skip = NEEDS_SERVER.has(file) && missingStt !== undefined;
      it.skipIf(skip)(`examples/${file} runs and prints what the README says${skip ? ` [SKIPPED: ${missingStt}]` : ''}`, async () => {
        const r = await run(file);
        expect(r.stderr).toBe('');
        expect(r.code).toBe(0);
        let at = 0;
        for (const want of EXPECTED[file] ?? []) {
          const rest = r.stdout.slice(at);
          const m = typeof want === 'string' ? { index: rest.indexOf(want), length: want.length } : (() => { const x = want.exec(rest); return { index: x ? x.index : -1, length: x ? x[0].length : 0 }; })();
          expect(m.index, `${String(want)} in\n${r.stdout}`).toBeGreaterThanOrEqual(0);
          at += m.index + m.length;
        }
        // They all run at once (tsx compiling each): on a busy 2-core machine one took over 20 s (issue 25).
      }, 120_000);
    }
  });
});
