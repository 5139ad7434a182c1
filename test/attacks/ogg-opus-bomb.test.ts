/**
 * Issue 11 §4: an Ogg Opus decompression bomb. Pages of 255 two-byte 120 ms packets: 1 MB of
 * input is ~10.7 hours of audio. One push of it into the STT input decoder returned a 1.86 GB
 * array (3.9 GB RSS, 12 s). Now a push decodes at most `maxSamplesPerPush` (1 s) plus one page,
 * the rest is queued (packets only) for `pull()`, and `maxDecodedSeconds` caps the request.
 */
import { describe, expect, it } from 'vitest';
import { OggPageWriter } from '../../src/audio/ogg.js';
import { buildOpusHead, buildOpusTags } from '../../src/audio/opus-head.js';
import { createSttAudioDecoder, createSttInputDecoder } from '../../src/pipelines/stt-audio-decoder.js';
import { caught } from '../helpers/errors.js';

/** An Ogg Opus stream of `bytes` bytes or more: pages of 255 code-3 packets of six empty 20 ms CELT frames (120 ms, 2 bytes each). */
function bomb(bytes: number): { ogg: Uint8Array; seconds: number } {
  const w = new OggPageWriter({ serial: 1 });
  const parts: Uint8Array[] = [];
  w.addPacket(buildOpusHead({ channelCount: 1, preSkip: 312, inputSampleRate: 48000, outputGain: 0 }), 0);
  parts.push(...w.flushPage());
  w.addPacket(buildOpusTags({ vendor: 'bomb', comments: [] }), 0);
  parts.push(...w.flushPage());
  const packet = Uint8Array.of((31 << 3) | 3, 6); // TOC: CELT FB 20 ms, code 3; 6 frames, CBR, no padding
  let granule = 0;
  let size = parts.reduce((n, p) => n + p.length, 0);
  while (size < bytes) {
    for (let i = 0; i < 255; i++) w.addPacket(packet, (granule += 5760));
    for (const p of w.flushPage()) {
      parts.push(p);
      size += p.length;
    }
  }
  const ogg = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    ogg.set(p, at);
    at += p.length;
  }
  return { ogg, seconds: granule / 48000 };
}

describe('Ogg Opus decompression bomb', () => {
  const { ogg, seconds } = bomb(1_000_000);

  it('is hours of audio in 1 MB', () => {
    expect(seconds).toBeGreaterThan(10 * 3600);
  });

  it('one push of 1 MB decodes at most 1 s plus one page (30.6 s), queues the rest, and pull() continues in bounded pieces', () => {
    const dec = createSttAudioDecoder('opus');
    const t0 = performance.now();
    const frames = dec.push(ogg);
    const ms = performance.now() - t0;
    const maxFrames = Math.ceil(((1 + 30.6) * 24000) / 1920);
    expect(frames.length).toBeGreaterThan(0);
    expect(frames.length).toBeLessThanOrEqual(maxFrames);
    expect(ms).toBeLessThan(2000); // before: 12 s and a 1.86 GB array
    expect(dec.pending).toBeGreaterThan(10 * 3600 * 24000);
    let pulled = 0;
    for (let i = 0; i < 5; i++) {
      const more = dec.pull();
      expect(more.length).toBeLessThanOrEqual(maxFrames);
      pulled += more.length;
    }
    expect(pulled).toBeGreaterThan(0);
    dec.destroy();
  });

  it('maxDecodedSeconds ends the request with AUDIO_LIMIT_EXCEEDED (1008) before decoding past it, flush included', () => {
    const dec = createSttAudioDecoder('opus', { maxDecodedSeconds: 120 });
    dec.push(ogg);
    const t0 = performance.now();
    const err = caught(() => {
      for (;;) dec.pull();
    });
    expect(err.code).toBe('AUDIO_LIMIT_EXCEEDED');
    expect(err.closeCode).toBe(1008);
    expect(dec.total_duration_s).toBeLessThanOrEqual(121);
    expect(performance.now() - t0).toBeLessThan(2000);
    dec.destroy();

    const server = createSttInputDecoder('opus', { maxDecodedSeconds: 60 });
    const first = server.push(ogg);
    expect(first.length).toBeLessThanOrEqual((1 + 30.6) * 24000);
    expect(caught(() => server.end()).code).toBe('AUDIO_LIMIT_EXCEEDED');
  });

  it('pushBase64 reports the cap as AUDIO_LIMIT_EXCEEDED, not as undecodable audio', () => {
    const dec = createSttAudioDecoder('opus', { maxDecodedSeconds: 10, maxSamplesPerPush: 48000 });
    expect(caught(() => dec.pushBase64(Buffer.from(ogg.subarray(0, 20_000)).toString('base64'))).code).toBe('AUDIO_LIMIT_EXCEEDED');
    dec.destroy();
  });
});

describe('Ogg Opus decompression bomb through the server', () => {
  it('one STT WebSocket message of a 200 kB bomb: decoded a bounded piece at a time, ended at the session limit (120 s, four pages) with 1008, the server serving on', async () => {
    const { startServer, connect } = await import('../server/harness.js');
    const h = await startServer({ limits: { sessionSeconds: 120 } });
    try {
      const { ogg, seconds } = bomb(200_000);
      expect(seconds).toBeGreaterThan(3600);
      const c = connect(`${h.wsBase}/speech/asr`, { 'x-api-key': h.apiKey });
      c.send({ type: 'setup', input_format: 'opus' });
      c.send({ type: 'audio', audio: Buffer.from(ogg).toString('base64') });
      const t0 = Date.now();
      const err = await c.waitFor((m) => m['type'] === 'error');
      expect(err).toMatchObject({ code: 1008 });
      expect(String(err['message'])).toMatch(/decodes to more than/);
      expect(Date.now() - t0).toBeLessThan(10_000);
      // The queued pages were decoded after the message (a push decodes one page, 30.6 s) up to the
      // 120 s the session may hold: at most 1,500 steps of 80 ms reached the engine.
      const steps = c.messages.filter((m) => m['type'] === 'step').length;
      expect(steps).toBeGreaterThan(30.6 / 0.08);
      expect(steps).toBeLessThanOrEqual(1510);
      const ok = await fetch(`${h.base}/healthz`);
      expect(ok.status).toBe(200);
    } finally {
      await h.close();
    }
  }, 30_000);
});
