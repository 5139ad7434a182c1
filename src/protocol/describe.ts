/**
 * The describing counterpart of {@link FieldReader} (issue 21: one source of truth): a validator
 * written as a function of a reader, run against a {@link SchemaRecorder}, yields the JSON
 * Schema (2020-12, as OpenAPI 3.1 uses) of what it reads — types, enums, bounds, lengths,
 * `required`, nullability, defaults, nested objects, `additionalProperties: false` where the
 * validator calls {@link FieldReader.closed}, and the `value_error` checks as descriptions.
 * The recorder reads an empty object, so every read returns its default or `undefined`: the
 * validator must tolerate that (its result is thrown away).
 */
import { FieldReader, type Coercion, type FieldOptions, type JsonSchema, type ObjectFieldOptions } from './validate.js';

/** One field as recorded: its schema, and whether it was required or may be null. */
interface Recorded {
  schema: JsonSchema;
  required: boolean;
  nullable: boolean;
}

/** Options of {@link describeReader}. */
export interface DescribeOptions {
  /** How the fields are read (`lax` REST bodies and queries, `strict` JSON messages). Default `strict`. */
  coercion?: Coercion;
  /** Named nested objects ({@link ObjectFieldOptions.name}) go here and are referred to by `$ref`. */
  components?: Record<string, JsonSchema>;
  /** Where `$ref`s point. Default `#/components/schemas/`. */
  refPrefix?: string;
  /** Optional fields that accept `null` as absent are written `anyOf [schema, null]`. Default true (false for queries). */
  showNull?: boolean;
  /** The object's description. */
  description?: string;
}

/** A reader that records the schema of each field read instead of checking a value. */
export class SchemaRecorder extends FieldReader {
  private readonly fields = new Map<string, Recorded>();
  private closedToExtras = false;
  constructor(private readonly options: DescribeOptions = {}) {
    super({}, [], options.coercion ?? 'strict', []);
  }

  private record(key: string, schema: JsonSchema, options: FieldOptions & { default?: unknown }): void {
    const extra: JsonSchema = {};
    if (options.default !== undefined) extra['default'] = options.default;
    if (options.description !== undefined) extra['description'] = options.description;
    const was = this.fields.get(key);
    // A key read twice (a second pass, as the STT engines' support check) narrows the first schema.
    const schema2 = { ...(was?.schema ?? {}), ...schema, ...extra };
    const required = (was?.required ?? false) || options.required === true;
    const nullable = !required && options.nullable !== false && (was?.nullable ?? true);
    this.fields.set(key, { schema: schema2, required, nullable });
  }

  override string(key: string, options: FieldOptions & { minLength?: number; maxLength?: number; default?: string } = {}): string | undefined {
    const s: JsonSchema = { type: 'string' };
    if (options.minLength !== undefined) s['minLength'] = options.minLength;
    if (options.maxLength !== undefined) s['maxLength'] = options.maxLength;
    this.record(key, s, options);
    return super.string(key, options);
  }

  override literal<T extends string>(key: string, values: readonly T[], options: FieldOptions & { default?: T } = {}): T | undefined {
    this.record(key, { type: 'string', enum: [...values] }, options);
    return super.literal(key, values, options);
  }

  override boolean(key: string, options: FieldOptions & { default?: boolean } = {}): boolean | undefined {
    this.record(key, { type: 'boolean' }, options);
    return super.boolean(key, options);
  }

  override number(key: string, options: FieldOptions & { ge?: number; le?: number; default?: number } = {}): number | undefined {
    this.record(key, bounds({ type: 'number' }, options), options);
    return super.number(key, options);
  }

  override integer(key: string, options: FieldOptions & { ge?: number; le?: number; default?: number } = {}): number | undefined {
    this.record(key, bounds({ type: 'integer' }, options), options);
    return super.integer(key, options);
  }

  override stringArray(key: string, options: FieldOptions = {}): string[] | undefined {
    this.record(key, { type: 'array', items: { type: 'string' } }, options);
    return super.stringArray(key, options);
  }

  override object<T>(key: string, read: (r: FieldReader) => T, options: ObjectFieldOptions = {}): T | undefined {
    const { description: _own, ...shared } = this.options;
    const inner = new SchemaRecorder({ ...shared, coercion: options.coercion ?? 'strict' });
    read(inner);
    let s = inner.schema();
    if (options.name !== undefined && this.options.components !== undefined) {
      // The first description of a name wins: a caller may register a narrower one first.
      this.options.components[options.name] ??= s;
      s = { $ref: `${this.options.refPrefix ?? '#/components/schemas/'}${options.name}` };
    }
    const recorded = options.jsonString === true ? { anyOf: [s, { type: 'string', contentMediaType: 'application/json', contentSchema: s }] } : s;
    this.record(key, recorded, options);
    return undefined;
  }

  override refine<V>(key: string, _value: V | undefined, _error: (v: V) => string | undefined, description: string, schema: JsonSchema = {}): void {
    const was = this.fields.get(key);
    const said = typeof was?.schema['description'] === 'string' ? `${was.schema['description']} ` : '';
    this.record(key, { ...schema, description: `${said}${description}.` }, { nullable: was?.nullable !== false });
  }

  override closed(): void {
    this.closedToExtras = true;
  }

  /** The keys read, in order. */
  keys(): string[] {
    return [...this.fields.keys()];
  }

  /** The object schema of everything recorded. */
  schema(): JsonSchema {
    const properties: Record<string, JsonSchema> = {};
    const required: string[] = [];
    for (const [key, f] of this.fields) {
      properties[key] = f.nullable && this.options.showNull !== false ? orNull(f.schema) : f.schema;
      if (f.required) required.push(key);
    }
    const out: JsonSchema = { type: 'object', properties };
    if (required.length > 0) out['required'] = required;
    if (this.closedToExtras) out['additionalProperties'] = false;
    if (this.options.description !== undefined) out['description'] = this.options.description;
    return out;
  }
}

/** `schema` or null: one `anyOf` (a choice gets null as one more), the description and default outside it. */
function orNull(schema: JsonSchema): JsonSchema {
  const { description, default: dflt, ...rest } = schema;
  const outer: JsonSchema = Array.isArray(rest['anyOf']) ? { ...rest, anyOf: [...(rest['anyOf'] as JsonSchema[]), { type: 'null' }] } : { anyOf: [rest, { type: 'null' }] };
  if (dflt !== undefined) outer['default'] = dflt;
  if (description !== undefined) outer['description'] = description;
  return outer;
}

function bounds(s: JsonSchema, options: { ge?: number; le?: number }): JsonSchema {
  if (options.ge !== undefined) s['minimum'] = options.ge;
  if (options.le !== undefined) s['maximum'] = options.le;
  return s;
}

/**
 * The JSON Schema of the object `read` reads (see the module comment). `read` may take more
 * than one pass (run them in one function): a key read twice gets both schemas merged.
 */
export function describeReader(read: (r: FieldReader) => unknown, options: DescribeOptions = {}): JsonSchema {
  const r = new SchemaRecorder(options);
  read(r);
  return r.schema();
}

/** The keys `read` reads, in order: what a document made by {@link describeReader} must list. */
export function keysRead(read: (r: FieldReader) => unknown): string[] {
  const r = new SchemaRecorder();
  read(r);
  return r.keys();
}
