/**
 * The validation vocabulary shared by WebSocket message parsing, `json_config` and REST bodies:
 * issues shaped like the API's HTTP 422 body (docs/api.md §2.7), with pydantic-style `type`
 * values and messages (the service is a FastAPI/pydantic app; its clients match on these).
 */
import { arrayArg, describeValue, objectArg } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';
import { MAX_JSON_DEPTH, jsonDepthExceededAt, jsonTooDeepReason } from './json-depth.js';

/** A path into the validated value: `["body", "prompt"]`, `["query", "limit"]`, `["json_config", "temp"]`. */
export type ValidationLoc = Array<string | number>;

/** One entry of a 422 body's `detail` (docs/api.md §2.7). */
export interface ValidationIssue {
  /** Where the problem is. */
  loc: ValidationLoc;
  /** Human-readable message, pydantic's wording. */
  msg: string;
  /** Machine-readable kind, pydantic's names: `missing`, `string_too_short`, `greater_than_equal`… */
  type: string;
  /** The offending value, when there is one (absent for `missing`… pydantic sends the parent). */
  input?: unknown;
  /** Parameters of the constraint, e.g. `{ ge: 0 }`, `{ max_length: 500 }`. */
  ctx?: Record<string, unknown>;
}

/** The HTTP 422 body (docs/api.md §2.7). */
export interface ValidationErrorBody {
  detail: ValidationIssue[];
}

/** The five languages of TTS, STT and voice design (docs/api.md §1). */
export const PROTOCOL_LANGUAGES = ['en', 'fr', 'de', 'es', 'pt'] as const;

/** One of {@link PROTOCOL_LANGUAGES}. */
export type ProtocolLanguage = (typeof PROTOCOL_LANGUAGES)[number];

/** pydantic's `Input should be 'a', 'b' or 'c'` list. */
export function expectedList(values: readonly (string | number | boolean)[]): string {
  arrayArg(values, 'expectedList: values');
  const shown = values.map((v) => (typeof v === 'string' ? `'${v}'` : String(v)));
  return shown.length <= 1 ? shown.join('') : `${shown.slice(0, -1).join(', ')} or ${shown[shown.length - 1]!}`;
}

function plural(n: unknown, word: string): string {
  return `${String(n)} ${word}${n === 1 ? '' : 's'}`;
}

/** pydantic v2 message templates, by type. */
function messageOf(type: string, ctx: Record<string, unknown> | undefined): string {
  const c = ctx ?? {};
  switch (type) {
    case 'missing':
      return 'Field required';
    case 'string_type':
      return 'Input should be a valid string';
    case 'string_too_short':
      return `String should have at least ${plural(c['min_length'], 'character')}`;
    case 'string_too_long':
      return `String should have at most ${plural(c['max_length'], 'character')}`;
    case 'int_type':
      return 'Input should be a valid integer';
    case 'int_parsing':
      return 'Input should be a valid integer, unable to parse string as an integer';
    case 'int_from_float':
      return 'Input should be a valid integer, got a number with a fractional part';
    case 'float_type':
      return 'Input should be a valid number';
    case 'float_parsing':
      return 'Input should be a valid number, unable to parse string as a number';
    case 'finite_number':
      return 'Input should be a finite number';
    case 'bool_type':
      return 'Input should be a valid boolean';
    case 'bool_parsing':
      return 'Input should be a valid boolean, unable to interpret input';
    case 'greater_than_equal':
      return `Input should be greater than or equal to ${String(c['ge'])}`;
    case 'less_than_equal':
      return `Input should be less than or equal to ${String(c['le'])}`;
    case 'literal_error':
      return `Input should be ${String(c['expected'])}`;
    case 'dict_type':
      return 'Input should be a valid dictionary';
    case 'model_attributes_type':
      return 'Input should be a valid dictionary or object to extract fields from';
    case 'list_type':
      return 'Input should be a valid list';
    case 'json_invalid':
      return 'JSON decode error';
    case 'json_type':
      return 'JSON input should be string, bytes or bytearray';
    case 'extra_forbidden':
      return 'Extra inputs are not permitted';
    case 'value_error':
      return `Value error, ${String(c['error'])}`;
    case 'datetime_parsing':
      return `Input should be a valid datetime, ${String(c['error'])}`;
    case 'date_parsing':
      return `Input should be a valid date in the format YYYY-MM-DD, ${String(c['error'])}`;
    case 'uuid_parsing':
      return `Input should be a valid UUID, ${String(c['error'])}`;
    default:
      return type;
  }
}

/** Most characters of the offending value an issue echoes in `input`: 200. */
export const MAX_ISSUE_INPUT_CHARS = 200;

/**
 * Makes an issue with pydantic's message for `type`. `input` is omitted when `undefined`, and
 * bounded (issue 20: a 422 body that echoes its input whole can be as large, and as deep, as the
 * request): a string longer than {@link MAX_ISSUE_INPUT_CHARS} is cut to that length (ending `…`);
 * an array or object whose JSON would be longer, or that is not plain JSON data, is replaced by
 * the start of its JSON text, cut the same way.
 */
export function makeIssue(loc: ValidationLoc, type: string, input: unknown, ctx?: Record<string, unknown>): ValidationIssue {
  const issue: ValidationIssue = { loc, msg: messageOf(type, ctx), type };
  if (input !== undefined) issue.input = boundedInput(input);
  if (ctx !== undefined) issue.ctx = ctx;
  return issue;
}

/** `value` when its JSON fits in {@link MAX_ISSUE_INPUT_CHARS}, else the start of that JSON (see {@link makeIssue}). */
function boundedInput(value: unknown): unknown {
  const max = MAX_ISSUE_INPUT_CHARS;
  if (typeof value === 'string') return value.length <= max ? value : `${value.slice(0, max - 1)}…`;
  if (typeof value !== 'object' || value === null) return typeof value === 'bigint' || typeof value === 'symbol' || typeof value === 'function' ? String(value).slice(0, max) : value;
  const { text, whole } = jsonPrefix(value, max);
  return whole && text.length <= max ? value : `${text.slice(0, max - 1)}…`;
}

function isPlain(value: object): boolean {
  const proto: unknown = Object.getPrototypeOf(value);
  return Array.isArray(value) || proto === Object.prototype || proto === null;
}

/**
 * The start of `value`'s JSON text, at least `max` characters of it when it is longer, walked with
 * an explicit stack (no recursion: the value may nest thousands deep) and stopped there: the work
 * is bounded by `max`, not by the value. `whole` is false when it stopped early or met something
 * that is not plain JSON data (a class instance, a bigint: `JSON.stringify` would not write it as walked).
 */
function jsonPrefix(value: object, max: number): { text: string; whole: boolean } {
  type Frame = { close: string; keys: string[] | null; of: unknown; i: number };
  const stack: Frame[] = [];
  let text = '';
  let whole = true;
  let next: unknown = value;
  let pending = true;
  const scalar = (v: unknown): string => {
    if (typeof v === 'string') return JSON.stringify(v.length > max ? v.slice(0, max) : v);
    if (typeof v === 'number') return Number.isFinite(v) ? String(v) : 'null';
    if (typeof v === 'boolean') return String(v);
    if (v !== null) whole = false;
    return 'null';
  };
  while (text.length <= max) {
    if (pending) {
      pending = false;
      if (typeof next === 'object' && next !== null) {
        if (!isPlain(next)) {
          whole = false;
          text += '{}';
        } else if (Array.isArray(next)) {
          text += '[';
          stack.push({ close: ']', keys: null, of: next, i: 0 });
        } else {
          text += '{';
          stack.push({ close: '}', keys: Object.keys(next), of: next, i: 0 });
        }
      } else text += scalar(next);
      continue;
    }
    const top = stack[stack.length - 1];
    if (top === undefined) return { text, whole };
    const size = top.keys === null ? (top.of as unknown[]).length : top.keys.length;
    if (top.i >= size) {
      text += top.close;
      stack.pop();
      continue;
    }
    if (top.i > 0) text += ',';
    if (top.keys === null) next = (top.of as unknown[])[top.i];
    else {
      const key = top.keys[top.i]!;
      text += `${scalar(key)}:`;
      next = (top.of as Record<string, unknown>)[key];
    }
    top.i++;
    pending = true;
  }
  return { text, whole: false };
}

/** One-line summary of an issue: `json_config.temp: Input should be less than or equal to 1.4`. */
export function describeIssue(issue: ValidationIssue): string {
  objectArg(issue, 'describeIssue: issue');
  arrayArg(issue.loc, 'describeIssue: issue.loc');
  const where = issue.loc.map(String).join('.');
  return where === '' ? issue.msg : `${where}: ${issue.msg}`;
}

/** True for a plain JSON object (not null, not an array). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !ArrayBuffer.isView(value);
}

/** Own-property read that never walks the prototype (`__proto__`, `constructor` are just names). */
export function own(obj: Record<string, unknown>, key: string): unknown {
  return Object.prototype.hasOwnProperty.call(obj, key) ? obj[key] : undefined;
}

/**
 * A number as pydantic's lax mode reads a string. The integer part and the fraction are separate
 * groups (`\d+(?:\.\d*)?`, not `\d+\.?\d*`) so a long run of digits has one parse: linear time.
 */
const LAX_NUMBER = /^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*$/;

/** How strings are read as numbers and booleans: never (`strict`, JSON messages) or like pydantic's lax mode (`lax`, REST). */
export type Coercion = 'strict' | 'lax';

/** Options shared by the field readers. */
export interface FieldOptions {
  required?: boolean;
  /** Treat `null` as absent (optional fields only). Default true. */
  nullable?: boolean;
  /** What the field means, for the schema a {@link FieldReader} describes (src/protocol/describe.ts). */
  description?: string;
}

/** A JSON Schema (2020-12) object, as a describing reader records it. */
export type JsonSchema = Record<string, unknown>;

/** Options of {@link FieldReader.object}. */
export interface ObjectFieldOptions extends FieldOptions {
  /** The name of the nested object's schema among the document's components. */
  name?: string;
  /** The object may also come as a string holding its JSON (`json_config`, §4.2 "string or object"). */
  jsonString?: boolean;
  /** How the nested object's fields are read. Default `strict`. */
  coercion?: Coercion;
}

/**
 * Collects issues while reading fields of one object. Each reader returns the value, or
 * `undefined` after recording an issue (or when an optional field is absent).
 */
export class FieldReader {
  readonly issues: ValidationIssue[];
  /** The keys read so far ({@link closed} refuses the others). */
  private readonly seen = new Set<string>();
  constructor(
    readonly obj: Record<string, unknown>,
    readonly loc: ValidationLoc,
    readonly coercion: Coercion = 'strict',
    issues: ValidationIssue[] = [],
  ) {
    this.issues = issues;
  }

  private present(key: string, options: FieldOptions): { value: unknown; ok: boolean } {
    this.seen.add(key);
    const value = own(this.obj, key);
    if (value === undefined || (value === null && options.nullable !== false && !options.required)) {
      if (options.required) this.issues.push(makeIssue([...this.loc, key], 'missing', undefined));
      return { value: undefined, ok: false };
    }
    return { value, ok: true };
  }

  /** Adds an issue at `key`. */
  fail(key: string | number | null, type: string, input: unknown, ctx?: Record<string, unknown>): undefined {
    this.issues.push(makeIssue(key === null ? [...this.loc] : [...this.loc, key], type, input, ctx));
    return undefined;
  }

  /** A string; `default` is returned when the field is absent (and is the schema's `default`). */
  string(key: string, options: FieldOptions & { minLength?: number; maxLength?: number; default?: string } = {}): string | undefined {
    const { value, ok } = this.present(key, options);
    if (!ok) return options.default;
    if (typeof value !== 'string') return this.fail(key, 'string_type', value);
    if (options.minLength !== undefined && value.length < options.minLength) {
      return this.fail(key, 'string_too_short', value, { min_length: options.minLength });
    }
    if (options.maxLength !== undefined && value.length > options.maxLength) {
      return this.fail(key, 'string_too_long', value, { max_length: options.maxLength });
    }
    return value;
  }

  literal<T extends string>(key: string, values: readonly T[], options: FieldOptions & { default?: T } = {}): T | undefined {
    const { value, ok } = this.present(key, options);
    if (!ok) return options.default;
    if (typeof value !== 'string' || !(values as readonly string[]).includes(value)) {
      return this.fail(key, 'literal_error', value, { expected: expectedList(values) });
    }
    return value as T;
  }

  boolean(key: string, options: FieldOptions & { default?: boolean } = {}): boolean | undefined {
    const { value, ok } = this.present(key, options);
    if (!ok) return options.default;
    if (typeof value === 'boolean') return value;
    if (this.coercion === 'lax') {
      const parsed = parseLaxBoolean(value);
      if (parsed !== undefined) return parsed;
      return this.fail(key, typeof value === 'string' ? 'bool_parsing' : 'bool_type', value);
    }
    return this.fail(key, 'bool_type', value);
  }

  number(key: string, options: FieldOptions & { ge?: number; le?: number; default?: number } = {}): number | undefined {
    const { value, ok } = this.present(key, options);
    if (!ok) return options.default;
    let n: number;
    if (typeof value === 'number') n = value;
    else if (this.coercion === 'lax' && typeof value === 'string' && LAX_NUMBER.test(value)) n = Number(value);
    else return this.fail(key, typeof value === 'string' && this.coercion === 'lax' ? 'float_parsing' : 'float_type', value);
    if (!Number.isFinite(n)) return this.fail(key, 'finite_number', value);
    return this.range(key, n, value, options);
  }

  integer(key: string, options: FieldOptions & { ge?: number; le?: number; default?: number } = {}): number | undefined {
    const { value, ok } = this.present(key, options);
    if (!ok) return options.default;
    const n = readInteger(value, this.coercion);
    if (typeof n === 'string') return this.fail(key, n, value);
    return this.range(key, n, value, options);
  }

  private range(key: string, n: number, input: unknown, options: { ge?: number; le?: number }): number | undefined {
    if (options.ge !== undefined && n < options.ge) return this.fail(key, 'greater_than_equal', input, { ge: options.ge });
    if (options.le !== undefined && n > options.le) return this.fail(key, 'less_than_equal', input, { le: options.le });
    return n;
  }

  stringArray(key: string, options: FieldOptions = {}): string[] | undefined {
    const { value, ok } = this.present(key, options);
    if (!ok) return undefined;
    if (!Array.isArray(value)) return this.fail(key, 'list_type', value);
    const before = this.issues.length;
    value.forEach((v, i) => {
      if (typeof v !== 'string') this.issues.push(makeIssue([...this.loc, key, i], 'string_type', v));
    });
    return this.issues.length === before ? (value.slice() as string[]) : undefined;
  }

  /**
   * A nested object read by `read` with its own reader (issues shared, `loc` extended by `key`).
   * With `jsonString` a string is parsed as JSON first (depth-limited, {@link parseJsonObjectText}).
   * Returns what `read` returns, or `undefined` when absent or when the object has issues.
   */
  object<T>(key: string, read: (r: FieldReader) => T, options: ObjectFieldOptions = {}): T | undefined {
    const { value, ok } = this.present(key, options);
    if (!ok) return undefined;
    const loc = [...this.loc, key];
    const obj = objectValue(value, loc, this.issues, options.jsonString === true);
    if (obj === undefined) return undefined;
    const before = this.issues.length;
    const out = read(new FieldReader(obj, loc, options.coercion ?? 'strict', this.issues));
    return this.issues.length === before ? out : undefined;
  }

  /**
   * A check no bound expresses (pydantic's `value_error`): when `value` was read and
   * `error(value)` says what is wrong, an issue `Value error, <that>`. `description` (what the
   * check wants) and `schema` (e.g. `{ const: 0 }`) are what a describing reader adds to the
   * field's schema.
   */
  refine<V>(key: string, value: V | undefined, error: (v: V) => string | undefined, _description: string, _schema?: JsonSchema): void {
    const what = value === undefined ? undefined : error(value);
    if (what !== undefined) this.fail(key, 'value_error', value, { error: what });
  }

  /** Refuses every key not read so far (`extra_forbidden`, pydantic's `extra="forbid"`), in the object's order. */
  closed(): void {
    for (const key of Object.keys(this.obj)) {
      if (!this.seen.has(key)) this.fail(key, 'extra_forbidden', this.obj[key]);
    }
  }
}

/**
 * The reader a validator (`readTtsRequestBody`, `readTtsJsonConfig`…) was given: a validator is
 * public, so anything else is `INVALID_ARGUMENT`, not a TypeError from its first read.
 */
export function readerArg(r: unknown, what: string): FieldReader {
  if (!(r instanceof FieldReader)) throw new VoicewireError('INVALID_ARGUMENT', `${what} must be a FieldReader, got ${describeValue(r)}`);
  return r;
}

/**
 * `value` as an object: with `jsonString`, a string is parsed as JSON, refused past
 * {@link MAX_JSON_DEPTH} before parsing (issue 20). Records `json_invalid` or `dict_type` at `loc`.
 */
export function objectValue(value: unknown, loc: ValidationLoc, issues: ValidationIssue[], jsonString: boolean): Record<string, unknown> | undefined {
  let parsed = value;
  if (jsonString && typeof value === 'string') {
    if (jsonDepthExceededAt(value, MAX_JSON_DEPTH) >= 0) {
      issues.push(makeIssue(loc, 'json_invalid', value, { error: jsonTooDeepReason(MAX_JSON_DEPTH) }));
      return undefined;
    }
    try {
      parsed = JSON.parse(value);
    } catch (err) {
      issues.push(makeIssue(loc, 'json_invalid', value, { error: err instanceof Error ? err.message : String(err) }));
      return undefined;
    }
  }
  if (!isRecord(parsed)) {
    issues.push(makeIssue(loc, 'dict_type', value));
    return undefined;
  }
  return parsed;
}

/** pydantic's lax booleans: true/false, 0/1, and the strings of `str_to_bool` (case-insensitive). */
export function parseLaxBoolean(value: unknown): boolean | undefined {
  if (typeof value === 'boolean') return value;
  if (value === 0 || value === 1) return value === 1;
  if (typeof value !== 'string') return undefined;
  switch (value.trim().toLowerCase()) {
    case '1': case 'on': case 't': case 'true': case 'y': case 'yes':
      return true;
    case '0': case 'off': case 'f': case 'false': case 'n': case 'no':
      return false;
    default:
      return undefined;
  }
}

/**
 * Reads an integer like pydantic: a JSON integer (or a float with no fractional part) always; in
 * lax mode also a string of decimal digits with an optional sign, surrounded by optional
 * whitespace. Returns the issue type on failure. Booleans are rejected (`int_type`).
 */
export function readInteger(value: unknown, coercion: Coercion): number | 'int_type' | 'int_parsing' | 'int_from_float' {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return 'int_type';
    if (!Number.isInteger(value)) return 'int_from_float';
    if (!Number.isSafeInteger(value)) return 'int_type';
    return value;
  }
  if (typeof value === 'string' && coercion === 'lax') {
    if (!/^\s*[+-]?\d+\s*$/.test(value)) return 'int_parsing';
    const n = Number(value);
    return Number.isSafeInteger(n) ? n : 'int_parsing';
  }
  return 'int_type';
}
