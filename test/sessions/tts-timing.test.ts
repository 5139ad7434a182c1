/**
 * Issue 7 through the TTS server runner: `audio` messages carry the encoded chunk's own span
 * (after resampling and Opus pre-skip), and each word timestamp goes out only after the audio that
 * completes it. Oracles: byte counts (bytes / rate for raw PCM) and the Ogg pages' granule
 * positions (RFC 7845 §4: granule − pre-skip = 48 kHz samples decoded so far), read by a naive
 * page walker written here.
 */
import { describe, expect, it } from 'vitest';
import { createScriptedTtsEngine, createTtsServerSession, type TtsOutputEncoder } from '../../src/index.js';
import { naiveOggPages } from '../helpers/ogg-pages.js';

type Msg = Record<string, unknown> & { type: string };

function run(format: string, text: string, options: { framesPerWord?: number; lookaheadWords?: number; createOutputEncoder?: () => TtsOutputEncoder } = {}): Msg[] {
  const out: Msg[] = [];
  const engine = createScriptedTtsEngine({ lookaheadWords: options.lookaheadWords ?? 1, framesPerWord: options.framesPerWord ?? 1 });
  const session = createTtsServerSession({
    engine,
    transport: { send: (t) => out.push(JSON.parse(t) as Msg), close: () => undefined },
    ...(options.createOutputEncoder ? { createOutputEncoder: options.createOutputEncoder } : {}),
  });
  session.receive(JSON.stringify({ type: 'setup', output_format: format, voice_id: 'v' }));
  for (const piece of text.split('|')) session.receive(JSON.stringify({ type: 'text', text: piece }));
  session.receive(JSON.stringify({ type: 'end_of_stream' }));
  expect(out.filter((m) => m.type === 'error')).toEqual([]);
  expect(out.at(-1)?.type).toBe('end_of_stream');
  return out;
}

interface Audio {
  start_s: number;
  stop_s: number;
  stream_id: unknown;
  bytes: Uint8Array;
}
const audioOf = (out: Msg[]): Audio[] =>
  out
    .filter((m) => m.type === 'audio')
    .map((m) => ({ start_s: m['start_s'] as number, stop_s: m['stop_s'] as number, stream_id: m['stream_id'], bytes: Buffer.from(m['audio'] as string, 'base64') }));

/** Every word comes after the first audio reaching its stop_s, and right after it (held no longer than needed). */
function checkWordOrder(out: Msg[], words: number): void {
  let sentStop = 0;
  let stopBeforeLastAudio = 0;
  let seen = 0;
  let prev: Msg | undefined;
  for (const m of out) {
    if (m.type === 'audio') {
      stopBeforeLastAudio = sentStop;
      sentStop = Math.max(sentStop, m['stop_s'] as number);
    } else if (m.type === 'text') {
      seen++;
      const stop = m['stop_s'] as number;
      expect(stop, `word ${String(m['text'])} after audio up to ${sentStop}`).toBeLessThanOrEqual(sentStop + 1e-6);
      // Not held longer than needed: the audio just before it (or the word before it) released it.
      expect(prev?.type === 'audio' || prev?.type === 'text').toBe(true);
      if (prev?.type === 'audio') expect(stop).toBeGreaterThan(stopBeforeLastAudio - 1e-6);
    }
    prev = m;
  }
  expect(seen).toBe(words);
}

function checkContiguous(audio: Audio[]): void {
  expect(audio[0]!.start_s).toBe(0);
  for (let i = 1; i < audio.length; i++) expect(audio[i]!.start_s).toBe(audio[i - 1]!.stop_s);
  for (const a of audio) expect(a.stop_s).toBeGreaterThanOrEqual(a.start_s);
}

/** The granule of the last page in `bytes` that completes a packet (RFC 3533 §6: others carry -1). */
function lastGranule(bytes: Uint8Array): number | null {
  const done = naiveOggPages(bytes).filter((p) => p.granule !== -1n);
  return done.length === 0 ? null : Number(done[done.length - 1]!.granule);
}

describe('TTS server: audio timing is the encoded chunk’s, words follow their audio (issue 7)', () => {
  it('pcm_8000: spans are contiguous and each equals its byte count / (2 · 8000)', () => {
    const out = run('pcm_8000', 'one two|three four five', { framesPerWord: 2 });
    const audio = audioOf(out);
    checkContiguous(audio);
    for (const a of audio) {
      expect(a.bytes.length % 2).toBe(0);
      expect(a.stop_s - a.start_s).toBeCloseTo(a.bytes.length / 2 / 8000, 9);
    }
    // 5 words × 2 frames × 80 ms = 0.8 s at 8 kHz.
    expect(audio.reduce((n, a) => n + a.bytes.length, 0)).toBe(0.8 * 8000 * 2);
    expect(audio.at(-1)!.stop_s).toBeCloseTo(0.8, 9);
    // The resampler's look-ahead makes the first chunk short: its word waits for the next chunk.
    expect(audio[0]!.stop_s).toBeLessThan(0.16);
    checkWordOrder(out, 5);
  });

  it('opus: spans are contiguous and each stop_s is the last page’s granule minus pre-skip', () => {
    const out = run('opus', 'alpha beta|gamma', { framesPerWord: 1 });
    const audio = audioOf(out);
    checkContiguous(audio);
    const head = audio[0]!.bytes;
    // OpusHead (RFC 7845 §5.1) is the first packet of page 0: pre-skip at offset 10 of the packet.
    const headStart = 27 + head[26]!;
    expect(String.fromCharCode(...head.subarray(headStart, headStart + 8))).toBe('OpusHead');
    const preSkip = head[headStart + 10]! | (head[headStart + 11]! << 8);
    expect(preSkip).toBeGreaterThan(0);
    for (const a of audio) {
      const g = lastGranule(a.bytes);
      expect(g).not.toBeNull();
      expect(a.stop_s).toBeCloseTo((g! - preSkip) / 48000, 9);
    }
    // The EOS page ends the timeline at the input length (3 frames of 80 ms).
    expect(audio.at(-1)!.stop_s).toBeCloseTo(0.24, 9);
    // Pre-skip: the first 80 ms frame decodes to less than 80 ms, so the first word waits.
    expect(audio[0]!.stop_s).toBeLessThan(0.08);
    checkWordOrder(out, 3);
  });

  it('the trailing chunk of end() carries the stream_id of the last frame and a real span', () => {
    const out = run('pcm_16000', 'a b c', { lookaheadWords: 0 });
    const last = audioOf(out).at(-1)!;
    expect(last.stream_id).toBe(0);
    expect(last.stop_s).toBeGreaterThan(last.start_s);
    expect(last.stop_s - last.start_s).toBeCloseTo(last.bytes.length / 2 / 16000, 9);
  });

  it('a custom encoder’s timing is used as is, and words wait for it', () => {
    // An encoder that sends nothing for the first frame, then two frames at once.
    const make = (): TtsOutputEncoder => {
      let n = 0;
      let pending = 0;
      let stop = 0;
      return {
        push(pcm) {
          n++;
          pending += pcm.length;
          if (n === 1) return { bytes: new Uint8Array(0), start_s: stop, stop_s: stop };
          const start = stop;
          stop += pending / 48000;
          const bytes = new Uint8Array(pending * 2);
          pending = 0;
          return { bytes, start_s: start, stop_s: stop };
        },
      };
    };
    const out = run('pcm', 'x y z', { lookaheadWords: 0, createOutputEncoder: make });
    expect(out.map((m) => (m.type === 'text' ? `w:${String(m['text'])}` : m.type))).toEqual(['ready', 'audio', 'w:x', 'w:y', 'audio', 'w:z', 'end_of_stream']);
  });
});
