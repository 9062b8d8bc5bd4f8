/**
 * JSON Schema validation (ajv, draft 2020-12): the one compile path for every schema a value is
 * checked against, the engine's canonical input and config schemas and the schemas users write
 * (item schemas, binding overrides; the control plane checks tool arguments with it too), so a
 * schema means the same when it is saved and when it is used.
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import type { JsonSchema } from './json.ts';
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

// Users' schemas are few per user but come from everyone: bound the cache. 2,000 compiled schemas
// take about 20 MB.
const CACHE_LIMIT = 2_000;
// Compiled schemas stay in their ajv instance's own cache; a fresh instance after this many
// compilations lets old ones go with the last validator that uses them (`removeSchema` would also
// drop a schema the instance holds under the same `$id`, a meta-schema's included).
const COMPILES_PER_INSTANCE = 1_000;

const compiled = new Map<string, SchemaValidator>();
const instances = new Map<boolean, { ajv: Ajv2020; compiles: number }>();

/** Ajv's `code.regExp`: RE2 with JavaScript's meaning and limits (schema-pattern.ts). */
const patternEngine = Object.assign((source: string) => compilePattern(source), { code: 'compilePattern' });

function instance(useDefaults: boolean): Ajv2020 {
  const current = instances.get(useDefaults);
  if (current !== undefined && current.compiles < COMPILES_PER_INSTANCE) {
    current.compiles += 1;
    return current.ajv;
  }
  const ajv = new Ajv2020({
    allErrors: true,
    useDefaults,
    // The value of a failed `pattern` comes with its error, to say when it was too long to check.
    verbose: true,
    // strictSchema refuses unknown keywords and formats (a typo like "minLenght" is an error, not a
    // silently ignored rule); the type/tuple/required strictness is about style and stays off.
    strictSchema: true,
    strictTypes: false,
    strictTuples: false,
    strictRequired: false,
    // Users' schemas may carry `$id`s; they must not clash with each other in a shared instance.
    addUsedSchema: false,
    logger: false,
    code: { regExp: patternEngine },
  });
  // ajv-formats is CommonJS: under NodeNext its default import is the module object.
  formats.default(ajv);
  instances.set(useDefaults, { ajv, compiles: 1 });
  return ajv;
}

/**
 * A validator for `schema` (2020-12, every error reported, `format`s checked, `pattern`s on RE2
 * within schema-pattern.ts's limits); throws ajv's error when `schema` is not a valid JSON Schema
 * or uses an unknown keyword or format, and PatternRefused for a pattern the engine will not run.
 */
export function compileUserSchema(schema: JsonSchema, options: UserSchemaOptions = {}): SchemaValidator {
  const useDefaults = options.useDefaults === true;
  const key = keyOf(schema, useDefaults);
  const hit = compiled.get(key);
  if (hit !== undefined) {
    // Re-inserting keeps the Map in least-recently-used order for eviction.
    compiled.delete(key);
    compiled.set(key, hit);
    return hit;
  }
  // A copy: ajv keys its cache by the object, which the caller may change later.
  const validator = withPatternLimits(instance(useDefaults).compile(structuredClone(schema)));
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
function keyOf(schema: JsonSchema, useDefaults: boolean): string {
  // Only objects can be keys of the WeakMap (a boolean schema is frozen too, and cheap to serialise).
  const frozen = typeof schema === 'object' && schema !== null && Object.isFrozen(schema);
  const keys = keysByObject[useDefaults ? 'defaults' : 'plain'];
  const known = frozen ? keys.get(schema) : undefined;
  if (known !== undefined) return known;
  const key = `${useDefaults ? 'defaults' : 'plain'}:${JSON.stringify(schema)}`;
  if (frozen) keys.set(schema, key);
  return key;
}

// The same string each time: its hash is computed once, so the Map lookup is cheap as well.
const keysByObject = { plain: new WeakMap<object, string>(), defaults: new WeakMap<object, string>() };

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

/** Validates `value`, returning [] when it passes or ajv's errors in a JSON-safe form. */
export function schemaErrors(schema: JsonSchema, value: unknown): SchemaError[] {
  const validate = compileUserSchema(schema);
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
