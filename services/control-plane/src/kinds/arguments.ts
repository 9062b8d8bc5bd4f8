/**
 * Validates a tool call's arguments against the binding's effective input schema (the override, or
 * the ADI's canonical schema), applying the schema's defaults. The schema is compiled as it was when
 * it was saved (context-ops `compileUserSchema`: same formats, keywords, pattern engine and limits).
 */
import { compileUserSchema, type JsonValue, type SchemaValidator } from '@bindery/context-ops';
import { DomainError } from '../domain/errors.ts';

/** The arguments with defaults applied, or VALIDATION_FAILED listing what is wrong. */
export function checkArguments(
  schema: Record<string, unknown>,
  args: Record<string, unknown>,
  toolName: string,
): Record<string, unknown> {
  const copy = structuredClone(args);
  let validate: SchemaValidator;
  try {
    validate = compileUserSchema(schema, { useDefaults: true });
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
  const validate = compileUserSchema(schema);
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
