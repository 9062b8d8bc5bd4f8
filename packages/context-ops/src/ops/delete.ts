/** `delete`: removes the value at `path` (never the whole context). */
import { OpError } from '../errors.ts';
import { removeAt } from '../json-patch.ts';
import type { WriteOperation } from '../operation.ts';
import { formatPointer, parsePointerArgument } from '../pointer.ts';
import {
  configSchema,
  ITEM_SCHEMA_CONFIG,
  writeInputSchema,
  writeOutputSchema,
  answerPointer,
} from './schema-fragments.ts';

interface DeleteArgs {
  path: string;
}

export const deleteOperation: WriteOperation<DeleteArgs> = {
  definition: {
    type: 'delete',
    kind: 'write',
    summary: 'Removes a value from the data.',
    inputSchema: writeInputSchema(
      {
        path: {
          type: 'string',
          minLength: 1,
          description:
            'The value to remove, as a JSON Pointer relative to this tool\'s data, e.g. "/items/0" or "/settings/theme" ' +
            '(escape "~" as "~0" and "/" as "~1"). The whole data ("") cannot be deleted. Later array items shift down.',
        },
      },
      ['path'],
    ),
    configSchema: configSchema(ITEM_SCHEMA_CONFIG),
    outputSchema: writeOutputSchema({
      pointer: answerPointer('What was deleted'),
      value: { description: 'The value removed.' },
    }),
  },
  run: ({ node, args }) => {
    const tokens = parsePointerArgument(args.path, 'path');
    if (tokens.length === 0) {
      throw new OpError('VALIDATION_FAILED', '`path` "" is the whole data, which delete cannot remove', {
        argument: 'path',
        pointer: '',
      });
    }
    const { root, removed } = removeAt(node, tokens, { argument: 'path', pointer: args.path });
    return {
      context: root,
      result: { pointer: formatPointer(tokens), value: removed },
      // Removing a direct child changes no other child; removing deeper changes its top-level ancestor.
      touched: tokens.length > 1 ? tokens.slice(0, 1) : [],
    };
  },
};
