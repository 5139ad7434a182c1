/**
 * `json_config` validation: TTS advanced settings (docs/api.md §2.8, limits §8), voice
 * generation settings (§2.9) and STT settings (§4.4, protocol-notes.md "STT").
 *
 * `json_config` may arrive as an object or as a string holding a JSON object (§4.2 "string or
 * object", §4.4 "object or string"); both validate to the same object. Known keys are checked;
 * unknown keys are kept as they are (the model may know them; §2.9 "only needed keys should be
 * sent"). Numbers must be JSON numbers: a string `"0.5"` is a wrong type.
 */
import { arrayArg, objectArg, stringArg } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';
import { MAX_JSON_DEPTH, jsonDepthExceededAt, jsonTooDeepReason } from './json-depth.js';
import {
  FieldReader,
  PROTOCOL_LANGUAGES,
  describeIssue,
  isRecord,
  makeIssue,
  type ProtocolLanguage,
  type ValidationIssue,
  type ValidationLoc,
} from './validate.js';

/** Validated TTS `json_config` (§2.8). Unknown keys are kept. */
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
  [key: string]: unknown;
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
 * Validated STT `json_config`. Keys seen in real clients (protocol-notes.md): `language` (one of
 * the five languages), `delay_in_frames` (an integer ≥ 0), `temp` (a number ≥ 0) and
 * `padding_bonus` (any finite number; its STT range is not documented).
 */
export interface SttJsonConfig {
  language?: ProtocolLanguage;
  delay_in_frames?: number;
  temp?: number;
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
 * Reads `json_config` as an object: a string is parsed as JSON. Records `json_invalid` or
 * `dict_type` issues at `loc` and returns `undefined` when it is not an object.
 */
function configObject(input: unknown, loc: ValidationLoc, issues: ValidationIssue[]): Record<string, unknown> | undefined {
  let value = input;
  if (typeof input === 'string') {
    // A string is parsed here, after the message's own depth check: it gets its own.
    if (jsonDepthExceededAt(input, MAX_JSON_DEPTH) >= 0) {
      issues.push(makeIssue(loc, 'json_invalid', input, { error: jsonTooDeepReason(MAX_JSON_DEPTH) }));
      return undefined;
    }
    try {
      value = JSON.parse(input);
    } catch (err) {
      issues.push(makeIssue(loc, 'json_invalid', input, { error: err instanceof Error ? err.message : String(err) }));
      return undefined;
    }
  }
  if (!isRecord(value)) {
    issues.push(makeIssue(loc, 'dict_type', input));
    return undefined;
  }
  return value;
}

/**
 * Collects the issues of a TTS `json_config` at `loc` (for REST: `["body", "json_config"]`).
 * Returns the validated copy, or `undefined` when there are issues.
 */
export function checkTtsJsonConfig(input: unknown, loc: ValidationLoc, issues: ValidationIssue[]): TtsJsonConfig | undefined {
  checkIssueArgs(loc, issues, 'checkTtsJsonConfig');
  const obj = configObject(input, loc, issues);
  if (obj === undefined) return undefined;
  const before = issues.length;
  const r = new FieldReader(obj, loc, 'strict', issues);
  const L = TTS_CONFIG_LIMITS;
  const padding = r.number('padding_bonus', { ge: L.paddingBonus.min, le: L.paddingBonus.max });
  // §2.8/§8: -4.0 to -0.1 or 0.1 to 4.0, or exactly the default 0.0.
  if (padding !== undefined && padding !== 0 && Math.abs(padding) < L.paddingBonus.deadZone) {
    r.fail('padding_bonus', 'value_error', padding, { error: 'padding_bonus must be 0.0 or have an absolute value between 0.1 and 4.0' });
  }
  r.number('temp', { ge: L.temp.min, le: L.temp.max });
  r.number('cfg_coef', { ge: L.cfgCoef.min, le: L.cfgCoef.max });
  const rewrite = r.string('rewrite_rules');
  if (rewrite !== undefined) {
    const { rules, unknown } = parseRewriteRules(rewrite);
    if (unknown.length > 0 || rules.length === 0) {
      const what = unknown.length > 0 ? `unknown rewrite rule ${unknown.map((u) => `'${u}'`).join(', ')}` : 'no rewrite rule named';
      r.fail('rewrite_rules', 'value_error', rewrite, { error: `${what}: a comma-delimited list of ${PROTOCOL_LANGUAGES.join(', ')} or ${REWRITE_RULE_NAMES.join(', ')}` });
    }
  }
  return issues.length === before ? ({ ...obj } as TtsJsonConfig) : undefined;
}

function checkIssueArgs(loc: ValidationLoc, issues: ValidationIssue[], what: string): void {
  arrayArg(loc, `${what}: loc`);
  arrayArg(issues, `${what}: issues`);
}

/** Collects the issues of a voice generation `json_config` (§2.9) at `loc`. */
export function checkVoiceGenerationJsonConfig(input: unknown, loc: ValidationLoc, issues: ValidationIssue[]): VoiceGenerationJsonConfig | undefined {
  checkIssueArgs(loc, issues, 'checkVoiceGenerationJsonConfig');
  const obj = configObject(input, loc, issues);
  if (obj === undefined) return undefined;
  const before = issues.length;
  const r = new FieldReader(obj, loc, 'strict', issues);
  for (const key of ['cfg_scale', 'steps', 'seed', 'utmos_score']) r.number(key);
  return issues.length === before ? ({ ...obj } as VoiceGenerationJsonConfig) : undefined;
}

/** Collects the issues of an STT `json_config` at `loc`. */
export function checkSttJsonConfig(input: unknown, loc: ValidationLoc, issues: ValidationIssue[]): SttJsonConfig | undefined {
  checkIssueArgs(loc, issues, 'checkSttJsonConfig');
  const obj = configObject(input, loc, issues);
  if (obj === undefined) return undefined;
  const before = issues.length;
  const r = new FieldReader(obj, loc, 'strict', issues);
  r.literal('language', PROTOCOL_LANGUAGES);
  r.integer('delay_in_frames', { ge: 0 });
  r.number('temp', { ge: 0 });
  r.number('padding_bonus');
  return issues.length === before ? ({ ...obj } as SttJsonConfig) : undefined;
}

/**
 * What voicewire's STT engines (tone, pocketsphinx) do with each STT `json_config` key, so that no
 * key is accepted and ignored (issue 21): `language` is honoured (it picks the model);
 * `delay_in_frames` is the model's own delay and cannot change, so only that value is accepted
 * (`modelDelay`; unchecked while it is not known); `temp` and `padding_bonus` tune a sampling
 * decoder these engines do not have (they decode greedily, which is `temp` 0), so only 0 is
 * accepted; any other key is refused (`extra_forbidden`). Returns the issues at `loc`, none when
 * the engines honour the whole config.
 */
export function unsupportedSttConfigIssues(config: SttJsonConfig, loc: ValidationLoc, modelDelay?: number): ValidationIssue[] {
  objectArg(config, 'unsupportedSttConfigIssues: config');
  checkIssueArgs(loc, [], 'unsupportedSttConfigIssues');
  const issues: ValidationIssue[] = [];
  for (const [key, value] of Object.entries(config)) {
    if (value === null || value === undefined || key === 'language') continue;
    const at = [...loc, key];
    if (key === 'delay_in_frames') {
      if (modelDelay !== undefined && value !== modelDelay) issues.push(makeIssue(at, 'value_error', value, { error: `delay_in_frames is the model's own delay, ${modelDelay} frames, and cannot be changed` }));
    } else if (key === 'temp' || key === 'padding_bonus') {
      if (value !== 0) issues.push(makeIssue(at, 'value_error', value, { error: `${key} tunes a sampling decoder; this server's STT engines decode greedily, so only 0 is accepted` }));
    } else {
      issues.push(makeIssue(at, 'extra_forbidden', value));
    }
  }
  return issues;
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
 * comma-delimited list of rule names and language aliases ({@link parseRewriteRules}). Unknown keys are kept.
 *
 * @returns a shallow copy of the object.
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
 * Validates an STT `json_config`: `language` one of `en fr de es pt`, `delay_in_frames` an integer
 * ≥ 0, `temp` a number ≥ 0, `padding_bonus` a finite number. Throws like {@link validateTtsJsonConfig}.
 */
export function validateSttJsonConfig(input: unknown): SttJsonConfig {
  return throwing(checkSttJsonConfig, input);
}
