/**
 * espeak-ng TTS as the service's clients use it (issue 21): temp 0 gives identical bytes, a
 * phoneme pronunciation rule written in espeak's own `[[…]]` form is spoken, every catalog voice
 * loads its own espeak voice (en-gb and fr-fr did not), and cfg_coef is honoured.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { espeakAvailable, loadEspeak } from '../../src/engines/espeak-module.js';
import { speak, testContext, voiceOf } from './espeak-helpers.js';
import { espeakVoiceFile } from '../../src/engines/espeak-tts.js';
import { ESPEAK_LANGUAGE_VOICES, catalogVoices } from '../../src/engines/espeak-voices.js';
import { startServer } from '../server/harness.js';

const same = (a: Int16Array, b: Int16Array): boolean => Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));

describe('espeak-ng as a drop-in', () => {
  beforeAll(async () => {
    expect(await espeakAvailable()).toBeUndefined();
    await loadEspeak();
  }, 20000);

  it('temp 0: two identical requests give identical bytes, whatever was spoken in between', async () => {
    const text = ['Hello there, how are you today? Sixty-six fishes swim by.'];
    for (const voiceId of ['espeak-en-ava', 'espeak-en-oliver', 'espeak-de-klaus']) {
      const a = await speak(text, { voiceId, jsonConfig: { temp: 0 } });
      await speak(['Something else entirely, and more of it.'], { voiceId: voiceOf('fr') });
      await speak(['Etwas ganz anderes.'], { voiceId: 'espeak-de-jonas', jsonConfig: { temp: 0 } });
      const b = await speak(text, { voiceId, jsonConfig: { temp: 0 } });
      expect(a.pcm.length, voiceId).toBeGreaterThan(48000);
      expect(same(a.pcm, b.pcm), voiceId).toBe(true);
      expect(b.words).toEqual(a.words);
    }
  }, 60000);

  it('every espeak voice of the five languages loads (set_voice answers 0; en-gb and fr-fr answered 2)', async () => {
    const w = await loadEspeak();
    for (const [voice] of Object.values(ESPEAK_LANGUAGE_VOICES).flat()) expect(w.set_voice(espeakVoiceFile(voice)), voice).toBe(0);
    for (const v of catalogVoices()) {
      const p = v.params as { voice: string; variant?: string };
      expect(w.set_voice(`${espeakVoiceFile(p.voice)}+${p.variant}`), v.uid).toBe(0);
    }
  });

  it('every catalog voice loads its own espeak voice: what was spoken before does not change it (en-gb, fr-fr)', async () => {
    for (const voiceId of ['espeak-en-oliver', 'espeak-fr-camille', 'espeak-fr-louis']) {
      await speak(['Hello there.'], { voiceId: 'espeak-en-ava', jsonConfig: { temp: 0 } });
      const afterEnglish = await speak(['Bonjour à tous.'], { voiceId, jsonConfig: { temp: 0 } });
      await speak(['Guten Tag.'], { voiceId: 'espeak-de-hanna', jsonConfig: { temp: 0 } });
      const afterGerman = await speak(['Bonjour à tous.'], { voiceId, jsonConfig: { temp: 0 } });
      expect(same(afterEnglish.pcm, afterGerman.pcm), voiceId).toBe(true);
    }
  }, 60000);

  it("a phoneme rule in espeak's own form, world → [[w'3:ld]], is spoken and keeps its timestamp", async () => {
    const dict = { uid: 'dict-ph', language: 'en', rules: [{ word: 'world', replacement: "[[w'3:ld]]", kind: 'phonemes' as const }, { word: 'tomato', replacement: "t@m'A:toU", kind: 'phonemes' as const }] };
    const ctx = testContext({ dicts: [dict] });
    for (const calls of [['hello world'], ['hello', 'world.'], ['hello world and a tomato.']]) {
      const r = await speak(calls, { voiceId: voiceOf('en'), pronunciationId: 'dict-ph' }, ctx);
      const said = calls.join(' ').split(' ');
      expect(r.words.map((w) => w.text), calls.join('|')).toEqual(said);
      const world = r.words[1]!;
      expect(world.stop_s - world.start_s).toBeGreaterThan(0.15);
    }
  });

  it('cfg_coef is honoured: 1 draws the voice toward espeak\'s neutral voice, 4 away from it', async () => {
    const text = ['The weather is lovely today.'];
    const at = (cfg_coef: number) => speak(text, { voiceId: 'espeak-en-oliver', jsonConfig: { temp: 0, cfg_coef } });
    const [one, two, four, dflt] = [await at(1), await at(2), await at(4), await speak(text, { voiceId: 'espeak-en-oliver', jsonConfig: { temp: 0 } })];
    expect(same(two.pcm, dflt.pcm)).toBe(true);
    expect(same(one.pcm, two.pcm)).toBe(false);
    expect(same(four.pcm, two.pcm)).toBe(false);
    // Oliver is slower than espeak's 175 wpm: more similarity, slower still.
    expect(four.pcm.length).toBeGreaterThan(two.pcm.length);
    expect(one.pcm.length).toBeLessThan(two.pcm.length);
  }, 60000);

  it('served by espeak, the library voices speak in their language and gender: Eva (en-gb) and Emma differ, Sergio speaks', async () => {
    const h = await startServer({ tts: 'espeak' });
    try {
      const say = async (voice_id: string, text: string): Promise<Buffer> => {
        const r = await fetch(`${h.base}/post/speech/tts`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': h.apiKey },
          body: JSON.stringify({ text, voice_id, output_format: 'pcm', only_audio: true, json_config: { temp: 0 } }),
        });
        expect(r.status, voice_id).toBe(200);
        return Buffer.from(await r.arrayBuffer());
      };
      const emma = await say('YTpq7expH9539ERJ', 'Hello there.');
      const eva = await say('ubuXFxVQwVYnZQhy', 'Hello there.');
      expect(emma.length).toBeGreaterThan(9600);
      expect(eva.equals(emma)).toBe(false);
      expect(eva.equals(await say('ubuXFxVQwVYnZQhy', 'Hello there.'))).toBe(true);
      expect((await say('xu7iJ_fn2ElcWp2s', 'Buenos días.')).length).toBeGreaterThan(9600);
      expect((await say('Emma', 'Hello there.')).equals(emma)).toBe(true);
    } finally {
      await h.close();
    }
  }, 60000);
});
