/**
 * Every name the README documents as an export of `voicewire` or `voicewire/node` is one: the
 * import lines (`import { … } from 'voicewire/node'`), the names marked *node* (from
 * voicewire/node) and web (from voicewire), and any other API-looking name in backticks
 * (`createXxx`, `decodeXxx`, `OggOpusEncoder`, …: from either entry). Exports are read from the
 * source entries with the TypeScript compiler, so types (`SttEngine`) count too.
 */
import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { documentation } from '../helpers/docs.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
// The README and docs/*.md: the API names they document.
const readme = documentation();

function exportsOf(entries: Record<string, string>): Record<string, Set<string>> {
  const program = ts.createProgram(Object.values(entries), {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    skipLibCheck: true,
    noEmit: true,
    types: ['node'],
  });
  const checker = program.getTypeChecker();
  const out: Record<string, Set<string>> = {};
  for (const [name, file] of Object.entries(entries)) {
    const sf = program.getSourceFile(file);
    const symbol = sf && checker.getSymbolAtLocation(sf);
    if (!symbol) throw new Error(`cannot read the exports of ${file}`);
    out[name] = new Set(checker.getExportsOfModule(symbol).map((s) => s.getName()));
  }
  return out;
}

/** `create{Stt,Tts}ServerStream` → both names; `resample(x, …)` → `resample`. */
function identifiers(span: string): string[] {
  const m = /^([A-Za-z_$][\w$]*(?:\{[\w,]+\}[\w$]*)?)/.exec(span.trim());
  if (!m) return [];
  const brace = /\{([\w,]+)\}/.exec(m[1]!);
  return brace ? brace[1]!.split(',').map((alt) => m[1]!.replace(brace[0], alt)) : [m[1]!];
}

/** Backticked spans of a clause that starts at `from`, up to the first ; ( ) * or sentence end outside backticks. */
function clauseNames(text: string, from: number): string[] {
  const names: string[] = [];
  for (let i = from; i < text.length; i++) {
    const c = text[i]!;
    if (c === '`') {
      const end = text.indexOf('`', i + 1);
      names.push(...identifiers(text.slice(i + 1, end)));
      i = end;
    } else if (';()*'.includes(c) || (c === '.' && /\s/.test(text[i + 1] ?? ' '))) break;
  }
  return names;
}

const API_NAME = /^(?:(?:create|decode|encode|parse|serialize|validate|resample|init|read|format|throw|wav|float32|int16|ndjson|is|to|stt|tts)[A-Z0-9]\w*|resample|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+)$/;

function documented(text: string): { core: Set<string>; node: Set<string>; any: Set<string> } {
  const core = new Set<string>();
  const node = new Set<string>();
  const any = new Set<string>();
  for (const m of text.matchAll(/import\s+(?:type\s+)?\{([^}]*)\}\s*from\s*'(voicewire(?:\/node)?)'/g)) {
    const names = m[1]!.split(',').map((n) => n.trim().replace(/^type\s+/, '').split(/\s+as\s+/)[0]!).filter(Boolean);
    for (const n of names) (m[2] === 'voicewire' ? core : node).add(n);
  }
  const api = (n: string) => !(n in globalThis) && !n.includes('Xxx'); // `TransformStream`, `createXxxStream`
  for (const m of text.matchAll(/\*node\*:?/g)) for (const n of clauseNames(text, m.index + m[0].length)) if (api(n)) node.add(n);
  for (const m of text.matchAll(/\bweb:?\s(?=\s*`)/g)) for (const n of clauseNames(text, m.index + m[0].length)) if (api(n)) core.add(n);
  // Other names: only where the README describes the API (the benchmarks name peers' classes).
  const start = text.indexOf('## Architecture');
  const end = text.indexOf('## Benchmarks');
  for (const m of text.slice(Math.max(start, 0), end > start ? end : undefined).matchAll(/`([^`\n]+)`/g)) {
    for (const n of identifiers(m[1]!)) {
      if (API_NAME.test(n) && api(n) && !core.has(n) && !node.has(n)) any.add(n);
    }
  }
  return { core, node, any };
}

describe('README names are exports', () => {
  const exported = exportsOf({ core: `${root}src/index.ts`, node: `${root}src/node/index.ts`, engines: `${root}src/engines/index.ts` });
  /** The package's other entries (voicewire/engines, …): a name documented elsewhere in the README may come from any. */
  const anyEntry = (n: string) => Object.values(exported).some((set) => set.has(n));
  const names = documented(readme);

  it('finds the names to check (the extraction works)', () => {
    expect(names.node).toContain('createWavDecodeTransform');
    expect(names.node).toContain('decodeWithFfmpeg');
    expect(names.node).toContain('createSttServerTransform');
    expect(names.core).toContain('createWavDecoderStream');
    expect(names.core).toContain('OggOpusEncoder');
    expect(names.any).toContain('createAudioEncoder');
    expect(names.any).toContain('parseSttClientMessage');
    expect(names.node.size + names.core.size + names.any.size).toBeGreaterThan(60);
  });

  it('voicewire exports every name documented for it', () => {
    expect([...names.core].filter((n) => !exported.core!.has(n))).toEqual([]);
  });

  it('voicewire/node exports every name documented for it', () => {
    expect([...names.node].filter((n) => !exported.node!.has(n))).toEqual([]);
  });

  it('every other API name in backticks is exported by one of the entries', () => {
    expect([...names.any].filter((n) => !anyEntry(n))).toEqual([]);
  });

  it('a name the README documents but nothing exports fails the check', () => {
    const fake = documented('*node*: `createNoSuchTransform`; web: `createNoSuchStream`.');
    expect([...fake.node].filter((n) => !exported.node!.has(n))).toEqual(['createNoSuchTransform']);
    expect([...fake.core].filter((n) => !exported.core!.has(n))).toEqual(['createNoSuchStream']);
  });
});
