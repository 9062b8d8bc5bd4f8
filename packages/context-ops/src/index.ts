/**
 * @bindery/context-ops: the pure operation engine on JSON contexts (DESIGN.md §5). No I/O: callers
 * fetch the context node, run an operation, and store what a write returns.
 */
export { validateAdiConfig } from './adi-config.ts';
export {
  advanceContext,
  applyChanges,
  ChangeMismatch,
  diffChanges,
  MAX_CHANGES,
  nodeAtTokens,
  PRESENT,
  type ContextState,
  type DataChange,
  type VersionChanges,
} from './changes.ts';
export { OpError } from './errors.ts';
export { executeRead, executeWrite, type ReadResult, type WriteResult } from './execute.ts';
export { compileQuery } from './jmespath/compile.ts';
export { limitExceeded as queryLimitExceeded, type QueryLimit } from './jmespath/meter.ts';
export type { JsonSchema, JsonValue } from './json.ts';
export { jsonBytes, jsonBytesDelta } from './json-size.ts';
export { DEFAULT_LIMITS, DEFAULT_QUERY_BUDGET, type Limits, type QueryBudget } from './limits.ts';
export type { OperationDefinition } from './operation.ts';
export { OPERATIONS } from './operations.ts';
export { deepFreeze } from './freeze.ts';
export { formatPointer, parsePointer, parsePointerArgument } from './pointer.ts';
export { resolveTokens } from './resolve.ts';
export { inferSchema } from './schema-inference.ts';
export { checkSchemaNarrowing } from './schema-narrowing.ts';
export {
  MAX_PATTERN_INPUT,
  MAX_PATTERN_PROGRAM_SIZE,
  PATTERN_TIME_BUDGET_MS,
  PATTERN_WORK_PER_CHECK,
  PatternRefused,
} from './schema-pattern.ts';
export {
  compileToolSchema,
  compileUserSchema,
  describeSchemaError,
  schemaDialect,
  schemaErrors,
  toolSchemaErrors,
  type SchemaDialect,
  type SchemaError,
  type SchemaValidator,
  type UserSchemaOptions,
} from './schema-validation.ts';
export { serializeResult } from './serialize.ts';
export { checkValueArgument } from './value-argument.ts';
