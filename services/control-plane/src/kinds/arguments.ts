/**
 * Validates a tool call's arguments against the binding's effective input schema (the override, or
 * the ADI's canonical schema), applying the schema's defaults, and a tool's answer against the
 * output schema it is held to. Schemas are read as tool schemas (context-ops `compileToolSchema`: in
 * the dialect they declare, unknown keywords ignored, the same formats, pattern engine and limits as
 * when they were saved or synced).
 */
import { compileToolSchema, type JsonValue, type SchemaValidator } from '@bindery/context-ops';
import { DomainError } from '../domain/errors.ts';

/**
 * The validator of a tool's schema, or PRECONDITION_FAILED naming the tool and the reason when
 * Bindery cannot use the schema (a dialect it does not know, a `$ref` to another document, a pattern
 * RE2 cannot run): the tool cannot be called until its owner, or its upstream server, changes it.
 */
export function toolValidator(
  schema: Record<string, unknown>,
  toolName: string,
  which: 'input' | 'output',
  useDefaults = false,
): SchemaValidator {
  try {
    return compileToolSchema(schema, { useDefaults });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new DomainError(
      'PRECONDITION_FAILED',
      `the ${which} schema of ${toolName} cannot be used, so the tool cannot be called until it changes: ${reason}`,
      { reason: 'unusable_schema', schema: which },
    );
  }
}

/**
 * The arguments with defaults applied, or VALIDATION_FAILED listing what is wrong. `canonical`:
 * the tool's own schema when `schema` is a binding's narrowing of it, which the arguments must
 * satisfy too (a narrowing is judged structurally when saved, and a tool's schema may say more
 * than that judgement reads: `anyOf`, `$ref`, a draft-04 boolean `exclusiveMaximum`).
 */
export function checkArguments(
  schema: Record<string, unknown>,
  args: Record<string, unknown>,
  toolName: string,
  canonical?: Record<string, unknown>,
): Record<string, unknown> {
  const copy = structuredClone(args);
  const validate = toolValidator(schema, toolName, 'input', true);
  if (validate(copy)) {
    if (canonical === undefined) return copy;
    const own = toolValidator(canonical, toolName, 'input');
    if (own(copy)) return copy;
    // What the tool's own schema allows is not the caller's to see (a narrowing may hide values).
    refuseArguments(own, toolName, false);
  }
  refuseArguments(validate, toolName, true);
}

function refuseArguments(validate: SchemaValidator, toolName: string, withParams: boolean): never {
  const errors = (validate.errors ?? []).slice(0, 20).map((e) => ({
    path: e.instancePath || '/',
    message: e.message ?? 'is invalid',
    ...(withParams && e.params && Object.keys(e.params).length > 0 && { params: e.params }),
  }));
  const first = errors[0];
  const extra = (first?.params as { additionalProperty?: string } | undefined)?.additionalProperty;
  throw new DomainError(
    'VALIDATION_FAILED',
    `invalid arguments for ${toolName}: ${first?.path === '/' ? 'arguments' : `argument ${first?.path}`} ${first?.message}${extra ? ` ("${extra}")` : ''}`,
    { errors },
  );
}

/**
 * An answer that does not fit the output schema it is held to (a custom tool's own, or a binding's
 * narrowing) is the tool's error, not the caller's: UPSTREAM_FAILED naming where. `answer`
 * undefined: the tool answered no structured content at all.
 */
export function checkAnswer(
  schema: Record<string, unknown>,
  answer: JsonValue | undefined,
  toolName: string,
  whose: 'its output_schema' | 'the binding’s output_schema' = 'its output_schema',
): void {
  if (answer === undefined) {
    throw new DomainError(
      'UPSTREAM_FAILED',
      `${toolName} answered no structured content, which ${whose} requires`,
    );
  }
  const validate = toolValidator(schema, toolName, 'output');
  if (validate(answer)) return;
  const errors = (validate.errors ?? []).slice(0, 20).map((e) => ({
    path: e.instancePath || '/',
    message: e.message ?? 'is invalid',
  }));
  const first = errors[0];
  throw new DomainError(
    'UPSTREAM_FAILED',
    `${toolName} answered something ${whose} does not allow: ${first?.path === '/' ? 'the answer' : `${first?.path}`} ${first?.message}`,
    { errors },
  );
}
