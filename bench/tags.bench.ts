/**
 * Tag parser throughput on a TTS text (fr/de/es/pt/en with emoji) fed 4 characters at a time
 * (LLM token-sized pieces) and in 4 KB pieces. Goal (issue 5): within 2x of a plain
 * `indexOf('<')` scan, and linear (4 MB costs 4x 1 MB).
 *
 * "dense" text has a tag every ~180 characters and "3 < 5" / "<b>" decoys (12 '<' per KB);
 * "typical" text has a tag every ~450 characters. Pieces are flat strings (as JSON.parse hands
 * them to a client), built outside the timed functions. Each case parses the whole text with a
 * new parser: push() every piece, then flush().
 *
 * References, fed the same pieces, exactly:
 * - `indexOf("<") scan`: for each piece, `indexOf('<')` from 0 and then after each hit, counting
 *   the hits. It produces nothing: the cost of finding every '<' and no more.
 * - `scan + text events`: the same scan, plus what any consumer of the stream must hand on, as
 *   push() does: a new array per piece holding a new `{ type: 'text', text }` event for each run
 *   of text between two '<' (`slice`), or the piece itself when it has none. The fair floor for a
 *   parser whose push() returns a new array of new events (the API: callers keep and mutate them).
 * - `floor: canonical tags, no rules`: the least a tag parser can do on these texts: the same scan,
 *   at each `<f`/`<b` a sticky regex for `<flush>` and `<break time="…s"/>`, and a text event plus
 *   a tag event per tag. Not split-safe (a tag across two pieces is text), no spacing rule, no
 *   policies, no positions: a bound no real parser reaches, printed to show what 2x would demand.
 * - `naive per-piece indexOf + regex`: what clients without a streaming parser write (same events
 *   out, regex exec per tag); not split-safe either (the read-aloud bug).
 *
 * Two measurements: runGroup (bench/util.ts: interleaved rounds, per-round ratios), and an interleaved best of N
 * after a warm-up over every input (cases share each round's machine load; the figures to quote on
 * a busy machine), with the linearity check.
 */
import { createTagParser } from '../src/text/tags.js';
import { createTextChunker } from '../src/text/text-chunker.js';
import { runGroup, save, type GroupResult } from './util.js';

const SENTENCES = [
  'Bonjour, je suis ravi de vous aider aujourd’hui. ',
  'Die Straße ist größer als gedacht, oder? ',
  '¿Qué tal? Mañana el niño irá a la playa. ',
  'O coração da ação está no pão de açúcar. ',
  'The answer is 3 < 5 and a <b> tag is just text. 😀 ',
  'Let me think about that for a moment. 👍🏽 ',
];
const TAGS = ['<break time="0.5s" /> ', '<flush> ', '<break time="1.2s"/> '];

const PLAIN = SENTENCES.filter((x) => !x.includes('<'));

/** dense: a tag every 4 sentences and "a < b" decoys; typical: a tag every 10 plain sentences. */
function makeText(size: number, denseText: boolean): string {
  let s = '';
  let k = 0;
  while (s.length < size) {
    s += denseText ? SENTENCES[k % SENTENCES.length]! : PLAIN[k % PLAIN.length]!;
    if (denseText ? k % 4 === 3 : k % 10 === 9) s += TAGS[(k >> 2) % TAGS.length]!;
    k++;
  }
  return s.slice(0, size);
}

/** Pieces as a client receives them: flat strings out of JSON.parse (not slices of one big string). */
function pieces(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return JSON.parse(JSON.stringify(out)) as string[];
}

let sink = 0;

function parse(ps: readonly string[]): void {
  const p = createTagParser();
  for (const piece of ps) sink += p.push(piece).length;
  sink += p.flush().length;
}

/** `indexOf("<") scan` (see the header). */
function indexOfScan(ps: readonly string[]): void {
  let n = 0;
  for (const piece of ps) {
    let i = piece.indexOf('<');
    while (i !== -1) {
      n++;
      i = piece.indexOf('<', i + 1);
    }
  }
  sink += n;
}

/** `scan + text events` (see the header). */
function scanTextEvents(ps: readonly string[]): void {
  for (const piece of ps) {
    const out: { type: 'text'; text: string }[] = [];
    let start = 0;
    let i = piece.indexOf('<');
    while (i !== -1) {
      if (i > start) out.push({ type: 'text', text: piece.slice(start, i) });
      start = i;
      i = piece.indexOf('<', i + 1);
    }
    if (start < piece.length) out.push({ type: 'text', text: start === 0 ? piece : piece.slice(start) });
    sink += out.length;
  }
}

/** `floor: canonical tags, no rules` (see the header). */
const CANONICAL = /<(?:flush>|break time="(?:\d+(?:\.\d+)?|\.\d+)s" ?\/>)/y;
function floorCanonical(ps: readonly string[]): void {
  for (const piece of ps) {
    const out: unknown[] = [];
    let start = 0;
    let i = piece.indexOf('<');
    while (i !== -1) {
      const c = piece.charCodeAt(i + 1);
      if (c === 0x62 || c === 0x66) {
        CANONICAL.lastIndex = i;
        if (CANONICAL.test(piece)) {
          out.push({ type: 'text', text: piece.slice(start, i) });
          out.push(c === 0x66 ? { type: 'flush' } : { type: 'break', seconds: 0.5 });
          start = CANONICAL.lastIndex;
          i = piece.indexOf('<', start);
          continue;
        }
      }
      i = piece.indexOf('<', i + 1);
    }
    if (start < piece.length) out.push({ type: 'text', text: start === 0 ? piece : piece.slice(start) });
    sink += out.length;
  }
}

/**
 * What clients without a streaming parser do: look for tags inside each piece on its own with
 * indexOf('<') and a regex, same events out. Not split-safe (a tag across two pieces is text, the
 * read-aloud bug), so a cost reference, not a correct alternative.
 */
const NAIVE_TAG = /<flush>|<break time="([^"<>]*)" ?\/>/y;
function naivePerPiece(ps: readonly string[]): void {
  for (const piece of ps) {
    const out: unknown[] = [];
    let start = 0;
    let i = piece.indexOf('<');
    while (i !== -1) {
      NAIVE_TAG.lastIndex = i;
      const m = NAIVE_TAG.exec(piece);
      if (m !== null) {
        if (i > start) out.push({ type: 'text', text: piece.slice(start, i) });
        out.push(m[1] === undefined ? { type: 'flush' } : { type: 'break', seconds: Number(m[1].slice(0, -1)) });
        start = NAIVE_TAG.lastIndex;
      }
      i = piece.indexOf('<', i + 1);
    }
    if (start < piece.length) out.push({ type: 'text', text: piece.slice(start) });
    sink += out.length;
  }
}

function chunk(ps: readonly string[]): void {
  const c = createTextChunker();
  for (const piece of ps) sink += c.push(piece).length;
  sink += c.end().length;
}

const groups: GroupResult[] = [];
const MB = 1 << 20;
const dense = makeText(4 * MB, true);
const typical = makeText(MB, false);
const inputs: { label: string; pieceSize: number; ps: string[] }[] = [];
for (const [label, text] of [
  ['1 MB dense text (12 "<" per KB)', dense.slice(0, MB)],
  ['1 MB typical text (a tag per ~450 chars)', typical],
  ['4 MB dense text', dense],
] as const) {
  for (const pieceSize of [4, 4096]) inputs.push({ label, pieceSize, ps: pieces(text, pieceSize) });
}
const references = [
  { name: 'indexOf("<") scan', fn: indexOfScan },
  { name: 'scan + text events', fn: scanTextEvents },
  { name: 'floor: canonical tags, no rules', fn: floorCanonical },
  { name: 'naive per-piece indexOf + regex', fn: naivePerPiece },
];

// 1. runGroup: the parser beside the references, dense and typical text, both piece sizes.
for (const { label, pieceSize, ps } of inputs) {
  groups.push(
    runGroup(`tags: ${label} in ${pieceSize}-char pieces`, [
      { name: 'voicewire createTagParser', fn: () => parse(ps) },
      ...references.map((r) => ({ name: r.name, fn: () => r.fn(ps) })),
    ]),
  );
}

// 2. Interleaved best of N, after a warm-up over every input (the JIT sees every shape first).
const cases = [{ name: 'voicewire createTagParser', fn: parse }, ...references];
const warmUntil = performance.now() + Number(process.env.BENCH_WARMUP_MS ?? 3000);
while (performance.now() < warmUntil) for (const { ps } of inputs) for (const c of cases) c.fn(ps);
const rounds = Number(process.env.BENCH_ROUNDS ?? 25);
const best = new Map<string, number[]>(); // input key -> best ms per case
for (const input of inputs) {
  const b = cases.map(() => Infinity);
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < cases.length; k++) {
      const t0 = performance.now();
      cases[k]!.fn(input.ps);
      b[k] = Math.min(b[k]!, performance.now() - t0);
    }
  }
  best.set(`${input.label}/${input.pieceSize}`, b);
}
console.log('\ninterleaved best of N: ms per text, and the parser / reference ratios (goal: <= 2x the scan)');
const interleaved: { input: string; pieceSize: number; ms: Record<string, number>; parserOverScan: number; parserOverScanWithEvents: number; floorOverScan: number }[] = [];
for (const input of inputs) {
  const b = best.get(`${input.label}/${input.pieceSize}`)!;
  const ms = Object.fromEntries(cases.map((c, k) => [c.name, b[k]!]));
  const row = { input: input.label, pieceSize: input.pieceSize, ms, parserOverScan: b[0]! / b[1]!, parserOverScanWithEvents: b[0]! / b[2]!, floorOverScan: b[3]! / b[1]! };
  interleaved.push(row);
  console.log(
    `  ${`${input.label}, ${input.pieceSize}-char`.padEnd(48)} parser ${b[0]!.toFixed(2).padStart(6)} ms  scan ${b[1]!.toFixed(2).padStart(5)}  +events ${b[2]!.toFixed(2).padStart(5)}  floor ${b[3]!.toFixed(2).padStart(5)}  naive ${b[4]!.toFixed(2).padStart(6)}  |  parser/scan ${row.parserOverScan.toFixed(2)}  parser/(scan+events) ${row.parserOverScanWithEvents.toFixed(2)}  floor/scan ${row.floorOverScan.toFixed(2)}`,
  );
}

// Linearity: 4 MB against 1 MB of the same dense text, from the interleaved bests.
console.log('\nlinearity: best time for 4 MB / best time for 1 MB (4.00 = linear)');
const linearity: { pieceSize: number; name: string; oneMbMs: number; fourMbMs: number; ratio: number }[] = [];
for (const pieceSize of [4, 4096]) {
  const one = best.get(`${inputs[0]!.label}/${pieceSize}`)!;
  const four = best.get(`${inputs[4]!.label}/${pieceSize}`)!;
  for (const k of [0, 1]) {
    const name = cases[k]!.name;
    linearity.push({ pieceSize, name, oneMbMs: one[k]!, fourMbMs: four[k]!, ratio: four[k]! / one[k]! });
    console.log(`  ${String(pieceSize).padStart(4)}-char pieces  ${name.padEnd(28)} 1 MB ${one[k]!.toFixed(2)} ms, 4 MB ${four[k]!.toFixed(2)} ms, ratio ${(four[k]! / one[k]!).toFixed(2)}, ${(MB / 1e6 / (one[k]! / 1000)).toFixed(0)} MB/s`);
  }
}

// 3. The text chunker (whole messages out) on the same pieces.
for (const pieceSize of [4, 4096]) {
  const ps = pieces(dense.slice(0, MB), pieceSize);
  groups.push(
    runGroup(`text chunker: 1 MB dense text in ${pieceSize}-char pieces`, [
      { name: 'voicewire createTextChunker', fn: () => chunk(ps) },
      { name: 'voicewire createTagParser', fn: () => parse(ps) },
    ]),
  );
}

if (sink === 42) console.log('');
save('tags', { groups, interleaved, linearity });
