/**
 * Pronunciation dictionaries (§2.4, §4.11). GET /pronunciations/ is an edge route: query `limit`
 * (0–1000, default 100; 0 gives no dictionaries, only `total`) and `offset` (≥ 0). Without
 * --core-url this process also serves the core routes that create and fill them (voicewire's
 * shapes; the API does not show them):
 *
 * - `POST /pronunciations/` `{name, language, description?, rules?}` → the dictionary (§2.4);
 * - `POST /pronunciations/{uid}/rules` `{rules: [{word, replacement, kind?}]}` → the dictionary,
 *   rules appended (a rule for a word already there replaces it);
 * - `GET /pronunciations/{uid}`, `DELETE /pronunciations/{uid}`.
 *
 * A rule is `{word, replacement, kind}` with kind `respelling` (default) or `phonemes`.
 */
import { randomUUID } from 'node:crypto';
import { VoicewireError } from '../../util/errors.js';
import { parsePronunciationsListQuery } from '../../protocol/rest.js';
import { PROTOCOL_LANGUAGES, isRecord, FieldReader, makeIssue, type ValidationIssue } from '../../protocol/validate.js';
import { readJson, sendJson } from '../http.js';
import { validate } from '../validation.js';
import { assertStorable } from '../storable.js';
import type { RouteModule } from '../context.js';
import type { DictionaryRecord, PronunciationRule } from '../store/store.js';

/** A dictionary as the API shows it (§2.4). */
export function dictionaryResource(d: DictionaryRecord): Record<string, unknown> {
  return { name: d.name, language: d.language, uid: d.uid, org_uid: d.orgId, created_at: d.createdAt, description: d.description, rules: d.rules };
}

/** Reads `rules` (an array of `{word, replacement, kind?}`) into `issues`. */
export function readRules(r: FieldReader, key = 'rules'): PronunciationRule[] | undefined {
  const raw = r.obj[key];
  if (raw === undefined || raw === null) return undefined;
  if (!Array.isArray(raw)) {
    r.fail(key, 'list_type', raw);
    return undefined;
  }
  const out: PronunciationRule[] = [];
  raw.forEach((item, i) => {
    if (!isRecord(item)) {
      r.issues.push(makeIssue([...r.loc, key, i], 'model_attributes_type', item));
      return;
    }
    const ir = new FieldReader(item, [...r.loc, key, i], 'lax', r.issues as ValidationIssue[]);
    const word = ir.string('word', { required: true, minLength: 1 });
    const replacement = ir.string('replacement', { required: true, minLength: 1 });
    const kind = ir.literal('kind', ['respelling', 'phonemes'] as const);
    if (word !== undefined && replacement !== undefined) out.push({ word, replacement, kind: kind ?? 'respelling' });
  });
  return out;
}

/** Merges rules: a later rule for the same word (case-insensitive) replaces the earlier one. */
export function mergeRules(existing: readonly PronunciationRule[], added: readonly PronunciationRule[]): PronunciationRule[] {
  const byWord = new Map<string, PronunciationRule>();
  for (const r of [...existing, ...added]) byWord.set(r.word.toLowerCase(), r);
  return [...byWord.values()];
}

const notFound = (): VoicewireError => new VoicewireError('NOT_FOUND', 'pronunciation dictionary not found');

export const pronunciationRoutes: RouteModule = {
  http: [
    {
      method: 'GET',
      path: '/pronunciations',
      handle: async ({ ctx, url }, req, res) => {
        const { org } = await ctx.auth(req);
        const q = parsePronunciationsListQuery(url.searchParams);
        const page = await ctx.store.listDictionaries(org.id, { limit: q.limit ?? 100, offset: q.offset });
        sendJson(res, 200, { dictionaries: page.items.map(dictionaryResource), total: page.total });
      },
    },
  ],
};

export const corePronunciationRoutes: RouteModule = {
  http: [
    {
      method: 'POST',
      path: '/pronunciations',
      handle: async ({ ctx }, req, res) => {
        const { org } = await ctx.auth(req);
        const body = validate(await readJson(req, ctx.config.limits.maxJsonBytes, ctx.config.limits.maxJsonDepth), 'body', (r) => ({
          name: r.string('name', { required: true, minLength: 1 }),
          language: r.literal('language', PROTOCOL_LANGUAGES, { required: true }),
          description: r.string('description'),
          rules: readRules(r),
        }));
        assertStorable({ ...body });
        const d: DictionaryRecord = {
          uid: randomUUID(),
          orgId: org.id,
          name: body.name!,
          language: body.language!,
          description: body.description ?? '',
          rules: mergeRules([], body.rules ?? []),
          createdAt: new Date().toISOString(),
        };
        await ctx.store.putDictionary(d);
        sendJson(res, 200, dictionaryResource(d));
      },
    },
    {
      method: 'POST',
      path: '/pronunciations/:uid/rules',
      handle: async ({ ctx, params }, req, res) => {
        const { org } = await ctx.auth(req);
        const body = validate(await readJson(req, ctx.config.limits.maxJsonBytes, ctx.config.limits.maxJsonDepth), 'body', (r) => {
          const rules = readRules(r);
          if (rules === undefined && r.obj['rules'] === undefined) r.issues.push(makeIssue(['body', 'rules'], 'missing', undefined));
          return { rules: rules ?? [] };
        });
        assertStorable({ ...body });
        const d = await ctx.store.getDictionary(org.id, params['uid']!);
        if (d === undefined) throw notFound();
        const next = { ...d, rules: mergeRules(d.rules, body.rules) };
        await ctx.store.putDictionary(next);
        sendJson(res, 200, dictionaryResource(next));
      },
    },
    {
      method: 'GET',
      path: '/pronunciations/:uid',
      handle: async ({ ctx, params }, req, res) => {
        const { org } = await ctx.auth(req);
        const d = await ctx.store.getDictionary(org.id, params['uid']!);
        if (d === undefined) throw notFound();
        sendJson(res, 200, dictionaryResource(d));
      },
    },
    {
      method: 'DELETE',
      path: '/pronunciations/:uid',
      handle: async ({ ctx, params }, req, res) => {
        const { org } = await ctx.auth(req);
        if (!(await ctx.store.deleteDictionary(org.id, params['uid']!))) throw notFound();
        sendJson(res, 200, { uid: params['uid'], deleted: true });
      },
    },
  ],
};
