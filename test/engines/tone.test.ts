/**
 * The tone engines: TTS timing is exact, and STT hears TTS back through every STT input format of
 * §4.4 (the library's own encoders, resamplers and G.711/Opus codecs in between).
 */
import { describe, expect, it } from 'vitest';
import { createToneSttEngine, createToneTtsEngine } from '../../src/engines/tone.js';
import type { EngineContext } from '../../src/engines/registry.js';
import type { SttEngineEvent, TtsEngineEvent } from '../../src/sessions/engine.js';
import { createTtsOutputEncoder } from '../../src/pipelines/tts-audio-encoder.js';
import { createSttInputDecoder } from '../../src/pipelines/stt-audio-decoder.js';
import { initOpus } from '../../src/audio/opus.js';
import { concatChunks, int16View } from '../../src/util/bytes.js';
import { resampleInt16 } from '../../src/audio/resampler.js';
import type { AudioFormatName } from '../../src/audio/format.js';

const ctx: EngineContext = {
  resolveVoice: async (id) => (id === 'v' ? ({ uid: 'v' } as never) : undefined),
  resolvePronunciation: async (id) => (id === 'd' ? { uid: 'd', language: 'en', rules: [{ word: 'Dr', replacement: 'doctor', kind: 'respelling' }] } : undefined),
};

async function speak(text: string, jsonConfig: Record<string, unknown> = {}, pronunciationId?: string): Promise<{ frames: Int16Array[]; words: Array<{ text: string; start_s: number; stop_s: number }> }> {
  const events: TtsEngineEvent[] = [];
  const config = { modelName: 'default', outputFormat: 'pcm' as AudioFormatName, jsonConfig, ...(pronunciationId ? { pronunciationId } : {}) };
  const s = await createToneTtsEngine(ctx).open(config, (e) => events.push(e));
  await s.text(text);
  await s.end();
  return {
    frames: events.filter((e) => e.type === 'audio').map((e) => (e as { pcm: Int16Array }).pcm),
    words: events.filter((e) => e.type === 'word').map((e) => ({ text: (e as { text: string }).text, start_s: (e as { start_s: number }).start_s, stop_s: (e as { stop_s: number }).stop_s })),
  };
}

async function hear(pcm24k: Int16Array): Promise<string[]> {
  const events: SttEngineEvent[] = [];
  const s = await createToneSttEngine(ctx).open({ modelName: 'default', inputFormat: 'pcm', jsonConfig: {} }, (e) => events.push(e));
  const padded = new Int16Array(Math.ceil(pcm24k.length / 1920) * 1920 + 1920);
  padded.set(pcm24k);
  for (let o = 0; o < padded.length; o += 1920) await s.push(padded.subarray(o, o + 1920));
  await s.end?.();
  return events.filter((e) => e.type === 'text').map((e) => (e as { text: string }).text);
}

describe('tone TTS', () => {
  it('one 80 ms frame per character, words two frames apart, exact word timestamps', async () => {
    const { frames, words } = await speak('ab cde');
    expect(frames).toHaveLength(2 + 2 + 3);
    expect(words).toEqual([
      { text: 'ab', start_s: 0, stop_s: 0.16 },
      { text: 'cde', start_s: 0.32, stop_s: 0.56 },
    ]);
  });

  it('padding_bonus widens (or narrows, down to one frame) the gap between words', async () => {
    expect((await speak('a b', { padding_bonus: 2 })).frames).toHaveLength(1 + 4 + 1);
    expect((await speak('a b', { padding_bonus: -4 })).frames).toHaveLength(1 + 1 + 1);
  });

  it('a pronunciation dictionary respells words; an unknown voice is VOICE_NOT_FOUND', async () => {
    expect((await speak('Dr', {}, 'd')).frames).toHaveLength('doctor'.length);
    await expect(createToneTtsEngine(ctx).open({ modelName: 'default', outputFormat: 'pcm', jsonConfig: {}, voiceId: 'nope' }, () => {})).rejects.toMatchObject({ code: 'VOICE_NOT_FOUND' });
  });
});

describe('tone TTS frames (issue 22: no sine per sample, no array per frame)', () => {
  it('are the continuous-phase tone, and a character at the same phase is the same shared array', async () => {
    const { frames } = await speak('aaaaaaaaaaaa bb');
    expect(frames).toHaveLength(12 + 2 + 2);
    // Phase continues across frames: sample n of frame k is the tone at k·3840 + n.
    const w = (2 * Math.PI * 300) / 48000;
    for (let k = 0; k < 12; k++) {
      let worst = 0;
      for (let n = 0; n < 3840; n++) worst = Math.max(worst, Math.abs(frames[k]![n]! - Math.round(8000 * Math.sin(w * (k * 3840 + n)))));
      expect(worst).toBeLessThanOrEqual(1);
    }
    // 0.08 s of any tone is a whole number of cycles plus a multiple of 0.4 of one: five phases.
    expect(frames[5]).toBe(frames[0]);
    expect(frames[11]).toBe(frames[6]);
    expect(frames[1]).not.toBe(frames[0]);
    // Silence is one zero frame.
    expect(frames[12]).toBe(frames[13]);
    expect(frames[12]!.every((x) => x === 0)).toBe(true);
  });
});

describe('tone STT hears tone TTS', () => {
  it('a last tone lengthened by 40 ms (a microphone path under load) is not one letter more; by a whole slot it is', async () => {
    const { frames } = await speak('world');
    const pcm48 = concatChunks(frames, (n) => new Int16Array(n));
    const pcm = resampleInt16(pcm48, 48000, 24000);
    let end = pcm.length;
    while (end > 0 && Math.abs(pcm[end - 1]!) < 100) end--;
    const lengthened = (ms: number): Int16Array => {
      const extra = (24000 * ms) / 1000;
      const out = new Int16Array(pcm.length + extra);
      out.set(pcm.subarray(0, end));
      // The last tone again, continued from the 80 ms before the end: same frequency, no gap.
      out.set(pcm.subarray(end - 1920, end - 1920 + extra), end);
      out.set(pcm.subarray(end), end + extra);
      return out;
    };
    expect(await hear(pcm)).toEqual(['world']);
    // Rounding read 22 blocks as 6 letters ("worldd", issue 25's page test under load).
    expect(await hear(lengthened(40))).toEqual(['world']);
    expect(await hear(lengthened(80))).toEqual(['worldd']);
  });

  const formats: AudioFormatName[] = ['pcm_24000', 'pcm_16000', 'pcm_8000', 'ulaw_8000', 'alaw_8000', 'opus', 'wav'];
  it.each(formats)('through %s', async (format) => {
    await initOpus();
    const text = "hello world it's 2025";
    const { frames } = await speak(text);
    const enc = createTtsOutputEncoder(format, 48000);
    const parts: Uint8Array[] = [];
    for (const f of frames) parts.push(enc.push(f).bytes);
    if (enc.end) parts.push(enc.end().bytes);
    // STT reads raw pcm as 24 kHz: name the rate of other raw PCM explicitly.
    const dec = createSttInputDecoder(format === 'pcm_24000' ? 'pcm' : format);
    const out: Uint8Array[] = [];
    const pushOut = (x: Uint8Array | Int16Array): void => void out.push(x instanceof Int16Array ? new Uint8Array(x.buffer, x.byteOffset, x.byteLength) : x);
    pushOut(dec.push(concatChunks(parts, (n) => new Uint8Array(n))));
    pushOut(dec.end());
    expect(await hear(int16View(concatChunks(out, (n) => new Uint8Array(n))))).toEqual(['hello', 'world', "it's", '2025']);
  });
});

describe('tone TTS json_config.rewrite_rules (§2.8: honoured, not ignored)', () => {
  it('rewrites each word with the named rules; the word events carry the words said', async () => {
    const { words } = await speak('at 12:30 on 12/31/2020 call +1-555-123-4567', { rewrite_rules: 'TimeEn,Date,PhoneEn' });
    expect(words.map((w) => w.text)).toEqual(['at', '12.30', 'on', '12-31', '2020', 'call', 'plus', '1,', '5', '5', '5,', '1', '2', '3,', '4', '5', '6', '7']);
    // Every word is still one tone per character, two silent frames apart, on the 80 ms grid.
    expect(words[1]).toEqual({ text: '12.30', start_s: 0.32, stop_s: 0.72 });
    expect(words[3]).toEqual({ text: '12-31', start_s: 1.2, stop_s: 1.6 });
  });

  it('a language alias enables its rules; without rewrite_rules the words are said as sent', async () => {
    expect((await speak('1234', { rewrite_rules: 'en' })).words.map((w) => w.text)).toEqual(['1', 'thousand', '234']);
    expect((await speak('1234 12:30')).words.map((w) => w.text)).toEqual(['1234', '12:30']);
  });

  it('a pronunciation respelling wins over the rewrite rules for its word (as espeak does)', async () => {
    const { frames, words } = await speak('Dr 1234', { rewrite_rules: 'NumberEn' }, 'd');
    expect(words.map((w) => w.text)).toEqual(['Dr', '1', 'thousand', '234']);
    expect(frames).toHaveLength('doctor'.length + 2 + 1 + 2 + 'thousand'.length + 2 + 3);
  });

  it('the tone STT hears the rewritten words back', async () => {
    const { frames } = await speak('at 12:30', { rewrite_rules: 'TimeFr' });
    const pcm = resampleInt16(concatChunks(frames, (n) => new Int16Array(n)), 48000, 24000);
    expect(await hear(pcm)).toEqual(['at', '12h30']);
  });
});
