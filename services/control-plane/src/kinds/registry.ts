/**
 * The registry of tool kinds this control plane runs, keyed by `adi.kind`. Registering a kind is
 * adding its module to KIND_MODULES (and its create body to contracts' ADI_CREATE_BODIES); every
 * other part of the control plane reaches a kind only through here.
 */
import { createAdiBodySchema, isAdiKind, type AdiKind } from '@bindery/contracts';
import { parsePointer } from '@bindery/context-ops';
import type { Adi } from '../generated/prisma/client.ts';
import { DomainError, fromOpError } from '../domain/errors.ts';
import { contextKind, type ContextKindServices } from './context/context-kind.ts';
import { customKind, type CustomKindServices } from './custom/custom-kind.ts';
import { httpKind } from './http/http-kind.ts';
import { mcpKind, type McpKindServices } from './mcp/mcp-kind.ts';
import type { KindColumns, SaveScope, ToolKindModule } from './kind.ts';

export { ToolAnswer } from './kind.ts';
export type { KindColumns, SaveScope, ToolCall, ToolPlace } from './kind.ts';

/**
 * What the registered kinds' calls are given, together: every kind's services (KindServices) and
 * each kind's own. Whoever runs tools (the executor) is handed one object of this shape at start.
 */
export type RegisteredKindServices = ContextKindServices & CustomKindServices & McpKindServices;

/**
 * A registered kind's module. Each module is typed by its own body and patch; the registry forgets
 * them (`unknown`): bodies reach a module only after the route checked them against that module's
 * `createBody`.
 */
export type RegisteredKind = ToolKindModule<unknown, unknown, RegisteredKindServices>;

const KIND_MODULES: readonly RegisteredKind[] = [
  contextKind as RegisteredKind,
  customKind as RegisteredKind,
  httpKind as RegisteredKind,
  mcpKind as RegisteredKind,
];

const BY_KIND = new Map<string, RegisteredKind>(KIND_MODULES.map((m) => [m.kind, m]));

/** The kinds offered, in registration order. */
export const OFFERED_KINDS: readonly AdiKind[] = KIND_MODULES.map((m) => m.kind);

/** The body schema of `POST /api/v2/adis`: one branch per registered kind, told apart by `kind`. */
export const CREATE_ADI_BODY = createAdiBodySchema(KIND_MODULES.map((m) => m.createBody));

/**
 * The module of a kind named in a request or a document; VALIDATION_FAILED naming `field` for a
 * kind this server does not offer (yet) or does not know.
 */
export function offeredKind(kind: unknown, field = 'kind'): RegisteredKind {
  const module = typeof kind === 'string' ? BY_KIND.get(kind) : undefined;
  if (module?.notCreatable)
    throw new DomainError('VALIDATION_FAILED', `${field}: ${module.notCreatable}`, { field });
  if (module) return module;
  const offered = OFFERED_KINDS.map((k) => `"${k}"`).join(', ');
  throw new DomainError(
    'VALIDATION_FAILED',
    isAdiKind(kind)
      ? `${field}: kind "${kind}" is not available on this server yet (available: ${offered})`
      : `${field}: unknown kind ${JSON.stringify(kind)} (available: ${offered})`,
    { field, value: kind },
  );
}

/** The module of a stored ADI's kind, or undefined when this server does not run that kind. */
export function registeredKind(kind: string): RegisteredKind | undefined {
  return BY_KIND.get(kind);
}

/**
 * The module of a stored ADI's kind. INTERNAL when this server does not run it: only a newer
 * control plane on the same database could have saved it.
 */
export function kindOf(adi: { id: string; kind: string }): RegisteredKind {
  const module = BY_KIND.get(adi.kind);
  if (!module) {
    throw new DomainError(
      'INTERNAL',
      `ADI ${adi.id} is of kind "${adi.kind}", which this server does not run; upgrade it`,
      { adi_id: adi.id, kind: adi.kind },
    );
  }
  return module;
}

/** The kind-dependent columns of an ADI row (or of an ADI of an export document). */
export type StoredColumns = Pick<Adi, 'tableId' | 'jsonPath' | 'operationType'> & { config: unknown };

/** The kind-dependent columns of a stored ADI. */
export function columnsOf(adi: StoredColumns): KindColumns {
  return {
    tableId: adi.tableId,
    jsonPath: adi.jsonPath,
    operationType: adi.operationType,
    config: (adi.config ?? {}) as Record<string, unknown>,
  };
}

/**
 * Checks columns about to be stored, for every kind alike: a context is a table and a valid JSON
 * Pointer together or neither; then the kind's own check. Table ownership is the caller's.
 */
export async function checkColumns(
  module: RegisteredKind,
  columns: KindColumns,
  scope: SaveScope,
): Promise<KindColumns> {
  if ((columns.tableId === null) !== (columns.jsonPath === null)) {
    const field = columns.tableId === null ? 'table_id' : 'json_path';
    throw new DomainError(
      'VALIDATION_FAILED',
      `${field} is needed with ${field === 'table_id' ? 'json_path' : 'table_id'}`,
      {
        field,
      },
    );
  }
  if (columns.jsonPath !== null) {
    const pointer = columns.jsonPath;
    fromOpError(() => parsePointer(pointer), 'json_path');
  }
  return module.check(columns, scope);
}

/**
 * Refuses PATCH fields that belong to another kind than `module`'s (VALIDATION_FAILED naming the
 * first); the common ones (name, description, category) apply to every kind.
 */
export function checkPatchFields(module: RegisteredKind, patch: object, common: readonly string[]): void {
  for (const field of Object.keys(patch)) {
    if (!common.includes(field) && !module.patchFields.includes(field)) {
      throw new DomainError('VALIDATION_FAILED', `${field} does not apply to a ${module.kind} ADI`, {
        field,
      });
    }
  }
}
