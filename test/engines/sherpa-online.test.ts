/**
 * Streaming (online) STT through sherpa-onnx (issue 24): a streaming NeMo CTC folder made by
 * make-models.py (nemo-ctc-online: energy-driven, so loud audio makes words and silence none) is
 * detected and checked in a child process, and the server streams its words while the audio still
 * arrives, over WebSocket and POST; each stream lives on one worker, the streams are bounded, and a
 * closed request frees its stream.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { registerSttEngine, sherpaSttEntry, type SttEngineEntry } from '../../src/engines/registry.js';
import { resolveSherpaSttModel, validateSherpaModel, type SherpaModel } from '../../src/engines/sherpa-model.js';
import { SherpaOnlinePool } from '../../src/engines/sherpa-online.js';
import { createSherpaOnlineSttEngine } from '../../src/engines/sherpa-stt-online.js';
import { decodeWav, encodeWav } from '../../src/audio/wav.js';
import type { SttEngineEvent } from '../../src/sessions/engine.js';
import { VoicewireError } from '../../src/util/errors.js';
import { connect, startServer, type Harness } from '../server/harness.js';
import { ModelFolders } from '../helpers/sherpa-models.js';

const folders = new ModelFolders();
afterAll(() => folders.cleanup());

const SPEECH = decodeWav(readFileSync(join(import.meta.dirname, '..', '..', 'fixtures', 'speech', 'en_24k.wav')), { output: 'int16', mono: true });
/** The clip three times over, then a second of silence: ~8 s at 24 kHz. */
function longClip(): Int16Array {
  const s = SPEECH.samples;
  const out = new Int16Array(s.length * 3 + 24000);
  for (let i = 0; i < 3; i++) out.set(s, i * s.length);
  return out;
}
const CLIP = longClip();
const CLIP_WAV = Buffer.from(encodeWav(CLIP, { sampleRate: 24000, channels: 1 }));
const FRAME = 1920;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function refusal(f: () => unknown): Promise<VoicewireError> {
  try {
    await f();
  } catch (err) {
    expect(err).toBeInstanceOf(VoicewireError);
    return err as VoicewireError;
  }
  throw new Error('expected a refusal');
}

describe('a streaming NeMo CTC folder', () => {
  it('is detected as nemo-ctc-online (a streaming model) and loads and runs in a child process', async () => {
    const m = resolveSherpaSttModel(folders.make('nemo-ctc-online'));
    expect(m.type).toBe('nemo-ctc-online');
    expect(m.streaming).toBe(true);
    expect(m.config).toMatchObject({ modelConfig: { nemoCtc: { model: join(m.dir, 'model.onnx') } }, decodingMethod: 'greedy_search', enableEndpoint: 1 });
    await expect(validateSherpaModel(m)).resolves.toEqual({});
    // Forced, the type is taken as given.
    expect(resolveSherpaSttModel(m.dir, 'nemo-ctc-online').type).toBe('nemo-ctc-online');
  }, 180_000);

  it('a broken one is refused at start, naming the folder: by the folder check, and by the child where sherpa-onnx would end the process', async () => {
    const dir = folders.make('nemo-ctc-online', { broken: 'no-metadata' });
    const e1 = await refusal(() => sherpaSttEntry(dir));
    expect(e1.code).toBe('MODEL_INVALID');
    expect(e1.message).toContain(dir);
    expect(e1.message).toMatch(/lacks the metadata "cache_last_time_dim3" a streaming NeMo CTC model needs/);
    // Past the folder checks (a layout they did not foresee): the child dies on the missing key, the caller gets words.
    const good = resolveSherpaSttModel(folders.make('nemo-ctc-online'));
    const model: SherpaModel = { ...good, dir, config: { ...good.config, modelConfig: { nemoCtc: { model: join(dir, 'model.onnx') }, tokens: join(dir, 'tokens.txt'), numThreads: 1 } } };
    const e2 = await refusal(() => validateSherpaModel(model));
    expect(e2.code).toBe('MODEL_INVALID');
    expect(e2.message).toContain(dir);
    expect(e2.message).toMatch(/'cache_last_time_dim3' does not exist in the metadata \(sherpa-onnx exited/);
    const corrupt = folders.make('nemo-ctc-online', { broken: 'corrupt-onnx' });
    expect((await refusal(() => sherpaSttEntry(corrupt))).message).toMatch(/not a complete ONNX file/);
  }, 180_000);
});

describe('streaming STT through the server', () => {
  let h: Harness;
  let entry: SttEngineEntry;
  beforeAll(async () => {
    entry = await sherpaSttEntry(folders.make('nemo-ctc-online'));
    registerSttEngine('sherpa-online-test', entry);
    // One worker holding at most two streams: the third request at once is ENGINE_BUSY.
    h = await startServer({ stt: 'sherpa-online-test', limits: { sherpaWorkers: 1, sherpaStreams: 2 } });
  }, 180_000);
  afterAll(async () => {
    await h?.close();
    await entry?.close?.();
  });

  /** Opens an STT socket with its setup answered. */
  async function session(): Promise<ReturnType<typeof connect>> {
    const c = connect(`${h.wsBase}/speech/asr`, { 'x-api-key': h.apiKey });
    await c.opened;
    c.send({ type: 'setup', input_format: 'pcm_24000', json_config: { language: 'en' } });
    await c.waitFor((m) => m['type'] === 'ready');
    return c;
  }
  const audio = (from: number, to: number): { type: string; audio: string } => ({ type: 'audio', audio: Buffer.from(CLIP.buffer, CLIP.byteOffset + from * 2, (to - from) * 2).toString('base64') });

  it('words arrive over WebSocket while the audio still streams (before end_of_stream), never taken back, the same as over POST', async () => {
    const c = await session();
    // Paced frames; the frame index at which the first word arrived.
    let sent = 0;
    let firstTextAt = -1;
    void c.waitFor((m) => m['type'] === 'text').then(() => (firstTextAt = sent), () => undefined);
    for (let o = 0; o < CLIP.length; o += FRAME) {
      c.send(audio(o, Math.min(CLIP.length, o + FRAME)));
      sent++;
      await sleep(20);
    }
    const frames = sent;
    c.send({ type: 'end_of_stream' });
    expect((await c.closed).code).toBe(1000);
    // Streaming: the first word came while most of the clip was still to be sent (the offline path waits for a pause).
    expect(firstTextAt).toBeGreaterThan(0);
    expect(firstTextAt).toBeLessThan(frames / 2);
    const texts = c.messages.filter((m) => m['type'] === 'text');
    expect(texts.length).toBeGreaterThan(3);
    for (const t of texts) expect(String(t['text'])).toMatch(/^[a-z']+$/);
    // Each text is followed by its end_text before the next text; times go forward inside the audio.
    const kinds = c.messages.filter((m) => m['type'] === 'text' || m['type'] === 'end_text').map((m) => m['type']);
    expect(kinds.join(',')).toBe(Array(texts.length).fill('text,end_text').join(','));
    const starts = texts.map((t) => Number(t['start_s']));
    for (let i = 1; i < starts.length; i++) expect(starts[i]!).toBeGreaterThanOrEqual(starts[i - 1]!);
    expect(starts.at(-1)!).toBeLessThanOrEqual(CLIP.length / 24000);
    // The same words over POST (one shot): decoding is deterministic, the pacing does not matter.
    const r = await fetch(`${h.base}/post/speech/asr`, { method: 'POST', headers: { 'x-api-key': h.apiKey, 'content-type': 'audio/wav' }, body: new Uint8Array(CLIP_WAV) });
    expect(r.status).toBe(200);
    const lines = (await r.text()).trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.filter((l) => l['type'] === 'text').map((l) => l['text'])).toEqual(texts.map((t) => t['text']));
  }, 180_000);

  it('silence gives no words', async () => {
    const silence = encodeWav(new Int16Array(24000 * 3), { sampleRate: 24000, channels: 1 });
    const r = await fetch(`${h.base}/post/speech/asr`, { method: 'POST', headers: { 'x-api-key': h.apiKey, 'content-type': 'audio/wav' }, body: new Uint8Array(silence) });
    expect(r.status).toBe(200);
    expect((await r.text()).trim().split('\n').map((l) => JSON.parse(l) as { type: string }).filter((l) => l.type === 'text')).toEqual([]);
  }, 60_000);

  it('streams past the budget are ENGINE_BUSY; closing a request mid-stream frees its stream for the next', async () => {
    const a = await session();
    const b = await session();
    a.send(audio(0, FRAME * 10));
    b.send(audio(0, FRAME * 10));
    await a.waitFor((m) => m['type'] === 'text');
    // The worker holds its two streams: a third request is refused as busy (1011), a POST with 503.
    const c = connect(`${h.wsBase}/speech/asr`, { 'x-api-key': h.apiKey });
    c.send({ type: 'setup', input_format: 'pcm_24000' });
    const refused = await c.waitFor((m) => m['type'] === 'error');
    expect(String(refused['message'])).toMatch(/limits\.sherpaStreams/);
    expect((await c.closed).code).toBe(1011);
    const busy = await fetch(`${h.base}/post/speech/asr`, { method: 'POST', headers: { 'x-api-key': h.apiKey, 'content-type': 'audio/wav' }, body: new Uint8Array(CLIP_WAV) });
    expect(busy.status).toBe(503);
    await busy.text();
    // Both go away mid-stream (one closes, one vanishes): their streams are freed, two new requests run.
    a.ws.close();
    b.ws.terminate();
    await Promise.all([a.closed, b.closed]);
    const deadline = Date.now() + 20_000;
    for (;;) {
      const d = await session().catch(() => undefined);
      if (d !== undefined) {
        const e = await session();
        for (const s of [d, e]) {
          s.send(audio(0, FRAME * 20));
          s.send({ type: 'end_of_stream' });
        }
        const [cd, ce] = await Promise.all([d.closed, e.closed]);
        expect([cd.code, ce.code]).toEqual([1000, 1000]);
        expect(d.messages.filter((m) => m['type'] === 'text').length).toBeGreaterThan(0);
        break;
      }
      expect(Date.now()).toBeLessThan(deadline);
      await sleep(100);
    }
  }, 180_000);
});

describe('a slow streaming model leaves the event loop free', () => {
  let h: Harness;
  let entry: SttEngineEntry;
  beforeAll(async () => {
    // 400 matrix products a chunk: decoding the 2.3 s clip took about a second here (the check needs only 0.2 s).
    entry = await sherpaSttEntry(folders.make('nemo-ctc-online', { loops: 400 }));
    registerSttEngine('sherpa-online-slow', entry);
    h = await startServer({ stt: 'sherpa-online-slow', limits: { sherpaWorkers: 1 } });
  }, 180_000);
  afterAll(async () => {
    await h?.close();
    await entry?.close?.();
  });

  it('/healthz answers within 100 ms (median) while the worker decodes a stream', async () => {
    const c = connect(`${h.wsBase}/speech/asr`, { 'x-api-key': h.apiKey });
    await c.opened;
    c.send({ type: 'setup', input_format: 'pcm_24000' });
    await c.waitFor((m) => m['type'] === 'ready');
    const s = SPEECH.samples;
    c.send({ type: 'audio', audio: Buffer.from(s.buffer, s.byteOffset, s.byteLength).toString('base64') });
    c.send({ type: 'end_of_stream' });
    let done = false;
    void c.closed.then(() => (done = true));
    const took: number[] = [];
    const t0 = performance.now();
    while (!done) {
      const t = performance.now();
      const r = await fetch(`${h.base}/healthz`);
      await r.text();
      took.push(performance.now() - t);
      await sleep(30);
    }
    const streamMs = performance.now() - t0;
    expect((await c.closed).code).toBe(1000);
    expect(c.messages.filter((m) => m['type'] === 'text').length).toBeGreaterThan(0);
    // The probes overlapped the decoding (it took a while), and each answered promptly.
    expect(streamMs).toBeGreaterThan(200);
    expect(took.length).toBeGreaterThan(3);
    took.sort((a, b) => a - b);
    expect(took[Math.floor(took.length / 2)]!).toBeLessThan(100);
  }, 180_000);
});

describe('the streaming pool', () => {
  it('pins each stream to one worker, counts streams back to zero when requests close mid-stream or end, and refuses past its budget', async () => {
    const model = resolveSherpaSttModel(folders.make('nemo-ctc-online'));
    const pool = new SherpaOnlinePool(model, { workers: 2, streamsPerWorker: 2 });
    try {
      await pool.ready;
      const engine = createSherpaOnlineSttEngine(pool);
      const events: SttEngineEvent[][] = [];
      const streams = [];
      for (let i = 0; i < 4; i++) {
        const ev: SttEngineEvent[] = [];
        events.push(ev);
        streams.push(await engine.open({ modelName: 'default', inputFormat: 'pcm_24000', jsonConfig: {} }, (e) => ev.push(e)));
      }
      expect(pool.load).toEqual({ streams: 4, workers: 2 });
      await expect(async () => engine.open({ modelName: 'default', inputFormat: 'pcm_24000', jsonConfig: {} }, () => undefined)).rejects.toMatchObject({ code: 'ENGINE_BUSY' });
      for (let o = 0; o + FRAME <= SPEECH.samples.length; o += FRAME) for (const s of streams) await s.push(SPEECH.samples.slice(o, o + FRAME));
      // Two close mid-stream, two end: every stream gets the same words (each kept its own state on its worker).
      streams[0]!.close();
      streams[1]!.close();
      await Promise.all([streams[2]!.end!(), streams[3]!.end!()]);
      streams[2]!.close();
      streams[3]!.close();
      const words = (ev: SttEngineEvent[]): string[] => ev.flatMap((e) => (e.type === 'text' ? [e.text] : []));
      expect(words(events[2]!).length).toBeGreaterThan(0);
      expect(words(events[3]!)).toEqual(words(events[2]!));
      const deadline = Date.now() + 20_000;
      while (pool.load.streams !== 0 && Date.now() < deadline) await sleep(20);
      expect(pool.load.streams).toBe(0);
    } finally {
      await pool.close();
    }
  }, 180_000);
});
