/**
 * A server built from the runners alone (no factories passed) handles every audio format of the
 * API: the defaults are the audio pipelines. Checked against the WAV decoder and G.711 decoder.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { createScriptedSttEngine, createScriptedTtsEngine, createSttServerSession, createTtsServerSession } from '../../src/index.js';
import { decodeBase64, encodeBase64 } from '../../src/util/base64.js';
import { decodeWav } from '../../src/audio/wav.js';
import { decodeMulaw } from '../../src/audio/g711.js';

type Msg = Record<string, unknown>;

describe('server sessions with the default audio pipelines', () => {
  it('STT: a wav upload in odd-sized audio messages reaches the engine as exact 24 kHz frames', () => {
    const wav = new Uint8Array(readFileSync(new URL('../../fixtures/speech/en_24k.wav', import.meta.url)));
    const expected = decodeWav(wav, { output: 'int16' }).samples;
    const seen: Int16Array[] = [];
    const engine = createScriptedSttEngine({
      delayInFrames: 2,
      vad: (_i, frame) => {
        seen.push(frame.slice());
        return [{ horizon_s: 0.5, inactivity_prob: 0 }, { horizon_s: 1, inactivity_prob: 0 }, { horizon_s: 2, inactivity_prob: 0 }];
      },
    });
    const out: Msg[] = [];
    const closes: number[] = [];
    const session = createSttServerSession({ engine, transport: { send: (t) => out.push(JSON.parse(t) as Msg), close: (c) => closes.push(c) } });
    session.receive(JSON.stringify({ type: 'setup', input_format: 'wav' }));
    for (let at = 0; at < wav.length; at += 1001) {
      session.receive(JSON.stringify({ type: 'audio', audio: encodeBase64(wav.subarray(at, at + 1001)) }));
    }
    session.receive(JSON.stringify({ type: 'end_of_stream' }));
    expect(out.filter((m) => m['type'] === 'error')).toEqual([]);
    expect(out.at(-1)?.['type']).toBe('end_of_stream');
    for (const f of seen) expect(f.length).toBe(1920);
    const got = new Int16Array(seen.length * 1920);
    seen.forEach((f, i) => got.set(f, i * 1920));
    expect(got.subarray(0, expected.length)).toEqual(expected);
    expect(seen.length).toBe(Math.ceil(expected.length / 1920) + 2); // + delay_in_frames of silence
  });

  it('STT: a corrupt wav is the client\'s fault: error 1008, not 1011', () => {
    const out: Msg[] = [];
    const session = createSttServerSession({ engine: createScriptedSttEngine(), transport: { send: (t) => out.push(JSON.parse(t) as Msg), close: () => {} } });
    session.receive(JSON.stringify({ type: 'setup', input_format: 'wav' }));
    session.receive(JSON.stringify({ type: 'audio', audio: encodeBase64(new TextEncoder().encode('this is not a wav file at all')) }));
    const err = out.find((m) => m['type'] === 'error');
    expect(err?.['code']).toBe(1008);
  });

  it('TTS: ulaw_8000 output totals 640 bytes per 80 ms model frame; each chunk spans its byte count at 8 kHz', () => {
    const out: Msg[] = [];
    const engine = createScriptedTtsEngine({ lookaheadWords: 0, framesPerWord: 2 });
    const session = createTtsServerSession({ engine, transport: { send: (t) => out.push(JSON.parse(t) as Msg), close: () => {} } });
    session.receive(JSON.stringify({ type: 'setup', output_format: 'ulaw_8000', voice_id: 'v' }));
    session.receive(JSON.stringify({ type: 'text', text: 'one two three' }));
    session.receive(JSON.stringify({ type: 'end_of_stream' }));
    expect(out.filter((m) => m['type'] === 'error')).toEqual([]);
    const messages = out.filter((m) => m['type'] === 'audio');
    const audio = messages.map((m) => decodeBase64(m['audio'] as string));
    const nonEmpty = audio.filter((a) => a.length > 0);
    // One chunk per frame plus the resampler's tail from end(): the first chunk is short (the
    // resampler waits for its look-ahead), the tail makes up the difference.
    expect(nonEmpty.length).toBeGreaterThanOrEqual(6);
    const total = nonEmpty.reduce((n, a) => n + a.length, 0);
    expect(total).toBe(6 * 640); // 3 words × 2 frames × 80 ms at 8 kHz, one byte per sample
    messages.forEach((m, i) => {
      // μ-law: one byte per 8 kHz sample, so a chunk's span is its byte count / 8000 (issue 7).
      expect(((m['stop_s'] as number) - (m['start_s'] as number)) * 8000).toBeCloseTo(audio[i]!.length, 6);
      if (i > 0) expect(m['start_s']).toBe(messages[i - 1]!['stop_s']);
    });
    // Word k is spoken as samples of value k: after resampling its middle decodes close to k.
    const pcm = decodeMulaw(nonEmpty[2]!);
    expect(Math.abs(pcm[320]! - 2)).toBeLessThanOrEqual(2);
  });
});
