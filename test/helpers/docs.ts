/**
 * The documentation the tests check: the README (the front door) and docs/*.md (the references,
 * shipped in the package). In one text, the README first, then the references in reading order.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const ORDER = ['api.md', 'architecture.md', 'library.md', 'engines.md', 'benchmarks.md', 'policies.md', 'server.md', 'operations.md', 'cli.md', 'errors.md'];

/** Paths (relative to the repository) of the README and every docs/*.md, in reading order. */
export function docFiles(): string[] {
  const docs = readdirSync(`${root}docs`).filter((f) => f.endsWith('.md'));
  const rank = (f: string) => (ORDER.includes(f) ? ORDER.indexOf(f) : ORDER.length);
  return ['README.md', ...docs.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b)).map((f) => `docs/${f}`)];
}

/** The text of `path` (relative to the repository). */
export function readDoc(path: string): string {
  return readFileSync(`${root}${path}`, 'utf8');
}

/** The README and every docs/*.md, joined. */
export function documentation(): string {
  return docFiles().map(readDoc).join('\n');
}
