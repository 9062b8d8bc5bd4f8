/**
 * How route schemas validate requests. Text-only parts (path parameters, query strings, headers)
 * are coerced to the schema's types, since `?limit=20` can only arrive as a string; JSON bodies are
 * never coerced: `{"name": 123}` is a wrong type, refused, not silently stored as "123". Unknown
 * fields are refused rather than dropped, and defaults are applied.
 */
import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';

// Fastify's own defaults, but for removeAdditional (refuse, do not drop) and coercion. No format
// plugin: request schemas use no `format` (a new one would fail at start-up, not pass unchecked).
const BASE: Options = { useDefaults: true, removeAdditional: false, allErrors: false, addUsedSchema: false };

/** The first top-level field of a text part that coercion turned into a non-finite number. */
function nonFiniteField(data: unknown): string | undefined {
  if (data === null || typeof data !== 'object') return undefined;
  for (const [key, value] of Object.entries(data)) {
    const values: unknown[] = Array.isArray(value) ? value : [value];
    if (values.some((v) => typeof v === 'number' && !Number.isFinite(v))) return key;
  }
  return undefined;
}

/**
 * Ajv's coercion turns "1e999" or "Infinity" into Infinity and then skips its integer and bound
 * checks for it (they only look at finite numbers), so `?limit=1e999` reached the database as
 * `take: Infinity`. Text parts are flat, so one look at the coerced fields closes that gap.
 */
function refusingNonFinite(validate: ValidateFunction): ValidateFunction {
  const checked = ((data: unknown, context?: Parameters<ValidateFunction>[1]) => {
    if (!validate(data, context)) {
      checked.errors = validate.errors;
      return false;
    }
    const field = nonFiniteField(data);
    const error: ErrorObject | undefined =
      field === undefined
        ? undefined
        : {
            instancePath: `/${field}`,
            schemaPath: '#/type',
            keyword: 'type',
            params: {},
            message: 'must be a finite number',
          };
    checked.errors = error ? [error] : null;
    return error === undefined;
  }) as ValidateFunction;
  // Fastify passes the parent along (so ajv can coerce a root value) when it sees this.
  checked.schemaEnv = validate.schemaEnv;
  return checked;
}

// One Ajv for text parts and one for bodies per process, not per app: Ajv keeps each schema object's
// compiled validator, and most route schemas are module constants, so an app built again in the
// same process (tests build one per file) reuses them instead of compiling them all again. The few
// built per app (they carry the app's limits) are compiled, and kept, once per app.
const text = new Ajv({ ...BASE, coerceTypes: 'array' });
// `discriminator`: a body that is one of several shapes (an ADI of some kind) is checked against
// the shape its tag names only, so an error names a field of that shape, not of every shape.
const body = new Ajv({ ...BASE, coerceTypes: false, discriminator: true });

/**
 * A validator that compiles its schema when it first validates. Compiling every route's schemas
 * was about a third of a start's CPU (most routes are never called by a given process, and tests
 * start the control plane a hundred times per run); a schema that cannot compile fails its first
 * request instead of the start, so a test compiles them all (http-schemas.test.ts).
 */
function lazily(compile: () => ValidateFunction): ValidateFunction {
  let compiled: ValidateFunction | undefined;
  const validate = ((data: unknown, context?: Parameters<ValidateFunction>[1]) => {
    compiled ??= compile();
    const ok = compiled(data, context) as boolean;
    validate.errors = compiled.errors;
    return ok;
  }) as ValidateFunction;
  // Fastify passes the parent along (so ajv can coerce a root value) when it sees this, as it does
  // for every Ajv validator.
  (validate as { schemaEnv?: unknown }).schemaEnv = true;
  return validate;
}

/**
 * A validator compiler for `app.setValidatorCompiler`: one Ajv for bodies, one for text parts,
 * each schema compiled at its first use.
 */
export function requestValidatorCompiler(): FastifySchemaCompiler<unknown> {
  return ({ schema, httpPart }) =>
    lazily(() =>
      httpPart === 'body'
        ? body.compile(schema as object)
        : refusingNonFinite(text.compile(schema as object)),
    );
}
