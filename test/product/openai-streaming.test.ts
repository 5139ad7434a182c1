/**
 * Issue 32's "done when": the streaming doors of the OpenAI ecosystem, with the official packages
 * unchanged, against the built server (`node dist/cli.js serve`, espeak-ng and pocketsphinx):
 *
 * - `openai` 6's Realtime client (`openai/realtime/ws`), a transcription session on /v1/realtime;
 * - LiveKit's OpenAI plugin `STT({ vad: null })`: its default model (`gpt-realtime-whisper`) and
 *   path (Realtime over WebSocket), its stream class driven with frames and `flush()`, no LiveKit server;
 * - `openai`'s `audio.speech.create({ stream_format: 'sse' })` read with its own SSE reader.
 *
 * The `openai` package always opens `wss://` (realtime/internal-base.js sets the protocol), so its
 * client reaches the plain-HTTP server through a TLS relay with a throwaway certificate.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import { Stream } from 'openai/core/streaming';
import { initializeLogger, stt } from '@livekit/agents';
import { AudioFrame } from '@livekit/rtc-node';
import * as livekitOpenAI from '@livekit/agents-plugin-openai';
import { bugLines, startBuiltServer, type BuiltServer, stopBuiltServer } from './built-server.js';
import { describeBuilt } from './describe-built.js';

/** Reads a LiveKit STT stream until its first final transcript: the event kinds seen, and its text. */
async function untilFinal(stream: AsyncIterable<stt.SpeechEvent>): Promise<{ kinds: string[]; final: string }> {
  const kinds: string[] = [];
  for await (const ev of stream) {
    kinds.push(stt.SpeechEventType[ev.type] ?? String(ev.type));
    if (ev.type === stt.SpeechEventType.FINAL_TRANSCRIPT) return { kinds, final: ev.alternatives?.[0]?.text ?? '' };
  }
  return { kinds, final: '' };
}

/** The watchdog's bound: the default engines serve these few clients in well under this. */
const WATCHDOG = 1.5 * 2 ** 30;
/** A sentence pocketsphinx hears in espeak's voice (test/server/openai-built.test.ts). */
const SENTENCE = 'Please call me tomorrow morning.';

describeBuilt('OpenAI streaming doors → built `voicewire serve` (espeak-ng, pocketsphinx)', () => {
  let s: BuiltServer | undefined;
  let dir: string;
  let v1: string;
  let c: OpenAI;
  /** SENTENCE spoken by the server, 24 kHz s16le. */
  let pcm: Buffer;
  let relay: TlsServer;
  const relayed = new Set<Socket>();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'voicewire-openai-streaming-'));
    s = await startBuiltServer({ dataDir: join(dir, 'data'), maxRssBytes: WATCHDOG });
    v1 = s.base.replace(/\/api$/, '/v1');
    c = new OpenAI({ apiKey: s.key, baseURL: v1, maxRetries: 2, timeout: 120_000 });
    const r = await c.audio.speech.create({ model: 'tts-1', voice: 'alloy', input: SENTENCE, response_format: 'pcm' });
    pcm = Buffer.from(await r.arrayBuffer());
    // The TLS relay for openai/realtime/ws (see the module comment).
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-days', '1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
    const port = Number(new URL(v1).port);
    relay = createTlsServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }, (tls) => {
      const plain = connect(port, '127.0.0.1');
      relayed.add(tls).add(plain);
      tls.pipe(plain).pipe(tls);
      const end = (): void => void (tls.destroy(), plain.destroy());
      tls.on('error', end).on('close', end);
      plain.on('error', end).on('close', end);
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    initializeLogger({ pretty: false, level: 'warn' });
  }, 180_000);

  afterAll(async () => {
    for (const sock of relayed) sock.destroy();
    relay?.close();
    await stopBuiltServer(s, dir);
    // Nothing reached a last resort (an unhandled rejection, a route that threw).
    expect(bugLines(s?.output() ?? '')).toEqual([]);
  }, 60_000);

  it('openai/realtime/ws: a transcription session with server VAD hears the sentence (speech_started … completed)', async () => {
    const port = (relay.address() as AddressInfo).port;
    const viaTls = new OpenAI({ apiKey: s!.key, baseURL: `https://localhost:${port}/v1` });
    const rt = new OpenAIRealtimeWS({ model: 'gpt-4o-transcribe', options: { rejectUnauthorized: false } }, viaTls);
    const seen: string[] = [];
    const errors: unknown[] = [];
    rt.on('event', (e) => seen.push(e.type));
    rt.on('error', (e) => errors.push(e));
    const completed = new Promise<{ transcript: string; item_id: string; usage: unknown }>((resolve) => rt.on('conversation.item.input_audio_transcription.completed', resolve));
    const stopped = new Promise<{ audio_end_ms: number; item_id: string }>((resolve) => rt.on('input_audio_buffer.speech_stopped', resolve));
    const started = new Promise<{ audio_start_ms: number; item_id: string }>((resolve) => rt.on('input_audio_buffer.speech_started', resolve));
    await new Promise<void>((resolve, reject) => (rt.socket.once('open', () => resolve()), rt.socket.once('error', reject)));
    rt.send({ type: 'session.update', session: { type: 'transcription', audio: { input: { format: { type: 'audio/pcm', rate: 24000 }, transcription: { model: 'gpt-4o-transcribe', language: 'en' }, turn_detection: { type: 'server_vad', threshold: 0.5, prefix_padding_ms: 300, silence_duration_ms: 500 } } } } });
    // Half a second of silence, the sentence, two seconds of silence: 100 ms appends, faster than real time.
    const audio = Buffer.concat([Buffer.alloc(24000), pcm, Buffer.alloc(96000)]);
    for (let i = 0; i < audio.length; i += 4800) rt.send({ type: 'input_audio_buffer.append', audio: audio.subarray(i, i + 4800).toString('base64') });
    const [st, sp, done] = await Promise.all([started, stopped, completed]);
    expect(errors).toEqual([]);
    expect(done.transcript).toMatch(/tomorrow/);
    expect(done.item_id).toBe(st.item_id);
    expect(sp.item_id).toBe(st.item_id);
    expect(done.usage).toMatchObject({ type: 'duration' });
    // On the session's audio timeline: speech starts after most of the lead silence (less the
    // padding) and stops after the sentence.
    const sentenceMs = (pcm.length / 48000) * 1000;
    expect(st.audio_start_ms).toBeLessThan(500 + sentenceMs / 2);
    expect(sp.audio_end_ms).toBeGreaterThan(st.audio_start_ms + sentenceMs / 2);
    expect(sp.audio_end_ms).toBeLessThan(500 + sentenceMs + 2000);
    expect(seen.slice(0, 2)).toEqual(['session.created', 'session.updated']);
    expect(seen).toEqual(expect.arrayContaining(['input_audio_buffer.committed', 'conversation.item.input_audio_transcription.delta']));
    rt.close();
  }, 120_000);

  it("LiveKit's OpenAI plugin STT({ vad: null }): its default Realtime model, frames then flush() → a final transcript", async () => {
    const plugin = new livekitOpenAI.STT({ vad: null, baseURL: v1, apiKey: s!.key });
    expect(plugin.model).toBe('gpt-realtime-whisper');
    const stream = plugin.stream();
    const samples = new Int16Array(pcm.buffer, pcm.byteOffset, pcm.length / 2);
    // 20 ms frames, as a LiveKit room delivers them.
    for (let i = 0; i < samples.length; i += 480) {
      const chunk = samples.slice(i, i + 480);
      stream.pushFrame(new AudioFrame(chunk, 24000, 1, chunk.length));
    }
    stream.flush();
    const { kinds, final } = await untilFinal(stream);
    stream.close();
    await plugin.close();
    expect(final).toMatch(/tomorrow/);
    expect(kinds).toContain('INTERIM_TRANSCRIPT');
  }, 120_000);

  it("LiveKit's OpenAI plugin STT({ model: 'gpt-4o-transcribe' }): the plugin's server_vad defaults, the server ends the turn (docs/agents.md's agent)", async () => {
    const plugin = new livekitOpenAI.STT({ model: 'gpt-4o-transcribe', baseURL: v1, apiKey: s!.key });
    const stream = plugin.stream();
    // The sentence, then two seconds of silence: no flush(), the server VAD commits.
    const audio = Buffer.concat([pcm, Buffer.alloc(96000)]);
    const samples = new Int16Array(audio.buffer, audio.byteOffset, audio.length / 2);
    for (let i = 0; i < samples.length; i += 480) {
      const chunk = samples.slice(i, i + 480);
      stream.pushFrame(new AudioFrame(chunk, 24000, 1, chunk.length));
    }
    const { kinds, final } = await untilFinal(stream);
    stream.close();
    await plugin.close();
    expect(final).toMatch(/tomorrow/);
    // Its speech events come from the server's VAD (the plugin has none here).
    expect(kinds).toEqual(expect.arrayContaining(['START_OF_SPEECH', 'END_OF_SPEECH']));
  }, 120_000);

  it("audio.speech.create({ stream_format: 'sse' }): speech.audio.delta events then speech.audio.done with usage, read by the package's SSE reader", async () => {
    const res = await c.audio.speech.create({ model: 'gpt-4o-mini-tts', voice: 'alloy', input: SENTENCE, response_format: 'pcm', stream_format: 'sse' });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events: Array<{ type: string; audio?: string; usage?: Record<string, number> }> = [];
    for await (const e of Stream.fromSSEResponse<{ type: string; audio?: string; usage?: Record<string, number> }>(res, new AbortController(), c)) events.push(e);
    const deltas = events.filter((e) => e.type === 'speech.audio.delta');
    expect(deltas.length).toBeGreaterThan(1);
    expect(events.at(-1)).toMatchObject({ type: 'speech.audio.done', usage: { input_tokens: [...SENTENCE].length, total_tokens: [...SENTENCE].length } });
    // The deltas are the same audio the byte stream gives.
    const joined = Buffer.concat(deltas.map((d) => Buffer.from(d.audio!, 'base64')));
    expect(joined.length).toBe(pcm.length);
  }, 120_000);
});
