/**
 * Tag parser throughput on a TTS text (fr/de/es/pt/en with emoji) fed 4 characters at a time
 * (LLM token-sized pieces) and in 4 KB pieces, beside:
 * - a plain `indexOf('<')` scan of the same pieces: the floor any tag finder pays;
 * - that scan handing out the text slices;
 * - a naive per-piece tokenizer (indexOf + a regex, same events out) as clients without a
 *   streaming parser write it: not split-safe, so a cost reference, not an alternative.
 * "dense" text has a tag every ~180 characters and "3 < 5" / "<b>" decoys (12 '<' per KB);
 * "typical" text has a tag every ~450 characters. 1 MB against 4 MB shows linearity. Pieces are
 * flat strings (as JSON.parse hands them to a client), built outside the timed functions.
 */
import { createTagParser } from '../src/tags.js';
import { createTextChunker } from '../src/text-chunker.js';
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

/** The floor: find every '<' in every piece. */
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

/** The floor plus handing out the text between '<' as one array of slices per piece. */
function indexOfSlices(ps: readonly string[]): void {
  for (const piece of ps) {
    const out: string[] = [];
    let start = 0;
    let i = piece.indexOf('<');
    while (i !== -1) {
      if (i > start) out.push(piece.slice(start, i));
      start = i;
      i = piece.indexOf('<', i + 1);
    }
    if (start < piece.length) out.push(piece.slice(start));
    sink += out.length;
  }
}

/**
 * What clients without a streaming parser do: look for tags inside each piece on its own with
 * indexOf('<') and a regex, same events out. Not split-safe (a tag across two pieces is text, the
 * read-aloud bug), so it is the cost floor of producing events, not a correct alternative.
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

// 1. The parser beside the floors, dense and typical text, token-sized and 4 KB pieces.
for (const [label, text] of [
  ['1 MB dense text (12 "<" per KB)', dense.slice(0, MB)],
  ['1 MB typical text (a tag per ~450 chars)', typical],
  ['4 MB dense text', dense],
] as const) {
  for (const pieceSize of [4, 4096]) {
    const ps = pieces(text, pieceSize);
    groups.push(
      runGroup(`tags: ${label} in ${pieceSize}-char pieces`, [
        { name: 'voicewire createTagParser', fn: () => parse(ps) },
        { name: 'indexOf("<") scan', fn: () => indexOfScan(ps) },
        { name: 'indexOf("<") scan + text slices', fn: () => indexOfSlices(ps) },
        { name: 'naive per-piece indexOf + regex', fn: () => naivePerPiece(ps) },
      ]),
    );
  }
}

// 2. Linearity: 1 MB and 4 MB runs interleaved, best of N each (robust to a busy machine).
console.log('\nlinearity: best time for 4 MB / best time for 1 MB (4.00 = linear)');
const linearity: { pieceSize: number; name: string; oneMbMs: number; fourMbMs: number; ratio: number }[] = [];
for (const pieceSize of [4, 4096]) {
  const one = pieces(dense.slice(0, MB), pieceSize);
  const four = pieces(dense, pieceSize);
  for (const [name, f] of [
    ['voicewire createTagParser', parse],
    ['indexOf("<") scan', indexOfScan],
  ] as const) {
    let a = Infinity;
    let b = Infinity;
    for (let r = 0; r < 15; r++) {
      let t0 = performance.now();
      f(one);
      a = Math.min(a, performance.now() - t0);
      t0 = performance.now();
      f(four);
      b = Math.min(b, performance.now() - t0);
    }
    linearity.push({ pieceSize, name, oneMbMs: a, fourMbMs: b, ratio: b / a });
    console.log(`  ${String(pieceSize).padStart(4)}-char pieces  ${name.padEnd(28)} 1 MB ${a.toFixed(2)} ms, 4 MB ${b.toFixed(2)} ms, ratio ${(b / a).toFixed(2)} ${((MB / 1e6) / (a / 1000)).toFixed(0)} MB/s`);
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
save('tags', { groups, linearity });
