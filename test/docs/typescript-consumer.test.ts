/**
 * What a TypeScript project that installs the tarball sees (issue 23): every entry resolves under
 * `moduleResolution` node10 (typesVersions), node16 (ESM and CommonJS files) and bundler, and the
 * shipped declarations compile under `--strict` WITHOUT skipLibCheck with only the package's own
 * dependencies and `@types/node` installed (no `@types/ws`, `@types/pg`…). Also: the scripts npm
 * may run in an installed copy exist in the tarball, and run quietly there.
 *
 * The consumer is offline: the tarball is unpacked into its node_modules and the package's
 * dependencies are symlinked from this repository's node_modules (their own types come along;
 * this repository's devDependencies, the `@types/*` among them, do not). Reads dist/: CI builds
 * before testing (.ci/run); without a build it is skipped and says so.
 */
import { describe, expect, it } from 'vitest';
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const built = existsSync(join(root, 'dist', 'cli.js')) && existsSync(join(root, 'dist', 'client.d.ts'));
const title = (t: string) => (built ? t : `${t} [SKIPPED: dist/ not built; npm run build]`);
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');

/** Uses every entry and a few of its types, the way an application would. */
const CONSUMER = `
import { createFramer, STT_FRAME, VoicewireError, isVoicewireError, type AudioFormatName } from 'voicewire';
import { createFramerTransform, attachWebSocketSession, type WebSocketTransport } from 'voicewire/node';
import { createEspeakTtsEngine, EngineBudget, type EspeakTtsOptions } from 'voicewire/engines';
import { createVoiceServer, DEFAULT_LIMITS, type ServerConfigInput, type VoiceServer } from 'voicewire/server';
import { createClient, type VoiceClient, type TtsOptions } from 'voicewire/client';

const format: AudioFormatName = 'pcm_16000';
const framer = createFramer(STT_FRAME);
const transform = createFramerTransform(STT_FRAME);
const err: unknown = new VoicewireError('INVALID_ARGUMENT', 'x');
const options: EspeakTtsOptions | undefined = undefined;
const config: ServerConfigInput = {};
const client: VoiceClient = createClient({ baseUrl: 'http://localhost:1', apiKey: 'k' });
const tts: Partial<TtsOptions> = {};
export const used = [format, framer, transform, isVoicewireError(err), options, config, client, tts, DEFAULT_LIMITS.maxFrameBytes,
  createEspeakTtsEngine, EngineBudget, attachWebSocketSession, createVoiceServer];
export type Used = [WebSocketTransport, VoiceServer];
`;

/** The same from a CommonJS file (node16 resolves it through the "require" conditions, to the .d.cts files). */
const CONSUMER_CJS = `
import { createFramer, STT_FRAME, type AudioFormatName } from 'voicewire';
import { createFramerTransform, type WebSocketTransport } from 'voicewire/node';
import { EngineBudget } from 'voicewire/engines';
import { DEFAULT_LIMITS, type VoiceServer } from 'voicewire/server';
import { createClient, type VoiceClient } from 'voicewire/client';

const format: AudioFormatName = 'pcm_16000';
const client: VoiceClient = createClient({ baseUrl: 'http://localhost:1', apiKey: 'k' });
export const used = [format, createFramer(STT_FRAME), createFramerTransform(STT_FRAME), EngineBudget, DEFAULT_LIMITS, client];
export type Used = [WebSocketTransport, VoiceServer];
`;

/** A browser app: the platform-neutral core and the SDK, with no Node types at all. */
const CONSUMER_WEB = `
import { createFramer, STT_FRAME, encodeWav, type AudioFormatName } from 'voicewire';
import { createClient, type VoiceClient } from 'voicewire/client';

const format: AudioFormatName = 'wav';
const client: VoiceClient = createClient({ baseUrl: location.origin + '/api', apiKey: 'k' });
export const used = [format, createFramer(STT_FRAME), encodeWav, client];
`;

function link(from: string, to: string): void {
  mkdirSync(dirname(to), { recursive: true });
  symlinkSync(from, to, 'dir');
}

// Four tsc at once on two cores: beside other work one took over 50 s (issue 25); the bound is for a hang.
function run(args: string[], cwd: string): Promise<{ status: number; out: string }> {
  return new Promise((resolve) =>
    execFile(process.execPath, [tsc, ...args], { cwd, encoding: 'utf8', timeout: 150_000 }, (err, stdout, stderr) =>
      resolve({ status: err ? (typeof err.code === 'number' ? err.code : -1) : 0, out: stdout + stderr }),
    ),
  );
}

describe.skipIf(!built)('a TypeScript consumer of the tarball', () => {
  it(title('compiles against every entry under node10, node16 (ESM and CommonJS) and bundler, --strict, without skipLibCheck; the core and the SDK without @types/node'), { timeout: 240_000 }, async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'voicewire-ts-consumer-'));
    try {
      const out = execFileSync('npm', ['pack', '--pack-destination', tmp, '--ignore-scripts', '--json'], { cwd: root, encoding: 'utf8', timeout: 30_000, stdio: ['ignore', 'pipe', 'ignore'] });
      const tarball = join(tmp, (JSON.parse(out) as { filename: string }[])[0]!.filename);
      const app = join(tmp, 'app');
      mkdirSync(join(app, 'node_modules'), { recursive: true });
      execFileSync('tar', ['-xzf', tarball, '-C', join(app, 'node_modules')], { timeout: 20_000 });
      const installed = join(app, 'node_modules', 'voicewire');
      renameSync(join(app, 'node_modules', 'package'), installed);
      const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
      for (const dep of Object.keys(manifest.dependencies ?? {})) link(join(root, 'node_modules', dep), join(app, 'node_modules', dep));
      // A Node consumer has @types/node (the README's install line says so); nothing else of ours.
      link(join(root, 'node_modules', '@types', 'node'), join(app, 'node_modules', '@types', 'node'));

      writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
      writeFileSync(join(app, 'main.ts'), CONSUMER);
      writeFileSync(join(app, 'main-cjs.cts'), CONSUMER_CJS);
      writeFileSync(join(app, 'web.ts'), CONSUMER_WEB);
      // No @types at all, the DOM's lib: what a browser bundle of the core and the SDK sees.
      writeFileSync(join(app, 'tsconfig.web.json'), JSON.stringify({ compilerOptions: { module: 'esnext', moduleResolution: 'bundler', target: 'es2022', lib: ['es2022', 'dom'], types: [], strict: true, noEmit: true }, files: ['web.ts'] }));
      const common = ['--noEmit', '--strict', '--target', 'es2022', '--pretty', 'false'];
      const results = await Promise.all([
        // esModuleInterop (tsc --init's default) for pino's own declarations: they default-import
        // CommonJS modules (thread-stream).
        run([...common, '--module', 'commonjs', '--moduleResolution', 'node10', '--esModuleInterop', '--ignoreDeprecations', '5.0', 'main.ts'], app),
        run([...common, '--module', 'node16', '--moduleResolution', 'node16', 'main.ts', 'main-cjs.cts'], app),
        run([...common, '--module', 'esnext', '--moduleResolution', 'bundler', 'main.ts'], app),
        run(['-p', 'tsconfig.web.json', '--pretty', 'false'], app),
      ]);
      expect(results.map((r) => r.out)).toEqual(['', '', '', '']);
      expect(results.map((r) => r.status)).toEqual([0, 0, 0, 0]);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it(title('every script npm may run in an installed copy ships in the tarball, and "prepare" there builds nothing and prints nothing'), () => {
    const tmp = mkdtempSync(join(tmpdir(), 'voicewire-ts-scripts-'));
    try {
      const out = execFileSync('npm', ['pack', '--pack-destination', tmp, '--ignore-scripts', '--json'], { cwd: root, encoding: 'utf8', timeout: 30_000, stdio: ['ignore', 'pipe', 'ignore'] });
      const tarball = join(tmp, (JSON.parse(out) as { filename: string }[])[0]!.filename);
      execFileSync('tar', ['-xzf', tarball, '-C', tmp], { timeout: 20_000 });
      const pkgDir = join(tmp, 'package');
      const scripts = (JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')) as { scripts?: Record<string, string> }).scripts ?? {};
      // The lifecycle scripts npm runs on install of a folder or git checkout (docs: npm/scripts).
      for (const name of ['preinstall', 'install', 'postinstall', 'prepare'] as const) {
        const script = scripts[name];
        if (script === undefined) continue;
        for (const file of script.split(/\s+/).filter((w) => /\.(m|c)?js$/.test(w))) expect(existsSync(join(pkgDir, file)), `${name}: ${file}`).toBe(true);
      }
      if (scripts.prepare !== undefined) {
        const r = spawnSync('sh', ['-c', scripts.prepare], { cwd: pkgDir, encoding: 'utf8', timeout: 20_000, env: { ...process.env, npm_command: 'install' } });
        expect(r.stdout + r.stderr).toBe('');
        expect(r.status).toBe(0);
        expect(existsSync(join(pkgDir, 'src'))).toBe(false);
      }
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
