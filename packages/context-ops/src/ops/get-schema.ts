/** `get_schema`: a JSON Schema inferred from the context node. */
import type { JsonValue } from '../json.ts';
import type { ReadOperation } from '../operation.ts';
import { inferSchema } from '../schema-inference.ts';
import { configSchema, objectSchema } from './schema-fragments.ts';

export const getSchema: ReadOperation = {
  definition: {
    type: 'get_schema',
    kind: 'read',
    summary: 'Returns a JSON Schema describing the structure of the data.',
    inputSchema: objectSchema({}),
    configSchema: configSchema({}),
    outputSchema: { type: 'object', description: 'A JSON Schema (2020-12) inferred from the data.' },
  },
  // inferSchema builds plain JSON; its public type is the looser JsonSchema.
  run: ({ node }) => inferSchema(node) as JsonValue,
};
