/**
 * Which TTS engine a server runs (issue 23): the system espeak-ng library when it loads, else the
 * npm build (issue 34: the cheaper first), else a refusal naming both installs; tone only when asked for. The whole path from an
 * installed tarball (no wasm) is test/docs/tarball-speech.test.ts.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isVoicewireError } from '../../src/util/errors.js';

afterEach(() => {
  vi.unstubAllEnvs();
  vi.resetModules();
});

describe('chooseTtsEngine', () => {
  it('here (both installed): none named or `espeak` → espeak-system (the cheaper, issue 34); each can be forced; tone when asked; an unknown name is returned for the server to refuse', async () => {
    const { chooseTtsEngine, defaultEngineName } = await import('../../src/engines/registry.js');
    expect(await chooseTtsEngine()).toBe('espeak-system');
    expect(await chooseTtsEngine('espeak')).toBe('espeak-system');
    // The synchronous guess agrees once the library has loaded.
    expect(defaultEngineName('tts')).toBe('espeak-system');
    expect(await chooseTtsEngine('espeak-wasm')).toBe('espeak-wasm');
    expect(await chooseTtsEngine('espeak-system')).toBe('espeak-system');
    expect(await chooseTtsEngine('tone')).toBe('tone');
    expect(await chooseTtsEngine('nope')).toBe('nope');
  });

  it('the system library missing: --tts espeak-system is refused naming `apt-get install libespeak-ng1`', async () => {
    vi.stubEnv('VOICEWIRE_ESPEAK_LIBRARY', '/nonexistent/libespeak-ng.so.1');
    vi.resetModules();
    // The worker is the process's (globalThis): hidden while this fresh module graph loads.
    const shared = globalThis as Record<symbol, unknown>;
    const key = Symbol.for('voicewire.espeak-system.worker');
    const saved = shared[key];
    delete shared[key];
    const { chooseTtsEngine } = await import('../../src/engines/registry.js');
    const err = await chooseTtsEngine('espeak-system').catch((e: unknown) => e);
    // The WebAssembly build is still there: without the library, it is the default.
    const fallback = await chooseTtsEngine();
    if (saved !== undefined) shared[key] = saved;
    expect(isVoicewireError(err, 'ENGINE_UNAVAILABLE')).toBe(true);
    expect((err as Error).message).toContain('apt-get install libespeak-ng1');
    expect(fallback).toBe('espeak-wasm');
  });

  it('a server started with espeak-system reports it (status) and speaks with it', async () => {
    const { startServer } = await import('../server/harness.js');
    const h = await startServer({ tts: 'espeak-system' });
    try {
      expect(h.server.config.tts).toBe('espeak-system');
      const r = await fetch(`${h.base}/post/speech/tts`, { method: 'POST', headers: { 'x-api-key': h.apiKey, 'content-type': 'application/json' }, body: JSON.stringify({ text: 'Hello there.', output_format: 'pcm', only_audio: true }) });
      expect(r.status).toBe(200);
      const pcm = new Int16Array((await r.arrayBuffer()).slice(0));
      // About a second of speech at 48 kHz, not silence.
      expect(pcm.length / 48000).toBeGreaterThan(0.4);
      expect(Math.max(...pcm.map(Math.abs))).toBeGreaterThan(3000);
    } finally {
      await h.close();
    }
  });
});
