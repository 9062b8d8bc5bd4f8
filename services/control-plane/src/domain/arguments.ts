/**
 * Validates a tool call's arguments against the binding's effective input schema (the override, or
 * the ADI's canonical schema) with ajv, applying the schema's defaults.
 */
import { linearRegExp } from '@bindery/context-ops';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { DomainError } from '../errors.ts';

// Patterns come from users' schemas: RE2, so an argument cannot make one backtrack for minutes.
const ajv = new Ajv2020({
  allErrors: true,
  useDefaults: true,
  strict: false,
  code: { regExp: linearRegExp },
});
// Schemas are few (one per binding) but come from users: bound the cache so it cannot grow forever.
const MAX_CACHED = 2_000;
const compiled = new Map<string, ValidateFunction>();

function validatorFor(schema: Record<string, unknown>): ValidateFunction {
  const key = JSON.stringify(schema);
  let validate = compiled.get(key);
  if (!validate) {
    if (compiled.size >= MAX_CACHED) {
      const oldest = compiled.keys().next().value;
      if (oldest !== undefined) {
        ajv.removeSchema(compiled.get(oldest)?.schema as object);
        compiled.delete(oldest);
      }
    }
    validate = ajv.compile(schema);
    compiled.set(key, validate);
  }
  return validate;
}

/** The arguments with defaults applied, or VALIDATION_FAILED listing what is wrong. */
export function checkArguments(
  schema: Record<string, unknown>,
  args: Record<string, unknown>,
  toolName: string,
): Record<string, unknown> {
  const copy = structuredClone(args);
  let validate: ValidateFunction;
  try {
    validate = validatorFor(schema);
  } catch (error) {
    // Schemas are checked when saved; one saved before a rule changed (a pattern RE2 cannot run, say)
    // fails here, and the owner needs to know which tool and why.
    throw new DomainError(
      'INTERNAL',
      `the input schema of ${toolName} can no longer be used; its owner must change it: ${
        error instanceof Error ? error.message : String(error)
      }`,
    );
  }
  if (validate(copy)) return copy;
  const errors = (validate.errors ?? []).slice(0, 20).map((e) => ({
    path: e.instancePath || '/',
    message: e.message ?? 'is invalid',
    ...(e.params && Object.keys(e.params).length > 0 && { params: e.params }),
  }));
  const first = errors[0];
  const extra = (first?.params as { additionalProperty?: string } | undefined)?.additionalProperty;
  throw new DomainError(
    'VALIDATION_FAILED',
    `invalid arguments for ${toolName}: ${first?.path === '/' ? 'arguments' : `argument ${first?.path}`} ${first?.message}${extra ? ` ("${extra}")` : ''}`,
    { errors },
  );
}
