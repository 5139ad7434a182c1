/**
 * voicewire/livekit against the real @livekit/agents, driven as LiveKit's own plugin tests drive
 * theirs (the stream classes, no LiveKit server), and the built `voicewire serve`: the tone TTS
 * engine (word timing on the 80 ms grid) and pocketsphinx on a LibriVox recording.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { APIConnectionError, APIStatusError, initializeLogger, stt as lkstt, tts as lktts, type APIConnectOptions } from '@livekit/agents';
import { AudioFrame } from '@livekit/rtc-node';
import { STT, TTS } from '../../src/livekit/index.js';
import type { WebSocketFactory, WebSocketLike } from '../../src/client/socket.js';
import { resampleInt16 } from '../../src/audio/resampler.js';
import { startBuiltServer, type BuiltServer, stopBuiltServer } from '../product/built-server.js';
import { describeBuilt } from '../product/describe-built.js';

initializeLogger({ pretty: false, level: 'silent' });

/** The `ws` factory the plugin uses by default, counting the sockets it opens. */
function countingSockets(): { factory: WebSocketFactory; opened: () => number } {
  let n = 0;
  return {
    factory: (url, headers) => {
      n++;
      return new WebSocket(url, { headers }) as unknown as WebSocketLike;
    },
    opened: () => n,
  };
}

type Audio = lktts.SynthesizedAudio;

async function drainTts(stream: AsyncIterable<Audio | typeof lktts.SynthesizeStream.END_OF_STREAM>): Promise<{ frames: Audio[]; ended: boolean }> {
  const frames: Audio[] = [];
  let ended = false;
  for await (const a of stream) {
    if (a === lktts.SynthesizeStream.END_OF_STREAM) ended = true;
    else frames.push(a);
  }
  return { frames, ended };
}

/** The LibriVox fixture's samples (16 kHz mono s16le after its 44-byte header). */
const wav = readFileSync(new URL('../../fixtures/speech/librivox-0880.wav', import.meta.url));
const speech16k = new Int16Array(wav.buffer.slice(wav.byteOffset + 44, wav.byteOffset + wav.length));
const TRUTH = ['he', 'was', 'not', 'an', 'ill', 'disposed', 'young', 'man'];
const heard = (text: string): number => TRUTH.filter((w) => text.toLowerCase().split(/\s+/).includes(w)).length;

describeBuilt('voicewire/livekit with @livekit/agents against the built server (tone TTS, pocketsphinx STT)', () => {
  let s: BuiltServer | undefined;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'voicewire-livekit-'));
    s = await startBuiltServer({ dataDir: join(dir, 'data'), maxRssBytes: 1.5 * 2 ** 30, args: ['--tts', 'tone'] });
  }, 120_000);
  afterAll(async () => {
    await stopBuiltServer(s, dir);
  }, 30_000);

  it('TTS stream: pushText pieces and flush → frames as they come, aligned words, the last frame final; two streams share one socket', async () => {
    const sockets = countingSockets();
    const tts = new TTS({ baseUrl: s!.base, apiKey: s!.key, sampleRate: 24000, webSocket: sockets.factory });
    expect(tts.capabilities).toEqual({ streaming: true, alignedTranscript: true });
    const a = tts.stream();
    const b = tts.stream();
    // LLM tokens cut inside words; flush in the middle (the protocol's <flush>).
    for (const piece of ['Hel', 'lo the', 're, how', ' are']) a.pushText(piece);
    a.flush();
    a.pushText(' you today?');
    a.endInput();
    b.pushText('Second stream here.');
    b.endInput();
    const [ra, rb] = await Promise.all([drainTts(a), drainTts(b)]);
    for (const r of [ra, rb]) {
      expect(r.ended).toBe(true);
      expect(r.frames.length).toBeGreaterThan(3);
      for (const f of r.frames) expect(f.frame.sampleRate).toBe(24000);
      expect(r.frames.filter((f) => f.final)).toEqual([r.frames.at(-1)]);
    }
    const words = ra.frames.flatMap((f) => f.timedTranscripts ?? []);
    expect(words.map((w) => w.text.trim())).toEqual(['Hello', 'there,', 'how', 'are', 'you', 'today?']);
    for (let i = 0; i < words.length; i++) {
      expect(words[i]!.endTime!).toBeGreaterThan(words[i]!.startTime!);
      if (i > 0) expect(words[i]!.startTime!).toBeGreaterThanOrEqual(words[i - 1]!.endTime!);
    }
    // The words lie inside the audio: the last one ends before the frames do.
    const seconds = ra.frames.reduce((t, f) => t + f.frame.samplesPerChannel / f.frame.sampleRate, 0);
    expect(words.at(-1)!.endTime!).toBeLessThanOrEqual(seconds + 0.08);
    expect(sockets.opened()).toBe(1);
    expect(tts._openRequests).toBe(0);
    await tts.close();
  }, 60_000);

  it('TTS stream closed mid-speech (an interruption): its request is abandoned, the shared socket serves the next stream', async () => {
    const sockets = countingSockets();
    const tts = new TTS({ baseUrl: s!.base, apiKey: s!.key, webSocket: sockets.factory });
    const first = tts.stream();
    first.pushText('This answer is long enough to be interrupted before it ends, one word after another, on and on.');
    first.endInput();
    let frames = 0;
    for await (const a of first) {
      if (a === lktts.SynthesizeStream.END_OF_STREAM) break;
      if (++frames === 2) first.close();
    }
    expect(frames).toBeGreaterThanOrEqual(2);
    await new Promise((r) => setTimeout(r, 50));
    expect(tts._openRequests).toBe(0);
    const second = tts.stream();
    second.pushText('Next.');
    second.endInput();
    const r = await drainTts(second);
    expect(r.ended).toBe(true);
    expect(r.frames.flatMap((f) => f.timedTranscripts ?? []).map((w) => w.text.trim())).toEqual(['Next.']);
    expect(sockets.opened()).toBe(1);
    await tts.close();
  }, 60_000);

  it('TTS synthesize(): a whole text as frames, collected', async () => {
    const tts = new TTS({ baseUrl: s!.base, apiKey: s!.key });
    const frame = await tts.synthesize('One two three four.').collect();
    expect(frame.sampleRate).toBe(48000);
    // The tone engine speaks each word for several 80 ms frames.
    expect(frame.samplesPerChannel / frame.sampleRate).toBeGreaterThan(4 * 0.16);
    await tts.close();
  }, 60_000);

  it('TTS with an unknown voice: APIStatusError 404, not retried', async () => {
    const sockets = countingSockets();
    const tts = new TTS({ baseUrl: s!.base, apiKey: s!.key, voiceId: 'no-such-voice', webSocket: sockets.factory });
    const errors: Error[] = [];
    tts.on('error', (e) => errors.push(e.error));
    const st = tts.stream({ connOptions: { maxRetry: 2, retryIntervalMs: 10, timeoutMs: 10_000 } });
    st.pushText('Hello.');
    st.endInput();
    await drainTts(st);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(APIStatusError);
    expect((errors[0] as APIStatusError).statusCode).toBe(404);
    expect((errors[0] as APIStatusError).retryable).toBe(false);
    expect(sockets.opened()).toBe(1);
    await tts.close();
  }, 60_000);

  for (const rate of [48000, 16000]) {
    it(`STT stream at ${rate} Hz: START_OF_SPEECH, interim transcripts, FINAL_TRANSCRIPT and END_OF_SPEECH from the service's steps and turn-taking`, async () => {
      const stt = new STT({ baseUrl: s!.base, apiKey: s!.key, language: 'en' });
      const samples = rate === 16000 ? speech16k : resampleInt16(speech16k, 16000, rate);
      // Half a second of silence, the sentence, 4 s of silence: the turn ends inside the input.
      const all = new Int16Array(samples.length + rate * 4.5);
      all.set(samples, rate / 2);
      const st = stt.stream();
      const step = rate / 50; // 20 ms frames, as a room sends them
      for (let i = 0; i + step <= all.length; i += step) st.pushFrame(new AudioFrame(all.slice(i, i + step), rate, 1, step));
      const events: lkstt.SpeechEvent[] = [];
      for await (const e of st) {
        events.push(e);
        // The input stays open until the turn ended: END_OF_SPEECH comes from turn-taking, not from the end of input.
        if (e.type === lkstt.SpeechEventType.END_OF_SPEECH) st.endInput();
      }
      const kinds = events.map((e) => e.type).filter((t) => t !== lkstt.SpeechEventType.RECOGNITION_USAGE);
      const T = lkstt.SpeechEventType;
      expect(kinds[0]).toBe(T.START_OF_SPEECH);
      expect(kinds.at(-2)).toBe(T.FINAL_TRANSCRIPT);
      expect(kinds.at(-1)).toBe(T.END_OF_SPEECH);
      const interims = events.filter((e) => e.type === T.INTERIM_TRANSCRIPT);
      expect(interims.length).toBeGreaterThanOrEqual(2);
      const final = events.find((e) => e.type === T.FINAL_TRANSCRIPT)!.alternatives![0];
      expect(heard(final.text), final.text).toBeGreaterThanOrEqual(4);
      // Interims grow towards the final text.
      expect(final.text.startsWith(interims[0]!.alternatives![0].text)).toBe(true);
      expect(final.words!.length).toBe(final.text.split(' ').length);
      // Word times are in the audio's time: the sentence starts after the half second of silence.
      expect(final.startTime).toBeGreaterThanOrEqual(0.3);
      expect(final.endTime).toBeLessThan(0.5 + samples.length / rate + 0.5);
      expect(stt._openRequests).toBe(0);
      await stt.close();
    }, 120_000);
  }

  it('STT stream whose input ends before the turn does: the end brings FINAL_TRANSCRIPT and END_OF_SPEECH, no error', async () => {
    const stt = new STT({ baseUrl: s!.base, apiKey: s!.key });
    const errors: Error[] = [];
    stt.on('error', (e) => errors.push(e.error));
    const all = new Int16Array(speech16k.length + 16000 * 3);
    all.set(speech16k);
    const st = stt.stream();
    for (let i = 0; i + 320 <= all.length; i += 320) st.pushFrame(new AudioFrame(all.slice(i, i + 320), 16000, 1, 320));
    // All the audio is sent before the service has processed it: the turn ends after end_of_stream went out.
    st.endInput();
    const kinds: lkstt.SpeechEventType[] = [];
    for await (const e of st) kinds.push(e.type);
    expect(errors).toEqual([]);
    expect(kinds).toContain(lkstt.SpeechEventType.FINAL_TRANSCRIPT);
    expect(kinds.filter((k) => k === lkstt.SpeechEventType.END_OF_SPEECH)).toHaveLength(1);
    await stt.close();
  }, 120_000);

  it('STT recognize(): a buffer of frames → one final transcript', async () => {
    const stt = new STT({ baseUrl: s!.base, apiKey: s!.key });
    const frames: AudioFrame[] = [];
    for (let i = 0; i < speech16k.length; i += 1600) {
      const part = speech16k.slice(i, i + 1600);
      frames.push(new AudioFrame(part, 16000, 1, part.length));
    }
    const event = await stt.recognize(frames);
    expect(event.type).toBe(lkstt.SpeechEventType.FINAL_TRANSCRIPT);
    expect(heard(event.alternatives![0].text), event.alternatives![0].text).toBeGreaterThanOrEqual(4);
    await stt.close();
  }, 120_000);
});

/** A port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

const FAST: APIConnectOptions = { maxRetry: 2, retryIntervalMs: 10, timeoutMs: 5_000 };

it('a service that cannot be reached: APIConnectionError after the configured retries (TTS stream, STT recognize)', async () => {
  const base = `http://127.0.0.1:${await closedPort()}/api`;
  const ttsSockets = countingSockets();
  const tts = new TTS({ baseUrl: base, apiKey: 'k', webSocket: ttsSockets.factory });
  const errors: Error[] = [];
  tts.on('error', (e) => errors.push(e.error));
  const st = tts.stream({ connOptions: FAST });
  st.pushText('Hello.');
  st.endInput();
  const r = await drainTts(st);
  expect(r.frames).toHaveLength(0);
  expect(errors).toHaveLength(1);
  expect(errors[0]).toBeInstanceOf(APIConnectionError);
  expect(ttsSockets.opened()).toBe(FAST.maxRetry + 1);

  const sttSockets = countingSockets();
  const stt = new STT({ baseUrl: base, apiKey: 'k', webSocket: sttSockets.factory, connOptions: FAST });
  await expect(stt.recognize(new AudioFrame(new Int16Array(1600), 16000, 1, 1600))).rejects.toBeInstanceOf(APIConnectionError);
  expect(sttSockets.opened()).toBe(FAST.maxRetry + 1);
}, 30_000);

it('a service that accepts the connection and never answers: APITimeoutError within timeoutMs', async () => {
  // A TCP server that takes the upgrade request and says nothing.
  const held = new Set<import('node:net').Socket>();
  const silent = createServer((c) => {
    held.add(c);
    c.on('error', () => {});
  });
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(silent.address() as { port: number }).port}/api`;
  const stt = new STT({ baseUrl: base, apiKey: 'k', connOptions: { maxRetry: 0, retryIntervalMs: 10, timeoutMs: 300 } });
  const t0 = Date.now();
  const err = await stt.recognize(new AudioFrame(new Int16Array(1600), 16000, 1, 1600)).catch((e: unknown) => e);
  expect((err as Error).name).toBe('APITimeoutError');
  expect(Date.now() - t0).toBeLessThan(10_000);
  await stt.close();
  for (const c of held) c.destroy();
  await new Promise<void>((r) => silent.close(() => r()));
}, 30_000);

it('bad options are VoicewireErrors: no key, a rate the service does not produce', () => {
  const saved = process.env['VOICEWIRE_API_KEY'];
  delete process.env['VOICEWIRE_API_KEY'];
  try {
    expect(() => new STT({ baseUrl: 'http://127.0.0.1:1/api' })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => new TTS({ baseUrl: 'http://127.0.0.1:1/api', apiKey: 'k', sampleRate: 12345 as 8000 })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  } finally {
    if (saved !== undefined) process.env['VOICEWIRE_API_KEY'] = saved;
  }
});
