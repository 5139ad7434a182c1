/**
 * The process-wide budgets of issue 31 with their per-key shares: upload bytes held in memory
 * (`uploadBytes`, `uploadBytesPerKey`) and live ffmpeg children (`ffmpegChildren`,
 * `ffmpegChildrenPerKey`); a full process-wide budget is 503 on `/v1` (ENGINE_BUSY, §6), a key
 * past its share 429, and both give everything back.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startServer, type Harness } from './harness.js';
import { encodeWav } from '../../src/audio/wav.js';
import { UploadBudget } from '../../src/server/upload-budget.js';
import { FfmpegBudget } from '../../src/server/ffmpeg-budget.js';
import { openAIErrorResponse } from '../../src/server/routes/openai/errors.js';
import { VoicewireError } from '../../src/util/errors.js';
import { isFfmpegAvailable } from '../../src/node/ffmpeg.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const codeOf = (f: () => unknown): string | undefined => {
  try {
    f();
  } catch (e) {
    return (e as VoicewireError).code;
  }
  return undefined;
};

describe('ENGINE_BUSY on /v1', () => {
  it('is 503 service_unavailable (the server is busy, the SDK retries), not a 500', () => {
    const r = openAIErrorResponse(new VoicewireError('ENGINE_BUSY', 'the server holds its limit'));
    expect(r.status).toBe(503);
    expect(r.body.error.code).toBe('service_unavailable');
  });
});

describe('UploadBudget', () => {
  it('counts bytes per key and per process, refuses past either with its code, and gives everything back', () => {
    const b = new UploadBudget(100, 60);
    const a1 = b.lease('a');
    a1.add(50);
    expect(codeOf(() => a1.add(11))).toBe('LIMIT_EXCEEDED'); // the key's share
    const b1 = b.lease('b');
    b1.add(50);
    expect(codeOf(() => b1.add(1))).toBe('ENGINE_BUSY'); // the process's budget
    expect([b.bytes, b.bytesOf('a'), b.bytesOf('b')]).toEqual([100, 50, 50]);
    a1.release();
    a1.release();
    expect([b.bytes, b.bytesOf('a')]).toEqual([50, 0]);
    b1.add(10);
    b1.release();
    expect(b.bytes).toBe(0);
  });
});

describe('FfmpegBudget', () => {
  it('holds a slot until the child has exited; one more is ENGINE_BUSY (process) or LIMIT_EXCEEDED (key)', async () => {
    const b = new FfmpegBudget(3, 2);
    const exits: Array<() => void> = [];
    const child = () => ({ exited: new Promise<void>((resolve) => exits.push(resolve)) });
    b.start('a', child);
    b.start('a', child);
    expect(codeOf(() => b.start('a', child))).toBe('LIMIT_EXCEEDED');
    b.start('b', child);
    expect(codeOf(() => b.start('c', child))).toBe('ENGINE_BUSY');
    expect(b.live).toBe(3);
    exits[0]!();
    await new Promise((r) => setImmediate(r));
    expect(b.live).toBe(2);
    b.start('c', child);
    // A spawn that throws gives its slot back at once.
    for (const e of exits) e();
    await new Promise((r) => setImmediate(r));
    expect(codeOf(() => b.start('a', () => { throw new VoicewireError('FFMPEG_NOT_FOUND', 'no ffmpeg'); }))).toBe('FFMPEG_NOT_FOUND');
    expect(b.live).toBe(0);
  });
});

describe('the budgets on /v1/audio/transcriptions and /v1/audio/speech', () => {
  const v1 = (hh: Harness): string => hh.base.replace(/\/api$/, '/v1');
  const wavOf = (seconds: number): Uint8Array => encodeWav(new Int16Array(24000 * seconds), { sampleRate: 24000, channels: 1 });
  async function transcribe(hh: Harness, bytes: Uint8Array): Promise<{ status: number; code: string | null }> {
    const fd = new FormData();
    fd.set('model', 'whisper-1');
    fd.set('file', new Blob([new Uint8Array(bytes)], { type: 'audio/wav' }), 'a.wav');
    const r = await fetch(`${v1(hh)}/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${hh.apiKey}` }, body: fd });
    const body = (await r.json()) as { error?: { code: string | null } };
    return { status: r.status, code: body.error?.code ?? null };
  }

  it('a file past the key\'s share of upload bytes is 429; past the process\'s budget 503; a small one still passes; nothing stays held', async () => {
    h = await startServer({ limits: { uploadBytes: 600_000, uploadBytesPerKey: 400_000 } });
    expect(await transcribe(h, wavOf(10))).toEqual({ status: 429, code: 'rate_limit_exceeded' }); // 480 KB > the key's 400 KB
    await h.close();
    h = await startServer({ limits: { uploadBytes: 300_000, uploadBytesPerKey: 400_000 } });
    expect(await transcribe(h, wavOf(10))).toEqual({ status: 503, code: 'service_unavailable' }); // 480 KB > the process's 300 KB
    expect((await transcribe(h, wavOf(1))).status).toBe(200);
    expect(h.server.context.uploads.bytes).toBe(0);
    expect(h.server.context.sessions.live).toBe(0);
  });

  it.runIf(isFfmpegAvailable())('with the ffmpeg budget full, an mp3 answer is 503 before any spawn; wav still works; the slot comes back', async () => {
    h = await startServer({ limits: { ffmpegChildren: 1, ffmpegChildrenPerKey: 1 } });
    const ctx = h.server.context;
    // The one slot taken by a child that has not exited.
    let exit!: () => void;
    ctx.ffmpeg.start('someone-else', () => ({ exited: new Promise<void>((resolve) => (exit = resolve)) }));
    const speech = (format: string) => fetch(`${v1(h!)}/audio/speech`, { method: 'POST', headers: { authorization: `Bearer ${h!.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tts-1', input: 'hello', voice: 'alloy', response_format: format }) });
    const busy = await speech('mp3');
    expect(busy.status).toBe(503);
    expect(((await busy.json()) as { error: { message: string } }).error.message).toMatch(/limits\.ffmpegChildren/);
    expect((await speech('wav')).status).toBe(200);
    exit();
    await new Promise((r) => setImmediate(r));
    const ok = await speech('mp3');
    expect(ok.status).toBe(200);
    await ok.arrayBuffer();
    await new Promise((r) => setTimeout(r, 300));
    expect(ctx.ffmpeg.live).toBe(0);
    expect(ctx.sessions.live).toBe(0);
  });
});
