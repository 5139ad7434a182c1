/**
 * The server runs on Node's native paths (issue 22): Buffer's base64 for every audio line and
 * libopus through `@evan/opus` when installed — whoever creates it (the CLI, an embedder), without
 * importing `voicewire/node` first. Before, `voicewire serve` built its lines with the JS base64
 * and encoded Opus in wasm.
 */
import { afterAll, expect, it } from 'vitest';
import { base64Backend, setNativeBase64 } from '../../src/util/base64.js';
import { OpusEncoder, setOpusBackendProvider } from '../../src/audio/opus.js';
import { nativeOpusBackend } from '../../src/node/opus-native.js';
import { startServer, type Harness } from './harness.js';

let h: Harness | undefined;
afterAll(() => h?.close());

it('createVoiceServer registers Buffer base64 and native Opus (when installed)', async () => {
  setNativeBase64(null);
  setOpusBackendProvider(undefined);
  expect(base64Backend()).not.toBe('registered');
  h = await startServer();
  expect(base64Backend()).toBe('registered');
  const e = new OpusEncoder();
  expect(e.backend).toBe(nativeOpusBackend() === undefined ? 'wasm' : 'native');
  e.destroy();
});
