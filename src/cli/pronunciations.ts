/**
 * `voicewire pronunciations import FILE [--org NAME] [--name NAME] [--language LANG] [--data DIR | --store URL]`
 *
 * FILE is JSON (`{name, language, description?, rules: [{word, replacement, kind?}]}`, or a bare
 * array of rules), or text with one rule per line, `word<TAB>replacement` or `word = replacement`
 * (`#` starts a comment). Creates the dictionary in the organization (default `default`), or adds
 * to the one of that name, and prints its uid (the `pronunciation_id` of TTS setup) on stdout.
 */
import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { VoicewireError } from '../util/errors.js';
import { FieldReader, PROTOCOL_LANGUAGES, type ValidationIssue, describeIssue } from '../protocol/validate.js';
import { mergeRules, readRules } from '../server/routes/pronunciations.js';
import type { PronunciationRule } from '../server/store/store.js';
import { openCliStore } from './serve.js';
import type { CliSubcommand } from './main.js';

const USAGE = 'usage: voicewire pronunciations import FILE [--org NAME] [--name NAME] [--language en|fr|de|es|pt] [--data DIR | --store URL]';

/** Reads a dictionary file (see the module comment). */
export function parseDictionaryFile(text: string): { name?: string; language?: string; description?: string; rules: PronunciationRule[] } {
  const trimmed = text.trim();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    let json: unknown;
    try {
      json = JSON.parse(trimmed);
    } catch (err) {
      throw new VoicewireError('CLI_USAGE', `not valid JSON: ${(err as Error).message}`);
    }
    const obj = Array.isArray(json) ? { rules: json } : (json as Record<string, unknown>);
    const issues: ValidationIssue[] = [];
    const r = new FieldReader(obj, [], 'lax', issues);
    const rules = readRules(r) ?? [];
    const out: { name?: string; language?: string; description?: string; rules: PronunciationRule[] } = { rules };
    const name = r.string('name');
    const language = r.literal('language', PROTOCOL_LANGUAGES);
    const description = r.string('description');
    if (issues.length > 0) throw new VoicewireError('CLI_USAGE', `bad dictionary: ${issues.map(describeIssue).join('; ')}`);
    if (name !== undefined) out.name = name;
    if (language !== undefined) out.language = language;
    if (description !== undefined) out.description = description;
    return out;
  }
  const rules: PronunciationRule[] = [];
  text.split(/\r?\n/).forEach((line, i) => {
    const l = line.replace(/#.*$/, '').trim();
    if (l === '') return;
    const m = /^(.+?)(?:\t+|\s*=\s*)(.+)$/.exec(l);
    if (!m) throw new VoicewireError('CLI_USAGE', `line ${i + 1}: expected "word<TAB>replacement" or "word = replacement"`);
    rules.push({ word: m[1]!.trim(), replacement: m[2]!.trim(), kind: 'respelling' });
  });
  return { rules };
}

export const pronunciationsCommand: CliSubcommand = {
  async run(argv) {
    let parsed;
    try {
      parsed = parseArgs({
        args: [...argv],
        allowPositionals: true,
        options: { org: { type: 'string' }, name: { type: 'string' }, language: { type: 'string' }, data: { type: 'string' }, store: { type: 'string' } },
      });
    } catch (err) {
      throw new VoicewireError('CLI_USAGE', `${(err as Error).message}\n${USAGE}`);
    }
    const { values, positionals } = parsed;
    if (positionals[0] !== 'import' || positionals.length !== 2) throw new VoicewireError('CLI_USAGE', USAGE);
    let text: string;
    try {
      text = readFileSync(positionals[1]!, 'utf8');
    } catch (err) {
      throw new VoicewireError('IO_ERROR', `cannot read ${positionals[1]}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    const file = parseDictionaryFile(text);
    const language = values.language ?? file.language ?? 'en';
    if (!(PROTOCOL_LANGUAGES as readonly string[]).includes(language)) throw new VoicewireError('CLI_USAGE', `--language must be one of ${PROTOCOL_LANGUAGES.join(', ')}`);
    const name = values.name ?? file.name ?? positionals[1]!.replace(/^.*[\\/]/, '').replace(/\.[^.]*$/, '');
    const store = await openCliStore(values);
    try {
      const org = await store.getOrganizationByName(values.org ?? 'default');
      if (org === undefined) throw new VoicewireError('CLI_USAGE', `no organization ${values.org ?? 'default'} (voicewire keys create --org NAME makes one)`);
      const all = await store.listDictionaries(org.id, { limit: 1_000_000, offset: 0 });
      const existing = all.items.find((d) => d.name === name);
      const dict = existing
        ? { ...existing, rules: mergeRules(existing.rules, file.rules) }
        : { uid: randomUUID(), orgId: org.id, name, language, description: file.description ?? '', rules: mergeRules([], file.rules), createdAt: new Date().toISOString() };
      await store.putDictionary(dict);
      process.stdout.write(`${dict.uid}\n`);
      process.stderr.write(`${existing ? 'updated' : 'created'} dictionary "${name}" with ${dict.rules.length} rules\n`);
      return 0;
    } finally {
      await store.close();
    }
  },
};

export default pronunciationsCommand;
