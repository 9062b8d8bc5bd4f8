/**
 * The shape of one prebuilt operation: its public definition (what a tool advertises) plus the
 * function that runs it. Each operation lives in its own file under `ops/`.
 */
import type { OperationType } from '@bindery/contracts';
import type { JsonSchema, JsonValue } from './json.ts';
import type { Limits } from './limits.ts';

export interface OperationDefinition {
  type: OperationType;
  kind: 'read' | 'write';
  /** One plain sentence, used in default tool descriptions. */
  summary: string;
  /** Canonical input schema: JSON Schema 2020-12, type object, additionalProperties false. */
  inputSchema: JsonSchema;
  /** What the ADI `config` may hold for this operation (additionalProperties false). */
  configSchema: JsonSchema;
  /**
   * What a call answers, as MCP `structuredContent` (always an object): an answer that may be any
   * JSON (get_all, preview, query) is described under `result`. No `$schema`: clients validate it
   * with their own default dialect.
   */
  outputSchema: JsonSchema;
}

/** Arguments and config after validation against the operation's own schemas. */
export interface OperationInput<Args, Config> {
  node: JsonValue;
  args: Args;
  config: Config;
  limits: Limits;
}

/** Where a write left its mark: direct children of the context (tokens in the new context), or all. */
export type TouchedChildren = readonly string[] | 'all';

export interface WriteOutcome {
  context: JsonValue;
  result: JsonValue;
  touched: TouchedChildren;
}

export interface ReadOperation<Args = Record<string, never>, Config = Record<string, never>> {
  definition: OperationDefinition & { kind: 'read' };
  run(input: OperationInput<Args, Config>): JsonValue;
}

export interface WriteOperation<Args = Record<string, never>, Config = Record<string, never>> {
  definition: OperationDefinition & { kind: 'write' };
  run(input: OperationInput<Args, Config>): WriteOutcome;
}
