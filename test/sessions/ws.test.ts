import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createScriptedSttEngine,
  createScriptedTtsEngine,
  createTurnTaking,
  type SttClientEvent,
  type SttServerMessage,
  type TtsServerMessage,
} from '../../src/index.js';
import { connectStt, connectTts, startTestServer, type TestServer } from './ws-server.js';

let server: TestServer;
const sttEngines: Array<ReturnType<typeof createScriptedSttEngine>> = [];
const ttsEngines: Array<ReturnType<typeof createScriptedTtsEngine>> = [];
let sttOptions: Parameters<typeof createScriptedSttEngine>[0] = {};

beforeAll(async () => {
  server = await startTestServer({
    stt: () => {
      const e = createScriptedSttEngine({ async: true, ...sttOptions });
      sttEngines.push(e);
      return e;
    },
    tts: () => {
      const e = createScriptedTtsEngine({ async: true, lookaheadWords: 1 });
      ttsEngines.push(e);
      return e;
    },
  });
});
afterAll(async () => {
  await server.close();
});

const messages = (events: SttClientEvent[]): SttServerMessage[] => events.flatMap((e) => (e.type === 'message' ? [e.message] : []));
const until = async (cond: () => boolean, ms = 3000): Promise<void> => {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error('timeout');
    await new Promise((r) => setTimeout(r, 2));
  }
};

describe('the machines behind real WebSockets (ws on 127.0.0.1)', () => {
  it('STT: setup, unaligned audio, flush, turn-taking silence, end_of_stream, close 1000', async () => {
    sttOptions = {
      delayInFrames: 2,
      frames: { 1: [{ type: 'text', text: 'bonjour', start_s: 0 }], 4: [{ type: 'end_text', stop_s: 0.24 }] },
      vad: (i) => [
        { horizon_s: 0.5, inactivity_prob: 0 },
        { horizon_s: 1, inactivity_prob: 0 },
        { horizon_s: 2, inactivity_prob: i >= 2 ? 0.9 : 0.1 },
      ],
    };
    const c = await connectStt(server.url);
    const tt = createTurnTaking();
    c.session.setup({ input_format: 'pcm', json_config: { language: 'fr' } });
    c.session.sendAudio(new Uint8Array(4800)); // 100 ms: one frame + 960 bytes held
    c.session.flush(1);
    await until(() => messages(c.events).some((m) => m.type === 'flushed'));
    const ready = messages(c.events)[0]!;
    expect(ready).toMatchObject({ type: 'ready', sample_rate: 24000, frame_size: 1920, delay_in_frames: 2 });
    tt.ready(ready as never);
    // Frame 0, the padded partial frame 1, then 2 silent frames: the text of frame 1 comes before flushed.
    expect(messages(c.events).map((m) => m.type)).toEqual(['ready', 'step', 'text', 'step', 'step', 'step', 'flushed']);
    let ended = false;
    for (const m of messages(c.events)) if (m.type === 'step' && tt.step(m).endOfTurn) ended = true;
    expect(ended).toBe(true);
    for (const frame of tt.silenceFrames()) c.session.sendAudio(frame);
    c.session.endOfStream();
    const closed = await c.closed;
    expect(closed.code).toBe(1000);
    const all = messages(c.events);
    expect(all.at(-1)).toEqual({ type: 'end_of_stream' });
    expect(all.filter((m) => m.type === 'step').map((m) => (m as { step_idx: number }).step_idx)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(all.some((m) => m.type === 'end_text')).toBe(true);
    expect(c.events.filter((e) => e.type === 'error')).toEqual([]);
    expect(c.events.at(-1)).toEqual({ type: 'closed', code: 1000, reason: 'end of stream' });
  });

  it('STT: data before setup is answered with error 1008 and a 1008 close frame', async () => {
    const c = await connectStt(server.url);
    c.ws.send('{"type":"audio","audio":""}');
    const closed = await c.closed;
    expect(closed.code).toBe(1008);
    const err = c.events.find((e) => e.type === 'error');
    expect(err).toMatchObject({ type: 'error', error: { code: 'PROTOCOL_SERVER_ERROR', closeCode: 1008 } });
  });

  it('STT: an engine failure is error 1011 and a 1011 close frame; engine streams are released', async () => {
    sttOptions = { delayInFrames: 1, failAtFrame: 1 };
    const c = await connectStt(server.url);
    c.session.setup({ input_format: 'pcm_24000' });
    c.session.sendAudio(new Uint8Array(3840 * 3));
    expect((await c.closed).code).toBe(1011);
    expect(c.events.find((e) => e.type === 'error')).toMatchObject({ error: { closeCode: 1011 } });
    const engine = sttEngines.at(-1)!;
    await until(() => engine.closed === engine.opened);
  });

  it('STT: the client going away mid-stream closes the engine stream', async () => {
    sttOptions = { delayInFrames: 1 };
    const c = await connectStt(server.url);
    c.session.setup({ input_format: 'pcm' });
    c.session.sendAudio(new Uint8Array(3840));
    await until(() => messages(c.events).some((m) => m.type === 'step'));
    c.ws.terminate();
    const engine = sttEngines.at(-1)!;
    await until(() => engine.opened === 1 && engine.closed === 1);
  });

  it('TTS: three multiplexed requests interleaved on one socket, each with its own audio and times', async () => {
    const c = await connectTts(server.url);
    const ids = ['a', 'b', 'c'];
    for (const id of ids) c.session.setup({ voice_id: 'v', output_format: 'pcm', client_req_id: id, close_ws_on_eos: false });
    const words: Record<string, string[]> = { a: ['one', 'two', 'three'], b: ['uno', 'dos'], c: ['eins', 'zwei', 'drei', 'vier'] };
    for (let i = 0; i < 4; i++) for (const id of ids) if (words[id]![i]) c.session.sendText(`${words[id]![i]} `, id);
    for (const id of ids) c.session.endOfStream(id);
    await until(() => c.events.filter((e) => e.type === 'message' && e.message.type === 'end_of_stream').length === 3);
    c.session.endOfStream();
    expect((await c.closed).code).toBe(1000);
    for (const id of ids) {
      const mine = c.events.filter((e): e is Extract<typeof e, { type: 'message' }> => e.type === 'message' && e.clientReqId === id);
      const msgs: TtsServerMessage[] = mine.map((e) => e.message);
      expect(msgs[0]).toMatchObject({ type: 'ready', sample_rate: 48000, frame_size: 3840, client_req_id: id });
      expect(msgs.filter((m) => m.type === 'text').map((m) => (m as { text: string }).text)).toEqual(words[id]);
      const audio = mine.filter((e) => e.message.type === 'audio');
      // Word k is one 80 ms frame of the sample value k, its times restart at 0 for each request.
      audio.forEach((e, k) => {
        expect(e.message).toMatchObject({ start_s: (k * 3840) / 48000, stop_s: ((k + 1) * 3840) / 48000, stream_id: 0 });
        const pcm = new Int16Array(e.audio!.buffer, e.audio!.byteOffset, e.audio!.byteLength / 2);
        expect(pcm.length).toBe(3840);
        expect(pcm.every((s) => s === k + 1)).toBe(true);
      });
      expect(audio).toHaveLength(words[id]!.length);
      expect(msgs.at(-1)).toEqual({ type: 'end_of_stream', client_req_id: id });
    }
    const engine = ttsEngines.at(-1)!;
    await until(() => engine.opened === 3 && engine.closed === 3);
  });
});
