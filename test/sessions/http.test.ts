/**
 * Server-side helpers around the runners: `session.fail`, credentials (§5), the STT Content-Type
 * (protocol-notes.md) and the one-shot HTTP routes (§4.2, §4.3) as NDJSON / raw audio.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { VoicewireError } from '../../src/util/errors.js';
import {
  createScriptedSttEngine,
  createScriptedTtsEngine,
  createSttHttpResponse,
  createSttServerSession,
  createTtsHttpResponse,
  createTtsServerSession,
  readCredentials,
  restErrorResponse,
  sttInputFormatFromContentType,
  validateTtsRequestBody,
} from '../../src/index.js';
import { decodeWav } from '../../src/audio/wav.js';

type Msg = Record<string, unknown> & { type: string };
const b64 = (n: number) => Buffer.alloc(n).toString('base64');

function recorder() {
  const out: Msg[] = [];
  const closes: number[] = [];
  return { out, closes, transport: { send: (t: string) => void out.push(JSON.parse(t) as Msg), close: (c: number) => void closes.push(c) } };
}

describe('session.fail (a server ends a request or the socket)', () => {
  it('single request: error with the code, then close with it; the engine stream is closed', () => {
    const r = recorder();
    const engine = createScriptedSttEngine();
    const s = createSttServerSession({ engine, transport: r.transport });
    s.receive(JSON.stringify({ type: 'setup', input_format: 'pcm' }));
    s.fail(new VoicewireError('PROTOCOL_UNAUTHORIZED', 'API key revoked'));
    expect(r.out.at(-1)).toEqual({ type: 'error', message: 'API key revoked', code: 1008 });
    expect(r.closes).toEqual([1008]);
    expect(s.closed).toBe(true);
    expect(engine.closed).toBe(1);
  });

  it('before any setup: error without id, close; an error without close code is 1011', () => {
    const r = recorder();
    const s = createTtsServerSession({ engine: createScriptedTtsEngine(), transport: r.transport });
    s.fail(new VoicewireError('INVALID_STATE', 'shutting down'));
    expect(r.out).toEqual([{ type: 'error', message: 'shutting down', code: 1011 }]);
    expect(r.closes).toEqual([1011]);
  });

  it('multiplexed: fail(error, id) ends only that request; the others go on', () => {
    const r = recorder();
    const s = createSttServerSession({ engine: createScriptedSttEngine({ delayInFrames: 0 }), transport: r.transport });
    for (const id of ['a', 'b']) s.receive(JSON.stringify({ type: 'setup', input_format: 'pcm', close_ws_on_eos: false, client_req_id: id }));
    s.fail(new VoicewireError('PROTOCOL_UNAUTHORIZED', 'quota exceeded for a'), 'a');
    expect(r.out.at(-1)).toEqual({ type: 'error', message: 'quota exceeded for a', code: 1008, client_req_id: 'a' });
    expect(r.closes).toEqual([]);
    s.receive(JSON.stringify({ type: 'audio', audio: b64(3840), client_req_id: 'b' }));
    expect(r.out.at(-1)).toMatchObject({ type: 'step', client_req_id: 'b', step_idx: 0 });
    s.fail(new VoicewireError('PROTOCOL_UNAUTHORIZED', 'late'), 'a'); // already ended: nothing
    expect(r.out.at(-1)).toMatchObject({ type: 'step', client_req_id: 'b' });
    s.fail(new VoicewireError('PROTOCOL_INTERNAL', 'going down')); // no id on a multiplexed socket: the socket
    expect(r.out.at(-1)).toEqual({ type: 'error', message: 'going down', code: 1011 });
    expect(r.closes).toEqual([1011]);
  });

  it('a single request with an id that does not multiplex: fail() without id reaches it (error carries its id)', () => {
    const r = recorder();
    const s = createTtsServerSession({ engine: createScriptedTtsEngine(), transport: r.transport });
    s.receive(JSON.stringify({ type: 'setup', output_format: 'pcm', client_req_id: 'solo' }));
    s.fail(new VoicewireError('PROTOCOL_UNAUTHORIZED', 'expired'));
    expect(r.out.at(-1)).toEqual({ type: 'error', message: 'expired', code: 1008, client_req_id: 'solo' });
    expect(r.closes).toEqual([1008]);
  });
});

describe('readCredentials (§5)', () => {
  it('x-api-key header on every route, any case, from a record or a Headers', () => {
    expect(readCredentials({ headers: { 'x-api-key': 'k1' }, route: 'rest' })).toEqual({ apiKey: 'k1' });
    expect(readCredentials({ headers: { 'X-Api-Key': 'k2' }, url: '/speech/asr', route: 'stt' })).toEqual({ apiKey: 'k2' });
    expect(readCredentials({ headers: new Headers({ 'X-API-KEY': 'k3' }), route: 'tts' })).toEqual({ apiKey: 'k3' });
    expect(readCredentials({ headers: { 'x-api-key': ['k4', 'k5'] }, route: 'stt' })).toEqual({ apiKey: 'k4' });
  });

  it('?token= is accepted on TTS routes only', () => {
    expect(readCredentials({ headers: {}, url: '/speech/tts?token=t%2B1&x=2', route: 'tts' })).toEqual({ token: 't+1' });
    expect(readCredentials({ headers: {}, url: new URL('wss://h/speech/tts?token=abc#f'), route: 'tts' })).toEqual({ token: 'abc' });
    expect(readCredentials({ headers: { 'x-api-key': 'k' }, url: '/post/speech/tts?token=t', route: 'tts' })).toEqual({ apiKey: 'k', token: 't' });
    expect(readCredentials({ headers: { 'x-api-key': 'k' }, url: '/speech/asr?token=t', route: 'stt' })).toEqual({ apiKey: 'k' });
    // Issue 35: the refusal says where a token is accepted as docs/server.md's table does (seen failing first: "TTS routes only").
    expect(() => readCredentials({ headers: {}, url: '/speech/asr?token=t', route: 'stt' })).toThrow('send the x-api-key header (a token query parameter is accepted only where a browser page needs it: TTS (POST and WebSocket), the STT WebSocket and GET /voices/)');
  });

  it('missing (or empty) → PROTOCOL_UNAUTHORIZED 1008; REST form "error from server 1008: …"', () => {
    for (const headers of [{}, { 'x-api-key': '' }, { 'x-api-key': '  ' }]) {
      let err: unknown;
      try {
        readCredentials({ headers, url: '/speech/tts?token=', route: 'tts' });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(VoicewireError);
      expect(err).toMatchObject({ code: 'PROTOCOL_UNAUTHORIZED', closeCode: 1008 });
      const rest = restErrorResponse(err);
      expect(rest.status).toBe(500);
      expect(rest.body.startsWith('error from server 1008: ')).toBe(true);
    }
  });

  it('a session rejected at connection: fail() sends error 1008 and closes before any setup', () => {
    const r = recorder();
    const s = createTtsServerSession({ engine: createScriptedTtsEngine(), transport: r.transport });
    try {
      readCredentials({ headers: {}, url: '/speech/tts', route: 'tts' });
    } catch (e) {
      s.fail(e as VoicewireError);
    }
    expect(r.out).toEqual([{ type: 'error', message: expect.stringContaining('missing API key') as unknown, code: 1008 }]);
    expect(r.closes).toEqual([1008]);
  });
});

describe('sttInputFormatFromContentType (protocol-notes.md)', () => {
  it('maps the four types, tolerating case and parameters; absent means wav', () => {
    const cases: Array<[string | undefined | null, string]> = [
      [undefined, 'wav'],
      [null, 'wav'],
      ['', 'wav'],
      ['audio/wav', 'wav'],
      ['Audio/WAV; charset=binary', 'wav'],
      ['audio/pcm', 'pcm'],
      ['audio/pcm;rate=24000', 'pcm'],
      ['audio/ogg', 'opus'],
      ['audio/ogg; codecs=opus', 'opus'],
      ['AUDIO/OPUS', 'opus'],
      ['audio/x-wav', 'wav'],
      ['audio/wave', 'wav'],
      ['audio/vnd.wave', 'wav'],
    ];
    for (const [ct, want] of cases) expect(sttInputFormatFromContentType(ct), String(ct)).toBe(want);
  });

  it('anything else: the plain-text error body, exactly', () => {
    for (const ct of ['application/json', 'audio/mpeg', 'audio/x-wave', 'text/plain; charset=utf-8']) {
      let err: unknown;
      try {
        sttInputFormatFromContentType(ct);
      } catch (e) {
        err = e;
      }
      expect(err).toMatchObject({ code: 'PROTOCOL_UNSUPPORTED_CONTENT_TYPE', message: `unsupported content type ${ct}` });
      const rest = restErrorResponse(err);
      expect(rest).toEqual({ status: 500, contentType: 'text/plain; charset=utf-8', body: `unsupported content type ${ct}` });
    }
  });
});

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

function* chunks(bytes: Uint8Array, size: number): Generator<Uint8Array> {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

describe('POST /post/speech/asr as NDJSON (createSttHttpResponse)', () => {
  const wav = new Uint8Array(readFileSync(new URL('../../fixtures/speech/en_24k.wav', import.meta.url)));
  const samples = decodeWav(wav, { output: 'int16' }).samples.length;

  it('a wav body (default Content-Type): step lines for every 80 ms, text lines, end_of_stream last', async () => {
    const engine = createScriptedSttEngine({ delayInFrames: 2, frames: { 3: [{ type: 'text', text: 'hello', start_s: 0.1 }], 6: [{ type: 'end_text', stop_s: 0.5 }] } });
    const lines = await collect(createSttHttpResponse({ engine, body: chunks(wav, 4000), query: { model: 'default' } }));
    for (const l of lines) expect(l.endsWith('\n') && !l.slice(0, -1).includes('\n')).toBe(true);
    const msgs = lines.map((l) => JSON.parse(l) as Msg);
    expect(msgs.some((m) => m.type === 'ready')).toBe(false);
    expect(msgs.at(-1)).toEqual({ type: 'end_of_stream' });
    const steps = msgs.filter((m) => m.type === 'step');
    expect(steps).toHaveLength(Math.ceil(samples / 1920) + 2); // frames + delay_in_frames of silence
    expect(msgs.filter((m) => m.type === 'text')).toEqual([{ type: 'text', text: 'hello', start_s: 0.1 }]);
    expect(msgs.filter((m) => m.type === 'end_text')).toEqual([{ type: 'end_text', stop_s: 0.5 }]);
  });

  it('Content-Type audio/pcm: 24 kHz s16le; the query input_format wins over Content-Type', async () => {
    const pcm = new Uint8Array(1920 * 2 * 3);
    const a = (await collect(createSttHttpResponse({ engine: createScriptedSttEngine({ delayInFrames: 0 }), body: [pcm], contentType: 'audio/pcm' }))).map((l) => JSON.parse(l) as Msg);
    expect(a.filter((m) => m.type === 'step')).toHaveLength(3);
    const b = (await collect(createSttHttpResponse({ engine: createScriptedSttEngine({ delayInFrames: 0 }), body: [pcm], contentType: 'application/octet-stream', query: { input_format: 'pcm_48000' } }))).map(
      (l) => JSON.parse(l) as Msg,
    );
    expect(b.filter((m) => m.type === 'step').length).toBeGreaterThanOrEqual(1);
    expect(b.filter((m) => m.type === 'step').length).toBeLessThanOrEqual(2); // 3 frames at 48 kHz are 1.5 at 24 kHz
  });

  it('errors: a bad Content-Type or query throws at once; a failure after the first line is an error line (§7.2)', async () => {
    expect(() => createSttHttpResponse({ engine: createScriptedSttEngine(), body: [], contentType: 'audio/mpeg' })).toThrow('unsupported content type audio/mpeg');
    expect(() => createSttHttpResponse({ engine: createScriptedSttEngine(), body: [], query: { input_format: 'mp3' } })).toThrow(expect.objectContaining({ code: 'VALIDATION_FAILED' }));
    const lines = await collect(createSttHttpResponse({ engine: createScriptedSttEngine({ delayInFrames: 0, failAtFrame: 3 }), body: [new Uint8Array(1920 * 2 * 6)], contentType: 'audio/pcm' }));
    const msgs = lines.map((l) => JSON.parse(l) as Msg);
    expect(msgs.filter((m) => m.type === 'step').length).toBeGreaterThanOrEqual(1);
    expect(Object.keys(msgs.at(-1)!)).toEqual(['type', 'message']);
    expect(msgs.at(-1)!.type).toBe('error');
  });

  it('a failure before the first line throws from the iterator (the server answers 500)', async () => {
    await expect(collect(createSttHttpResponse({ engine: createScriptedSttEngine({ failOpen: true }), body: [new Uint8Array(100)], contentType: 'audio/pcm' }))).rejects.toMatchObject({
      code: 'PROTOCOL_SERVER_ERROR',
      closeCode: 1011,
    });
  });
});

describe('POST /post/speech/tts (createTtsHttpResponse)', () => {
  it('only_audio: the raw bytes of the format, nothing else', async () => {
    const body = validateTtsRequestBody({ text: 'one two', output_format: 'pcm', only_audio: true });
    const parts = await collect(createTtsHttpResponse({ engine: createScriptedTtsEngine({ lookaheadWords: 0 }), body }));
    for (const p of parts) expect(p).toBeInstanceOf(Uint8Array);
    const all = Buffer.concat(parts as Uint8Array[]);
    expect(all.length).toBe(2 * 3840 * 2);
    // Word k is spoken as samples of value k (the scripted engine).
    expect(all.readInt16LE(0)).toBe(1);
    expect(all.readInt16LE(3840 * 2)).toBe(2);
    const ulaw = await collect(createTtsHttpResponse({ engine: createScriptedTtsEngine({ lookaheadWords: 0 }), body: { ...body, output_format: 'ulaw_8000' } }));
    expect(ulaw.reduce((n, p) => n + (p as Uint8Array).length, 0)).toBe(2 * 640);
  });

  it('a transport that takes no audio lines (audioLines false, as POST only_audio): sendAudio gets empty lines, the same spans and the same other messages', async () => {
    const run = async (audioLines: boolean) => {
      const lines: number[] = [];
      const spans: number[] = [];
      const other: string[] = [];
      let closed!: () => void;
      const done = new Promise<void>((r) => (closed = r));
      const s = createTtsServerSession({
        engine: createScriptedTtsEngine({ lookaheadWords: 0 }),
        transport: { audioLines, send: (t: string) => void other.push(t), sendAudio: (line: Uint8Array, span: { stop_s: number }) => void (lines.push(line.byteLength), spans.push(span.stop_s)), close: () => closed() },
      });
      s.receive({ type: 'setup', output_format: 'pcm' });
      s.receive({ type: 'text', text: 'one two three' });
      s.receive({ type: 'end_of_stream' });
      await done;
      return { lines, spans, other: other.map((t) => t.replace(/"request_id":"[^"]*"/, "")) };
    };
    const withLines = await run(true);
    const without = await run(false);
    expect(withLines.lines.length).toBe(3);
    for (const n of withLines.lines) expect(n).toBeGreaterThan(3840);
    expect(without.lines).toEqual([0, 0, 0]);
    expect(without.spans).toEqual(withLines.spans);
    expect(without.other).toEqual(withLines.other);
  });

  it('onAudioTaken: the stop_s of each audio chunk once the consumer asks for more; none for the chunk it never took', async () => {
    for (const only_audio of [true, false]) {
      const body = validateTtsRequestBody({ text: 'one two three', output_format: 'pcm', only_audio });
      const taken: number[] = [];
      const it = createTtsHttpResponse({ engine: createScriptedTtsEngine({ lookaheadWords: 0 }), body, onAudioTaken: (s) => taken.push(s) })[Symbol.asyncIterator]();
      // Read until the second audio chunk, then leave (as a client that goes away).
      let audio = 0;
      while (audio < 2) {
        const r = await it.next();
        if (r.done) break;
        if (only_audio || (r.value as string).startsWith('{"type":"audio"')) audio++;
      }
      await it.return?.();
      expect(taken, `only_audio ${only_audio}`).toEqual([0.08]);
    }
  });

  it('NDJSON: audio (base64) and word lines, each word after its audio, end_of_stream last', async () => {
    const body = validateTtsRequestBody({ text: 'one two three', output_format: 'pcm_16000' });
    const lines = await collect(createTtsHttpResponse({ engine: createScriptedTtsEngine({ lookaheadWords: 0 }), body }));
    const msgs = lines.map((l) => JSON.parse(l as string) as Msg);
    expect(msgs.at(-1)).toEqual({ type: 'end_of_stream' });
    expect(msgs.some((m) => m.type === 'ready')).toBe(false);
    let stop = 0;
    let total = 0;
    for (const m of msgs) {
      if (m.type === 'audio') {
        stop = m['stop_s'] as number;
        total += Buffer.from(m['audio'] as string, 'base64').length;
      }
      if (m.type === 'text') expect(m['stop_s'] as number).toBeLessThanOrEqual(stop + 1e-6);
    }
    expect(msgs.filter((m) => m.type === 'text').map((m) => m['text'])).toEqual(['one', 'two', 'three']);
    expect(total).toBe(3 * 1280 * 2);
  });

  it('a failure after the first line: an error line (NDJSON) / the iterator throws (raw audio)', async () => {
    const body = validateTtsRequestBody({ text: 'a b c d', output_format: 'pcm' });
    const msgs = await collect(createTtsHttpResponse({ engine: createScriptedTtsEngine({ lookaheadWords: 0, failAtWord: 3 }), body: { ...body, text: 'a b <flush> c d' } }));
    expect(msgs.map((l) => (JSON.parse(l as string) as Msg).type).slice(0, 2)).toEqual(['audio', 'text']);
    const last = JSON.parse(msgs.at(-1) as string) as Msg;
    expect(last.type).toBe('error');
    expect(Object.keys(last)).toEqual(['type', 'message']);
    await expect(collect(createTtsHttpResponse({ engine: createScriptedTtsEngine({ lookaheadWords: 0, failAtWord: 3 }), body: { ...body, text: 'a b <flush> c d', only_audio: true } }))).rejects.toMatchObject({
      code: 'PROTOCOL_SERVER_ERROR',
    });
  });
});
