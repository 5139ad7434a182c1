import { describe, expect, it } from 'vitest';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  createScriptedSttEngine,
  createScriptedTtsEngine,
  createSttClientStreams,
  createSttServerStream,
  createTtsClientStreams,
  createTtsServerStream,
} from '../../src/index.js';
import { createSttClientTransforms, createSttServerTransform, createTtsServerTransform } from '../../src/node/protocol.js';
import { expand, loadFixtures, type Fixture } from './replay.js';

const fixtures = loadFixtures();
const byName = (n: string): Fixture => fixtures.find((f) => f.name === n)!;

function inputs(f: Fixture): string[] {
  return f.lines.flatMap((l) => ('in' in l ? [JSON.stringify(expand(l.in, false))] : 'in_raw' in l ? [l.in_raw] : []));
}
function expectedOut(f: Fixture): unknown[] {
  return f.lines.flatMap((l) => ('out' in l ? [expand(l.out, true)] : []));
}
function serverFrames(f: Fixture): string[] {
  return f.lines.flatMap((l) => ('out' in l ? [JSON.stringify(expand(l.out, false))] : []));
}
function expectedClose(f: Fixture): number | undefined {
  const c = f.lines.find((l) => 'close' in l);
  return c && 'close' in c ? c.close : undefined;
}

async function collect<T>(readable: ReadableStream<T>): Promise<T[]> {
  const out: T[] = [];
  const reader = readable.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return out;
    out.push(value);
  }
}

describe('web TransformStreams', () => {
  for (const name of ['stt-basic.jsonl', 'stt-flush.jsonl', 'stt-multiplex.jsonl', 'stt-not-json.jsonl']) {
    it(`STT server stream replays ${name}`, async () => {
      const f = byName(name);
      let closed: number | undefined;
      const stream = createSttServerStream({ engine: createScriptedSttEngine(f.meta.engine as never), onClose: (code) => (closed = code) });
      const writer = stream.writable.getWriter();
      const done = collect(stream.readable);
      for (const frame of inputs(f)) await writer.write(frame);
      await writer.close().catch(() => undefined); // the readable may have terminated first
      const out = (await done).map((t) => JSON.parse(t) as unknown);
      expect(out).toEqual(expectedOut(f));
      expect(closed).toBe(expectedClose(f));
    });
  }

  it('TTS server stream replays tts-multiplex.jsonl', async () => {
    const f = byName('tts-multiplex.jsonl');
    const stream = createTtsServerStream({ engine: createScriptedTtsEngine(f.meta.engine as never) });
    const writer = stream.writable.getWriter();
    const done = collect(stream.readable);
    for (const frame of inputs(f)) await writer.write(frame);
    await writer.close().catch(() => undefined);
    expect((await done).map((t) => JSON.parse(t) as unknown)).toEqual(expectedOut(f));
  });

  it('STT client streams: messages → frames, server frames → events', async () => {
    const f = byName('stt-flush.jsonl');
    const { outgoing, incoming } = createSttClientStreams();
    const frames = collect(outgoing.readable);
    const events = collect(incoming.readable);
    const w = outgoing.writable.getWriter();
    for (const l of f.lines) if ('in' in l) await w.write(expand(l.in, false) as never);
    await w.close();
    const wi = incoming.writable.getWriter();
    for (const t of serverFrames(f)) await wi.write(t);
    await wi.close();
    expect((await frames).map((t) => JSON.parse(t) as unknown)).toEqual(f.lines.flatMap((l) => ('in' in l ? [expand(l.in, false)] : [])));
    const ev = await events;
    expect(ev.filter((e) => e.type === 'message').map((e) => (e as { message: { type: string } }).message.type)).toEqual(expectedOut(f).map((m) => (m as { type: string }).type));
    expect(ev.at(-1)).toEqual({ type: 'closed', code: 1005, reason: '' });
  });

  it('a refused client message errors the outgoing stream with INVALID_STATE', async () => {
    const { outgoing } = createTtsClientStreams();
    const w = outgoing.writable.getWriter();
    void collect(outgoing.readable).catch(() => undefined);
    await expect(w.write({ type: 'text', text: 'before setup' })).rejects.toMatchObject({ code: 'INVALID_STATE' });
  });
});

describe('Node object-mode Transforms (voicewire/node)', () => {
  it('STT server transform replays stt-keep-open.jsonl', async () => {
    const f = byName('stt-keep-open.jsonl');
    const out: string[] = [];
    let closed: number | undefined;
    await pipeline(Readable.from(inputs(f)), createSttServerTransform({ engine: createScriptedSttEngine(f.meta.engine as never), onClose: (c) => (closed = c) }), async function* (src) {
      for await (const t of src) out.push(t as string);
    });
    expect(out.map((t) => JSON.parse(t) as unknown)).toEqual(expectedOut(f));
    expect(closed).toBe(1000);
  });

  it('TTS server transform replays tts-tags.jsonl', async () => {
    const f = byName('tts-tags.jsonl');
    const out: string[] = [];
    await pipeline(Readable.from(inputs(f)), createTtsServerTransform({ engine: createScriptedTtsEngine(f.meta.engine as never) }), async function* (src) {
      for await (const t of src) out.push(t as string);
    });
    expect(out.map((t) => JSON.parse(t) as unknown)).toEqual(expectedOut(f));
  });

  it('STT client transforms', async () => {
    const f = byName('stt-basic.jsonl');
    const { outgoing, incoming } = createSttClientTransforms();
    const sent: string[] = [];
    const events: Array<{ type: string }> = [];
    outgoing.on('data', (t: string) => sent.push(t));
    incoming.on('data', (e: { type: string }) => events.push(e));
    for (const l of f.lines) if ('in' in l) outgoing.write(expand(l.in, false));
    for (const t of serverFrames(f)) incoming.write(t);
    incoming.end();
    await new Promise((r) => incoming.once('end', r));
    expect(sent.map((t) => JSON.parse(t) as unknown)).toEqual(f.lines.flatMap((l) => ('in' in l ? [expand(l.in, false)] : [])));
    expect(events.filter((e) => e.type === 'message')).toHaveLength(expectedOut(f).length);
    expect(events.filter((e) => e.type === 'error')).toEqual([]);
  });
});
