/**
 * The platform-neutral core and its web streams, unchanged, in a browser: test/browser/entry.ts
 * is bundled with esbuild, served from a loopback HTTP server into headless Chromium (Debian's
 * `chromium`, driven by playwright-core with a fresh profile), and its outputs — TTS encodes to
 * pcm_16000, ulaw_8000, wav and opus (libopus wasm handed to initOpus), STT decodes of wav, ulaw
 * and opus — must equal the same function's outputs in Node, byte for byte.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { chromium } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { createTtsAudioEncoder } from '../../src/pipelines/tts-audio-encoder.js';
import { decodeWav } from '../../src/audio/wav.js';
import { runPipelines, type PipelineInputs } from './entry.js';
import { has, needs } from '../helpers/tools.js';

const root = new URL('../../', import.meta.url);
const file = (path: string) => readFileSync(new URL(path, root));
const b64 = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64');

const speech = decodeWav(file('fixtures/speech/en_48k.wav'), { output: 'int16', mono: true }).samples;
const pcm48 = speech.subarray(0, 3840 * 15 + 1234); // 1.23 s, a partial last frame
const inputs: PipelineInputs = {
  pcm48: b64(new Uint8Array(pcm48.buffer, pcm48.byteOffset, pcm48.byteLength)),
  sttWav: b64(file('fixtures/speech/en.wav')),
  sttOpus: b64(file('fixtures/pipelines/en.opus')),
  sttUlaw: b64(file('fixtures/pipelines/en.ulaw')),
  wasm: b64(file('node_modules/opusscript/build/opusscript_native_wasm.wasm')),
};

const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

function serve(bundle: string): Promise<Server> {
  const html = '<!doctype html><html><head><meta charset="utf-8"><script src="/bundle.js"></script></head><body>voicewire</body></html>';
  const server = createServer((req, res) => {
    if (req.url === '/bundle.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(bundle);
    else res.writeHead(200, { 'content-type': 'text/html' }).end(html);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

describe.skipIf(!has('chromium'))(needs('chromium', 'the pipelines in headless Chromium, byte for byte as in Node'), () => {
  it('TTS and STT web streams give the same bytes in Chromium and in Node', async () => {
    const nodeOut = await runPipelines(inputs);
    expect(Object.keys(nodeOut).sort()).toEqual(['stt:opus', 'stt:ulaw_8000', 'stt:wav', 'tts:opus', 'tts:pcm_16000', 'tts:ulaw_8000', 'tts:wav']);
    // Node's web-stream run is the core's own output (one chunk per frame, then the tail).
    const enc = createTtsAudioEncoder('ulaw_8000');
    const direct = [];
    for (let i = 0; i < pcm48.length; i += 3840) direct.push(...enc.encode(pcm48.subarray(i, i + 3840)).bytes);
    direct.push(...enc.end().bytes);
    expect(Buffer.from(nodeOut['tts:ulaw_8000']!, 'base64').equals(Buffer.from(direct))).toBe(true);

    const bundled = await build({
      entryPoints: [new URL('test/browser/entry.ts', root).pathname],
      bundle: true,
      format: 'iife',
      platform: 'browser',
      target: 'es2022',
      write: false,
      // Referenced only in the Node branch of emscripten's glue, never reached in a page.
      external: ['fs', 'path'],
      logLevel: 'silent',
    });
    const server = await serve(bundled.outputFiles[0]!.text);
    const profile = mkdtempSync(join(tmpdir(), 'vw-chromium-'));
    const context = await chromium.launchPersistentContext(profile, { executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_ARGS });
    try {
      const page = context.pages()[0] ?? (await context.newPage());
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(String(e)));
      await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
      const browserOut = await page.evaluate(
        async (input) => (globalThis as unknown as { voicewirePipelines: { runPipelines: typeof runPipelines } }).voicewirePipelines.runPipelines(input),
        inputs,
      );
      expect(errors).toEqual([]);
      expect(Object.keys(browserOut).sort()).toEqual(Object.keys(nodeOut).sort());
      for (const key of Object.keys(nodeOut)) {
        const a = Buffer.from(browserOut[key]!, 'base64');
        const b = Buffer.from(nodeOut[key]!, 'base64');
        expect(a.length, key).toBeGreaterThan(1000);
        expect(a.equals(b), `${key}: ${a.length} bytes in Chromium, ${b.length} in Node`).toBe(true);
      }
    } finally {
      await context.close();
      server.close();
      rmSync(profile, { recursive: true, force: true });
    }
  }, 60_000);
});
