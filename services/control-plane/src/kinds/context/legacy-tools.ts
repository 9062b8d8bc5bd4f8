/**
 * The tools of a legacy (v1) instance: each is a context operation on the instance's context,
 * under the tool name v1 gave it. The executor runs them and config v2 lists them through here,
 * as context tools without an ADI row (legacy/ keeps the instances themselves).
 */
import { OPERATION_TYPES, type LegacyToolDefinition, type OperationType } from '@bindery/contracts';
import type { McpInstance } from '../../generated/prisma/client.ts';
import type { ContextColumns } from './context-kind.ts';

/** The tool names v1 instances used for each operation. */
export const LEGACY_TOOL_NAMES: Record<OperationType, string> = {
  get_all: 'get_all_data',
  get_schema: 'get_data_schema',
  preview: 'preview_data',
  select: 'select_data',
  query: 'query_data',
  create: 'create_data',
  update: 'update_data',
  delete: 'delete_data',
  move: 'move_data',
  copy: 'copy_data',
};

export const DEFAULT_LEGACY_TOOLS: LegacyToolDefinition[] = OPERATION_TYPES.map((op) => ({
  name: LEGACY_TOOL_NAMES[op],
  operation_type: op,
}));

/** The v1 tools of an instance: its tools_definition, or every prebuilt operation. */
export function legacyTools(instance: Pick<McpInstance, 'toolsDefinition'>): LegacyToolDefinition[] {
  return (instance.toolsDefinition as LegacyToolDefinition[] | null) ?? DEFAULT_LEGACY_TOOLS;
}

/** The columns of a legacy v1 tool: a context tool without an ADI row (its instance's context). */
export function legacyColumns(
  instance: { tableId: string; jsonPath: string },
  op: OperationType,
  config: Record<string, unknown>,
): ContextColumns {
  return { tableId: instance.tableId, jsonPath: instance.jsonPath, operationType: op, config };
}
