/**
 * JSON Schema validation (ajv, draft 2020-12): one compile path for the canonical input and config
 * schemas, ADI item schemas and the narrowing checks, so they all agree on what a schema means.
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import type { JsonSchema } from './json.ts';
import { linearRegExp } from './linear-regexp.ts';

const CACHE_LIMIT = 256;
const compiled = new Map<string, ValidateFunction>();

/**
 * A validator for `schema` (2020-12, every error reported, `format`s checked); throws ajv's error
 * when `schema` is not a valid JSON Schema or uses an unknown keyword or format.
 */
export function compileSchema(schema: JsonSchema): ValidateFunction {
  const key = JSON.stringify(schema);
  const hit = compiled.get(key);
  if (hit !== undefined) {
    // Re-inserting keeps the Map in least-recently-used order for eviction.
    compiled.delete(key);
    compiled.set(key, hit);
    return hit;
  }
  // One Ajv per schema: user schemas may carry `$id`s that would clash inside a shared instance, and
  // an evicted validator takes its instance with it instead of leaving it in ajv's own cache.
  const ajv = new Ajv2020({
    allErrors: true,
    // strictSchema refuses unknown keywords and formats (a typo like "minLenght" is an error, not a
    // silently ignored rule); the type/tuple/required strictness is about style and stays off.
    strictSchema: true,
    strictTypes: false,
    strictTuples: false,
    strictRequired: false,
    logger: false,
    code: { regExp: linearRegExp },
  });
  // ajv-formats is CommonJS: under NodeNext its default import is the module object.
  formats.default(ajv);
  const validate = ajv.compile(schema);
  compiled.set(key, validate);
  if (compiled.size > CACHE_LIMIT) {
    const oldest = compiled.keys().next();
    if (oldest.done !== true) compiled.delete(oldest.value);
  }
  return validate;
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
  const validate = compileSchema(schema);
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
