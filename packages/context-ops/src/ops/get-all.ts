/** `get_all`: the whole context node. */
import type { ReadOperation } from '../operation.ts';
import { configSchema, objectSchema, wrappedOutputSchema } from './schema-fragments.ts';

export const getAll: ReadOperation = {
  definition: {
    type: 'get_all',
    kind: 'read',
    summary: 'Returns all of the data.',
    inputSchema: objectSchema({}),
    configSchema: configSchema({}),
    outputSchema: wrappedOutputSchema('All of the data.'),
  },
  run: ({ node }) => node,
};
