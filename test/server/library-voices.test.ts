/**
 * Every voice id of the service's published library (protocol-notes.md; library-voices.ts) speaks,
 * as the service's documentation examples send them: on POST /api/post/speech/tts and on the TTS
 * WebSocket, each id gives audio at the rate of the output format asked for. The WebSocket's
 * setup `voice_id` may also be a voice's name or `"default"` (Emma), as POST's `voice_id`/`voice`;
 * a setup's `voice` key is one the Python client sends and is ignored (protocol-notes.md).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { audioBytes, connect, startServer, type Harness } from './harness.js';
import { LIBRARY_DEFAULT_VOICE_ID, LIBRARY_VOICES, libraryVoices } from '../../src/engines/library-voices.js';
import { espeakAvailable } from '../../src/engines/espeak-module.js';
import { ESPEAK_LANGUAGE_VOICES, catalogVoices } from '../../src/engines/espeak-voices.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const post = (hh: Harness, body: Record<string, unknown>): Promise<Response> =>
  fetch(`${hh.base}/post/speech/tts`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': hh.apiKey }, body: JSON.stringify(body) });

/** The sample rate and data bytes of a PCM WAV (a streamed one's data size is 0xFFFFFFFF: counted from the body). */
const wavShape = (b: Buffer): { rate: number; dataBytes: number } => ({ rate: b.readUInt32LE(24), dataBytes: b.length - (b.indexOf('data', 12, 'latin1') + 8) });

/** One TTS WebSocket request: every message until the socket closes. */
async function wsTts(hh: Harness, setup: Record<string, unknown>, text: string): Promise<Array<Record<string, unknown>>> {
  const c = connect(`${hh.wsBase}/speech/tts`, { 'x-api-key': hh.apiKey });
  c.send({ type: 'setup', model_name: 'default', ...setup });
  c.send({ type: 'text', text });
  c.send({ type: 'end_of_stream' });
  await c.closed;
  return c.messages;
}

describe('library voices on the tone engine', () => {
  it('has the 14 ids of protocol-notes.md', () => {
    expect(LIBRARY_VOICES.map(([, uid]) => uid)).toEqual([
      'YTpq7expH9539ERJ', 'LFZvm12tW_z0xfGo', 'jtEKaLYNn6iif5PR', 'KWJiFWu2O9nMPYcR', 'ubuXFxVQwVYnZQhy', 'm86j6D7UZpGzHsNu', 'b35yykvVppLXyw_l',
      'axlOaUiFyOZhy4nv', '-uP9MuGtBqAvEyxI', '0y1VZjPabOBU3rWy', 'B36pbz5_UoWn4BDl', 'xu7iJ_fn2ElcWp2s', 'pYcGZz9VOo4n2ynh', 'M-FvVo9c-jGR4PgP',
    ]);
  });

  it.each(LIBRARY_VOICES.map(([name, uid]) => [name, uid]))('%s (%s): POST gives 200 and 48 kHz WAV; the WebSocket gives pcm_16000 at 16 kHz', async (_name, uid) => {
    h = await startServer();
    // "hi" is two 80 ms tones: 7680 samples at 48 kHz, 2560 at 16 kHz.
    const r = await post(h, { text: 'hi', voice_id: uid, output_format: 'wav', only_audio: true });
    expect(r.status).toBe(200);
    const wav = Buffer.from(await r.arrayBuffer());
    expect(wav.subarray(0, 4).toString('latin1')).toBe('RIFF');
    expect(wavShape(wav)).toEqual({ rate: 48000, dataBytes: 2 * 3840 * 2 });
    const m = await wsTts(h, { voice_id: uid, output_format: 'pcm_16000' }, 'hi');
    expect(m[0]).toMatchObject({ type: 'ready', sample_rate: 16000 });
    expect(m.at(-1)).toMatchObject({ type: 'end_of_stream' });
    expect(audioBytes(m).length).toBe(2 * 1280 * 2);
  });
});

describe('WebSocket setup voice_id: a name and "default", as on POST', () => {
  it.each(['Emma', 'emma', 'Maximilian', 'default'])('voice_id %j: ready, audio, end_of_stream', async (voice_id) => {
    h = await startServer();
    const m = await wsTts(h, { voice_id, output_format: 'pcm' }, 'hi');
    expect(m[0]).toMatchObject({ type: 'ready' });
    expect(m.filter((x) => x['type'] === 'text').map((x) => x['text'])).toEqual(['hi']);
    expect(audioBytes(m).length).toBe(2 * 3840 * 2);
    expect(m.at(-1)).toMatchObject({ type: 'end_of_stream' });
  });

  it('an unknown name is an error before any audio; a setup `voice` key is ignored (the Python client sends it)', async () => {
    h = await startServer();
    const bad = await wsTts(h, { voice_id: 'Nobody', output_format: 'pcm' }, 'hi');
    expect(bad.at(-1)).toMatchObject({ type: 'error' });
    expect(String(bad.at(-1)!['message'])).toMatch(/Nobody/);
    expect(bad.some((x) => x['type'] === 'audio')).toBe(false);
    const ignored = await wsTts(h, { voice_id: LIBRARY_DEFAULT_VOICE_ID, voice: 'Nobody', output_format: 'pcm' }, 'hi');
    expect(ignored.at(-1)).toMatchObject({ type: 'end_of_stream' });
  });
});

const noEspeak = await espeakAvailable();

describe.skipIf(noEspeak !== undefined)('library voices on espeak-ng', () => {
  /** One short text per language. */
  const TEXT: Record<string, string> = { en: 'Good morning.', fr: 'Bonjour à tous.', de: 'Guten Morgen.', es: 'Buenos días.', pt: 'Bom dia.' };

  it('each id speaks its language\'s text: 200, 48 kHz, a timestamp for every word; its listing says the language', async () => {
    // The espeak voice each id is spoken with is one of its language's (what makes it speak it).
    const mapped = libraryVoices(catalogVoices());
    for (const [name, uid, language] of LIBRARY_VOICES) {
      const voice = (mapped.find((v) => v.uid === uid)?.params as { voice?: string } | undefined)?.voice;
      expect(ESPEAK_LANGUAGE_VOICES[language].map(([v]) => v), `${name}: ${voice}`).toContain(voice);
    }
    h = await startServer({ tts: 'espeak' });
    // 14 short texts: 4.5 s on this machine beside the suite, 70 s beside the suite and two CPU hogs.
    for (const [name, uid, language] of LIBRARY_VOICES) {
      const v = (await (await fetch(`${h.base}/voices/${uid}`, { headers: { 'x-api-key': h.apiKey } })).json()) as { language: string; name: string };
      expect(v, uid).toMatchObject({ language, name });
      const text = TEXT[language]!;
      const r = await post(h, { text, voice_id: uid, output_format: 'wav', json_config: { temp: 0 } });
      expect(r.status, uid).toBe(200);
      const lines = (await r.text()).trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
      const words = lines.filter((l) => l['type'] === 'text').map((l) => l['text']);
      expect(words, `${name} ${uid}`).toEqual(text.split(' '));
      const wav = audioBytes(lines);
      expect(wavShape(wav).rate, uid).toBe(48000);
      // At least 0.4 s of speech.
      expect(wavShape(wav).dataBytes, uid).toBeGreaterThan(0.4 * 48000 * 2);
    }
  }, 180_000);

  it('on the WebSocket, voice_id "Emma", "emma" and "default" are Emma\'s voice (same bytes at temp 0), "Eva" is not', async () => {
    h = await startServer({ tts: 'espeak' });
    const hh = h;
    const say = async (voice_id: string): Promise<Buffer> => {
      const m = await wsTts(hh, { voice_id, output_format: 'pcm', json_config: { temp: 0 } }, 'Hello there.');
      expect(m.at(-1), voice_id).toMatchObject({ type: 'end_of_stream' });
      return audioBytes(m);
    };
    const emma = await say(LIBRARY_DEFAULT_VOICE_ID);
    expect(emma.length).toBeGreaterThan(9600);
    for (const alias of ['Emma', 'emma', 'default']) expect((await say(alias)).equals(emma), alias).toBe(true);
    expect((await say('Eva')).equals(emma)).toBe(false);
  }, 120_000);
});
