/**
 * The event loop's busy stretches in a server's `.cpuprofile` (issue 34):
 * `npx tsx bench/limit-profile.ts FILE.cpuprofile [--from-ms N] [--long-ms 50] [--list]`.
 * `--list` prints each long stretch: when, how long, its top self items.
 *
 * A busy stretch is a run of consecutive samples that are not `(idle)` (V8's sampler marks the
 * event loop waiting in epoll as idle): one turn of the loop, or several back to back. Printed: the
 * stretches' p50/p90/p99/max, busy time and GC share, and for the long stretches (≥ `--long-ms`,
 * default 50) what they spent their time in: self time by function, and inclusive time of a few
 * marked frames (SQLite, the upgrade handshake, socket writes, GC). `--from-ms` skips the profile's
 * start (the server's start-up and the bench's warm-up).
 */
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

const file = process.argv[2];
if (!file) {
  console.error('usage: npx tsx bench/limit-profile.ts FILE.cpuprofile [--from-ms N] [--long-ms 50]');
  process.exit(2);
}
const arg = (name: string, dflt: number): number => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const fromMs = arg('--from-ms', 0);
const longMs = arg('--long-ms', 50);

const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const name = (n: Node): string => n.callFrame.functionName || '(anonymous)';
const label = (n: Node): string => `${name(n)} ${n.callFrame.url.split('/').slice(-2).join('/')}:${n.callFrame.lineNumber + 1}`;

/** Inclusive markers: a sample counts for a marker when any frame on its stack matches. */
const MARKERS: Array<[string, (n: Node) => boolean]> = [
  ['SQLite (libsql)', (n) => n.callFrame.url.includes('libsql')],
  ['credits (store reserve/settle)', (n) => /reserveCredits|settleCredits/.test(name(n))],
  ['voice lookup', (n) => name(n) === 'findVoice'],
  ['upgrade handshake', (n) => name(n) === 'handleUpgrade' || name(n) === 'completeUpgrade'],
  ['socket writes (writev/write)', (n) => /^(writev|writeGeneric|writevGeneric|_writev|doWrite)$/.test(name(n))],
  ['GC', (n) => name(n) === '(garbage collector)'],
];

const stacks = new Map<number, Node[]>();
const stackOf = (id: number): Node[] => {
  let s = stacks.get(id);
  if (s) return s;
  s = [];
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) s.push(byId.get(cur)!);
  stacks.set(id, s);
  return s;
};

// Sample i covers the time until the next sample (its delta is the time since the previous one).
let t = p.startTime;
const stretches: Array<{ start: number; ms: number; samples: Array<[number, number]> }> = [];
let cur: (typeof stretches)[number] | undefined;
let busy = 0;
let gc = 0;
for (let i = 0; i < p.samples.length; i++) {
  t += p.timeDeltas[i]!;
  const dur = (p.timeDeltas[i + 1] ?? 0) / 1000;
  if ((t - p.startTime) / 1000 < fromMs) continue;
  const node = byId.get(p.samples[i]!)!;
  const idle = name(node) === '(idle)' || name(node) === '(program)';
  if (idle) {
    if (cur) stretches.push(cur);
    cur = undefined;
    continue;
  }
  busy += dur;
  if (name(node) === '(garbage collector)') gc += dur;
  cur ??= { start: t, ms: 0, samples: [] };
  cur.ms += dur;
  cur.samples.push([p.samples[i]!, dur]);
}
if (cur) stretches.push(cur);

const ms = stretches.map((s) => s.ms).sort((a, b) => a - b);
const q = (x: number): number => ms[Math.min(ms.length - 1, Math.max(0, Math.ceil(x * ms.length) - 1))] ?? NaN;
console.log(`${file}: busy ${(busy / 1000).toFixed(2)} s, GC ${(gc / 1000).toFixed(2)} s (${((100 * gc) / busy).toFixed(1)} %), ${ms.length} busy stretches`);
console.log(`stretches ms: p50 ${q(0.5).toFixed(1)}, p90 ${q(0.9).toFixed(1)}, p99 ${q(0.99).toFixed(1)}, max ${(ms.at(-1) ?? NaN).toFixed(1)}`);

const long = stretches.filter((s) => s.ms >= longMs);
const longTotal = long.reduce((a, s) => a + s.ms, 0);
console.log(`${long.length} stretches ≥ ${longMs} ms, ${(longTotal / 1000).toFixed(2)} s in all`);
const self = new Map<string, number>();
const marked = new Map<string, number>();
for (const s of long)
  for (const [id, dur] of s.samples) {
    const st = stackOf(id);
    self.set(label(st[0]!), (self.get(label(st[0]!)) ?? 0) + dur);
    for (const [m, test] of MARKERS) if (st.some(test)) marked.set(m, (marked.get(m) ?? 0) + dur);
  }
if (process.argv.includes('--list'))
  for (const s of long) {
    const top = new Map<string, number>();
    for (const [id, dur] of s.samples) top.set(name(stackOf(id)[0]!), (top.get(name(stackOf(id)[0]!)) ?? 0) + dur);
    const best = [...top].sort((a, b) => b[1] - a[1]).slice(0, 4).map(([l, v]) => `${l} ${v.toFixed(0)}`);
    console.log(`  at ${((s.start - p.startTime) / 1e6).toFixed(2)} s: ${s.ms.toFixed(0)} ms: ${best.join(', ')}`);
  }
const pct = (x: number): string => `${x.toFixed(0)} ms (${((100 * x) / longTotal).toFixed(1)} %)`;
console.log('in them, inclusive:');
for (const [m] of MARKERS) console.log(`  ${m}: ${pct(marked.get(m) ?? 0)}`);
console.log('in them, top self:');
for (const [l, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`  ${pct(v)} ${l}`);
