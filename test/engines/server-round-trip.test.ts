/**
 * The real engines end to end through the server's own routes: `voicewire/server` with espeak-ng
 * (TTS) and pocketsphinx (STT, with a small grammar built for the test, registered as an engine),
 * driven by the SDK — espeak speaks a command over POST /post/speech/tts and the TTS WebSocket,
 * and pocketsphinx hears the same words over the STT WebSocket and POST /post/speech/asr.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pocketsphinxAvailable } from '../../src/engines/pocketsphinx-ffi.js';
import { createPocketsphinxSttEngine } from '../../src/engines/pocketsphinx-stt.js';
import { registerSttEngine } from '../../src/engines/registry.js';
import { createClient } from '../../src/node/client.js';
import { startServer, type Harness } from '../server/harness.js';

const missing = pocketsphinxAvailable();
const JSGF = `#JSGF V1.0;
grammar home;
public <command> = (turn on | turn off) the (kitchen | bedroom | garage) lights | open the (front | back) door | close the window;
`;

describe.skipIf(missing !== undefined)(missing ? 'espeak → server → pocketsphinx [SKIPPED: pocketsphinx not installed; CI installs it]' : 'espeak → server routes → pocketsphinx', () => {
  let h: Harness;
  beforeAll(async () => {
    registerSttEngine('pocketsphinx-home-grammar', { create: () => createPocketsphinxSttEngine({ jsgf: JSGF }) });
    h = await startServer({ tts: 'espeak', stt: 'pocketsphinx-home-grammar' });
  }, 30_000);
  afterAll(() => h?.close());

  it('POST TTS → STT WebSocket, and TTS WebSocket → POST STT: "open the back door" both ways', async () => {
    const c = createClient({ baseUrl: h.base, apiKey: h.apiKey, retry: { attempts: 1 } });
    const voice = (await c.voices.list()).find((v) => v.uid === 'espeak-en-ava');
    expect(voice).toMatchObject({ language: 'en', is_catalog: true });
    // temp 0: the same audio every run (the shared espeak instance's depends on what it said before).
    const overHttp = await c.tts({ text: 'Open the back door.', voiceId: 'espeak-en-ava', outputFormat: 'wav', http: true, jsonConfig: { temp: 0 } });
    expect(overHttp.words.map((w) => w.text)).toEqual(['Open', 'the', 'back', 'door.']);
    expect((await c.stt(overHttp.audio, { inputFormat: 'wav', language: 'en' })).text).toBe('open the back door');
    const overWs = await c.tts({ text: 'Close the window.', voiceId: 'espeak-en-ava', outputFormat: 'wav', jsonConfig: { temp: 0 } });
    expect((await c.stt(overWs.audio, { inputFormat: 'wav', language: 'en', http: true })).text).toBe('close the window');
    await expect(c.stt(overWs.audio, { inputFormat: 'wav', language: 'fr' })).rejects.toMatchObject({ code: 'PROTOCOL_SERVER_ERROR', closeCode: 1008 });
  }, 60_000);
});
