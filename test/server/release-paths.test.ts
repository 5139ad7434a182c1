/**
 * Every request releases what it holds on every way it can end (issue 31 §1): for each POST route
 * that holds a session slot and credits, and each ending — finished, refused (an error), cut off
 * mid-body by its client, cut by node:http's 408 past `requestTimeoutMs` — the key's live sessions
 * go back to zero and no credit stays held; and each WebSocket route gives its slot back when its
 * client drops it. In-process, with the tone engines (test/server/harness.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect as tcpConnect, type Socket } from 'node:net';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, startServer, type Harness } from './harness.js';
import { encodeWav } from '../../src/audio/wav.js';
import { isFfmpegAvailable } from '../../src/node/ffmpeg.js';
import { createToneSttEngine } from '../../src/engines/tone.js';
import { registerSttEngine } from '../../src/engines/registry.js';

/** 1 s of 24 kHz s16 mono near-silence, as WAV. */
const WAV = Buffer.from(encodeWav(new Int16Array(24000).map((_, i) => (i % 50) - 25), { sampleRate: 24000, channels: 1 }));
const BOUNDARY = 'voicewirerelease';

/** A multipart body of `fields`, then (when given) the `file` part's head and bytes; `end` closes the form. */
function multipart(fields: Record<string, string>, file?: { name: string; type: string; bytes: Uint8Array }, end = true): Buffer {
  const parts: Buffer[] = [];
  for (const [k, v] of Object.entries(fields)) parts.push(Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`));
  if (file !== undefined) {
    parts.push(Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${file.name}"\r\nContent-Type: ${file.type}\r\n\r\n`), Buffer.from(file.bytes));
    if (end) parts.push(Buffer.from('\r\n'));
  }
  if (end) parts.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  return Buffer.concat(parts);
}

interface Route {
  /** The route's name in /statusz. */
  name: string;
  path: string;
  headers(h: Harness): Record<string, string>;
  /** A body it answers 200. */
  good: Buffer;
  /** A body it refuses. */
  bad: Buffer;
  badStatus: number;
  /** Credits a finished request costs. */
  cost: number;
  /** Credits a request cut off mid-body may cost: the STT POST is paid for the audio processed as it came. */
  partialCost: number;
  /** The route answers (200, NDJSON) while the body still streams in: node:http can then only cut it, not answer 408. */
  streams?: boolean;
}

const json = (h: Harness): Record<string, string> => ({ 'x-api-key': h.apiKey, 'content-type': 'application/json' });
const bearer = (h: Harness, type: string): Record<string, string> => ({ authorization: `Bearer ${h.apiKey}`, 'content-type': type });

const ROUTES: Route[] = [
  { name: 'tts_post', path: '/api/post/speech/tts', headers: json, good: Buffer.from(JSON.stringify({ text: 'hello there', output_format: 'pcm', only_audio: true })), bad: Buffer.from('{"text":5}'), badStatus: 422, cost: 11, partialCost: 0 },
  { name: 'stt_post', path: '/api/post/speech/asr', headers: (h) => ({ 'x-api-key': h.apiKey, 'content-type': 'audio/wav' }), good: WAV, bad: Buffer.from('RIFF\x10\x00\x00\x00WAVEjunkjunkjunk'), badStatus: 500, cost: 1, partialCost: 1, streams: true },
  { name: 'openai_speech', path: '/v1/audio/speech', headers: (h) => bearer(h, 'application/json'), good: Buffer.from(JSON.stringify({ model: 'tts-1', input: 'hello there', voice: 'alloy', response_format: 'wav' })), bad: Buffer.from('{"model":"tts-1"}'), badStatus: 400, cost: 11, partialCost: 0 },
  {
    name: 'openai_transcription',
    path: '/v1/audio/transcriptions',
    headers: (h) => bearer(h, `multipart/form-data; boundary=${BOUNDARY}`),
    good: multipart({ model: 'whisper-1' }, { name: 'a.wav', type: 'audio/wav', bytes: WAV }),
    bad: multipart({ model: 'whisper-1', language: 'xx' }, { name: 'a.wav', type: 'audio/wav', bytes: WAV }),
    badStatus: 400,
    // 1 s of the client's audio: one started second, as POST /api/post/speech/asr (the delay frames
    // the server adds are not billed, issue 35).
    cost: 1,
    partialCost: 0,
  },
];

/** An HTTP/1.1 request written by hand: its socket, and its whole answer once the server closes or ends it. */
function rawRequest(h: Harness, path: string, headers: Record<string, string>, declared: number): { socket: Socket; answer: Promise<string> } {
  const url = new URL(h.base);
  const socket = tcpConnect({ host: url.hostname, port: Number(url.port) });
  socket.on('error', () => undefined);
  const head = [`POST ${path} HTTP/1.1`, `host: ${url.host}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), `content-length: ${declared}`, 'connection: close', '', ''].join('\r\n');
  socket.write(head);
  let got = '';
  socket.on('data', (d: Buffer) => (got += d.toString('latin1')));
  const answer = new Promise<string>((resolve) => socket.once('close', () => resolve(got)));
  return { socket, answer };
}

/** Polls until `f` holds, or fails naming `what` with the last value seen. */
async function eventually<T>(what: string, read: () => T | Promise<T>, ok: (v: T) => boolean, ms = 8000): Promise<T> {
  const end = Date.now() + ms;
  let v = await read();
  while (!ok(v)) {
    if (Date.now() > end) throw new Error(`${what}: still ${JSON.stringify(v)} after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
    v = await read();
  }
  return v;
}

describe('release paths of the POST routes: every ending gives back the session slot and the credit hold', () => {
  let h: Harness;
  let orgId: string;
  beforeAll(async () => {
    // A short request timeout, so a slow upload meets node:http's 408 within the test.
    h = await startServer({ limits: { headersTimeoutMs: 1000, requestTimeoutMs: 2500 } });
    orgId = (await h.store.getOrganizationByName('default'))!.id;
    await h.store.setCredits(orgId, 10_000, 10_000);
  });
  afterAll(() => h.close());

  const live = (): number => h.server.context.sessions.live;
  const balance = async (): Promise<number> => (await h.store.getOrganization(orgId))!.remainingCredits;
  /** Waits for no live session, then for the balance to stop moving (a settlement runs after the release). */
  async function released(): Promise<number> {
    await eventually('live sessions', live, (n) => n === 0);
    let last = await balance();
    for (;;) {
      await new Promise((r) => setTimeout(r, 150));
      const now = await balance();
      if (now === last) return now;
      last = now;
    }
  }

  for (const route of ROUTES) {
    it(`${route.path}: finished — 200, the slot back, paid ${route.cost}`, async () => {
      const before = await balance();
      const r = await fetch(`${h.base.replace(/\/api$/, '')}${route.path}`, { method: 'POST', headers: route.headers(h), body: new Uint8Array(route.good) });
      expect(r.status, await r.clone().text()).toBe(200);
      await r.arrayBuffer();
      expect(before - (await released())).toBe(route.cost);
    });

    it(`${route.path}: refused — ${route.badStatus}, the slot back, nothing paid`, async () => {
      const before = await balance();
      const r = await fetch(`${h.base.replace(/\/api$/, '')}${route.path}`, { method: 'POST', headers: route.headers(h), body: new Uint8Array(route.bad) });
      expect(r.status, await r.clone().text()).toBe(route.badStatus);
      await r.arrayBuffer();
      expect(before - (await released())).toBe(0);
    });

    it(`${route.path}: cut off mid-body by its client — the slot back, no hold left`, async () => {
      const before = await balance();
      const half = route.good.subarray(0, Math.floor(route.good.length / 2));
      const { socket } = rawRequest(h, route.path, route.headers(h), route.good.length * 4);
      socket.write(half);
      await eventually(`${route.name} opened`, live, (n) => n === 1);
      await new Promise((r) => setTimeout(r, 200));
      socket.destroy();
      const after = await released();
      expect(before - after).toBeLessThanOrEqual(route.partialCost);
    });

    it(`${route.path}: a slow upload cut by node:http's 408 — the slot back, no hold left`, async () => {
      const before = await balance();
      const { socket, answer } = rawRequest(h, route.path, route.headers(h), route.good.length * 4);
      socket.write(route.good.subarray(0, Math.floor(route.good.length / 2)));
      // 1 byte every 100 ms: the body never ends within requestTimeoutMs.
      const drip = setInterval(() => socket.write(Buffer.from([0x20])), 100);
      try {
        const text = await answer;
        expect(text.slice(0, 12)).toBe(route.streams === true && text.startsWith('HTTP/1.1 200') ? 'HTTP/1.1 200' : 'HTTP/1.1 408');
      } finally {
        clearInterval(drip);
        socket.destroy();
      }
      const after = await released();
      expect(before - after).toBeLessThanOrEqual(route.partialCost);
    }, 20_000);
  }

  it('POST /api/voices/ cut off mid-upload: the handler ends (it waited for busboy forever)', async () => {
    const headers = { 'x-api-key': h.apiKey, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` };
    const body = multipart({ name: 'v' }, { name: 'a.wav', type: 'audio/wav', bytes: WAV }, false);
    const { socket } = rawRequest(h, '/api/voices/', headers, body.length + 100_000);
    socket.write(body);
    await new Promise((r) => setTimeout(r, 200));
    const seen = h.logs.length;
    socket.destroy();
    await eventually('the voices upload ended', () => h.logs.slice(seen).some((l) => l.includes('PROTOCOL_CONNECTION_CLOSED')), (v) => v);
  });

  it.each([
    ['/speech/tts', { type: 'setup', output_format: 'pcm' }],
    ['/speech/asr', { type: 'setup', input_format: 'wav' }],
    ['/speech/s2s', { type: 'setup', model_name: 'default', input_format: 'wav' }],
  ])('WebSocket %s dropped by its client mid-session: the slot back', async (path, setup) => {
    const c = connect(`${h.wsBase}${path}`, { 'x-api-key': h.apiKey });
    c.send(setup);
    await c.waitFor((m) => m['type'] === 'ready');
    expect(live()).toBe(1);
    c.ws.terminate();
    await released();
  });
});

describe('a transcription over the audio limit', () => {
  let h: Harness;
  let orgId: string;
  let dir: string;
  beforeAll(async () => {
    h = await startServer({ limits: { sessionSeconds: 3 } });
    orgId = (await h.store.getOrganizationByName('default'))!.id;
    await h.store.setCredits(orgId, 10_000, 10_000);
    dir = mkdtempSync(join(tmpdir(), 'voicewire-release-'));
  });
  afterAll(async () => {
    await h.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const balance = async (): Promise<number> => (await h.store.getOrganization(orgId))!.remainingCredits;

  async function transcribe(name: string, type: string, bytes: Uint8Array): Promise<{ status: number; body: { error: { message: string; type: string } } }> {
    const r = await fetch(`${h.base.replace(/\/api$/, '')}/v1/audio/transcriptions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.apiKey}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
      body: new Uint8Array(multipart({ model: 'whisper-1' }, { name, type, bytes })),
    });
    return { status: r.status, body: (await r.json()) as { error: { message: string; type: string } } };
  }

  /** `seconds` of a tone, encoded by ffmpeg in `codec` (mp3 through a pipe tells no length; FLAC does). */
  function tone(seconds: number, ext: string): Uint8Array {
    const out = join(dir, `tone.${ext}`);
    execFileSync('ffmpeg', ['-y', '-v', 'error', '-f', 'lavfi', '-i', `sine=frequency=440:sample_rate=16000:duration=${seconds}`, '-ac', '1', out]);
    return readFileSync(out);
  }

  it('a WAV whose header says 5 s: AUDIO_LIMIT_EXCEEDED (400) before any work, nothing paid', async () => {
    const before = await balance();
    const wav = encodeWav(new Int16Array(24000 * 5), { sampleRate: 24000, channels: 1 });
    const r = await transcribe('long.wav', 'audio/wav', wav);
    expect(r.status).toBe(400);
    expect(r.body.error.message).toMatch(/5\.0 s of audio, over the limit of 3 s/);
    expect(await balance()).toBe(before);
  });

  it.runIf(isFfmpegAvailable())('a FLAC of 8 s (its length from ffprobe): the limit error before any work, nothing paid', async () => {
    const before = await balance();
    const r = await transcribe('long.flac', 'audio/flac', tone(8, 'flac'));
    expect(r.status).toBe(400);
    expect(r.body.error.message).toMatch(/over the limit of 3 s/);
    expect(await balance()).toBe(before);
  });

  it.runIf(isFfmpegAvailable())('an MP3 of 8 s (its length from its Xing frame): the limit error before any work, nothing paid', async () => {
    const before = await balance();
    const r = await transcribe('long.mp3', 'audio/mpeg', tone(8, 'mp3'));
    expect(r.status).toBe(400);
    expect(r.body.error.message).toMatch(/8\.\d s of audio, over the limit of 3 s/);
    expect(await balance()).toBe(before);
  });

  it.runIf(isFfmpegAvailable())('an Ogg Opus of 8 s (its length from the last granule): the limit error before any work, nothing paid', async () => {
    const before = await balance();
    const r = await transcribe('long.opus', 'audio/ogg', tone(8, 'opus'));
    expect(r.status).toBe(400);
    expect(r.body.error.message).toMatch(/8\.\d s of audio, over the limit of 3 s/);
    expect(await balance()).toBe(before);
  });

  it.runIf(isFfmpegAvailable())('an Ogg Vorbis of 8 s (no length through a pipe): the decoder\'s limit error, not ffmpeg\'s broken pipe, and nothing paid', async () => {
    const before = await balance();
    const r = await transcribe('long.ogg', 'audio/ogg', tone(8, 'ogg'));
    expect(r.status).toBe(400);
    expect(r.body.error.message).toMatch(/maxDecodedSeconds \(3 s\)/);
    expect(r.body.error.message).not.toMatch(/pipe/i);
    await new Promise((res) => setTimeout(res, 300));
    expect(await balance()).toBe(before);
  });
});

describe('a transcription whose client goes away mid-work', () => {
  it('gives back its slot and its hold, and pays nothing (no answer was sent)', async () => {
    // The tone engine, 2 ms per 80 ms frame: the transcription yields to the event loop (the test's
    // timers run in this process), so the client can leave while it runs.
    const tone = createToneSttEngine();
    registerSttEngine('slow-tone', {
      create: () => ({
        open: async (config, emit) => {
          const s = await tone.open(config, emit);
          return { ...s, push: async (frame) => (await new Promise((r) => setTimeout(r, 2)), s.push(frame)), ...(s.end ? { end: () => s.end!() } : {}), close: () => s.close() };
        },
      }),
    });
    const h = await startServer({ stt: 'slow-tone' });
    try {
      const orgId = (await h.store.getOrganizationByName('default'))!.id;
      await h.store.setCredits(orgId, 10_000, 10_000);
      const balance = async (): Promise<number> => (await h.store.getOrganization(orgId))!.remainingCredits;
      const wav = Buffer.from(encodeWav(new Int16Array(24000 * 60), { sampleRate: 24000, channels: 1 }));
      const body = multipart({ model: 'whisper-1' }, { name: 'a.wav', type: 'audio/wav', bytes: wav });
      const { socket } = rawRequest(h, '/v1/audio/transcriptions', bearer(h, `multipart/form-data; boundary=${BOUNDARY}`), body.length);
      socket.write(body);
      // The first hold is taken once the engine has the first second: the transcription runs.
      await eventually('a hold taken', balance, (b) => b < 10_000, 20_000);
      socket.destroy();
      await eventually('live sessions', () => h.server.context.sessions.live, (n) => n === 0);
      await eventually('the hold given back', balance, (b) => b === 10_000);
    } finally {
      await h.close();
    }
  }, 40_000);
});

describe('a drain after cut-off uploads', () => {
  it('does not wait out its grace for sessions whose clients are gone (leaked ones held every SIGTERM the whole grace)', async () => {
    const h = await startServer();
    try {
      const body = multipart({ model: 'whisper-1' }, { name: 'a.wav', type: 'audio/wav', bytes: WAV }, false);
      const { socket } = rawRequest(h, '/v1/audio/transcriptions', bearer(h, `multipart/form-data; boundary=${BOUNDARY}`), body.length * 4);
      socket.write(body.subarray(0, body.length >> 1));
      await eventually('the upload opened', () => h.server.context.sessions.live, (n) => n === 1);
      socket.destroy();
      // The drain ends once no session is live: at once here, not after the 20 s grace.
      const grace = 20;
      const started = Date.now();
      await h.server.shutdown(grace);
      expect(Date.now() - started).toBeLessThan((grace * 1000) / 4);
      expect(h.server.context.sessions.live).toBe(0);
    } finally {
      await h.close();
    }
  }, 40_000);
});
