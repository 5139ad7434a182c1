/**
 * voicewire/livekit as an application installs it: the packed tarball in an empty folder
 * (test/helpers/tarball.ts). Without the optional peer @livekit/agents, `import` and `require` of
 * the entry fail with CLIENT_DEPENDENCY_MISSING naming what to install, while the rest of the
 * package works; with it, the plugin's classes extend the application's own copy of the framework.
 * Needs dist/ (`npm run build`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { installPackedTarball, root, type InstalledTarball } from '../helpers/tarball.js';

const built = existsSync(join(root, 'dist', 'livekit.js'));

function run(app: string, args: string[]): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, args, { cwd: app, encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

const ESM_PROBE = `
try { await import('voicewire/livekit'); console.log('LOADED'); }
catch (e) { console.log(e.code + ' ' + e.name + ': ' + e.message); }
const core = await import('voicewire');
console.log('core ' + typeof core.encodeMulaw);`;

const CJS_PROBE = `
try { require('voicewire/livekit'); console.log('LOADED'); }
catch (e) { console.log(e.code + ' ' + e.name + ': ' + e.message); }`;

describe.skipIf(!built && !process.env['CI'])('voicewire/livekit in an installed tarball', () => {
  let t: InstalledTarball;
  beforeAll(() => {
    expect(built, 'dist/livekit.js is missing: npm run build').toBe(true);
    t = installPackedTarball('voicewire-livekit-');
  }, 120_000);
  afterAll(() => t?.remove());

  it('without @livekit/agents: import and require fail with CLIENT_DEPENDENCY_MISSING naming the packages; the core still loads', () => {
    const esm = run(t.app, ['--input-type=module', '-e', ESM_PROBE]);
    expect(esm.out).toContain('CLIENT_DEPENDENCY_MISSING VoicewireError: voicewire/livekit needs the optional peer dependency @livekit/agents, which is not installed: npm install @livekit/agents @livekit/rtc-node');
    expect(esm.out).toContain('core function');
    const cjs = run(t.app, ['-e', CJS_PROBE]);
    expect(cjs.out).toContain('CLIENT_DEPENDENCY_MISSING VoicewireError: voicewire/livekit needs the optional peer dependency @livekit/agents');
  }, 60_000);

  it('with @livekit/agents installed: TTS and STT extend the application’s own tts.TTS and stt.STT (ESM and CommonJS)', () => {
    for (const dep of ['@livekit/agents', '@livekit/rtc-node']) {
      const to = join(t.app, 'node_modules', dep);
      mkdirSync(dirname(to), { recursive: true });
      if (!existsSync(to)) symlinkSync(join(root, 'node_modules', dep), to, 'dir');
    }
    const opts = `{ baseUrl: 'http://127.0.0.1:1/api', apiKey: 'k' }`;
    const esm = run(t.app, [
      '--input-type=module',
      '-e',
      `const lk = await import('voicewire/livekit'); const a = await import('@livekit/agents');
       console.log(new lk.TTS(${opts}) instanceof a.tts.TTS, new lk.STT(${opts}) instanceof a.stt.STT);`,
    ]);
    expect(esm.out.trim()).toBe('true true');
    const cjs = run(t.app, ['-e', `const lk = require('voicewire/livekit'); const a = require('@livekit/agents'); console.log(new lk.TTS(${opts}) instanceof a.tts.TTS, new lk.STT(${opts}) instanceof a.stt.STT);`]);
    expect(cjs.out.trim()).toBe('true true');
  }, 60_000);

  it('the published types: an AgentSession takes the plugins as its tts and stt (tsc, node16 resolution, --strict)', () => {
    const to = join(t.app, 'node_modules', '@types', 'node');
    mkdirSync(dirname(to), { recursive: true });
    if (!existsSync(to)) symlinkSync(join(root, 'node_modules', '@types', 'node'), to, 'dir');
    writeFileSync(
      join(t.app, 'consumer.ts'),
      `import { voice } from '@livekit/agents';
import { STT, TTS, type TTSOptions } from 'voicewire/livekit';
const options: TTSOptions = { baseUrl: 'http://127.0.0.1:8080/api', apiKey: 'k', voiceId: 'YTpq7expH9539ERJ', sampleRate: 24000 };
export const session = new voice.AgentSession({ tts: new TTS(options), stt: new STT({ baseUrl: options.baseUrl, language: 'fr' }), vad: null });
`,
    );
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    // skipLibCheck: @livekit/agents' own declarations are its business; the consumer's use of ours is checked.
    const r = spawnSync(process.execPath, [tsc, '--noEmit', '--strict', '--skipLibCheck', '--module', 'node16', '--moduleResolution', 'node16', '--target', 'es2022', '--types', 'node', 'consumer.ts'], { cwd: t.app, encoding: 'utf8', timeout: 120_000 });
    expect(`${r.stdout}${r.stderr}`).toBe('');
    expect(r.status).toBe(0);
  }, 150_000);
});
