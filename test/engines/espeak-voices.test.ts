import { describe, expect, it } from 'vitest';
import { catalogVoices, designVoices, estimateVoiceFromSample, normalizeVoiceParams } from '../../src/engines/espeak-voices.js';
import { speak, testContext } from './espeak-helpers.js';

describe('espeak voices', () => {
  it('the catalog has 3–4 voices per language with stable unique uids and the §2.1 attributes', () => {
    const voices = catalogVoices();
    expect(new Set(voices.map((v) => v.uid)).size).toBe(voices.length);
    expect(catalogVoices().map((v) => v.uid)).toEqual(voices.map((v) => v.uid));
    for (const lang of ['en', 'fr', 'de', 'es', 'pt']) {
      const n = voices.filter((v) => v.language === lang).length;
      expect(n).toBeGreaterThanOrEqual(3);
      expect(n).toBeLessThanOrEqual(4);
    }
    for (const v of voices) {
      expect(v.orgId).toBeNull();
      expect(v.tags[0]).toBe(v.language);
      expect(['Young Adult', 'Adult', 'Mature']).toContain(v.tags[2]);
      expect(['Feminine', 'Masculine', 'Neutral']).toContain(v.tags[3]);
      expect(normalizeVoiceParams(v.params, v.language)).toEqual(v.params);
    }
  });

  it('voice design is deterministic in prompt and seed, and prompt words move the parameters', () => {
    const d = (prompt: string, seed = 1) => designVoices({ prompt, nSamples: 3, language: 'en', seed });
    expect(d('a calm woman')).toEqual(d('a calm woman'));
    expect(d('a calm woman', 2)).not.toEqual(d('a calm woman', 1));
    const avg = (ps: ReturnType<typeof d>, k: 'pitch' | 'rate' | 'range') => ps.reduce((s, p) => s + p[k], 0) / ps.length;
    expect(avg(d('a deep voice'), 'pitch')).toBeLessThan(avg(d('a high voice'), 'pitch'));
    expect(avg(d('a fast speaker'), 'rate')).toBeGreaterThan(avg(d('a slow speaker'), 'rate'));
    expect(avg(d('a monotone speaker'), 'range')).toBeLessThan(avg(d('an expressive speaker'), 'range'));
    expect(d('an old woman').every((p) => p.variant!.startsWith('f'))).toBe(true);
    expect(d('a young man').every((p) => p.variant!.startsWith('m'))).toBe(true);
    expect(d('a scottish man')[0]!.voice).toBe('en-gb-scotland');
    expect(designVoices({ prompt: 'a brazilian woman', nSamples: 2, language: 'pt' })[0]!.voice).toBe('pt-br');
    // Candidates are variations on one character: same voice and variant, close parameters.
    const c = designVoices({ prompt: 'a friendly narrator', nSamples: 5, language: 'fr', seed: 7 });
    expect(c).toHaveLength(5);
    expect(new Set(c.map((p) => `${p.voice}+${p.variant}`)).size).toBe(1);
    expect(Math.max(...c.map((p) => p.pitch)) - Math.min(...c.map((p) => p.pitch))).toBeLessThanOrEqual(8);
  });

  it('a voice from a sample follows the sample\'s pitch and rate', async () => {
    const mk = (uid: string, params: Record<string, unknown>) => ({ uid, language: 'en', params: { voice: 'en-us', range: 50, ...params } });
    const ctx = testContext({ voices: [mk('low', { variant: 'm3', pitch: 25, rate: 175 }), mk('high', { variant: 'm3', pitch: 75, rate: 175 }), mk('slow', { variant: 'm3', pitch: 50, rate: 120 }), mk('fast', { variant: 'm3', pitch: 50, rate: 260 })] });
    const text = 'Every morning we walk along the river and talk about the day ahead of us.';
    const est = async (uid: string) => estimateVoiceFromSample((await speak([text], { voiceId: uid }, ctx)).pcm, 48000);
    const [low, high, slow, fast] = await Promise.all(['low', 'high', 'slow', 'fast'].map(est));
    expect(low!.f0Hz).toBeLessThan(high!.f0Hz!);
    expect(low!.params.pitch).toBeLessThan(high!.params.pitch);
    expect(slow!.params.rate).toBeLessThan(fast!.params.rate);
    expect(estimateVoiceFromSample(new Int16Array(48000), 48000).params).toEqual(normalizeVoiceParams(undefined, 'en'));
  });

  it('a sample rate below 8 kHz, or not a rate, is INVALID_ARGUMENT (40 Hz made the 10 ms hop 0: the loop grew an array until V8 aborted the process)', () => {
    for (const rate of [40, 0, 7999, 8000.5, NaN, '48000', null]) {
      expect(() => estimateVoiceFromSample(new Int16Array(4000), rate as number)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    }
    expect(() => estimateVoiceFromSample([1, 2, 3] as unknown as Int16Array, 48000)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(estimateVoiceFromSample(new Int16Array(4000), 8000).params).toEqual(normalizeVoiceParams(undefined, 'en'));
  });
});
