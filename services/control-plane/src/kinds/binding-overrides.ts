/**
 * A binding's schema overrides, held against its ADI: an input-schema override must narrow the
 * tool's canonical schema, an output-schema override the tool's declared output schema (read-only
 * tools only). Checked when a binding is saved and again when the ADI's schema changes (an ADI
 * update, an upstream sync, an OpenAPI re-import), which is why this sits below both. The caller
 * names the ADI's kind module, so this file imports no kind and a kind's folder may use it.
 */
import { MAX_JSON_DEPTH } from '@bindery/contracts';
import { checkSchemaNarrowing, checkValueArgument, type JsonSchema } from '@bindery/context-ops';
import { Prisma } from '../generated/prisma/client.ts';
import { DomainError, fromOpError } from '../domain/errors.ts';
import type { Db } from '../domain/context.ts';
import type { KindColumns, ToolKindModule } from './kind.ts';

/** What an override is checked against: the ADI, its kind's module and the columns its schema depends on. */
export interface OverrideTarget {
  id: string;
  /** The ADI's kind (kindOf in registry.ts, or the kind itself where the caller knows it). */
  module: Pick<ToolKindModule, 'inputSchema' | 'outputSchema' | 'annotations'>;
  columns: KindColumns;
}

/**
 * Refuses an input-schema override the ADI's canonical schema (its kind's) does not accept (a
 * wider one), or one nested deeper than stored JSON may be; `field` names it in the error.
 */
export function checkOverride(
  { module, columns }: Pick<OverrideTarget, 'module' | 'columns'>,
  schema: Record<string, unknown>,
  field: string,
) {
  const canonical = module.inputSchema(columns);
  // Bounded first: the narrowing check walks the override recursively. One limit whether the
  // override came alone or in a batch (which nests it one level deeper in the body).
  fromOpError(() => checkValueArgument(schema, field, MAX_JSON_DEPTH));
  fromOpError(() => checkSchemaNarrowing(canonical, schema as JsonSchema), field);
}

/**
 * Refuses an output-schema override that is not a narrowing of the ADI's output schema, one of a
 * tool that may write, or one of an ADI that declares none (nothing to narrow); `field` names it.
 */
export function checkOutputOverride(
  { module, columns }: Pick<OverrideTarget, 'module' | 'columns'>,
  schema: Record<string, unknown>,
  field: string,
) {
  // A write's answer comes once its change is committed: an answer outside the narrowing could
  // then only be an error after the fact. Narrowing is for tools that cannot write.
  if (module.annotations(columns, { tableName: null }).readOnlyHint !== true) {
    throw new DomainError(
      'VALIDATION_FAILED',
      `${field}: only a read-only tool's output schema can be narrowed (this tool may write, and its answer comes after the write)`,
      { field },
    );
  }
  const declared = module.outputSchema(columns);
  if (declared === null) {
    throw new DomainError(
      'VALIDATION_FAILED',
      `${field}: this tool declares no output schema, so there is none to narrow`,
      { field },
    );
  }
  fromOpError(() => checkValueArgument(schema, field, MAX_JSON_DEPTH));
  fromOpError(() => checkSchemaNarrowing(declared, schema as JsonSchema, 'output_schema'), field);
}

/** A binding whose input-schema (or output-schema) override its ADI, as changed, no longer accepts. */
export interface BrokenOverride {
  binding_id: string;
  aei_id: string;
  tool_name: string;
  reason: string;
}

/**
 * The bindings of `adis` (their columns as they are about to be stored) whose override no longer
 * narrows the ADI's schema: a change of what a tool accepts must not leave an override wider than
 * the tool, nor one naming arguments it no longer has. One query whatever the number of ADIs.
 */
export async function brokenOverrides(db: Db, adis: readonly OverrideTarget[]): Promise<BrokenOverride[]> {
  if (adis.length === 0) return [];
  const byId = new Map(adis.map((adi) => [adi.id, adi]));
  const bindings = await db.aeiBinding.findMany({
    where: {
      adiId: { in: [...byId.keys()] },
      OR: [{ inputSchema: { not: Prisma.DbNull } }, { outputSchema: { not: Prisma.DbNull } }],
    },
    select: { id: true, adiId: true, aeiId: true, toolName: true, inputSchema: true, outputSchema: true },
    orderBy: { id: 'asc' },
  });
  const broken: BrokenOverride[] = [];
  for (const binding of bindings) {
    const adi = byId.get(binding.adiId)!;
    try {
      if (binding.inputSchema !== null) {
        checkOverride(adi, binding.inputSchema as Record<string, unknown>, 'input_schema');
      }
      if (binding.outputSchema !== null) {
        checkOutputOverride(adi, binding.outputSchema as Record<string, unknown>, 'output_schema');
      }
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      broken.push({
        binding_id: binding.id,
        aei_id: binding.aeiId,
        tool_name: binding.toolName,
        reason: error.message,
      });
    }
  }
  return broken;
}
