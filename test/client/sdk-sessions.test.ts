/**
 * The SDK's TTS and STT over real WebSockets on loopback, against the library's session runners
 * with the scripted engines (test/sessions/ws-server.ts), whose output is known exactly: TTS word
 * k is one 80 ms frame of samples equal to k; a pause of s seconds is round(s/0.08) zero frames.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createScriptedSttEngine, createScriptedTtsEngine, decodeWav, type SttEngine, type TtsEngine } from '../../src/index.js';
import { createClient } from '../../src/node/client.js';
import type { WebSocketLike } from '../../src/client/index.js';
import { startTestServer, type TestServer } from '../sessions/ws-server.js';

let server: TestServer;
let ttsEngine: () => TtsEngine = () => createScriptedTtsEngine();
let sttEngine: () => SttEngine = () => createScriptedSttEngine();

beforeAll(async () => {
  server = await startTestServer({ tts: () => ttsEngine(), stt: () => sttEngine() });
});
afterAll(() => server.close());

/** A client on the test server, counting the sockets it opens. */
function client(opts: { retry?: { attempts: number; baseDelayMs: number }; url?: string } = {}) {
  const sockets = { opened: 0 };
  const c = createClient({
    baseUrl: `${(opts.url ?? server.url).replace('ws', 'http')}/api`,
    apiKey: 'test-key',
    retry: opts.retry ?? { attempts: 1, baseDelayMs: 1 },
    webSocket: (url, headers) => {
      sockets.opened++;
      // The test server routes by path without the /api prefix.
      return new WebSocket(url.replace('/api/', '/'), { headers }) as unknown as WebSocketLike;
    },
  });
  return { c, sockets };
}

const FRAME = 3840;
const int16 = (b: Uint8Array) => new Int16Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));

describe('SDK TTS over the WebSocket', () => {
  it('tts(): audio and word timestamps of the whole text (pcm)', async () => {
    ttsEngine = () => createScriptedTtsEngine();
    const { c } = client();
    const r = await c.tts({ text: 'Hello brave new world', outputFormat: 'pcm' });
    expect(r.sampleRate).toBe(48000);
    const pcm = int16(r.audio);
    expect(pcm.length).toBe(4 * FRAME);
    expect([pcm[0], pcm[FRAME], pcm[2 * FRAME], pcm[4 * FRAME - 1]]).toEqual([1, 2, 3, 4]);
    expect(r.words.map((w) => w.text)).toEqual(['Hello', 'brave', 'new', 'world']);
    expect(r.words[2]).toEqual({ text: 'new', start_s: 0.16, stop_s: 0.24 });
  });

  it('tts() as wav: one file with exact sizes, readable by the WAV decoder', async () => {
    const { c } = client();
    const r = await c.tts({ text: 'one two three', outputFormat: 'wav' });
    const wav = decodeWav(r.audio, { output: 'int16' });
    expect(wav.format.sampleRate).toBe(48000);
    expect(wav.samples.length).toBe(3 * FRAME);
    expect(new DataView(r.audio.buffer, r.audio.byteOffset).getUint32(40, true)).toBe(3 * FRAME * 2);
  });

  it('ttsStream(): LLM tokens split inside words and tags still give whole words and an exact pause', async () => {
    const { c } = client();
    const s = c.ttsStream({ outputFormat: 'pcm' });
    for (const token of ['Hel', 'lo bra', 've <bre', 'ak time="0.4s" /> wor', 'ld']) s.write(token);
    s.end();
    const words: string[] = [];
    const frames: number[] = [];
    for await (const e of s) {
      if (e.type === 'word') words.push(e.word.text);
      else {
        const p = int16(e.audio);
        for (let i = 0; i < p.length; i += FRAME) frames.push(p[i]!);
      }
    }
    expect(words).toEqual(['Hello', 'brave', 'world']);
    expect(frames).toEqual([1, 2, 0, 0, 0, 0, 0, 3]);
  });

  it('multiplex: three concurrent streams share one socket and each gets its own words', async () => {
    const { c, sockets } = client();
    const texts = ['alpha beta', 'gamma delta epsilon', 'zeta'];
    const streams = texts.map(() => c.ttsStream({ outputFormat: 'pcm', multiplex: true }));
    streams.forEach((s, i) => {
      s.write(texts[i]!);
      s.end();
    });
    const results = await Promise.all(
      streams.map(async (s) => {
        const words: string[] = [];
        let bytes = 0;
        for await (const e of s) e.type === 'word' ? words.push(e.word.text) : (bytes += e.audio.length);
        return { words, bytes };
      }),
    );
    expect(results.map((r) => r.words.join(' '))).toEqual(texts);
    expect(results.map((r) => r.bytes)).toEqual([2, 3, 1].map((n) => n * FRAME * 2));
    expect(new Set(streams.map((s) => s.clientReqId)).size).toBe(3);
    expect(sockets.opened).toBe(1);
    c.close();
  });

  it('abort: a multiplexed stream is cancelled alone; a single stream closes its socket', async () => {
    const { c } = client();
    const ac = new AbortController();
    const cancelled = c.ttsStream({ outputFormat: 'pcm', multiplex: true, signal: ac.signal });
    const other = c.ttsStream({ outputFormat: 'pcm', multiplex: true });
    cancelled.write('never finished');
    other.write('still here');
    other.end();
    ac.abort();
    await expect((async () => { for await (const _ of cancelled); })()).rejects.toMatchObject({ code: 'CLIENT_ABORTED' });
    const words: string[] = [];
    for await (const e of other) if (e.type === 'word') words.push(e.word.text);
    expect(words).toEqual(['still', 'here']);
    c.close();

    const single = new AbortController();
    const p = c.tts({ text: 'a b c', outputFormat: 'pcm', signal: single.signal });
    single.abort();
    await expect(p).rejects.toMatchObject({ code: 'CLIENT_ABORTED' });
  });

  it('an engine failure reaches the caller as the server error with its code (1011)', async () => {
    ttsEngine = () => createScriptedTtsEngine({ failAtWord: 2 });
    const { c } = client();
    await expect(c.tts({ text: 'one two three', outputFormat: 'pcm' })).rejects.toMatchObject({ code: 'PROTOCOL_SERVER_ERROR', closeCode: 1011 });
    ttsEngine = () => createScriptedTtsEngine();
  });

  it('a service that cannot be reached: CLIENT_CONNECT_FAILED after the configured attempts', async () => {
    const { c, sockets } = client({ url: 'ws://127.0.0.1:9', retry: { attempts: 3, baseDelayMs: 5 } });
    await expect(c.tts({ text: 'hi', outputFormat: 'pcm' })).rejects.toMatchObject({ code: 'CLIENT_CONNECT_FAILED' });
    expect(sockets.opened).toBe(3);
  });
});

describe('SDK STT over the WebSocket', () => {
  const pcm = (frames: number) => new Uint8Array(frames * 3840); // 24 kHz s16le, 80 ms per 3840 bytes

  it('stt(): words with start and stop from text / end_text', async () => {
    sttEngine = () =>
      createScriptedSttEngine({
        delayInFrames: 0,
        frames: { 1: [{ type: 'text', text: 'hello', start_s: 0.08 }], 3: [{ type: 'end_text', stop_s: 0.3 }, { type: 'text', text: 'world', start_s: 0.32 }] },
        atEnd: [{ type: 'end_text', stop_s: 0.5 }],
      });
    const { c } = client();
    const r = await c.stt(pcm(6), { inputFormat: 'pcm', language: 'en' });
    expect(r.text).toBe('hello world');
    expect(r.words).toEqual([
      { text: 'hello', start_s: 0.08, stop_s: 0.3 },
      { text: 'world', start_s: 0.32, stop_s: 0.5 },
    ]);
  });

  it('sttStream(): flush() resolves on flushed; a turn ends on the 3rd horizon and the silence goes out at once', async () => {
    let pushed = 0;
    sttEngine = () => {
      const inner = createScriptedSttEngine({
        delayInFrames: 2,
        vad: (i) => [0.5, 1, 2].map((h) => ({ horizon_s: h, inactivity_prob: i >= 4 ? 0.9 : 0.1 })),
      });
      return {
        async open(config, emit) {
          const s = await inner.open(config, emit);
          return { ...s, info: s.info, push: (f: Int16Array) => ((pushed += 1), s.push(f)) };
        },
      } as SttEngine;
    };
    const { c } = client();
    const s = c.sttStream({ inputFormat: 'pcm' });
    s.write(pcm(3));
    await s.flush();
    s.write(pcm(3));
    const events: string[] = [];
    let ended = false;
    for await (const e of s) {
      events.push(e.type);
      if (e.type === 'turn' && !ended) {
        ended = true;
        s.end();
      }
    }
    expect(events).toContain('turn');
    expect(events.filter((t) => t === 'turn')).toHaveLength(1);
    // 6 frames written, then the model delay's 2 silent frames sent on the end of the turn.
    expect(pushed).toBeGreaterThanOrEqual(8);
  });
});
