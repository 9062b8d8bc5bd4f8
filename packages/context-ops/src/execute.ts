/**
 * Running an operation: arguments and config are checked against the operation's schemas, the
 * operation runs on the context node, and its limits and item schema are enforced.
 */
import { isOperationType, type OperationType } from '@bindery/contracts/operations';
import { validateAdiConfig } from './adi-config.ts';
import { OpError } from './errors.ts';
import { checkItemSchema } from './item-schema.ts';
import { isJsonObject, type JsonSchema, type JsonValue } from './json.ts';
import { DEFAULT_LIMITS, type Limits } from './limits.ts';
import type { OperationDefinition, OperationInput, ReadOperation } from './operation.ts';
import { OPERATION_MODULES, type RegisteredOperation } from './operations.ts';
import { describeSchemaError, schemaErrors } from './schema-validation.ts';
import { measureResult } from './serialize.ts';
import { checkValueArgument } from './value-argument.ts';

export interface ReadResult {
  /** The operation's answer. */
  result: JsonValue;
}

export interface WriteResult {
  /** The whole new context node, to be stored in place of the old one. */
  context: JsonValue;
  /** The operation's answer. */
  result: JsonValue;
}

/**
 * Runs read operation `op` on `context` and returns its answer; throws OpError (VALIDATION_FAILED,
 * NOT_FOUND, INVALID_QUERY, RESULT_TOO_LARGE when the answer's JSON passes `limits.maxResultBytes`).
 */
export function executeRead(
  op: OperationType,
  context: JsonValue,
  args: Record<string, unknown>,
  config: Record<string, unknown>,
  limits: Limits = DEFAULT_LIMITS,
): ReadResult {
  return guarded(op, () => {
    const module = lookup(op, 'read');
    if (!isRead(module)) throw wrongKind(op, 'read');
    const input = prepare(module.definition, context, args, config, limits);
    const result = module.run(input as OperationInput<never, never>);
    measureResult(result, limits.maxResultBytes);
    return { result };
  });
}

/**
 * Runs write operation `op` on `context` and returns the new context with the answer, never
 * mutating `context`; throws OpError (VALIDATION_FAILED, NOT_FOUND, CONFLICT) leaving nothing changed.
 */
export function executeWrite(
  op: OperationType,
  context: JsonValue,
  args: Record<string, unknown>,
  config: Record<string, unknown>,
  limits: Limits = DEFAULT_LIMITS,
): WriteResult {
  return guarded(op, () => {
    const module = lookup(op, 'write');
    if (isRead(module)) throw wrongKind(op, 'write');
    const input = prepare(module.definition, context, args, config, limits);
    const outcome = module.run(input as OperationInput<never, never>);
    const itemSchema = input.config.item_schema;
    if (isJsonObject(itemSchema)) checkItemSchema(itemSchema as JsonSchema, outcome.context, outcome.touched);
    return { context: outcome.context, result: outcome.result };
  });
}

function lookup(op: OperationType, expected: 'read' | 'write'): RegisteredOperation {
  if (typeof op !== 'string' || !isOperationType(op)) {
    throw new OpError('VALIDATION_FAILED', `Unknown operation "${String(op)}"`, { operation: op, expected });
  }
  return OPERATION_MODULES[op];
}

function isRead(module: RegisteredOperation): module is ReadOperation<never, never> {
  return module.definition.kind === 'read';
}

function wrongKind(op: OperationType, expected: 'read' | 'write'): OpError {
  const other = expected === 'read' ? 'executeWrite' : 'executeRead';
  return new OpError('INTERNAL', `${op} is not a ${expected} operation; run it with ${other}`, {
    operation: op,
  });
}

function prepare(
  definition: OperationDefinition,
  node: JsonValue,
  args: Record<string, unknown>,
  config: Record<string, unknown>,
  limits: Limits,
): OperationInput<Record<string, unknown>, Record<string, unknown>> {
  const checkedConfig = validateAdiConfig(definition.type, config);
  const checkedArgs = args ?? {};
  const errors = schemaErrors(definition.inputSchema, checkedArgs);
  const [first] = errors;
  if (first !== undefined) {
    throw new OpError(
      'VALIDATION_FAILED',
      `Invalid arguments for ${definition.type}: ${describeSchemaError(first, 'arguments')}`,
      {
        argument: argumentName(first.instancePath, first.params),
        errors,
      },
    );
  }
  if ('value' in checkedArgs) checkValueArgument(checkedArgs.value, 'value', limits.maxDepth);
  return { node, args: checkedArgs, config: checkedConfig, limits };
}

function argumentName(instancePath: string, params: Record<string, unknown>): string | undefined {
  const fromPath = instancePath.split('/')[1];
  if (fromPath !== undefined && fromPath !== '') return fromPath;
  const named = params.additionalProperty ?? params.missingProperty;
  return typeof named === 'string' ? named : undefined;
}

// Anything that is not an OpError is a bug in the engine (or a library); callers get one error type
// and a generic message, with the original kept as `cause` for logs.
function guarded<T>(op: OperationType, run: () => T): T {
  try {
    return run();
  } catch (error) {
    if (error instanceof OpError) throw error;
    const wrapped = new OpError('INTERNAL', `The ${String(op)} operation failed unexpectedly`, {
      operation: op,
    });
    wrapped.cause = error;
    throw wrapped;
  }
}
