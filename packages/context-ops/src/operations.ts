/**
 * The registry of the ten prebuilt operations (DESIGN.md §5), keyed by operation type.
 */
import { OPERATION_TYPES, type OperationType } from '@bindery/contracts/operations';
import type { OperationDefinition, ReadOperation, WriteOperation } from './operation.ts';
import { copy } from './ops/copy.ts';
import { create } from './ops/create.ts';
import { deleteOperation } from './ops/delete.ts';
import { getAll } from './ops/get-all.ts';
import { getSchema } from './ops/get-schema.ts';
import { move } from './ops/move.ts';
import { preview } from './ops/preview.ts';
import { query } from './ops/query.ts';
import { select } from './ops/select.ts';
import { update } from './ops/update.ts';
import { deepFreeze } from './freeze.ts';

// Each operation is typed by its own arguments and config. The registry forgets them (`never`: no
// caller can build them by accident); the engine checks both against the operation's schemas and
// only then hands them over.
export type RegisteredOperation = ReadOperation<never, never> | WriteOperation<never, never>;

/** Every operation with the function that runs it. */
export const OPERATION_MODULES: Readonly<Record<OperationType, RegisteredOperation>> = {
  get_all: getAll,
  get_schema: getSchema,
  preview,
  select,
  query,
  create,
  update,
  delete: deleteOperation,
  move,
  copy,
};

/** The public definition of every operation (frozen): kind, summary, canonical input schema, config schema. */
export const OPERATIONS: Record<OperationType, OperationDefinition> = deepFreeze(
  Object.fromEntries(OPERATION_TYPES.map((type) => [type, OPERATION_MODULES[type].definition])) as Record<
    OperationType,
    OperationDefinition
  >,
);

// Frozen because every service shares these objects: a caller decorating a schema in place would
// silently change the canonical contract for everyone else (deepFreeze, freeze.ts).
