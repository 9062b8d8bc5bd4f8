/**
 * `item_schema`: the JSON Schema an ADI may impose on the direct children of its context; checked
 * after every write on the children that write created or changed.
 */
import { OpError } from './errors.ts';
import { isJsonObject, ownChild, type JsonSchema, type JsonValue } from './json.ts';
import type { TouchedChildren } from './operation.ts';
import { escapePointerToken } from './pointer.ts';
import { describeSchemaError, schemaErrors, type SchemaError } from './schema-validation.ts';

// Enough for an agent to fix its write; a whole-context rewrite could otherwise report thousands.
const MAX_REPORTED_ERRORS = 20;

/**
 * Throws VALIDATION_FAILED (ajv errors in details) when a touched direct child of `context` does not
 * satisfy `itemSchema`; children that no longer exist (deleted) are skipped.
 */
export function checkItemSchema(itemSchema: JsonSchema, context: JsonValue, touched: TouchedChildren): void {
  const keys = touched === 'all' ? childKeys(context) : touched;
  const failures: (SchemaError & { pointer: string })[] = [];
  for (const key of new Set(keys)) {
    if (failures.length >= MAX_REPORTED_ERRORS) break;
    const child = childOf(context, key);
    if (child === undefined) continue;
    const pointer = `/${escapePointerToken(key)}`;
    for (const error of schemaErrors(itemSchema, child)) {
      failures.push({ ...error, pointer, instancePath: `${pointer}${error.instancePath}` });
    }
  }
  const first = failures[0];
  if (first === undefined) return;
  throw new OpError(
    'VALIDATION_FAILED',
    `The write breaks the item schema: ${describeSchemaError(first, '')}` +
      (failures.length > 1
        ? ` (and ${failures.length - 1} more${failures.length >= MAX_REPORTED_ERRORS ? ' at least' : ''})`
        : ''),
    { item_schema_errors: failures },
  );
}

function childKeys(context: JsonValue): string[] {
  if (Array.isArray(context)) return context.map((_, index) => String(index));
  if (isJsonObject(context)) return Object.keys(context);
  return [];
}

function childOf(context: JsonValue, key: string): JsonValue | undefined {
  if (Array.isArray(context)) return context[Number(key)];
  if (isJsonObject(context)) return ownChild(context, key);
  return undefined;
}
