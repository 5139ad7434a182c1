/**
 * The folders are the layers and imports flow one way (README "Architecture"):
 * util ← audio, text ← pipelines ← protocol ← sessions ← node, cli, and the outer Node layers
 * (server, engines, client, and livekit over client) above them. A relative import that points up or sideways fails here.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = resolve(new URL('../../src', import.meta.url).pathname);

/** Each layer and the layers it may import from (itself always allowed). */
const MAY_IMPORT: Record<string, readonly string[]> = {
  util: [],
  audio: ['util'],
  text: ['util'],
  pipelines: ['util', 'audio', 'text'],
  protocol: ['util', 'audio', 'text', 'pipelines'],
  sessions: ['util', 'audio', 'text', 'pipelines', 'protocol'],
  node: ['util', 'audio', 'text', 'pipelines', 'protocol', 'sessions', 'client', '.'],
  engines: ['util', 'audio', 'text', 'pipelines', 'protocol', 'sessions', 'node'],
  server: ['util', 'audio', 'text', 'pipelines', 'protocol', 'sessions', 'node', 'engines', '.'],
  client: ['util', 'audio', 'text', 'pipelines', 'protocol', 'sessions'],
  page: ['util', 'audio', 'text', 'pipelines', 'protocol', 'sessions', 'client'],
  // The LiveKit Agents plugin: an adapter over the SDK's client sessions (issue 33), above the client.
  livekit: ['util', 'audio', 'text', 'pipelines', 'protocol', 'sessions', 'client'],
  cli: ['util', 'audio', 'text', 'pipelines', 'protocol', 'sessions', 'node', 'engines', 'server', 'client', '.'],
  '.': ['util', 'audio', 'text', 'pipelines', 'protocol', 'sessions'],
};

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? walk(p) : p.endsWith('.ts') ? [p] : [];
  });
}

function layerOf(file: string): string {
  const rel = relative(SRC, file);
  return rel.includes('/') ? rel.split('/')[0]! : '.';
}

/** `file → import` for each relative import that points up or sideways. */
function violations(sources: ReadonlyArray<readonly [file: string, text: string]>): string[] {
  const bad: string[] = [];
  for (const [file, text] of sources) {
    const from = layerOf(file);
    for (const m of text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)) {
      const target = resolve(dirname(file), m[1]!);
      if (relative(SRC, target).startsWith('..')) continue; // package.json and the like
      const to = layerOf(target);
      if (to !== from && !(MAY_IMPORT[from] ?? []).includes(to)) bad.push(`${relative(SRC, file)} → ${m[1]}`);
    }
  }
  return bad;
}

describe('layers', () => {
  const files = walk(SRC);

  it('every source file sits in a known layer', () => {
    expect(files.map(layerOf).filter((l) => !(l in MAY_IMPORT))).toEqual([]);
  });

  it('relative imports only point down the layers', () => {
    expect(violations(files.map((f) => [f, readFileSync(f, 'utf8')] as const))).toEqual([]);
  });

  it('an upward import is reported', () => {
    const file = join(SRC, 'pipelines', 'x.ts');
    expect(violations([[file, "import { a } from '../protocol/parse.js';\nimport { b } from '../audio/wav.js';"]])).toEqual([
      'pipelines/x.ts → ../protocol/parse.js',
    ]);
  });
});
