/**
 * The ten prebuilt operations an ADI can perform on its context (DESIGN.md §5).
 */
export const OPERATION_TYPES = [
  'get_all',
  'get_schema',
  'preview',
  'select',
  'query',
  'create',
  'update',
  'delete',
  'move',
  'copy',
] as const;

export type OperationType = (typeof OPERATION_TYPES)[number];

export const READ_OPERATIONS: readonly OperationType[] = [
  'get_all',
  'get_schema',
  'preview',
  'select',
  'query',
];

/** True when `value` names one of the ten prebuilt operations. */
export function isOperationType(value: string): value is OperationType {
  return (OPERATION_TYPES as readonly string[]).includes(value);
}

/**
 * The operations whose answer may be any JSON value: their structured content carries it under
 * `result` (MCP structured content is an object), their text content is the answer itself.
 */
export const WRAPPED_RESULT_OPERATIONS: readonly OperationType[] = ['get_all', 'preview', 'query'];
