/**
 * Schema pieces several operations share, written once so every tool describes them the same way.
 */
import type { JsonSchema } from '../json.ts';
import { SCHEMA_DIALECT } from '../schema-inference.ts';

/** A JSON Pointer argument relative to the context. */
export function pointerProperty(role: string, example: string): JsonSchema {
  return {
    type: 'string',
    description:
      `${role} as a JSON Pointer relative to this tool's data: "" is the whole data, "${example}" ` +
      'a child (object keys by name, array items by 0-based index; escape "~" as "~0" and "/" as "~1").',
  };
}

/** An input schema of type object that refuses unknown arguments. */
export function objectSchema(
  properties: Record<string, JsonSchema>,
  required: readonly string[] = [],
): JsonSchema {
  const schema: JsonSchema = {
    $schema: SCHEMA_DIALECT,
    type: 'object',
    properties,
    additionalProperties: false,
  };
  if (required.length > 0) schema.required = [...required];
  return schema;
}

/** A config schema of type object that refuses unknown keys. */
export function configSchema(properties: Record<string, JsonSchema>): JsonSchema {
  return { type: 'object', properties, additionalProperties: false };
}

/** The `item_schema` config every write operation may carry. */
export const ITEM_SCHEMA_CONFIG: Record<string, JsonSchema> = {
  item_schema: {
    type: 'object',
    description:
      'JSON Schema (2020-12) that every direct child of the context created or changed by a write must satisfy.',
  },
};

/** The `value` argument of writes: any JSON. */
export function valueProperty(description: string): JsonSchema {
  return { description };
}

/**
 * The input schema of a write: its own arguments plus `expected_version`, which the engine ignores
 * and the caller that stores the context checks (optimistic concurrency on the table's version).
 */
export function writeInputSchema(
  properties: Record<string, JsonSchema>,
  required: readonly string[] = [],
): JsonSchema {
  return objectSchema(
    {
      ...properties,
      expected_version: {
        type: 'integer',
        minimum: 1,
        description:
          'Optional: the table version you last saw. The write fails with CONFLICT if the data changed since.',
      },
    },
    required,
  );
}

/**
 * The output schema of an operation whose answer may be any JSON value: structured content must be
 * an object, so the answer is sent under `result` (its text content stays the answer itself).
 */
export function wrappedOutputSchema(description: string): JsonSchema {
  return {
    type: 'object',
    properties: { result: { description } },
    required: ['result'],
    additionalProperties: false,
  };
}

/** An output schema of type object with exactly the given properties, all of them present. */
export function outputSchema(properties: Record<string, JsonSchema>): JsonSchema {
  return { type: 'object', properties, required: Object.keys(properties), additionalProperties: false };
}

/** A pointer in an answer: where the write acted, relative to the tool's data. */
export function answerPointer(description: string): JsonSchema {
  return { type: 'string', description: `${description}, as a JSON Pointer relative to this tool's data.` };
}

/**
 * The output schema of a write: its own fields plus `table_version`, the version the write made,
 * which the caller that stores the context adds (and an agent passes on as `expected_version`).
 */
export function writeOutputSchema(properties: Record<string, JsonSchema>): JsonSchema {
  return outputSchema({
    ...properties,
    table_version: {
      type: 'integer',
      minimum: 1,
      description: 'The table version this write made: pass it as expected_version to chain writes.',
    },
  });
}
