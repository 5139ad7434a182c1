/**
 * Backpressure in the server runners: a TTS engine faster than real time must not fill a slow
 * transport without bound. The runner asks the engine for nothing more while sends are pending
 * (a promise from `send`, or `false` until `drained()`); the Node Transform and the web stream pair
 * map their streams' backpressure onto that.
 */
import { describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { createScriptedTtsEngine, createTtsServerSession, createTtsServerStream, type TtsEngine, type TtsEngineStream } from '../../src/index.js';
import { createTtsServerTransform } from '../../src/node/protocol.js';

const WORDS = 60;

/** The scripted engine (one 80 ms frame per word, no look-ahead), counting `text` calls. */
function countingEngine(async = false): { engine: TtsEngine; calls: () => number } {
  const inner = createScriptedTtsEngine({ lookaheadWords: 0, async });
  let calls = 0;
  const wrap = (s: TtsEngineStream): TtsEngineStream => ({
    ...s,
    info: s.info,
    text: (t) => {
      calls++;
      return s.text(t);
    },
    flush: () => s.flush(),
    pause: (x) => s.pause(x),
    end: () => s.end(),
    close: () => s.close(),
  });
  const engine: TtsEngine = {
    open(config, emit) {
      const r = inner.open(config, emit);
      return r instanceof Promise ? r.then(wrap) : wrap(r as TtsEngineStream);
    },
  };
  return { engine, calls: () => calls };
}

function frames(): string[] {
  const out = [JSON.stringify({ type: 'setup', output_format: 'pcm', voice_id: 'v' })];
  for (let i = 0; i < WORDS; i++) out.push(JSON.stringify({ type: 'text', text: `w${i}` }));
  out.push(JSON.stringify({ type: 'end_of_stream' }));
  return out;
}

describe('server runner backpressure', () => {
  it('a transport whose send returns a promise bounds the messages in flight', async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    const types: string[] = [];
    const { engine } = countingEngine();
    const session = createTtsServerSession({
      engine,
      transport: {
        send: (text) => {
          types.push((JSON.parse(text) as { type: string }).type);
          inFlight++;
          maxInFlight = Math.max(maxInFlight, inFlight);
          return sleep(1).then(() => {
            inFlight--;
          });
        },
        close: () => undefined,
      },
    });
    for (const f of frames()) session.receive(f); // the client sends everything at once
    await session.whenIdle();
    await sleep(5);
    expect(types.filter((t) => t === 'audio')).toHaveLength(WORDS);
    expect(types.at(-1)).toBe('end_of_stream');
    // One engine call's output (a word's audio and its timestamp) at a time, not the whole text.
    expect(maxInFlight).toBeLessThanOrEqual(3);
  });

  it('send → false with drained(): the engine waits for the drain', async () => {
    let buffered = 0;
    let maxBuffered = 0;
    let audio = 0;
    const waiting: Array<() => void> = [];
    const { engine, calls } = countingEngine();
    const session = createTtsServerSession({
      engine,
      transport: {
        send: (text) => {
          if ((JSON.parse(text) as { type: string }).type === 'audio') audio++;
          buffered++;
          maxBuffered = Math.max(maxBuffered, buffered);
          return buffered < 4;
        },
        drained: () => new Promise<void>((resolve) => waiting.push(resolve)),
        close: () => undefined,
      },
    });
    for (const f of frames()) session.receive(f);
    await sleep(5);
    expect(calls()).toBeLessThan(5); // stopped at the full buffer
    while (audio < WORDS || waiting.length > 0) {
      buffered = 0; // the socket wrote everything
      for (const w of waiting.splice(0)) w();
      await sleep(0);
      if (waiting.length === 0 && audio >= WORDS) break;
    }
    await session.whenIdle();
    expect(audio).toBe(WORDS);
    expect(maxBuffered).toBeLessThanOrEqual(6);
  });

  it('Node Transform: a reader that does not read stops an asynchronous engine near highWaterMark', async () => {
    // (With a synchronous engine the Transform's own write side already throttles: _transform waits.)
    const { engine, calls } = countingEngine(true);
    const t = createTtsServerTransform({ engine, highWaterMark: 4 });
    for (const f of frames()) t.write(f);
    t.end();
    await sleep(20);
    expect(calls()).toBeLessThanOrEqual(4);
    expect(t.readableLength).toBeLessThanOrEqual(4 + 2);
    const out: string[] = [];
    for await (const m of t) out.push((JSON.parse(m as string) as { type: string }).type);
    expect(calls()).toBe(WORDS);
    expect(out.filter((x) => x === 'audio')).toHaveLength(WORDS);
    expect(out.at(-1)).toBe('end_of_stream');
  });

  it('web stream pair: a reader that does not read stops an asynchronous engine near highWaterMark', async () => {
    const { engine, calls } = countingEngine(true);
    const { readable, writable } = createTtsServerStream({ engine, highWaterMark: 4 });
    const writer = writable.getWriter();
    for (const f of frames()) void writer.write(f);
    const closing = writer.close();
    await sleep(20);
    expect(calls()).toBeLessThanOrEqual(4);
    const out: string[] = [];
    for await (const m of readable as unknown as AsyncIterable<string>) out.push((JSON.parse(m) as { type: string }).type);
    await closing;
    expect(calls()).toBe(WORDS);
    expect(out.filter((x) => x === 'audio')).toHaveLength(WORDS);
    expect(out.at(-1)).toBe('end_of_stream');
  });
});
