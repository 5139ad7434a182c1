import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Readable } from 'node:stream';
import {
  TagScanner,
  checkBreakTime,
  createTagParser,
  createTagParserStream,
  mergeTextEvents,
  parseTags,
  renderTagEvents,
  type TagEvent,
  type TagParseErrorDetails,
  type TagParserOptions,
} from '../../src/text/tags.js';
import { createTagParserTransform } from '../../src/node/tags.js';
import { VoicewireError } from '../../src/util/errors.js';

/** No lone surrogate (String.prototype.isWellFormed is ES2024, beyond this project's lib). */
const isWellFormed = (s: string): boolean => !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s);

// ------------------------------------------------------------------------------------------------
// An independent, naive reference: regexes over the whole text (the API grammar of §4.5, §8).
// ------------------------------------------------------------------------------------------------

const TS = '[\\t\\n\\v\\f\\r \\u1680\\u2000-\\u2006\\u2008-\\u200a\\u2028\\u2029\\u205f\\u3000]'; // whitespace inside a tag
const FLUSH_RE = new RegExp(`<flush${TS}*/?>`, 'y');
const BREAK_RE = new RegExp(`<break${TS}+time${TS}*=${TS}*(?:"([^"<>]*)"|'([^'<>]*)')${TS}*/>`, 'y');
const MALFORMED_RE = new RegExp(`<break(?=${TS}|[/>])[^<>]*>`, 'y');
/** Breaking whitespace: JS \s minus the no-break spaces U+00A0, U+2007, U+202F and U+FEFF. */
const SPACE_RE = /[\t\n\v\f\r \u1680\u2000-\u2006\u2008-\u200a\u2028\u2029\u205f\u3000]/;
const MAX = 64;

type RefToken = { kind: 'text'; text: string } | { kind: 'flush'; at: number } | { kind: 'break'; time: string | undefined; source: string; at: number };

function refTokens(input: string, hold: boolean, max = MAX): RefToken[] {
  const out: RefToken[] = [];
  let text = '';
  let i = 0;
  while (i < input.length) {
    if (input[i] !== '<') {
      text += input[i];
      i++;
      continue;
    }
    const tryRe = (re: RegExp): RegExpExecArray | null => {
      re.lastIndex = i;
      const m = re.exec(input);
      return m !== null && m[0].length <= max ? m : null;
    };
    let m: RegExpExecArray | null;
    let tok: RefToken | undefined;
    if ((m = tryRe(FLUSH_RE))) tok = { kind: 'flush', at: i };
    else if ((m = tryRe(BREAK_RE))) tok = { kind: 'break', time: m[1] ?? m[2], source: m[0], at: i };
    else if (hold && (m = tryRe(MALFORMED_RE))) tok = { kind: 'break', time: undefined, source: m[0], at: i };
    if (tok === undefined || m === null) {
      text += '<';
      i++;
      continue;
    }
    if (text) out.push({ kind: 'text', text });
    text = '';
    out.push(tok);
    i += m[0].length;
  }
  if (text) out.push({ kind: 'text', text });
  return out;
}

/** Strict API time: digits with at most one dot, then "s", value 0.1..2.0. */
function refStrict(time: string): { seconds: number } | { code: string } {
  const body = time.endsWith('s') ? time.slice(0, -1) : '';
  const parts = body.split('.');
  const digits = (s: string) => s.length > 0 && [...s].every((c) => c >= '0' && c <= '9');
  const okNumber = parts.length === 1 ? digits(parts[0]!) : parts.length === 2 && (digits(parts[0]!) || parts[0] === '') && digits(parts[1]!);
  if (!okNumber) return { code: 'TAG_BREAK_INVALID_TIME' };
  const seconds = parseFloat(body);
  if (seconds < 0.1 || seconds > 2) return { code: 'TAG_BREAK_OUT_OF_RANGE' };
  return { seconds };
}

/** Repair: ms converted, bare number = seconds, clamped; unusable = undefined. */
function refLenient(time: string): number | undefined {
  const m = /^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*(ms|s)?\s*$/i.exec(time);
  if (!m) return undefined;
  const v = parseFloat(m[1]!) / (m[2]?.toLowerCase() === 'ms' ? 1000 : 1);
  return Math.min(2, Math.max(0.1, v));
}

interface RefResult {
  events: TagEvent[];
  errors: { code: string; position: number }[];
}

function reference(input: string, options: TagParserOptions = {}): RefResult {
  const invalid = options.invalidBreak ?? 'repair';
  const spacing = options.breakSpacing ?? 'repair';
  const errors: RefResult['errors'] = [];
  // 1. tags and the time policy
  const toks: ({ kind: 'text'; text: string } | { kind: 'flush' } | { kind: 'break'; seconds: number; at: number })[] = [];
  for (const t of refTokens(input, invalid !== 'text', options.maxTagLength ?? MAX)) {
    if (t.kind !== 'break') {
      toks.push(t);
      continue;
    }
    const strict = t.time === undefined ? { code: 'TAG_BREAK_MALFORMED' } : refStrict(t.time);
    if ('seconds' in strict) {
      toks.push({ kind: 'break', seconds: strict.seconds, at: t.at });
    } else if (invalid === 'text') {
      toks.push({ kind: 'text', text: t.source });
    } else if (invalid === 'error') {
      errors.push({ code: strict.code, position: t.at });
    } else {
      const salvaged = t.time ?? /time\s*=\s*["']?([^"'\s/>]*)/.exec(t.source)?.[1];
      const s = salvaged === undefined ? undefined : refLenient(salvaged);
      if (s !== undefined) toks.push({ kind: 'break', seconds: s, at: t.at });
      // Words and no attribute at all ("<break from work>") is prose: kept as text.
      else if (salvaged === undefined && !t.source.includes('=') && /[^\s/>]/.test(t.source.slice(6, -1))) toks.push({ kind: 'text', text: t.source });
    }
  }
  // 2. the spacing rule
  const events: TagEvent[] = [];
  let lastSpace = true;
  let after: number | undefined;
  const violation = (at: number, fix: () => void) => {
    if (spacing === 'error') errors.push({ code: 'TAG_BREAK_MISSING_SPACE', position: at });
    if (spacing === 'repair') fix();
  };
  const space = () => events.push({ type: 'text', text: ' ' });
  for (const t of toks) {
    if (t.kind === 'text' && t.text === '') continue;
    if (after !== undefined) {
      if (!(t.kind === 'text' && SPACE_RE.test(t.text[0]!))) {
        violation(after, space);
        if (spacing === 'repair') lastSpace = true;
      }
      after = undefined;
    }
    if (t.kind === 'text') {
      events.push({ type: 'text', text: t.text });
      lastSpace = SPACE_RE.test(t.text[t.text.length - 1]!);
    } else if (t.kind === 'flush') {
      events.push({ type: 'flush' });
      lastSpace = false;
    } else {
      if (!lastSpace) violation(t.at, space);
      events.push({ type: 'break', seconds: t.seconds });
      lastSpace = false;
      after = t.at;
    }
  }
  return { events: mergeTextEvents(events), errors };
}

// ------------------------------------------------------------------------------------------------
// Drivers and generators
// ------------------------------------------------------------------------------------------------

/** Feeds pieces, catching 'error'-policy throws (their details carry the events). */
function drive(pieces: string[], options: TagParserOptions = {}): { events: TagEvent[]; raw: TagEvent[]; errors: RefResult['errors'] } {
  const parser = createTagParser(options);
  const raw: TagEvent[] = [];
  const errors: RefResult['errors'] = [];
  const step = (f: () => TagEvent[]) => {
    try {
      raw.push(...f());
    } catch (err) {
      expect(err).toBeInstanceOf(VoicewireError);
      const d = (err as VoicewireError).details as TagParseErrorDetails;
      expect((err as VoicewireError).code).toBe(d.errors[0]!.code);
      raw.push(...d.events);
      for (const e of d.errors) errors.push({ code: e.code, position: (e.details as { position: number }).position });
    }
  };
  for (const p of pieces) step(() => parser.push(p));
  step(() => parser.flush());
  return { events: mergeTextEvents(raw), raw, errors };
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

const oneByOne = (s: string): string[] => s.split(''); // UTF-16 code units: halves of surrogate pairs too

const WORDS = [
  'Bonjour', 'élève', 'garçon', 'déjà', 'Über', 'Straße', 'größer', 'niño', 'mañana', '¿Qué?', '¡Olé!',
  'ação', 'coração', 'pão', 'hello', 'world', 'a', '3', '5', 'x²', '😀', '👍🏽', '🇫🇷', '𝄞', '«', '»',
];
const DECOYS = [
  '<', '3 < 5', 'a <b> c', '<br>', '<b', '<breakfast>', '<fl', '<flushed>', '</flush>', '<break',
  '<<', '<>', '< flush>', '<flush now>', '<break up', '>', '<breaker>', '<f', '<flush', '<break time',
];
const SEPARATORS = [' ', ' ', ' ', '  ', '\n', '\t', '', '\u00a0', '\u2003'];
const INVALID_BREAKS = [
  '<break time="abc" />', '<break time="500ms" />', '<break time="3s" />', '<break time="0.05s"/>',
  '<break time="1.5" />', '<break>', '<break/>', '<break time=1s />', '<break time="1s">',
  '<break foo="1s" />', '<break time="1s" extra />', '<break time="">', '<break time="2.5 s" />',
  '<break from work>', '<break now />',
];

const timeArb = fc.integer({ min: 10, max: 200 }).map((k) => String(k / 100));
const validTagArb = fc.oneof(
  fc.constantFrom('<flush>', '<flush/>', '<flush />'),
  fc.tuple(timeArb, fc.constantFrom('"', "'"), fc.constantFrom(' ', '  ', '\n'), fc.constantFrom(' />', '/>', '  />')).map(
    ([t, q, sp, close]) => `<break${sp}time=${q}${t}s${q}${close}`,
  ),
);
const segmentArb = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...WORDS) },
  { weight: 2, arbitrary: fc.constantFrom(...DECOYS) },
  { weight: 3, arbitrary: validTagArb },
  { weight: 1, arbitrary: fc.constantFrom(...INVALID_BREAKS) },
);
/** Random texts: accented words, emoji, valid tags, invalid breaks and decoys, random separators. */
const textArb = fc
  .array(fc.tuple(segmentArb, fc.constantFrom(...SEPARATORS)), { maxLength: 30 })
  .map((parts) => parts.map(([seg, sep]) => seg + sep).join(''));

const POLICIES: TagParserOptions[] = [
  {},
  { invalidBreak: 'error', breakSpacing: 'error' },
  { invalidBreak: 'text', breakSpacing: 'ignore' },
  { invalidBreak: 'repair', breakSpacing: 'ignore' },
  { invalidBreak: 'text', breakSpacing: 'repair' },
];

// ------------------------------------------------------------------------------------------------

describe('tag parser: examples from the issue and the API', () => {
  it('repair keeps prose in angle brackets: "<break from work>" has words and no time, so it stays text', () => {
    const repairs: unknown[] = [];
    expect(parseTags('I need a <break from work> now', { onRepair: (r) => repairs.push(r) })).toEqual([{ type: 'text', text: 'I need a <break from work> now' }]);
    expect(repairs).toEqual([]);
    // Markup with no usable time is still dropped (a TTS voice must not read it aloud).
    expect(parseTags('a <break/> b')).toEqual([{ type: 'text', text: 'a  b' }]);
    expect(parseTags('a <break time="abc" /> b')).toEqual([{ type: 'text', text: 'a  b' }]);
    // And under 'error', prose or not, a malformed break is an error.
    expect(() => parseTags('a <break from work> b', { invalidBreak: 'error' })).toThrowError(expect.objectContaining({ code: 'TAG_BREAK_MALFORMED' }));
  });

  it('a break split across three pushes is one break (the read-aloud bug)', () => {
    const p = createTagParser();
    const events = [...p.push('Hello <br'), ...p.push('eak time="0'), ...p.push('.5s" /> world'), ...p.flush()];
    expect(mergeTextEvents(events)).toEqual([
      { type: 'text', text: 'Hello ' },
      { type: 'break', seconds: 0.5 },
      { type: 'text', text: ' world' },
    ]);
  });

  it.each(['3 < 5', 'a <b> c', 'x <br> y', '<breakfast> is <served>', 'if a<b and b>c', '</flush> </break>', '<flushed>', '< flush>'])(
    '%j is text and never stalls',
    (text) => {
      const p = createTagParser();
      expect(p.push(text)).toEqual([{ type: 'text', text }]);
      expect(p.flush()).toEqual([]);
    },
  );

  it('a "<" at the end of a piece is held, and is text at the end of the stream', () => {
    const p = createTagParser();
    expect(p.push('x <')).toEqual([{ type: 'text', text: 'x ' }]);
    expect(p.flush()).toEqual([{ type: 'text', text: '<' }]);
    const q = createTagParser();
    q.push('x <');
    expect(q.push(' 5')).toEqual([{ type: 'text', text: '< 5' }]);
  });

  it('holds back only what can still become a tag, and at most maxTagLength', () => {
    const p = createTagParser();
    expect(p.push('a <flus')).toEqual([{ type: 'text', text: 'a ' }]);
    expect(p.push('t')).toEqual([{ type: 'text', text: '<flust' }]); // can no longer be <flush>
    const long = '<break ' + 'x'.repeat(100);
    const q = createTagParser();
    expect(mergeTextEvents(q.push(long))).toEqual([{ type: 'text', text: long }]);
    const r = createTagParser({ maxTagLength: 20 });
    // 21 code units: longer than the limit, so text even though it is a valid break.
    expect(parseTags('<break time="1.5s" />', { maxTagLength: 20 })).toEqual([{ type: 'text', text: '<break time="1.5s" />' }]);
    expect(r.push('<break time="1.5s"')).toEqual([]); // 18: still a candidate
  });

  it('accepts <flush>, <flush/>, <flush /> and both "/>" and " />" breaks', () => {
    expect(parseTags('a<flush>b<flush/>c<flush />')).toEqual([
      { type: 'text', text: 'a' }, { type: 'flush' }, { type: 'text', text: 'b' }, { type: 'flush' }, { type: 'text', text: 'c' }, { type: 'flush' },
    ]);
    for (const tag of ['<break time="1.5s"/>', '<break time="1.5s" />', "<break time='1.5s' />", '<break  time = "1.5s"   />']) {
      expect(parseTags(`a ${tag} b`)).toEqual([{ type: 'text', text: 'a ' }, { type: 'break', seconds: 1.5 }, { type: 'text', text: ' b' }]);
    }
  });

  it('accepts the bounds 0.1 s and 2.0 s (docs/api.md §8) and rejects just outside', () => {
    const opts: TagParserOptions = { invalidBreak: 'error' };
    expect(parseTags(' <break time="0.1s" /> ', opts)[1]).toEqual({ type: 'break', seconds: 0.1 });
    expect(parseTags(' <break time="2.0s" /> ', opts)[1]).toEqual({ type: 'break', seconds: 2 });
    for (const t of ['0.09s', '2.01s', '0s', '10s']) {
      expect(() => parseTags(` <break time="${t}" /> `, opts)).toThrowError(expect.objectContaining({ code: 'TAG_BREAK_OUT_OF_RANGE' }));
    }
  });

  it.each([
    ['<break time="abc" />', 'TAG_BREAK_INVALID_TIME'],
    ['<break time="500ms" />', 'TAG_BREAK_INVALID_TIME'],
    ['<break time="1.5" />', 'TAG_BREAK_INVALID_TIME'],
    ['<break time="3s" />', 'TAG_BREAK_OUT_OF_RANGE'],
    ['<break time=1s />', 'TAG_BREAK_MALFORMED'],
    ['<break>', 'TAG_BREAK_MALFORMED'],
    ['<break time="1s">', 'TAG_BREAK_MALFORMED'],
    ['<break foo="1s" />', 'TAG_BREAK_MALFORMED'],
  ])('invalidBreak "error": %s throws %s with its position; the object keeps working', (tag, code) => {
    const p = createTagParser({ invalidBreak: 'error' });
    const text = `Olá, coração ${tag} fim`;
    let thrown: unknown;
    try {
      p.push(text);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(VoicewireError);
    const err = thrown as VoicewireError;
    expect(err.code).toBe(code);
    expect(err.message).toContain(tag);
    const d = err.details as TagParseErrorDetails;
    expect(d.position).toBe(text.indexOf('<'));
    expect(d.source).toBe(tag);
    expect(mergeTextEvents(d.events)).toEqual([{ type: 'text', text: 'Olá, coração  fim' }]);
    expect(mergeTextEvents([...p.push(' <flush> ok'), ...p.flush()])).toEqual([{ type: 'text', text: ' ' }, { type: 'flush' }, { type: 'text', text: ' ok' }]);
  });

  it('invalidBreak "text" keeps an invalid break exactly as written', () => {
    for (const tag of INVALID_BREAKS) {
      expect(parseTags(`a ${tag} b`, { invalidBreak: 'text' })).toEqual([{ type: 'text', text: `a ${tag} b` }]);
    }
  });

  it('invalidBreak "repair" (default): converts ms, clamps, salvages, drops the unusable, and reports each', () => {
    const cases: [string, number | undefined][] = [
      ['<break time="500ms" />', 0.5],
      ['<break time="3s" />', 2],
      ['<break time="0.01s" />', 0.1],
      ['<break time="1.5" />', 1.5],
      ['<break time=1s />', 1],
      ['<break time="1s">', 1],
      ['<break time="abc" />', undefined],
      ['<break>', undefined],
    ];
    for (const [tag, seconds] of cases) {
      const warnings: string[] = [];
      const events = parseTags(`a ${tag} b`, { onRepair: (w) => warnings.push(w.code) });
      expect(warnings.length).toBe(1);
      expect(events).toEqual(seconds === undefined ? [{ type: 'text', text: 'a  b' }] : [{ type: 'text', text: 'a ' }, { type: 'break', seconds }, { type: 'text', text: ' b' }]);
    }
  });

  it('a missing space around a break is repaired (default), reported, or ignored (§4.5)', () => {
    const text = 'é<break time="1s" />ü';
    expect(renderTagEvents(parseTags(text))).toBe('é <break time="1s" /> ü');
    expect(parseTags(text, { breakSpacing: 'ignore' })).toEqual([{ type: 'text', text: 'é' }, { type: 'break', seconds: 1 }, { type: 'text', text: 'ü' }]);
    try {
      parseTags(text, { breakSpacing: 'error' });
      expect.unreachable();
    } catch (err) {
      expect((err as VoicewireError).code).toBe('TAG_BREAK_MISSING_SPACE');
      const d = (err as VoicewireError).details as TagParseErrorDetails;
      expect(d.errors.map((e) => e.code)).toEqual(['TAG_BREAK_MISSING_SPACE', 'TAG_BREAK_MISSING_SPACE']);
      expect(d.position).toBe(1);
    }
    // Start and end of the stream count as spaces.
    expect(parseTags('<break time="1s" />', { breakSpacing: 'error' })).toEqual([{ type: 'break', seconds: 1 }]);
  });

  it('positions are UTF-16 code units (emoji are two)', () => {
    const text = '😀😀 Straße <break time="9s" /> x';
    try {
      createTagParser({ invalidBreak: 'error' }).push(text);
      expect.unreachable();
    } catch (err) {
      expect(((err as VoicewireError).details as TagParseErrorDetails).position).toBe(text.indexOf('<'));
    }
  });

  it('an emoji split between its surrogates comes out whole in one text event', () => {
    const p = createTagParser();
    expect(p.push('hi \ud83d')).toEqual([{ type: 'text', text: 'hi ' }]);
    expect(p.push('\ude00!')).toEqual([{ type: 'text', text: '😀!' }]);
    expect(p.push('\ud83d')).toEqual([]);
    expect(p.flush()).toEqual([{ type: 'text', text: '\ud83d' }]); // a lone half at the end is passed on
  });

  it('reset() drops held text; flush() makes the parser reusable; bad arguments raise INVALID_ARGUMENT', () => {
    const p = createTagParser();
    p.push('a <brea');
    p.reset();
    expect(p.push('b')).toEqual([{ type: 'text', text: 'b' }]);
    expect(p.flush()).toEqual([]);
    expect(p.position).toBe(0);
    expect(() => p.push(42 as never)).toThrowError(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => createTagParser({ maxTagLength: 3 })).toThrowError(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => createTagParser({ invalidBreak: 'nope' as never })).toThrowError(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});

describe('tag parser: properties (random texts in fr/de/es/pt with emoji, random tags, random splits)', () => {
  it('one-shot equals the naive regex reference, under every policy', () => {
    fc.assert(
      fc.property(textArb, (text) => {
        for (const options of POLICIES) {
          const got = drive([text], options);
          const ref = reference(text, options);
          expect(got.events).toEqual(ref.events);
          // The reference finds errors in two passes; compare them as sets (order is checked across splits).
          const key = (e: { code: string; position: number }) => `${String(e.position).padStart(6, '0')} ${e.code}`;
          expect(got.errors.map(key).sort()).toEqual(ref.errors.map(key).sort());
        }
      }),
      { numRuns: 150 },
    );
  });

  it('random splits, code unit by code unit, and empty pieces equal one-shot', () => {
    fc.assert(
      fc.property(textArb, fc.array(fc.nat(), { maxLength: 25 }), (text, cuts) => {
        for (const options of POLICIES) {
          const whole = drive([text], options);
          for (const pieces of [splitString(text, cuts), oneByOne(text), ['', ...oneByOne(text).flatMap((c) => [c, ''])]]) {
            const got = drive(pieces, options);
            expect(got.events).toEqual(whole.events);
            expect(got.errors).toEqual(whole.errors);
            // Never split a surrogate pair: every text event is well-formed (the input is).
            for (const e of got.raw) if (e.type === 'text') expect(isWellFormed(e.text)).toBe(true);
          }
        }
      }),
      { numRuns: 60 },
    );
  });

  it('break times: the parsed seconds are exactly Number() of the digits (correct rounding)', () => {
    const digits = fc.string({ unit: fc.constantFrom('0', '1', '2', '3', '4', '5', '6', '7', '8', '9'), minLength: 1, maxLength: 18 });
    fc.assert(
      fc.property(digits, digits, fc.boolean(), (a, b, frac) => {
        const d = frac ? `${a}.${b}` : a;
        const check = checkBreakTime(`${d}s`);
        const v = Number(d);
        if (v >= 0.1 && v <= 2) expect(check).toEqual({ ok: true, seconds: v });
        else expect(check).toMatchObject({ ok: false, code: 'TAG_BREAK_OUT_OF_RANGE' });
      }),
      { numRuns: 500 },
    );
    expect(checkBreakTime('1.s')).toMatchObject({ ok: false, code: 'TAG_BREAK_INVALID_TIME' });
    expect(checkBreakTime('.5s')).toEqual({ ok: true, seconds: 0.5 });
  });

  it('holds back only a viable tag prefix (≤ maxTagLength) after every piece', () => {
    // Prefixes of the grammar: what may still become <flush…> or <break…/>.
    const viable = (s: string, hold: boolean) =>
      new RegExp(`^(?:<f?|<fl(?:u(?:s(?:h${TS}*/?)?)?)?|<b(?:r(?:e(?:a(?:k)?)?)?)?|<break${TS}+(?:t(?:i(?:m(?:e${TS}*(?:=${TS}*(?:"[^"<>]*(?:"${TS}*/?)?|'[^'<>]*(?:'${TS}*/?)?)?)?)?)?)?)?)$`).test(s) ||
      (hold && new RegExp(`^<break(?:${TS}|/)[^<>]*$`).test(s));
    fc.assert(
      fc.property(textArb, fc.array(fc.nat(), { maxLength: 25 }), fc.boolean(), (text, cuts, hold) => {
        let out = '';
        const scanner = new TagScanner({ ontext: (t) => (out += t), onflush: (s) => (out += s), onbreak: (s) => (out += s) }, { holdMalformed: hold });
        let fed = '';
        for (const piece of splitString(text, cuts)) {
          scanner.write(piece);
          fed += piece;
          expect(fed.startsWith(out)).toBe(true);
          const held = fed.slice(out.length);
          expect(held.length).toBeLessThanOrEqual(MAX);
          if (held.length > 0) expect(viable(held, hold)).toBe(true);
        }
        scanner.end();
        expect(out).toBe(text);
      }),
      { numRuns: 150 },
    );
  });

  it('fuzz: arbitrary Unicode (lone surrogates included) raises only VoicewireError and the parser keeps working', () => {
    const garbage = fc.string({ unit: fc.oneof(fc.constantFrom('<', '>', '/', '"', "'", '=', ' ', 'b', 'r', 'e', 'a', 'k', 't', 'i', 'm', 's', 'f', 'l', 'u', 'h', '1', '.'), fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c))), maxLength: 200 });
    fc.assert(
      fc.property(garbage, fc.array(fc.nat(), { maxLength: 10 }), fc.constantFrom(...POLICIES), (text, cuts, options) => {
        const p = createTagParser(options);
        for (const piece of splitString(text, cuts)) {
          try {
            p.push(piece);
          } catch (err) {
            expect(err).toBeInstanceOf(VoicewireError);
          }
        }
        try {
          p.flush();
        } catch (err) {
          expect(err).toBeInstanceOf(VoicewireError);
        }
        expect(mergeTextEvents([...p.push('ok <flush> '), ...p.flush()])).toEqual([{ type: 'text', text: 'ok ' }, { type: 'flush' }, { type: 'text', text: ' ' }]);
      }),
      { numRuns: 200 },
    );
  });
});

describe('tag parser: the usual spellings, parsed without the state machine, equal the reference', () => {
  // push() recognises `<flush>`, `<break time="…s"/>` and `<break time="…s" />` itself while
  // nothing is held back, and hands every other `<` to the scanner. These texts are mostly such
  // tags, with times in every form the API's grammar allows (and some it does not), tags longer
  // than a small maxTagLength, and the decoys around which the fast path has to stop.
  const digits = fc.string({ unit: fc.constantFrom('0', '1', '2', '5', '9'), minLength: 1, maxLength: 18 });
  const timeArb = fc.oneof(
    fc.tuple(digits, digits).map(([a, b]) => `${a}.${b}`), // 0.5, 1.50, 001.2, 17 digits
    digits, // 1, 2, 0, 20
    digits.map((b) => `.${b}`), // .5
    fc.constantFrom('1.', '.', '', '1.5.5', '1e0', '-1', '+1', '0x1', '1_0', '１'), // not the API's form
  );
  const tagArb = fc.oneof(
    { weight: 4, arbitrary: fc.tuple(timeArb, fc.constantFrom('/>', ' />')).map(([t, close]) => `<break time="${t}s"${close}`) },
    { weight: 2, arbitrary: fc.constant('<flush>') },
    { weight: 1, arbitrary: fc.tuple(timeArb, fc.constantFrom('', 'ms', ' s')).map(([t, unit]) => `<break time="${t}${unit}" />`) },
    { weight: 2, arbitrary: fc.constantFrom(...DECOYS, ...INVALID_BREAKS, '<flush/>', '<flush />', "<break time='1s'/>") },
  );
  const usualArb = fc
    .array(fc.tuple(fc.constantFrom(...WORDS, ''), fc.constantFrom(...SEPARATORS), tagArb, fc.constantFrom(...SEPARATORS)), { maxLength: 25 })
    .map((parts) => parts.map(([w, s1, t, s2]) => w + s1 + t + s2).join(''));

  it('one-shot, random splits and character by character, every policy, maxTagLength 16 to 40', () => {
    fc.assert(
      fc.property(usualArb, fc.array(fc.nat(), { maxLength: 20 }), fc.integer({ min: 16, max: 40 }), (text, cuts, maxTagLength) => {
        for (const policy of POLICIES) {
          for (const options of [policy, { ...policy, maxTagLength }]) {
            const ref = reference(text, options);
            const whole = drive([text], options);
            expect(whole.events).toEqual(ref.events);
            const key = (e: { code: string; position: number }) => `${String(e.position).padStart(6, '0')} ${e.code}`;
            expect(whole.errors.map(key).sort()).toEqual(ref.errors.map(key).sort());
            for (const pieces of [splitString(text, cuts), oneByOne(text)]) {
              const got = drive(pieces, options);
              expect(got.events).toEqual(whole.events);
              expect(got.errors).toEqual(whole.errors);
            }
          }
        }
      }),
      { numRuns: 60 },
    );
  });

  it('a "<" or a decoy right before a tag does not hide it', () => {
    for (const text of ['a <<flush> b', 'a <b<flush> b', 'x <<break time="1s" /> y', '3 <<<flush>', '<b><break time="0.5s"/> c', '<fl<flush>', '<br<break time="2s"/>']) {
      for (const options of POLICIES) {
        const ref = reference(text, options);
        expect(drive([text], options).events).toEqual(ref.events);
        expect(drive(oneByOne(text), options).events).toEqual(ref.events);
      }
    }
  });

  it('reports the position of a missing space and of an invalid break found by either path', () => {
    const errors: VoicewireError[] = [];
    const p = createTagParser({ onRepair: (w) => errors.push(w) });
    const pieces = ['ab<break time="0.5s"/>cd <flush>', 'x<break time="1s" />y <break time="9s"/> 😀<break time=\'1s\'/>z'];
    for (const piece of pieces) p.push(piece);
    p.flush();
    const stream = pieces.join('');
    const at = (tag: string): number => stream.indexOf(tag); // each tag occurs once
    const [a, b, c, d] = ['<break time="0.5s"/>', '<break time="1s" />', '<break time="9s"/>', "<break time='1s'/>"].map(at);
    expect(errors.map((e) => [e.code, (e.details as { position: number }).position])).toEqual([
      ['TAG_BREAK_MISSING_SPACE', a], // before
      ['TAG_BREAK_MISSING_SPACE', a], // after
      ['TAG_BREAK_MISSING_SPACE', b],
      ['TAG_BREAK_MISSING_SPACE', b],
      ['TAG_BREAK_OUT_OF_RANGE', c], // repaired to 2 s
      ['TAG_BREAK_MISSING_SPACE', d],
      ['TAG_BREAK_MISSING_SPACE', d],
    ]);
    expect(errors[0]!.message).toContain('<break time="0.5s"/>');
    expect(errors[2]!.message).toContain('<break time="1s" />');
  });
});

describe('TagScanner: write(piece, start, end), advance(count) and idle', () => {
  const record = () => {
    const out: string[] = [];
    const scanner = new TagScanner(
      { ontext: (t) => void out.push(`t:${t}`), onflush: (s, at) => void out.push(`f:${s}@${at}`), onbreak: (s, time, at) => void out.push(`b:${s}:${String(time)}@${at}`) },
      { holdMalformed: true },
    );
    return { out, scanner };
  };
  const texts = (events: string[]): string[] => {
    // Adjacent text is handed out in different pieces depending on the split: merge it.
    const merged: string[] = [];
    for (const e of events) {
      const last = merged[merged.length - 1];
      if (e.startsWith('t:') && last?.startsWith('t:')) merged[merged.length - 1] = last + e.slice(2);
      else merged.push(e);
    }
    return merged;
  };

  it('parts of a piece scan like the piece (positions included), and advance moves the position', () => {
    fc.assert(
      fc.property(textArb, fc.array(fc.nat(), { maxLength: 12 }), fc.array(fc.nat(), { maxLength: 12 }), (text, cuts, inner) => {
        const whole = record();
        whole.scanner.write(text);
        whole.scanner.end();
        const parts = record();
        let fed = 0;
        for (const piece of splitString(text, cuts)) {
          // Feed each piece as consecutive parts write(piece, a, b).
          const points = [0, ...inner.map((c) => c % (piece.length + 1)), piece.length].sort((a, b) => a - b);
          for (let k = 1; k < points.length; k++) parts.scanner.write(piece, points[k - 1], points[k]);
          fed += piece.length;
          expect(parts.scanner.position).toBe(fed);
        }
        parts.scanner.end();
        expect(texts(parts.out)).toEqual(texts(whole.out));
      }),
      { numRuns: 150 },
    );
    const { out, scanner } = record();
    expect(scanner.idle).toBe(true);
    scanner.advance(5); // "Hello" handled elsewhere
    scanner.write('Hello <flush> <bre', 5);
    expect(scanner.idle).toBe(false);
    scanner.write('ak time="1s"/>');
    expect(scanner.idle).toBe(true);
    expect(scanner.position).toBe(32);
    expect(out).toEqual(['t: ', 'f:<flush>@6', 't: ', 'b:<break time="1s"/>:1s@14']);
  });

  it('rejects a bad part or count (INVALID_ARGUMENT) and advance while a tag is held back (INVALID_STATE)', () => {
    const { scanner } = record();
    const code = (f: () => void): string | undefined => {
      try {
        f();
      } catch (err) {
        expect(err).toBeInstanceOf(VoicewireError);
        return (err as VoicewireError).code;
      }
      return undefined;
    };
    expect(code(() => scanner.write('abc', 2, 1))).toBe('INVALID_ARGUMENT');
    expect(code(() => scanner.write('abc', -1))).toBe('INVALID_ARGUMENT');
    expect(code(() => scanner.write('abc', 0, 4))).toBe('INVALID_ARGUMENT');
    expect(code(() => scanner.write('abc', 0.5))).toBe('INVALID_ARGUMENT');
    expect(code(() => scanner.advance(-1))).toBe('INVALID_ARGUMENT');
    expect(code(() => scanner.advance(1.5))).toBe('INVALID_ARGUMENT');
    expect(code(() => scanner.advance(Number.NaN))).toBe('INVALID_ARGUMENT');
    expect(scanner.position).toBe(0);
    scanner.write('x <fl');
    expect(code(() => scanner.advance(1))).toBe('INVALID_STATE');
    expect(scanner.position).toBe(5);
  });
});

describe('tag parser: stream adapters', () => {
  const text = 'Bom dia <br' + 'eak time="0.5s" /> mañana 😀 <flush> 3 < 5';
  const pieces = ['Bom dia <br', 'eak time="0.', '5s" /> mañana \ud83d', '\ude00 <fl', 'ush> 3 <', ' 5'];

  it('web TransformStream', async () => {
    const events: TagEvent[] = [];
    await new ReadableStream<string>({
      start(c) {
        for (const p of pieces) c.enqueue(p);
        c.close();
      },
    })
      .pipeThrough(createTagParserStream())
      .pipeTo(new WritableStream({ write: (e) => void events.push(e) }));
    expect(mergeTextEvents(events)).toEqual(parseTags(text));
  });

  it('Node Transform, fed UTF-8 bytes split inside characters', async () => {
    const bytes = Buffer.from(text, 'utf8');
    const chunks = [bytes.subarray(0, 20), bytes.subarray(20, 51), bytes.subarray(51)];
    const events: TagEvent[] = [];
    for await (const e of Readable.from(chunks).pipe(createTagParserTransform())) events.push(e as TagEvent);
    expect(mergeTextEvents(events)).toEqual(parseTags(text));
  });

  it('web stream under the error policy delivers the events, then errors', async () => {
    const events: TagEvent[] = [];
    const done = new ReadableStream<string>({
      start(c) {
        c.enqueue('a <break time="9s" /> b');
        c.close();
      },
    })
      .pipeThrough(createTagParserStream({ invalidBreak: 'error' }))
      .pipeTo(new WritableStream({ write: (e) => void events.push(e) }));
    await expect(done).rejects.toMatchObject({ code: 'TAG_BREAK_OUT_OF_RANGE' });
    expect(mergeTextEvents(events)).toEqual([{ type: 'text', text: 'a  b' }]);
  });
});
