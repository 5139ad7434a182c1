import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Readable } from 'node:stream';
import { chunkText, createTextChunker, createTextChunkerStream, type TextChunkerOptions } from '../../src/text/text-chunker.js';
import { createTextChunkerTransform } from '../../src/node/tags.js';

/** No lone surrogate (String.prototype.isWellFormed is ES2024, beyond this project's lib). */
const isWellFormed = (s: string): boolean => !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s);

// ------------------------------------------------------------------------------------------------
// Independent reference: tokens of the whole text, found with regexes (tags per docs/api.md §4.5).
// ------------------------------------------------------------------------------------------------

const TS = '[\\t\\n\\v\\f\\r \\u1680\\u2000-\\u2006\\u2008-\\u200a\\u2028\\u2029\\u205f\\u3000]';
const TAG_RES = [
  new RegExp(`<flush${TS}*/?>`, 'y'),
  new RegExp(`<break${TS}+time${TS}*=${TS}*(?:"[^"<>]*"|'[^'<>]*')${TS}*/>`, 'y'),
  new RegExp(`<break(?=${TS}|[/>])[^<>]*>`, 'y'), // a malformed break is kept whole too
];
/** Breaking whitespace: JS \s minus the no-break spaces U+00A0, U+2007, U+202F and U+FEFF. */
const SPACE = /[\t\n\v\f\r \u1680\u2000-\u2006\u2008-\u200a\u2028\u2029\u205f\u3000]/;
const SPACES = new RegExp(`${SPACE.source}+`, 'g');
const MAX_TAG = 64;

interface Token {
  text: string; // whitespace inside collapsed
  start: number;
  end: number;
  tag: boolean;
  flush: boolean;
}

function tagAt(input: string, i: number): number {
  if (input[i] !== '<') return 0;
  for (const re of TAG_RES) {
    re.lastIndex = i;
    const m = re.exec(input);
    if (m && m[0].length <= MAX_TAG) return m[0].length;
  }
  return 0;
}

function tokenize(input: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < input.length) {
    if (SPACE.test(input[i]!)) {
      i++;
      continue;
    }
    const len = tagAt(input, i);
    if (len > 0) {
      const raw = input.slice(i, i + len);
      out.push({ text: raw.replace(SPACES, ' '), start: i, end: i + len, tag: true, flush: raw.startsWith('<flush') });
      i += len;
      continue;
    }
    const start = i;
    while (i < input.length && !SPACE.test(input[i]!) && (i === start || tagAt(input, i) === 0)) i++;
    out.push({ text: input.slice(start, i), start, end: i, tag: false, flush: false });
  }
  return out;
}

const join = (tokens: readonly Token[]) => tokens.map((t) => t.text).join(' ');

/** Prefixes that may still become a tag: the chunker may hold exactly these back. */
const VIABLE = new RegExp(
  `^(?:<f?|<fl(?:u(?:s(?:h${TS}*/?)?)?)?|<b(?:r(?:e(?:a(?:k)?)?)?)?|<break(?:${TS}|/)[^<>]*)$`,
);

/** Tokens of the whole input that are certainly complete once `fed` has been pushed. */
function completeTokens(input: string, fed: number, tokens: readonly Token[]): Token[] {
  let limit = fed;
  const lt = input.lastIndexOf('<', fed - 1);
  if (lt !== -1 && fed - lt <= MAX_TAG && VIABLE.test(input.slice(lt, fed))) limit = lt; // held-back candidate
  const out: Token[] = [];
  for (let k = 0; k < tokens.length; k++) {
    const t = tokens[k]!;
    const next = tokens[k + 1];
    const done = t.tag
      ? t.end <= limit
      : (t.end < limit && SPACE.test(input[t.end]!)) || (next !== undefined && next.tag && next.start === t.end && next.end <= limit);
    if (!done) break;
    out.push(t);
  }
  return out;
}

function splitString(s: string, cuts: number[]): string[] {
  const points = cuts.map((c) => c % (s.length + 1)).sort((a, b) => a - b);
  const out: string[] = [];
  let prev = 0;
  for (const p of points) {
    out.push(s.slice(prev, p));
    prev = p;
  }
  out.push(s.slice(prev));
  return out;
}

const WORDS = ['Bonjour', 'élève', 'garçon', 'Über', 'Straße', 'niño', '¿Qué?', 'ação', 'pão', 'hello', 'a', '3', '😀', '👍🏽', 'x\u00a0km'];
const DECOYS = ['<', '3<5', 'a<b>c', '<br>', '<breakfast>', '<fl', '<flushed>', '</flush>', '<break', '<<', '<break up', '>'];
const TAGS = [
  '<flush>', '<flush />', '<break time="0.5s" />', '<break time="1.5s"/>', "<break  time='2s'\n/>",
  '<break time="abc" />', '<break>', '<break time="1s">',
];
const SEPS = [' ', ' ', ' ', '  ', '\n\n', '\t', '', '\u00a0', '\u2003', '\v', '\u2028'];
const textArb = fc
  .array(fc.tuple(fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...WORDS) }, { weight: 2, arbitrary: fc.constantFrom(...DECOYS) }, { weight: 2, arbitrary: fc.constantFrom(...TAGS) }), fc.constantFrom(...SEPS)), { maxLength: 30 })
  .chain((parts) => fc.constantFrom('', ' ', '\n').map((lead) => lead + parts.map(([a, b]) => a + b).join('')));

// ------------------------------------------------------------------------------------------------

describe('text chunker: examples', () => {
  it('emits a word as soon as the whitespace after it arrives', () => {
    const c = createTextChunker();
    expect(c.push('Hello wor')).toEqual(['Hello']);
    expect(c.push('ld')).toEqual([]);
    expect(c.push('! ')).toEqual(['world!']);
    expect(c.end()).toEqual([]);
  });

  it('never splits a tag, even one split across pieces; a tag is a word boundary', () => {
    const c = createTextChunker();
    const out = [...c.push('Pause<br'), ...c.push('eak time="0.5s"'), ...c.push(' />ici'), ...c.end()];
    expect(out.join(' ')).toBe('Pause <break time="0.5s" /> ici');
    expect(out.some((m) => m.includes('<break time="0.5s" />'))).toBe(true);
  });

  it('<flush> forces the buffer out, whatever minChunkLength says', () => {
    const c = createTextChunker({ minChunkLength: 1000 });
    expect(c.push('Guten Tag, ')).toEqual([]);
    expect(c.push('wie geht es? <flu')).toEqual([]);
    expect(c.push('sh> Gut')).toEqual(['Guten Tag, wie geht es? <flush>']);
    expect(c.end()).toEqual(['Gut']);
  });

  it('minChunkLength batches words; end() emits the rest', () => {
    const c = createTextChunker({ minChunkLength: 12 });
    const out: string[][] = [];
    for (const p of ['Uno ', 'dos ', 'tres ', 'cuatro ', 'cinco']) out.push(c.push(p));
    out.push(c.end());
    expect(out).toEqual([[], [], ['Uno dos tres'], [], [], ['cuatro cinco']]);
  });

  it('repairTags makes breaks valid and canonical (docs/api.md §4.5, §8)', () => {
    expect(chunkText('Olá<break time="500ms"/>mundo <break time="9s" /> fim', { repairTags: true }).join(' ')).toBe(
      'Olá <break time="0.5s" /> mundo <break time="2s" /> fim',
    );
    expect(chunkText('a <break time="abc" /> b', { repairTags: true }).join(' ')).toBe('a b');
    // Without it, tags pass through as written (whitespace inside normalized).
    expect(chunkText('a <break  time="9s"\n/> b').join(' ')).toBe('a <break time="9s" /> b');
  });

  it('bounds a run without whitespace at maxWordLength (never halving a surrogate pair)', () => {
    const c = createTextChunker({ maxWordLength: 16 });
    const out = [...c.push('x'.repeat(15) + '😀' + 'y'.repeat(40)), ...c.end()];
    expect(out.every((m) => m.length <= 16 && isWellFormed(m))).toBe(true);
    expect(out.join('')).toBe('x'.repeat(15) + '😀' + 'y'.repeat(40));
    // Same cuts whether the run arrives whole (inside a long piece) or code unit by code unit.
    const text = `a ${'z'.repeat(40)} b ${'w'.repeat(20)} c`;
    const whole = chunkText(text, { maxWordLength: 16 });
    const d = createTextChunker({ maxWordLength: 16 });
    const bySingle = [...text.split('').flatMap((ch) => d.push(ch)), ...d.end()];
    expect(whole.join(' ')).toBe(bySingle.join(' '));
    expect(whole.join(' ')).toBe(`a ${'z'.repeat(16)} ${'z'.repeat(16)} ${'z'.repeat(8)} b ${'w'.repeat(16)} ${'w'.repeat(4)} c`);
  });

  it('rejects bad options and non-string input with INVALID_ARGUMENT; reset() forgets', () => {
    expect(() => createTextChunker({ minChunkLength: -1 })).toThrowError(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => createTextChunker({ maxWordLength: 2 })).toThrowError(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    const c = createTextChunker();
    expect(() => c.push(null as never)).toThrowError(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    c.push('abc <bre');
    c.reset();
    expect([...c.push('x '), ...c.end()]).toEqual(['x']);
  });
});

describe('text chunker: whitespace inside a would-be tag', () => {
  it('"<break\\v>" is one tag whether it arrives whole or char by char (found by fast-check)', () => {
    for (const sp of ['\v', '\u2028', ' ', '\u00a0']) {
      const text = `<break${sp}> next`;
      const whole = chunkText(text);
      const c = createTextChunker();
      const single = [...[...text].flatMap((ch) => c.push(ch)), ...c.end()];
      expect(single.join(' '), JSON.stringify(sp)).toBe(whole.join(' '));
      // Never "<break" in one message and ">" in the next (a no-break space makes it one word).
      for (const out of [whole, single]) expect(out.some((m) => /^<break\S*\s?\S*>/.test(m)), JSON.stringify([sp, out])).toBe(true);
    }
  });
});

describe('text chunker: properties', () => {
  const run = (pieces: string[], options: TextChunkerOptions) => {
    const c = createTextChunker(options);
    const perPush = pieces.map((p) => c.push(p));
    return { perPush, tail: c.end() };
  };

  it('re-joined with single spaces equals the input with whitespace normalized; tags whole; no empty messages', () => {
    fc.assert(
      fc.property(textArb, fc.array(fc.nat(), { maxLength: 25 }), fc.constantFrom(0, 1, 20, 60), (text, cuts, min) => {
        const tokens = tokenize(text);
        const expected = join(tokens);
        for (const pieces of [[text], splitString(text, cuts), text.split('')]) {
          const { perPush, tail } = run(pieces, { minChunkLength: min });
          const messages = [...perPush.flat(), ...tail];
          expect(messages.join(' ')).toBe(expected);
          for (const m of messages) expect(m.length > 0 && !SPACE.test(m[0]!) && !SPACE.test(m[m.length - 1]!) && !/ {2}/.test(m)).toBe(true);
          // Every tag lies whole inside one message.
          const tagCount = messages.reduce((n, m) => n + tokenize(m).filter((t) => t.tag).length, 0);
          expect(tagCount).toBe(tokens.filter((t) => t.tag).length);
          // minChunkLength holds for every message push() sent, except one that ends with <flush>.
          for (const m of perPush.flat()) if (!/<flush[^>]*>$/.test(m)) expect(m.length).toBeGreaterThanOrEqual(min);
        }
      }),
      { numRuns: 120 },
    );
  });

  it('latency: after every push, everything complete is out, except less than minChunkLength; a <flush> leaves nothing behind', () => {
    fc.assert(
      fc.property(textArb, fc.array(fc.nat(), { maxLength: 25 }), fc.constantFrom(0, 0, 15), (text, cuts, min) => {
        const tokens = tokenize(text);
        const c = createTextChunker({ minChunkLength: min });
        const out: string[] = [];
        let fed = 0;
        for (const piece of splitString(text, cuts)) {
          out.push(...c.push(piece));
          fed += piece.length;
          const complete = completeTokens(text, fed, tokens);
          const emitted = out.join(' ');
          let k = 0;
          while (k < complete.length && join(complete.slice(0, k)) !== emitted) k++;
          expect(join(complete.slice(0, k))).toBe(emitted); // output is a token prefix of what is complete
          const pending = complete.slice(k);
          expect(pending.some((t) => t.flush)).toBe(false);
          if (pending.length > 0) expect(join(pending).length).toBeLessThan(Math.max(min, 1));
        }
      }),
      { numRuns: 150 },
    );
  });

  it('fuzz: arbitrary Unicode never throws and the chunker keeps working', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.oneof(fc.constantFrom('<', '>', '/', '"', ' ', 'b', 'f', '\n'), fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c))), maxLength: 200 }), fc.array(fc.nat(), { maxLength: 10 }), (text, cuts) => {
        const c = createTextChunker({ repairTags: cuts.length % 2 === 0 });
        for (const p of splitString(text, cuts)) c.push(p);
        c.end();
        expect([...c.push('ok <flush> '), ...c.end()]).toEqual(['ok <flush>']);
      }),
      { numRuns: 200 },
    );
  });
});

describe('text chunker: stream adapters', () => {
  const pieces = ['Hola ', 'mun', 'do <fl', 'ush> ', 'adiós ', '<break time="1s"', ' /> fin'];
  const expected = chunkText(pieces.join('')).join(' ');

  it('web TransformStream', async () => {
    const out: string[] = [];
    await new ReadableStream<string>({
      start(c) {
        for (const p of pieces) c.enqueue(p);
        c.close();
      },
    })
      .pipeThrough(createTextChunkerStream())
      .pipeTo(new WritableStream({ write: (m) => void out.push(m) }));
    expect(out.join(' ')).toBe(expected);
  });

  it('Node Transform (UTF-8 bytes split inside "ó")', async () => {
    const bytes = Buffer.from(pieces.join(''), 'utf8');
    const cut = bytes.indexOf(0xb3); // second byte of ó
    const out: string[] = [];
    for await (const m of Readable.from([bytes.subarray(0, cut), bytes.subarray(cut)]).pipe(createTextChunkerTransform())) out.push(m as string);
    expect(out.join(' ')).toBe(expected);
  });
});
