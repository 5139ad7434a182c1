/**
 * `json_config` validation: TTS advanced settings (docs/api.md §2.8, limits §8), voice
 * generation settings (§2.9) and STT settings (§4.4, protocol-notes.md "STT").
 *
 * `json_config` may arrive as an object or as a string holding a JSON object (§4.2 "string or
 * object", §4.4 "object or string"); both validate to the same object. Known keys are checked.
 * A TTS `json_config` key other than §2.8's four is refused (`extra_forbidden`: never accepted
 * and ignored, issue 21); voice generation and STT keep unknown keys here (§2.9 "only needed keys
 * should be sent"; the server's STT engines refuse them, {@link unsupportedSttConfigIssues}).
 * Numbers must be JSON numbers: a string `"0.5"` is a wrong type.
 *
 * Each check is a function of a {@link FieldReader} (`read…`), so the same code validates and,
 * run against a describing reader (describe.ts), gives the schema of the OpenAPI document.
 */
import { arrayArg, objectArg, stringArg } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';
import {
  FieldReader,
  PROTOCOL_LANGUAGES,
  readerArg,
  describeIssue,
  objectValue,
  type ProtocolLanguage,
  type ValidationIssue,
  type ValidationLoc,
} from './validate.js';

/** Validated TTS `json_config` (§2.8): only these four keys. */
export interface TtsJsonConfig {
  /** Speech speed: default 0.0; -4.0 to -0.1 faster; 0.1 to 4.0 slower. */
  padding_bonus?: number;
  /** 0 to 1.4, default 0.7; 0 is deterministic. */
  temp?: number;
  /** Similarity to the target voice, 1.0 to 4.0, default 2.0. */
  cfg_coef?: number;
  /**
   * A comma-delimited list of rewrite rule names and language aliases (protocol-notes.md "Rewrite
   * rules"): `"en"`, `"TimeEn,Date"`, `"en,fr"`. See {@link REWRITE_RULE_NAMES}, {@link REWRITE_RULE_ALIASES}.
   */
  rewrite_rules?: string;
}

/**
 * Validated voice generation `json_config` (§2.9). The API shows neither types nor ranges of
 * these keys: voicewire accepts any finite JSON number for each and checks nothing else.
 */
export interface VoiceGenerationJsonConfig {
  cfg_scale?: number;
  steps?: number;
  seed?: number;
  utmos_score?: number;
  [key: string]: unknown;
}

/**
 * Validated STT `json_config`. Keys seen in real clients (protocol-notes.md), with the ranges the
 * service's own client documents ({@link STT_CONFIG_LIMITS}): `language` (one of the five
 * languages), `delay_in_frames` (one of 7, 8, 10, 12, 14, 16, 20, 24, 36, 48), `temp` (0 to 1)
 * and `padding_bonus` (§8's range, as TTS).
 */
export interface SttJsonConfig {
  language?: ProtocolLanguage;
  /** The delay, in 80 ms frames, between audio and its text; the silence a flush pushes. */
  delay_in_frames?: number;
  /** 0 to 1, default 0: higher helps when no text is recognized. */
  temp?: number;
  /** §8's range: positive holds text back (more padding), negative lets it out sooner. */
  padding_bonus?: number;
  [key: string]: unknown;
}

/** The rewrite rules a TTS request may name (protocol-notes.md "Rewrite rules"). */
export const REWRITE_RULE_NAMES = [
  'TimeEn', 'TimeFr', 'TimeDe', 'Date', 'AlNum',
  'NumberEn', 'NumberFr', 'NumberDe', 'NumberEs', 'NumberPt',
  'EmailEn', 'EmailFr', 'EmailDe', 'EmailEs', 'EmailPt',
  'UrlEn', 'UrlFr', 'UrlDe', 'UrlEs', 'UrlPt',
  'PhoneEn', 'PhoneFr', 'PhoneDe', 'PhoneEs', 'PhonePt',
] as const;

/** One of {@link REWRITE_RULE_NAMES}. */
export type RewriteRuleName = (typeof REWRITE_RULE_NAMES)[number];

/** A language code stands for all the rules of that language (§2.8; Spanish and Portuguese have no time rule). */
export const REWRITE_RULE_ALIASES: Readonly<Record<ProtocolLanguage, readonly RewriteRuleName[]>> = Object.freeze({
  en: ['TimeEn', 'Date', 'AlNum', 'NumberEn', 'EmailEn', 'UrlEn', 'PhoneEn'],
  fr: ['TimeFr', 'Date', 'AlNum', 'NumberFr', 'EmailFr', 'UrlFr', 'PhoneFr'],
  de: ['TimeDe', 'Date', 'AlNum', 'NumberDe', 'EmailDe', 'UrlDe', 'PhoneDe'],
  es: ['Date', 'AlNum', 'NumberEs', 'EmailEs', 'UrlEs', 'PhoneEs'],
  pt: ['Date', 'AlNum', 'NumberPt', 'EmailPt', 'UrlPt', 'PhonePt'],
});

/**
 * The rules a `rewrite_rules` value enables, aliases expanded, in the order named, each once
 * (`"TimeEn,Date"`, `"en,fr"`; names as written in the list, spaces around commas allowed; empty
 * items are skipped). Returns the names not known as `unknown`.
 */
export function parseRewriteRules(value: string): { rules: RewriteRuleName[]; unknown: string[] } {
  stringArg(value, 'parseRewriteRules: value');
  const rules: RewriteRuleName[] = [];
  const unknown: string[] = [];
  for (const raw of value.split(',')) {
    const item = raw.trim();
    if (item === '') continue;
    const expanded = (PROTOCOL_LANGUAGES as readonly string[]).includes(item)
      ? REWRITE_RULE_ALIASES[item as ProtocolLanguage]
      : (REWRITE_RULE_NAMES as readonly string[]).includes(item)
        ? [item as RewriteRuleName]
        : undefined;
    if (expanded === undefined) unknown.push(item);
    else for (const r of expanded) if (!rules.includes(r)) rules.push(r);
  }
  return { rules, unknown };
}

/** Bounds of §2.8 / §8, exported for servers and UIs. */
export const TTS_CONFIG_LIMITS = Object.freeze({
  paddingBonus: Object.freeze({ min: -4, max: 4, deadZone: 0.1, default: 0 }),
  temp: Object.freeze({ min: 0, max: 1.4, default: 0.7 }),
  cfgCoef: Object.freeze({ min: 1, max: 4, default: 2 }),
});

/**
 * Bounds of the STT `json_config` keys, as the service's Python client documents them
 * (protocol-notes.md "STT"): `delay_in_frames` one of {@link STT_DELAYS_IN_FRAMES}, `temp` 0 to 1
 * ("up to 1 … helpful if no text is recognized"), `padding_bonus` §8's range (−4 to 4, outside
 * ±0.1 except 0). No default delay here: an engine's own delay is the default (`ready` says it).
 */
export const STT_CONFIG_LIMITS = Object.freeze({
  delayInFrames: Object.freeze([7, 8, 10, 12, 14, 16, 20, 24, 36, 48] as const),
  temp: Object.freeze({ min: 0, max: 1, default: 0 }),
  paddingBonus: TTS_CONFIG_LIMITS.paddingBonus,
});

/** The `delay_in_frames` values an STT `json_config` may ask for (the service's client's list). */
export const STT_DELAYS_IN_FRAMES: readonly number[] = STT_CONFIG_LIMITS.delayInFrames;

/** Reads `padding_bonus` with §8's range, −4 to 4 outside the dead zone ±0.1 except 0 (TTS and STT alike). */
function readPaddingBonus(r: FieldReader, description: string): number | undefined {
  const L = TTS_CONFIG_LIMITS.paddingBonus;
  const padding = r.number('padding_bonus', { ge: L.min, le: L.max, description });
  // §2.8/§8: -4.0 to -0.1 or 0.1 to 4.0, or exactly the default 0.0.
  const deadZone = 'padding_bonus must be 0.0 or have an absolute value between 0.1 and 4.0';
  r.refine('padding_bonus', padding, (p) => (p !== 0 && Math.abs(p) < L.deadZone ? deadZone : undefined), deadZone);
  return padding;
}

/**
 * Reads `json_config` as an object: a string is parsed as JSON (depth-limited: the message's own
 * depth check came before it was parsed). Records `json_invalid` or `dict_type` issues at `loc`
 * and returns `undefined` when it is not an object.
 */
function configObject(input: unknown, loc: ValidationLoc, issues: ValidationIssue[]): Record<string, unknown> | undefined {
  return objectValue(input, loc, issues, true);
}

/** Runs `read` over a `json_config` (object or JSON string) at `loc`; `undefined` when it has issues. */
function checkWith<T>(read: (r: FieldReader) => T, input: unknown, loc: ValidationLoc, issues: ValidationIssue[]): T | undefined {
  const obj = configObject(input, loc, issues);
  if (obj === undefined) return undefined;
  const before = issues.length;
  const out = read(new FieldReader(obj, loc, 'strict', issues));
  return issues.length === before ? out : undefined;
}

/** Kept keys of a config whose unknown keys are kept: the object itself (a shallow copy). */
const copy = <T>(r: FieldReader): T => ({ ...r.obj }) as T;

/**
 * Reads a TTS `json_config` (§2.8, limits §8): `padding_bonus` in [-4, -0.1] ∪ {0} ∪ [0.1, 4],
 * `temp` in [0, 1.4], `cfg_coef` in [1, 4], `rewrite_rules` a comma-delimited list of rule names
 * and language aliases; any other key is refused.
 */
export function readTtsJsonConfig(r: FieldReader): TtsJsonConfig {
  readerArg(r, 'readTtsJsonConfig: r');
  const L = TTS_CONFIG_LIMITS;
  const out: TtsJsonConfig = {};
  const padding = readPaddingBonus(r, 'Speech speed (§2.8): negative faster, positive slower; default 0.');
  const temp = r.number('temp', { ge: L.temp.min, le: L.temp.max, description: `Sampling temperature, default ${L.temp.default}; 0 is deterministic.` });
  const cfg = r.number('cfg_coef', { ge: L.cfgCoef.min, le: L.cfgCoef.max, description: `Similarity to the target voice, default ${L.cfgCoef.default}.` });
  const rewrite = r.string('rewrite_rules', { description: `A comma-delimited list of rewrite rules (${REWRITE_RULE_NAMES.join(', ')}) and languages (${PROTOCOL_LANGUAGES.join(', ')}: all of that language's rules), e.g. "TimeEn,Date" or "en,fr".` });
  r.refine('rewrite_rules', rewrite, rewriteRulesError, 'rewrite_rules must name at least one rule, and only known rules and languages', { pattern: REWRITE_RULES_PATTERN });
  r.closed();
  if (padding !== undefined) out.padding_bonus = padding;
  if (temp !== undefined) out.temp = temp;
  if (cfg !== undefined) out.cfg_coef = cfg;
  if (rewrite !== undefined) out.rewrite_rules = rewrite;
  return out;
}

/** The `value_error` of a `rewrite_rules` value (its wording is §2.7's 422 body), or `undefined` when it is good. */
function rewriteRulesError(value: string): string | undefined {
  const { rules, unknown } = parseRewriteRules(value);
  if (unknown.length === 0 && rules.length > 0) return undefined;
  const what = unknown.length > 0 ? `unknown rewrite rule ${unknown.map((u) => `'${u}'`).join(', ')}` : 'no rewrite rule named';
  return `${what}: a comma-delimited list of ${PROTOCOL_LANGUAGES.join(', ')} or ${REWRITE_RULE_NAMES.join(', ')}`;
}

/** The values {@link parseRewriteRules} takes with no unknown name and at least one rule, as a JSON Schema pattern. */
const REWRITE_RULES_PATTERN = (() => {
  const item = `(?:${[...PROTOCOL_LANGUAGES, ...REWRITE_RULE_NAMES].join('|')})`;
  const sp = '\\s*';
  return `^(?:${sp},)*${sp}${item}${sp}(?:,(?:${sp}${item})?${sp})*$`;
})();

/**
 * Collects the issues of a TTS `json_config` at `loc` (for REST: `["body", "json_config"]`).
 * Returns the validated copy, or `undefined` when there are issues.
 */
export function checkTtsJsonConfig(input: unknown, loc: ValidationLoc, issues: ValidationIssue[]): TtsJsonConfig | undefined {
  checkIssueArgs(loc, issues, 'checkTtsJsonConfig');
  return checkWith(readTtsJsonConfig, input, loc, issues);
}

function checkIssueArgs(loc: ValidationLoc, issues: ValidationIssue[], what: string): void {
  arrayArg(loc, `${what}: loc`);
  arrayArg(issues, `${what}: issues`);
}

/** Reads a voice generation `json_config` (§2.9): each known key a finite number; unknown keys kept. */
export function readVoiceGenerationJsonConfig(r: FieldReader): VoiceGenerationJsonConfig {
  readerArg(r, 'readVoiceGenerationJsonConfig: r');
  for (const key of ['cfg_scale', 'steps', 'seed', 'utmos_score']) r.number(key);
  return copy<VoiceGenerationJsonConfig>(r);
}

/** Collects the issues of a voice generation `json_config` (§2.9) at `loc`. */
export function checkVoiceGenerationJsonConfig(input: unknown, loc: ValidationLoc, issues: ValidationIssue[]): VoiceGenerationJsonConfig | undefined {
  checkIssueArgs(loc, issues, 'checkVoiceGenerationJsonConfig');
  return checkWith(readVoiceGenerationJsonConfig, input, loc, issues);
}

/** Reads an STT `delay_in_frames`: one of {@link STT_DELAYS_IN_FRAMES} (STT and s2s alike). */
export function readSttDelayInFrames(r: FieldReader): number | undefined {
  readerArg(r, 'readSttDelayInFrames: r');
  const L = STT_CONFIG_LIMITS.delayInFrames;
  const delay = r.integer('delay_in_frames', { description: "Delay between audio and its text, in 80 ms frames (ready's delay_in_frames); the silence a flush or the end pushes. Default: the model's own." });
  const allowed = `delay_in_frames must be one of ${L.join(', ')}`;
  r.refine('delay_in_frames', delay, (d) => ((L as readonly number[]).includes(d) ? undefined : allowed), allowed, { type: 'integer', enum: [...L] });
  return delay;
}

/**
 * Reads an STT `json_config` (protocol-notes.md "STT"): each documented key in its range
 * ({@link STT_CONFIG_LIMITS}); unknown keys kept (a server refuses them, {@link readSttEngineSupport}).
 */
export function readSttJsonConfig(r: FieldReader): SttJsonConfig {
  readerArg(r, 'readSttJsonConfig: r');
  const L = STT_CONFIG_LIMITS;
  r.literal('language', PROTOCOL_LANGUAGES, { description: 'The language spoken: it picks the model.' });
  readSttDelayInFrames(r);
  r.number('temp', { ge: L.temp.min, le: L.temp.max, description: `0 to 1, default ${L.temp.default}: higher helps when no text is recognized (docs/engines.md says what each engine does with it).` });
  readPaddingBonus(r, 'Positive holds text back, negative lets it out sooner; default 0 (docs/engines.md says what each engine does with it).');
  return copy<SttJsonConfig>(r);
}

/** Collects the issues of an STT `json_config` at `loc`. */
export function checkSttJsonConfig(input: unknown, loc: ValidationLoc, issues: ValidationIssue[]): SttJsonConfig | undefined {
  checkIssueArgs(loc, issues, 'checkSttJsonConfig');
  return checkWith(readSttJsonConfig, input, loc, issues);
}

/**
 * The server's pass of an STT `json_config`: {@link readSttJsonConfig}'s keys and ranges, and no
 * other key (`extra_forbidden`: no key is accepted and ignored, issue 21). Every documented value
 * passes: voicewire's STT engines honour `language`, the runner keeps `delay_in_frames`, and each
 * engine maps `temp` and `padding_bonus` onto its nearest knob (docs/engines.md).
 */
export function readSttEngineSupport(r: FieldReader): void {
  readerArg(r, 'readSttEngineSupport: r');
  readSttJsonConfig(r);
  r.closed();
}

/**
 * The issues of an STT `json_config` a server refuses ({@link readSttEngineSupport}): a key
 * outside its range, or a key no client documents. Returns the issues at `loc`, in the config's
 * key order, none when the config is good.
 */
export function unsupportedSttConfigIssues(config: SttJsonConfig, loc: ValidationLoc): ValidationIssue[] {
  objectArg(config, 'unsupportedSttConfigIssues: config');
  checkIssueArgs(loc, [], 'unsupportedSttConfigIssues');
  const issues: ValidationIssue[] = [];
  readSttEngineSupport(new FieldReader(config, loc, 'strict', issues));
  // In the config's key order, as they were before this pass was a reader.
  const order = Object.keys(config);
  const at = (i: ValidationIssue): number => order.indexOf(String(i.loc[loc.length]));
  return issues.map((issue, n) => ({ issue, n })).sort((a, b) => at(a.issue) - at(b.issue) || a.n - b.n).map((x) => x.issue);
}

function throwing<T>(check: (input: unknown, loc: ValidationLoc, issues: ValidationIssue[]) => T | undefined, input: unknown): T {
  const issues: ValidationIssue[] = [];
  const value = check(input, ['json_config'], issues);
  if (value === undefined || issues.length > 0) {
    throw new VoicewireError('PROTOCOL_INVALID_CONFIG', `Invalid json_config: ${issues.map(describeIssue).join('; ')}`, {
      details: { issues },
    });
  }
  return value;
}

/**
 * Validates a TTS `json_config` (object or JSON string) against §2.8: `padding_bonus` in
 * [-4, -0.1] ∪ {0} ∪ [0.1, 4], `temp` in [0, 1.4], `cfg_coef` in [1, 4], `rewrite_rules` a
 * comma-delimited list of rule names and language aliases ({@link parseRewriteRules}). Any other
 * key is refused (`extra_forbidden`).
 *
 * @returns the four keys given.
 * @throws VoicewireError `PROTOCOL_INVALID_CONFIG` (close code 1008); `details.issues` holds the
 *   pydantic-style issues with `loc` starting at `"json_config"`.
 */
export function validateTtsJsonConfig(input: unknown): TtsJsonConfig {
  return throwing(checkTtsJsonConfig, input);
}

/** Validates a voice generation `json_config` (§2.9): each known key is a finite number. Throws like {@link validateTtsJsonConfig}. */
export function validateVoiceGenerationJsonConfig(input: unknown): VoiceGenerationJsonConfig {
  return throwing(checkVoiceGenerationJsonConfig, input);
}

/**
 * Validates an STT `json_config`: `language` one of `en fr de es pt`, `delay_in_frames` one of
 * 7, 8, 10, 12, 14, 16, 20, 24, 36, 48, `temp` 0 to 1, `padding_bonus` in [-4, -0.1] ∪ {0} ∪
 * [0.1, 4]; unknown keys kept. Throws like {@link validateTtsJsonConfig}.
 */
export function validateSttJsonConfig(input: unknown): SttJsonConfig {
  return throwing(checkSttJsonConfig, input);
}
