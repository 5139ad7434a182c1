/**
 * POST /v1/audio/speech with `stream_format: "sse"` in process (tone engine): OpenAI's speech
 * events, the same audio as the byte answer, ffmpeg's formats through the same sink, and a bad
 * `stream_format` still a 400.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isFfmpegAvailable } from '../../src/node/ffmpeg.js';
import { startServer, type Harness } from './harness.js';

let h: Harness;
let v1: string;
beforeAll(async () => {
  h = await startServer();
  v1 = h.base.replace(/\/api$/, '/v1');
});
afterAll(() => h.close());

const speak = (body: Record<string, unknown>): Promise<Response> =>
  fetch(`${v1}/audio/speech`, {
    method: 'POST',
    headers: { authorization: `Bearer ${h.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini-tts', voice: 'alloy', input: 'hello world', ...body }),
  });

/** The `data:` events of an event stream. */
async function events(res: Response): Promise<Array<Record<string, unknown>>> {
  const text = await res.text();
  expect(text.endsWith('\n\n')).toBe(true);
  return text
    .split('\n\n')
    .filter((e) => e !== '')
    .map((e) => {
      expect(e.startsWith('data: ')).toBe(true);
      return JSON.parse(e.slice(6)) as Record<string, unknown>;
    });
}

describe("/v1/audio/speech stream_format: 'sse'", () => {
  it('speech.audio.delta events carry the same audio as the byte answer, then speech.audio.done with usage', async () => {
    const bytes = Buffer.from(await (await speak({ response_format: 'pcm' })).arrayBuffer());
    const res = await speak({ response_format: 'pcm', stream_format: 'sse' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const evs = await events(res);
    const deltas = evs.filter((e) => e['type'] === 'speech.audio.delta');
    expect(deltas.length).toBeGreaterThan(1);
    expect(Buffer.concat(deltas.map((d) => Buffer.from(d['audio'] as string, 'base64')))).toEqual(bytes);
    expect(evs.at(-1)).toEqual({ type: 'speech.audio.done', usage: { input_tokens: 11, output_tokens: 0, total_tokens: 11 } });
    expect(evs.filter((e) => e['type'] === 'speech.audio.done')).toHaveLength(1);
  });

  it.skipIf(!isFfmpegAvailable())('mp3 through ffmpeg streams as events too', async () => {
    const evs = await events(await speak({ response_format: 'mp3', stream_format: 'sse' }));
    const audio = Buffer.concat(evs.filter((e) => e['type'] === 'speech.audio.delta').map((d) => Buffer.from(d['audio'] as string, 'base64')));
    expect(audio.length).toBeGreaterThan(100);
    expect(evs.at(-1)).toMatchObject({ type: 'speech.audio.done' });
  });

  it('a stream_format other than audio or sse is a 400 naming it', async () => {
    const res = await speak({ stream_format: 'video' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { param: string } }).error.param).toBe('stream_format');
  });
});
