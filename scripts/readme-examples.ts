/**
 * The code of the README and docs/*.md is examples/*.ts, included verbatim: each ```ts block follows a marker
 * `<!-- example: examples/NAME.ts -->` and must equal that file, which the test suite
 * type-checks and runs (test/docs/examples.test.ts). A ```ts block without a marker is an error:
 * it would be a snippet nobody runs.
 *
 *   npx tsx scripts/readme-examples.ts           check; exit 1 naming each difference
 *   npx tsx scripts/readme-examples.ts --write   copy the examples into the README and docs/
 */
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const MARKER = /^<!-- example: (examples\/[\w.-]+\.ts) -->$/;
const FENCE_OPEN = /^```(\w*)\s*$/;

/** One ```ts block of the README and the example it names (if any). */
export interface ReadmeBlock {
  /** examples/NAME.ts, or null when the block has no marker. */
  readonly example: string | null;
  /** 1-based line of the opening fence. */
  readonly line: number;
  readonly code: string;
}

export interface ReadmeCheck {
  readonly blocks: readonly ReadmeBlock[];
  /** Human-readable problems; empty when the README and the examples agree. */
  readonly problems: readonly string[];
  /** The README with every marked block replaced by its example. */
  readonly updated: string;
}

/**
 * Compares the README's marked ```ts blocks with the files they name.
 * @param readFile - reads an example by its path relative to the repository root.
 */
export function checkReadme(readme: string, readFile: (path: string) => string, name = 'README.md'): ReadmeCheck {
  const lines = readme.split('\n');
  const out: string[] = [];
  const blocks: ReadmeBlock[] = [];
  const problems: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE_OPEN.exec(lines[i]!);
    if (open === null) {
      out.push(lines[i]!);
      continue;
    }
    const start = i;
    let end = i + 1;
    while (end < lines.length && lines[end]!.trim() !== '```') end++;
    if (end === lines.length) {
      problems.push(`${name}:${start + 1}: code block never closed`);
      out.push(...lines.slice(start));
      break;
    }
    const code = lines.slice(start + 1, end).join('\n') + '\n';
    const marker = start > 0 ? MARKER.exec(lines[start - 1]!.trim()) : null;
    const lang = open[1];
    if (lang !== 'ts' && lang !== 'typescript') {
      out.push(...lines.slice(start, end + 1));
      i = end;
      continue;
    }
    const example = marker?.[1] ?? null;
    blocks.push({ example, line: start + 1, code });
    if (example === null) {
      problems.push(`${name}:${start + 1}: a ts block without an <!-- example: examples/NAME.ts --> marker`);
      out.push(...lines.slice(start, end + 1));
    } else {
      let file: string;
      try {
        file = readFile(example);
      } catch {
        problems.push(`${name}:${start + 1}: ${example} does not exist`);
        out.push(...lines.slice(start, end + 1));
        i = end;
        continue;
      }
      if (file !== code) problems.push(`${name}:${start + 1}: the block differs from ${example} (npx tsx scripts/readme-examples.ts --write)`);
      out.push(lines[start]!, ...file.replace(/\n$/, '').split('\n'), lines[end]!);
    }
    i = end;
  }
  return { blocks, problems, updated: out.join('\n') };
}

const isMain = process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1];
if (isMain) {
  const root = new URL('../', import.meta.url);
  const names = ['README.md', ...readdirSync(new URL('docs/', root)).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  let failed = false;
  for (const name of names) {
    const path = new URL(name, root);
    const text = readFileSync(path, 'utf8');
    const result = checkReadme(text, (p) => readFileSync(new URL(p, root), 'utf8'), name);
    if (process.argv.includes('--write')) {
      if (result.updated !== text) writeFileSync(path, result.updated);
      const left = result.problems.filter((p) => !p.includes('differs from'));
      for (const p of left) console.error(p);
      failed ||= left.length > 0;
      console.log(`${name}: ${result.blocks.length} examples included${result.updated !== text ? ' (updated)' : ''}`);
      continue;
    }
    for (const p of result.problems) console.error(p);
    failed ||= result.problems.length > 0;
    if (result.problems.length === 0) console.log(`${name}: ${result.blocks.length} examples agree with examples/`);
  }
  process.exit(failed ? 1 : 0);
}
