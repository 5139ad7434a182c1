/**
 * What an idle TTS WebSocket session retains on the server (issue 22):
 * `npx tsx bench/idle-heap.ts [--quick] [--sessions 1000] [--rounds 3] [--snapshot [--owners]] [--tsx] [--bare]`.
 *
 * The server (tone engines, memory store, in a child process with `--expose-gc`:
 * test/helpers/idle-server-child.ts) gets `sessions` TTS sockets, each set up (`ready`) and left
 * idle; its V8 heap after a full GC, over the same figure before they opened, divided by their
 * number, is the heap per idle session (stable to a few bytes, unlike RSS: bench/limit.ts). Each
 * round opens and closes its sessions; `--snapshot` then diffs two heap snapshots (before/after the
 * sessions of one more round: objects whose id is new) and prints what one session retains, by
 * node type and constructor or function name, bytes per session and objects per session
 * (`--owners`: internal arrays, closures, contexts and strings by the object holding them). The
 * server runs the sources bundled as dist/ is (`--tsx`: under tsx, whose keepNames adds ~8.7 KiB);
 * `--bare`: the same figures of bench/bare-ws-server.ts, the limit bench/limit.ts compares with.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startIdleServer } from '../test/helpers/idle-sessions.js';
import { machine } from './util.js';

const quick = process.argv.includes('--quick');
const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const N = arg('--sessions', quick ? 300 : 1000);
const OWNERS = process.argv.includes('--owners');
const ROUNDS = arg('--rounds', quick ? 1 : 3);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]]; edge_fields: string[]; edge_types: [string[], ...unknown[]] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/** Per (type, name): count and self size of the nodes of `after` whose id is not in `before`. */
function newObjects(beforeFile: string, afterFile: string): Map<string, { count: number; bytes: number }> {
  const read = (f: string): Snapshot => JSON.parse(readFileSync(f, 'utf8')) as Snapshot;
  const before = read(beforeFile);
  const fields = before.snapshot.meta.node_fields;
  const F = fields.length;
  const ID = fields.indexOf('id');
  const ids = new Set<number>();
  for (let i = 0; i < before.nodes.length; i += F) ids.add(before.nodes[i + ID]!);
  const after = read(afterFile);
  const TYPE = fields.indexOf('type');
  const NAME = fields.indexOf('name');
  const SIZE = fields.indexOf('self_size');
  const types = after.snapshot.meta.node_types[0];
  const EC = fields.indexOf('edge_count');
  const E = after.snapshot.meta.edge_fields.length;
  const ETYPE = after.snapshot.meta.edge_fields.indexOf('type');
  const ENAME = after.snapshot.meta.edge_fields.indexOf('name_or_index');
  const ETO = after.snapshot.meta.edge_fields.indexOf('to_node');
  const edgeTypes = after.snapshot.meta.edge_types[0];
  // Owners (first retainer that is not weak) of the internal arrays, closures and contexts: which object they belong to.
  const owner = new Map<number, string>();
  if (OWNERS) {
    for (let i = 0, e = 0; i < after.nodes.length; i += F) {
      const from = `${types[after.nodes[i + TYPE]!]} ${after.strings[after.nodes[i + NAME]!]!.slice(0, 40)}`;
      for (let k = 0; k < after.nodes[i + EC]!; k++, e += E) {
        const et = edgeTypes[after.edges[e + ETYPE]!]!;
        if (et === 'weak' || et === 'shortcut') continue;
        const to = after.edges[e + ETO]!;
        if (owner.has(to)) continue;
        const en = et === 'element' || et === 'hidden' ? `[${after.edges[e + ENAME]}]` : after.strings[after.edges[e + ENAME]!];
        owner.set(to, `${from}.${en}`);
      }
    }
  }
  const groups = new Map<string, { count: number; bytes: number }>();
  for (let i = 0; i < after.nodes.length; i += F) {
    if (ids.has(after.nodes[i + ID]!)) continue;
    const type = types[after.nodes[i + TYPE]!]!;
    let name = after.strings[after.nodes[i + NAME]!]!;
    // String contents and numbered internals say nothing per session: their kind does.
    if (type === 'string' || type === 'concatenated string' || type === 'sliced string' || type === 'number') name = '';
    if (name.length > 60) name = name.slice(0, 57) + '...';
    const key = `${type} ${name}${OWNERS && /array|closure|Context|PropertyArray|string|number/.test(type + name) ? ` <- ${owner.get(i) ?? '?'}` : ''}`;
    const g = groups.get(key) ?? { count: 0, bytes: 0 };
    g.count++;
    g.bytes += after.nodes[i + SIZE]!;
    groups.set(key, g);
  }
  return groups;
}

console.log(`${process.argv.includes('--bare') ? 'bare ws server: ' : ''}idle TTS WebSocket sessions (tone, PCM, memory store) on ${machine()}; load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
const server = await startIdleServer({ tsx: process.argv.includes('--tsx'), bare: process.argv.includes('--bare') });
try {
  // Warm-up: JIT, the first session's shared structures (caches, metric label sets).
  await server.closeAll(await server.openIdle(50));
  await sleep(300);
  const perSession: number[] = [];
  const rssPerSession: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const base = await server.measure();
    const sockets = await server.openIdle(N);
    await sleep(300);
    const held = await server.measure();
    const open = sockets.filter((ws) => ws.readyState === ws.OPEN).length;
    if (open < N) console.log(`  only ${open} of ${N} sessions still open at the measure: the figure is not of ${N}`);
    const heap = (held.heapUsed - base.heapUsed) / N;
    const ext = (held.external - base.external) / N;
    const total = (held.heapTotal - base.heapTotal) / N;
    const rss = (held.rss - base.rss) / N;
    perSession.push(heap);
    rssPerSession.push(rss);
    console.log(`round ${r + 1}: ${N} idle sessions: heap ${(heap / 1024).toFixed(2)} KiB/session (committed ${(total / 1024).toFixed(1)}), external ${(ext / 1024).toFixed(2)} KiB, RSS ${(rss / 1024).toFixed(1)} KiB (after GC)`);
    await server.closeAll(sockets);
    await sleep(300);
  }
  const sorted = [...perSession].sort((a, b) => a - b);
  console.log(`heap per idle session, median of ${ROUNDS}: ${(sorted[Math.floor(sorted.length / 2)]! / 1024).toFixed(2)} KiB`);

  if (process.argv.includes('--snapshot')) {
    const dir = mkdtempSync(join(tmpdir(), 'vw-idle-heap-'));
    try {
      await server.snapshot(join(dir, 'before.heapsnapshot'));
      const sockets = await server.openIdle(N);
      await sleep(300);
      await server.snapshot(join(dir, 'after.heapsnapshot'));
      const groups = [...newObjects(join(dir, 'before.heapsnapshot'), join(dir, 'after.heapsnapshot'))].sort((a, b) => b[1].bytes - a[1].bytes);
      const total = groups.reduce((s, [, g]) => s + g.bytes, 0);
      console.log(`\nnew objects per idle session (snapshot diff, ${N} sessions): ${(total / N).toFixed(0)} bytes`);
      console.log('| bytes/session | objects/session | node type and name |\n|---|---|---|');
      for (const [key, g] of groups) {
        if (g.bytes / N < 16) continue;
        console.log(`| ${(g.bytes / N).toFixed(0)} | ${(g.count / N).toFixed(2)} | ${key} |`);
      }
      await server.closeAll(sockets);
    } finally {
      if (process.argv.includes('--keep')) console.log(`snapshots kept in ${dir}`);
      else rmSync(dir, { recursive: true, force: true });
    }
  }
} finally {
  await server.close();
}
