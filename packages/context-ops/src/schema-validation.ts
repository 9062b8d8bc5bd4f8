/**
 * JSON Schema validation (ajv): the one compile path for every schema a value is checked against.
 * Two readings share it:
 * - a *user schema* (the engine's canonical input and config schemas and the schemas users write:
 *   item schemas, binding overrides) is draft 2020-12 in strict mode, so a typo like "minLenght" is
 *   refused when it is saved rather than silently ignored;
 * - a *tool schema* (what a tool declares it takes or gives: an upstream MCP server's, an
 *   OpenAPI-imported or a custom tool's) is read in the dialect its `$schema` names (draft-04, -06,
 *   -07, 2019-09, 2020-12; none: 2020-12, as MCP says), checked against that dialect's meta-schema,
 *   and keywords it does not know (`x-vendor`, other tools' annotations) are kept and ignored.
 * Either way a schema means the same when it is saved and when it is used, `format`s are checked
 * and `pattern`s run on RE2 within schema-pattern.ts's limits.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import draft06 from 'ajv/dist/refs/json-schema-draft-06.json' with { type: 'json' };
import AjvDraft04 from 'ajv-draft-04';
import formats from 'ajv-formats';
import type { JsonSchema } from './json.ts';
import { OpError } from './errors.ts';
import { compilePattern, describeUnchecked, trackPatternChecks } from './schema-pattern.ts';

export interface UserSchemaOptions {
  /** Fill in `default`s of absent properties in the value being validated (tool arguments). */
  useDefaults?: boolean;
}

/**
 * A compiled schema: true when `value` passes; otherwise `errors` lists why (ajv's error objects).
 * It may throw LIMIT_EXCEEDED when the schema's patterns take too long on `value`.
 */
export interface SchemaValidator {
  (value: unknown): boolean;
  errors: ErrorObject[] | null;
}

/** The JSON Schema dialects a tool schema may declare with `$schema`. */
export type SchemaDialect = 'draft-04' | 'draft-06' | 'draft-07' | '2019-09' | '2020-12';

// Each dialect's meta-schema URI as its specification writes it; `http`/`https` and a trailing
// `#` (empty fragment) are accepted either way, since servers write them both ways.
const DIALECTS: ReadonlyMap<string, SchemaDialect> = new Map([
  ['json-schema.org/draft-04/schema', 'draft-04'],
  ['json-schema.org/draft-06/schema', 'draft-06'],
  ['json-schema.org/draft-07/schema', 'draft-07'],
  ['json-schema.org/draft/2019-09/schema', '2019-09'],
  ['json-schema.org/draft/2020-12/schema', '2020-12'],
  // OpenAPI 3.1's schema dialect: 2020-12 with OpenAPI's own keywords (ignored, as unknown ones are).
  ['spec.openapis.org/oas/3.1/dialect/base', '2020-12'],
]);

// The URI each instance knows its meta-schema by (what `$schema` is rewritten to when compiled).
const META_URIS: Record<SchemaDialect, string> = {
  'draft-04': 'http://json-schema.org/draft-04/schema#',
  'draft-06': 'http://json-schema.org/draft-06/schema#',
  'draft-07': 'http://json-schema.org/draft-07/schema#',
  '2019-09': 'https://json-schema.org/draft/2019-09/schema',
  '2020-12': 'https://json-schema.org/draft/2020-12/schema',
};

/**
 * The dialect `schema` declares (2020-12 when it declares none, as MCP specifies); throws
 * VALIDATION_FAILED naming the `$schema` when it is one Bindery does not know.
 */
export function schemaDialect(schema: JsonSchema): SchemaDialect {
  if (typeof schema !== 'object' || schema === null || !('$schema' in schema)) return '2020-12';
  const declared = (schema as Record<string, unknown>).$schema;
  const key =
    typeof declared === 'string' ? declared.replace(/^https?:\/\//, '').replace(/#$/, '') : undefined;
  const dialect = key === undefined ? undefined : DIALECTS.get(key);
  if (dialect !== undefined) return dialect;
  throw new OpError(
    'VALIDATION_FAILED',
    `its $schema ${JSON.stringify(declared).slice(0, 200)} is not a JSON Schema dialect Bindery knows (draft-04, draft-06, draft-07, 2019-09 or 2020-12)`,
    { reason: 'unknown_dialect' },
  );
}

// Users' schemas are few per user but come from everyone: bound the cache. 2,000 compiled schemas
// take about 20 MB.
const CACHE_LIMIT = 2_000;
// Compiled schemas stay in their ajv instance's own cache; a fresh instance after this many
// compilations lets old ones go with the last validator that uses them (`removeSchema` would also
// drop a schema the instance holds under the same `$id`, a meta-schema's included).
const COMPILES_PER_INSTANCE = 1_000;

const compiled = new Map<string, SchemaValidator>();
let compiledIds = 0;

type Reading = 'user' | SchemaDialect;
type AnyAjv = Ajv | Ajv2019 | Ajv2020 | InstanceType<typeof AjvDraft04.default>;
const instances = new Map<string, { ajv: AnyAjv; compiles: number }>();

/** Ajv's `code.regExp`: RE2 with JavaScript's meaning and limits (schema-pattern.ts). */
const patternEngine = Object.assign((source: string) => compilePattern(source), { code: 'compilePattern' });

function instance(reading: Reading, useDefaults: boolean): AnyAjv {
  const name = `${reading}:${useDefaults}`;
  const current = instances.get(name);
  if (current !== undefined && current.compiles < COMPILES_PER_INSTANCE) {
    current.compiles += 1;
    return current.ajv;
  }
  const options = {
    allErrors: true,
    useDefaults,
    // The value of a failed `pattern` comes with its error, to say when it was too long to check.
    verbose: true,
    // A user schema: strictSchema refuses unknown keywords and formats (a typo is an error, not a
    // silently ignored rule). A tool schema is someone else's: what ajv does not know is ignored, as
    // JSON Schema says of unknown keywords. The type/tuple/required strictness is about style.
    strictSchema: reading === 'user',
    strictTypes: false,
    strictTuples: false,
    strictRequired: false,
    // Schemas may carry `$id`s; they must not clash with each other in a shared instance.
    addUsedSchema: false,
    logger: false as const,
    code: { regExp: patternEngine },
  };
  const ajv = makeAjv(reading, options);
  // ajv-formats is CommonJS: under NodeNext its default import is the module object.
  formats.default(ajv as Ajv);
  instances.set(name, { ajv, compiles: 1 });
  return ajv;
}

function makeAjv(reading: Reading, options: ConstructorParameters<typeof Ajv>[0]): AnyAjv {
  switch (reading) {
    case 'user':
    case '2020-12':
      return new Ajv2020(options);
    case '2019-09':
      return new Ajv2019(options);
    case 'draft-07':
      return new Ajv(options);
    case 'draft-06': {
      const ajv = new Ajv(options);
      ajv.addMetaSchema(draft06);
      return ajv;
    }
    case 'draft-04':
      // ajv-draft-04 is CommonJS too: its default import is the module object under NodeNext.
      return new AjvDraft04.default(options);
  }
}

/**
 * A validator for a user's `schema` (2020-12, strict, every error reported); throws ajv's error
 * when `schema` is not a valid JSON Schema or uses an unknown keyword or format, and
 * PatternRefused for a pattern the engine will not run.
 */
export function compileUserSchema(schema: JsonSchema, options: UserSchemaOptions = {}): SchemaValidator {
  return compileAs('user', schema, options.useDefaults === true);
}

/**
 * A validator for a tool's `schema`, read in the dialect it declares (schemaDialect), unknown
 * keywords ignored; throws VALIDATION_FAILED for a dialect Bindery does not know, ajv's error when
 * `schema` is not valid in its dialect (or refers to what it does not hold), and PatternRefused for
 * a pattern the engine will not run.
 */
export function compileToolSchema(schema: JsonSchema, options: UserSchemaOptions = {}): SchemaValidator {
  return compileAs(schemaDialect(schema), schema, options.useDefaults === true);
}

function compileAs(reading: Reading, schema: JsonSchema, useDefaults: boolean): SchemaValidator {
  const key = keyOf(
    schema,
    reading === 'user' ? (useDefaults ? 'defaults' : 'plain') : useDefaults ? 'toolDefaults' : 'tool',
  );
  const hit = compiled.get(key);
  if (hit !== undefined) {
    // Re-inserting keeps the Map in least-recently-used order for eviction.
    compiled.delete(key);
    compiled.set(key, hit);
    return hit;
  }
  // A copy: ajv keys its cache by the object, which the caller may change later. A tool schema's
  // `$schema` is written the way its instance knows the meta-schema (`https`, a `#` or not).
  const copy = structuredClone(schema);
  if (typeof copy === 'object' && copy !== null) {
    const root = copy as Record<string, unknown>;
    if (reading !== 'user' && '$schema' in root) root.$schema = META_URIS[reading];
    // A schema without an id gets one of its own: without it a reference to the whole schema
    // (`"$ref": "#"`, a tree's children) does not resolve. One that names its own keeps it (its
    // references may use it as their base); two schemas naming the same id do not clash, since an
    // instance keeps no schema it compiled (addUsedSchema is off).
    const idKey = reading === 'draft-04' ? 'id' : '$id';
    if (typeof root[idKey] !== 'string') root[idKey] = `urn:bindery:schema:${(compiledIds += 1)}`;
  }
  const validator = withPatternLimits(instance(reading, useDefaults).compile(copy));
  compiled.set(key, validator);
  if (compiled.size > CACHE_LIMIT) {
    const oldest = compiled.keys().next();
    if (oldest.done !== true) compiled.delete(oldest.value);
  }
  return validator;
}

/**
 * The cache key of `schema`: its JSON text. A frozen schema is taken as frozen all the way down
 * (deepFreeze, freeze.ts: callers freeze with it, never with a shallow Object.freeze), so its key is made once and remembered by the object: a hot path then skips
 * serialising it per call. Only the key is remembered, not the validator, so the cache above
 * still decides what is kept.
 */
function keyOf(schema: JsonSchema, mode: keyof typeof keysByObject): string {
  // Only objects can be keys of the WeakMap (a boolean schema is frozen too, and cheap to serialise).
  const frozen = typeof schema === 'object' && schema !== null && Object.isFrozen(schema);
  const keys = keysByObject[mode];
  const known = frozen ? keys.get(schema) : undefined;
  if (known !== undefined) return known;
  const key = `${mode}:${JSON.stringify(schema)}`;
  if (frozen) keys.set(schema, key);
  return key;
}

// The same string each time: its hash is computed once, so the Map lookup is cheap as well.
const keysByObject = {
  plain: new WeakMap<object, string>(),
  defaults: new WeakMap<object, string>(),
  tool: new WeakMap<object, string>(),
  toolDefaults: new WeakMap<object, string>(),
};

// A string too long for a pattern answers "no match" inside ajv (which may then be hidden by
// `not` or `anyOf`), so any such string fails the whole validation, with a message saying why.
function withPatternLimits(validate: ValidateFunction): SchemaValidator {
  const validator = ((value: unknown) => {
    const { result, checks } = trackPatternChecks(() => validate(value));
    let errors = validate.errors ?? null;
    if (checks.tooLong.length === 0) {
      validator.errors = errors;
      return result;
    }
    let explained = false;
    errors = (errors ?? []).map((error) => {
      const unchecked = checks.tooLong.find(
        (skipped) =>
          error.keyword === 'pattern' &&
          error.params.pattern === skipped.pattern &&
          typeof error.data === 'string' &&
          error.data.length === skipped.length,
      );
      if (unchecked === undefined) return error;
      explained = true;
      return { ...error, message: describeUnchecked(unchecked) };
    });
    const [first] = checks.tooLong;
    if (!explained && first !== undefined) {
      errors.unshift({
        instancePath: '',
        schemaPath: '#',
        keyword: 'pattern',
        params: { pattern: first.pattern },
        message: `has a string that ${describeUnchecked(first)}`,
      });
    }
    validator.errors = errors;
    return false;
  }) as SchemaValidator;
  validator.errors = null;
  return validator;
}

/** A validation error as it appears in OpError details (ajv's own fields, JSON-safe). */
export interface SchemaError {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message: string;
}

/** Validates `value` against a user's schema, returning [] when it passes or ajv's errors in a JSON-safe form. */
export function schemaErrors(schema: JsonSchema, value: unknown): SchemaError[] {
  return errorsOf(compileUserSchema(schema), value);
}

/** schemaErrors for a tool's schema (compileToolSchema). */
export function toolSchemaErrors(schema: JsonSchema, value: unknown): SchemaError[] {
  return errorsOf(compileToolSchema(schema), value);
}

function errorsOf(validate: SchemaValidator, value: unknown): SchemaError[] {
  if (validate(value)) return [];
  return (validate.errors ?? []).map(toSchemaError);
}

function toSchemaError(error: ErrorObject): SchemaError {
  return {
    instancePath: error.instancePath,
    keyword: error.keyword,
    params: { ...error.params },
    message: error.message ?? error.keyword,
  };
}

/** One readable line per error, e.g. `/limit must be <= 1000` or `unknown property "foo"`. */
export function describeSchemaError(error: SchemaError, subject: string): string {
  const at = error.instancePath === '' ? subject : `${subject}${error.instancePath}`;
  if (error.keyword === 'additionalProperties') {
    return `${at}: unknown property "${String(error.params.additionalProperty)}"`;
  }
  return `${at} ${error.message}`;
}
