import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import split2 from 'split2';
import {
  createNdjsonDecoder,
  createNdjsonDecoderStream,
  createNdjsonEncoderStream,
  decodeNdjson,
  encodeNdjson,
  encodeNdjsonLine,
  encodeNdjsonLineBytes,
  ndjsonEvents,
  type NdjsonErrorDetails,
} from '../../src/text/ndjson.js';
import { createNdjsonDecoderTransform, createNdjsonEncoderTransform } from '../../src/node/ndjson.js';
import { VoicewireError } from '../../src/util/errors.js';
import { cutsArb, oneByOne, splitAt } from '../helpers/chunks.js';

const utf8 = new TextEncoder();

/** The naive reference: split the whole text on "\n", drop one trailing "\r", skip blank lines, JSON.parse. */
function reference(text: string): unknown[] {
  return text
    .split('\n')
    .map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l))
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l));
}

/** Feeds chunks, catching errors (their details carry the values). */
function drive(chunks: (Uint8Array | string)[], options = {}): { values: unknown[]; errors: { code: string; line: number }[] } {
  const d = createNdjsonDecoder(options);
  const values: unknown[] = [];
  const errors: { code: string; line: number }[] = [];
  const step = (f: () => unknown[]) => {
    try {
      values.push(...f());
    } catch (err) {
      expect(err).toBeInstanceOf(VoicewireError);
      const details = (err as VoicewireError).details as NdjsonErrorDetails;
      values.push(...details.events);
      for (const e of details.errors) errors.push({ code: e.code, line: (e.details as { line: number }).line });
    }
  };
  for (const c of chunks) step(() => d.push(c));
  step(() => d.flush());
  return { values, errors };
}

// Multi-byte text: 2-byte (é, ß, ñ, ã), 3-byte (€, 中), 4-byte (emoji) UTF-8 sequences, and escapes.
const stringArb = fc.string({ unit: fc.constantFrom('a', 'é', 'ß', 'ñ', 'ã', '€', '中', '😀', '👍🏽', '\n', '\r', '"', '\\', '\u2028', ' '), maxLength: 12 });
const valueArb = fc.oneof(fc.jsonValue({ maxDepth: 2 }), stringArb, fc.dictionary(stringArb, fc.oneof(stringArb, fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean())));
const docArb = fc
  .record({
    values: fc.array(valueArb, { maxLength: 15 }),
    crlf: fc.boolean(),
    blanks: fc.array(fc.constantFrom('', ' ', '\t', '\r'), { maxLength: 4 }),
    blankAt: fc.array(fc.nat(), { maxLength: 4 }),
    finalNewline: fc.boolean(),
  })
  .map(({ values, crlf, blanks, blankAt, finalNewline }) => {
    const lines = values.map((v) => JSON.stringify(v));
    blanks.forEach((b, k) => lines.splice((blankAt[k] ?? 0) % (lines.length + 1), 0, b));
    const nl = crlf ? '\r\n' : '\n';
    return lines.join(nl) + (finalNewline || lines.length === 0 ? nl : '');
  });

describe('NDJSON decoder: properties', () => {
  it('bytes split anywhere (inside UTF-8 characters, one by one, empty chunks) decode like the naive reference', () => {
    fc.assert(
      fc.property(docArb, fc.integer({ min: 0, max: 1 << 30 }), (text, seed) => {
        const bytes = utf8.encode(text);
        const expected = reference(text);
        const cuts = fc.sample(cutsArb(bytes.length, 30), { seed, numRuns: 1 })[0]!;
        for (const chunks of [[bytes], splitAt(bytes, cuts), oneByOne(bytes), [new Uint8Array(0), ...splitAt(bytes, cuts)]]) {
          const got = drive(chunks);
          expect(got.errors).toEqual([]);
          expect(got.values).toEqual(expected);
        }
        expect(decodeNdjson(text)).toEqual(expected); // string input
      }),
      { numRuns: 150 },
    );
  });

  it('encoder: one "\\n" per value, at the end; decode(encode(values)) = values', () => {
    fc.assert(
      fc.property(fc.array(valueArb, { maxLength: 20 }), (values) => {
        for (const v of values) {
          const line = encodeNdjsonLine(v);
          expect(line.indexOf('\n')).toBe(line.length - 1);
          expect(encodeNdjsonLineBytes(v)).toEqual(new Uint8Array(Buffer.from(line, 'utf8')));
        }
        const text = encodeNdjson(values);
        expect(decodeNdjson(utf8.encode(text))).toEqual(values.map((v) => JSON.parse(JSON.stringify(v))));
      }),
      { numRuns: 150 },
    );
  });

  it('fuzz: random bytes raise only VoicewireError, and the decoder then works again', () => {
    const bytesArb = fc.uint8Array({ maxLength: 300 }).map((b) => b.map((x) => (x % 7 === 0 ? 0x0a : x)));
    fc.assert(
      fc.property(bytesArb, cutsArb(300, 10), fc.boolean(), (bytes, cuts, fatal) => {
        const d = createNdjsonDecoder({ fatal, maxLineLength: 64 });
        for (const c of [...splitAt(bytes, cuts), null]) {
          try {
            if (c === null) d.flush();
            else d.push(c);
          } catch (err) {
            expect(err).toBeInstanceOf(VoicewireError);
          }
        }
        expect([...d.push('{"a":1}\n[2]'), ...d.flush()]).toEqual([{ a: 1 }, [2]]);
      }),
      { numRuns: 200 },
    );
  });
});

describe('NDJSON decoder: rules', () => {
  it('a multi-byte character split at every byte position', () => {
    const text = '{"t":"é€😀中"}\n';
    const bytes = utf8.encode(text);
    for (let a = 0; a <= bytes.length; a++) {
      for (let b = a; b <= bytes.length; b++) {
        expect(drive(splitAt(bytes, [a, b])).values).toEqual([{ t: 'é€😀中' }]);
      }
    }
  });

  it('\\n and \\r\\n, blank lines skipped, a final line without newline accepted on flush', () => {
    const d = createNdjsonDecoder();
    expect(d.push('1\r\n\r\n\n  \n{"a":')).toEqual([1]);
    expect(d.push('2}\n[3')).toEqual([{ a: 2 }]);
    expect(d.push(']')).toEqual([]);
    expect(d.flush()).toEqual([[3]]);
  });

  it('invalid JSON names its line number; values around it still come out; the decoder keeps working', () => {
    const d = createNdjsonDecoder();
    try {
      d.push('{"a":1}\n\n{"a":2}\n{oops}\n{"a":3}\n');
      expect.unreachable();
    } catch (err) {
      const e = err as VoicewireError;
      expect(e).toBeInstanceOf(VoicewireError);
      expect(e.code).toBe('NDJSON_INVALID_JSON');
      expect(e.message).toContain('line 4');
      expect(e.message).toContain('{oops}');
      expect((e.details as NdjsonErrorDetails).line).toBe(4);
      expect((e.details as NdjsonErrorDetails).events).toEqual([{ a: 1 }, { a: 2 }, { a: 3 }]);
    }
    expect(d.push('{"a":4}\n')).toEqual([{ a: 4 }]);
    expect(d.line).toBe(6);
  });

  it('maxLineLength: the limit itself passes, one more fails, and memory stays bounded', () => {
    const max = 1000;
    const ok = JSON.stringify('x'.repeat(max - 2)); // exactly max code units
    expect(decodeNdjson(`${ok}\n${ok}\r\n${ok}`, { maxLineLength: max })).toHaveLength(3);
    const tooLong = JSON.stringify('x'.repeat(max - 1));
    expect(drive([`1\n${tooLong}\n2\n${tooLong}`], { maxLineLength: max })).toEqual({
      values: [1, 2],
      errors: [
        { code: 'NDJSON_LINE_TOO_LONG', line: 2 },
        { code: 'NDJSON_LINE_TOO_LONG', line: 4 },
      ],
    });
    // A 10 MB line in 64 KB chunks: the error comes as soon as the limit is passed; nothing piles up.
    const d = createNdjsonDecoder({ maxLineLength: max });
    const chunk = utf8.encode('x'.repeat(65536));
    let thrownAt = -1;
    for (let k = 0; k < 160; k++) {
      try {
        expect(d.push(chunk)).toEqual([]);
      } catch (err) {
        expect((err as VoicewireError).code).toBe('NDJSON_LINE_TOO_LONG');
        expect(thrownAt).toBe(-1);
        thrownAt = k;
      }
      expect((d as unknown as { partial: string }).partial.length).toBeLessThanOrEqual(max + 1);
    }
    expect(thrownAt).toBe(0);
    expect(d.push('\n{"after":true}\n')).toEqual([{ after: true }]);
    expect(d.line).toBe(2);
  });

  it('the default limit is 1 MiB', () => {
    const big = JSON.stringify('y'.repeat((1 << 20) - 2));
    expect(decodeNdjson(`${big}\n`)).toHaveLength(1);
    expect(() => decodeNdjson(`${JSON.stringify('y'.repeat(1 << 20))}\n`)).toThrowError(expect.objectContaining({ code: 'NDJSON_LINE_TOO_LONG' }));
  });

  it('the in-stream error line ends the stream: thrown by default (docs/api.md §7.2)', () => {
    const d = createNdjsonDecoder();
    try {
      d.push('{"type":"text","text":"hi"}\n{"type":"error","message":"model crashed"}\n{"type":"text"}\n');
      expect.unreachable();
    } catch (err) {
      const e = err as VoicewireError;
      expect(e.code).toBe('NDJSON_STREAM_ERROR');
      expect(e.message).toBe('model crashed');
      const details = e.details as NdjsonErrorDetails;
      expect(details.events).toEqual([{ type: 'text', text: 'hi' }]);
      expect(details.value).toEqual({ type: 'error', message: 'model crashed' });
      expect(details.line).toBe(2);
    }
    expect(d.ended).toBe(true);
    expect(d.push('{"type":"text"}\n')).toEqual([]);
    expect(d.flush()).toEqual([]);
    expect(d.push('{"again":1}\n')).toEqual([{ again: 1 }]); // flush() started a new stream
  });

  it('... or surfaced as the last event with streamError: "event"', () => {
    expect(decodeNdjson('{"type":"step"}\n{"type":"error","message":"bad"}\n{"type":"step"}\n', { streamError: 'event' })).toEqual([
      { type: 'step' },
      { type: 'error', message: 'bad' },
    ]);
  });

  it('invalid UTF-8: U+FFFD by default (then a JSON error), NDJSON_INVALID_UTF8 with fatal: true', () => {
    const bad = new Uint8Array([0x22, 0xff, 0x22, 0x0a]); // "\xff"
    expect(decodeNdjson(bad)).toEqual(['\ufffd']);
    const d = createNdjsonDecoder({ fatal: true });
    expect(() => d.push(bad)).toThrowError(expect.objectContaining({ code: 'NDJSON_INVALID_UTF8' }));
    d.reset();
    expect(d.push(utf8.encode('"ok"\n'))).toEqual(['ok']);
  });

  it('fatal: lines complete before a bad byte are delivered, and no partial line is joined to later input (issue 11 §10)', () => {
    const bytes = (s: string, ...tail: number[]) => new Uint8Array([...utf8.encode(s), ...tail]);
    const stream = [bytes('{"user":"alice","amount":'), bytes('1}\n{"user":"bob","amount":2}\n{"user":"carol","amount":', 0xff), bytes('999}\n')];
    expect(drive(stream, { fatal: true })).toEqual({
      values: [{ user: 'alice', amount: 1 }, { user: 'bob', amount: 2 }],
      errors: [{ code: 'NDJSON_INVALID_UTF8', line: 3 }],
    });
    // The decoder goes on after the broken line; a truncated character at the end drops that line.
    expect(drive([...stream, bytes('{"user":"dave","amount":4}\n42', 0xe2, 0x82)], { fatal: true })).toEqual({
      values: [{ user: 'alice', amount: 1 }, { user: 'bob', amount: 2 }, { user: 'dave', amount: 4 }],
      errors: [{ code: 'NDJSON_INVALID_UTF8', line: 3 }, { code: 'NDJSON_INVALID_UTF8', line: 5 }],
    });
  });

  it('fatal: random lines with bad bytes, split anywhere, give exactly the lines that are valid UTF-8 and JSON', () => {
    // Lines of JSON numbers and strings with multi-byte text, some with a bad byte or a cut character.
    const good = fc.oneof(fc.integer().map(String), stringArb.map((t) => JSON.stringify(t)));
    const lineArb = fc.oneof(
      good.map((t) => utf8.encode(t)),
      fc.tuple(good, fc.constantFrom([0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0xf0, 0x9f, 0x98], [0x80]), fc.nat()).map(([t, bad, at]) => {
        const b = utf8.encode(t);
        const i = at % (b.length + 1);
        return new Uint8Array([...b.subarray(0, i), ...bad, ...b.subarray(i)]);
      }),
    );
    // Oracle: Node's own fatal TextDecoder over each whole line.
    const oracle = (lines: Uint8Array[]): unknown[] =>
      lines.flatMap((l) => {
        try {
          return [JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(l))];
        } catch {
          return [];
        }
      });
    fc.assert(
      fc.property(fc.array(lineArb, { minLength: 1, maxLength: 12 }), cutsArb(400, 8), (lines, cuts) => {
        const all = new Uint8Array(lines.reduce((n, l) => n + l.length + 1, 0));
        let at = 0;
        for (const l of lines) {
          all.set(l, at);
          all[at + l.length] = 0x0a;
          at += l.length + 1;
        }
        const expected = oracle(lines);
        expect(drive(splitAt(all, cuts), { fatal: true }).values).toEqual(expected);
        expect(drive(oneByOne(all), { fatal: true }).values).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });

  it('bad arguments raise INVALID_ARGUMENT', () => {
    expect(() => createNdjsonDecoder({ maxLineLength: 0 })).toThrowError(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => createNdjsonDecoder({ streamError: 'x' as never })).toThrowError(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => createNdjsonDecoder().push(42 as never)).toThrowError(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    for (const v of [undefined, () => 1, Symbol('s'), 10n]) {
      expect(() => encodeNdjsonLine(v)).toThrowError(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    }
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => encodeNdjsonLine(cyclic)).toThrowError(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});

describe('NDJSON encoder: Unicode line separators', () => {
  it('writes U+2028, U+2029 and U+0085 escaped, so no line splitter can cut a line there', () => {
    const value = { type: 'text', text: 'a\u2028b\u2029c\u0085d' };
    const line = encodeNdjsonLine(value);
    expect(line.slice(0, -1)).not.toMatch(/[\n\r\u0085\u2028\u2029]/);
    expect(JSON.parse(line)).toEqual(value);
  });
});

describe('NDJSON adapters', () => {
  // STT step lines (docs/api.md §4.4), with multi-byte text lines between.
  const lines = Array.from({ length: 300 }, (_, i) =>
    i % 10 === 0
      ? { type: 'text', text: `Olá ${i} — ça va? 😀`, start_s: i * 0.08, stream_id: null }
      : { type: 'step', vad: [0.5, 1, 2].map((h) => ({ horizon_s: h, inactivity_prob: (i % 7) / 7 })), step_idx: i, step_duration_s: 0.08, total_duration_s: (i + 1) * 0.08 },
  );
  const bytes = utf8.encode(lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  const chunks = splitAt(bytes, [1, 2, 3, 500, 777, 1024, 4096, 4097, 9000, 12345]);

  it('Node Transform equals split2 + JSON.parse (oracle) and the reference', async () => {
    const ours: unknown[] = [];
    await pipeline(Readable.from(chunks.map((c) => Buffer.from(c))), createNdjsonDecoderTransform(), new Writable({ objectMode: true, write: (v, _e, cb) => (ours.push(v), cb()) }));
    const peer: unknown[] = [];
    await pipeline(Readable.from(chunks.map((c) => Buffer.from(c))), split2(JSON.parse), new Writable({ objectMode: true, write: (v, _e, cb) => (peer.push(v), cb()) }));
    expect(ours).toEqual(peer);
    expect(ours).toEqual(lines);
  });

  it('Node Transform: values before an error are delivered, then the stream errors', async () => {
    const out: unknown[] = [];
    const done = pipeline(Readable.from([Buffer.from('1\nnull\n2\n{"type":"error","message":"boom"}\n3\n')]), createNdjsonDecoderTransform(), new Writable({ objectMode: true, write: (v, _e, cb) => (out.push(v), cb()) }));
    await expect(done).rejects.toMatchObject({ code: 'NDJSON_STREAM_ERROR', message: 'boom' });
    expect(out).toEqual([1, 2]); // JSON null cannot travel in a Node object stream: skipped
  });

  it('web TransformStream, and the encoder stream round-trips', async () => {
    const out: unknown[] = [];
    const source = new ReadableStream<unknown>({
      start(c) {
        for (const l of lines) c.enqueue(l);
        c.close();
      },
    });
    await source
      .pipeThrough(createNdjsonEncoderStream())
      .pipeThrough(createNdjsonDecoderStream())
      .pipeTo(new WritableStream({ write: (v) => void out.push(v) }));
    expect(out).toEqual(lines);
  });

  it('Node encoder Transform writes one line per value', async () => {
    const parts: Buffer[] = [];
    await pipeline(Readable.from(lines.slice(0, 20)), createNdjsonEncoderTransform(), new Writable({ write: (b, _e, cb) => (parts.push(b), cb()) }));
    expect(reference(Buffer.concat(parts).toString('utf8'))).toEqual(lines.slice(0, 20));
  });

  const bodyOf = (data: Uint8Array[], onCancel?: () => void) =>
    new ReadableStream<Uint8Array>({
      start(c) {
        for (const d of data) c.enqueue(d);
        if (!onCancel) c.close();
      },
      cancel: () => onCancel?.(),
    });

  it('ndjsonEvents over a fetch Response', async () => {
    const out: unknown[] = [];
    for await (const v of ndjsonEvents(new Response(bodyOf(chunks)))) out.push(v);
    expect(out).toEqual(lines);
  });

  it('ndjsonEvents: leaving the loop early cancels the body', async () => {
    let cancelled = false;
    const out: unknown[] = [];
    for await (const v of ndjsonEvents(new Response(bodyOf([bytes], () => (cancelled = true))))) {
      out.push(v);
      if (out.length === 3) break;
    }
    expect(out).toEqual(lines.slice(0, 3));
    expect(cancelled).toBe(true);
  });

  it('ndjsonEvents: the in-stream error is thrown after the events before it; a non-2xx response is HTTP_ERROR', async () => {
    const out: unknown[] = [];
    const body = bodyOf([utf8.encode('{"type":"text","text":"a"}\n{"type":"error","message":"worker lost"}\n{"type":"text","text":"b"}\n')]);
    await expect(
      (async () => {
        for await (const v of ndjsonEvents(new Response(body))) out.push(v);
      })(),
    ).rejects.toMatchObject({ code: 'NDJSON_STREAM_ERROR', message: 'worker lost' });
    expect(out).toEqual([{ type: 'text', text: 'a' }]);
    const failed = ndjsonEvents(new Response('error from server 401: invalid key', { status: 500 }));
    await expect(failed.next()).rejects.toMatchObject({ code: 'HTTP_ERROR', details: { status: 500, body: 'error from server 401: invalid key' } });
    // A missing body is an empty stream.
    expect(await ndjsonEvents({ body: null }).next()).toEqual({ done: true, value: undefined });
  });
});
