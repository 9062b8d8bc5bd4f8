/** `copy`: RFC 6902 copy of the value at `from` to `to`, both inside the context. */
import { addAt } from '../json-patch.ts';
import type { WriteOperation } from '../operation.ts';
import { formatPointer, parsePointerArgument } from '../pointer.ts';
import { resolveTokens } from '../resolve.ts';
import {
  configSchema,
  ITEM_SCHEMA_CONFIG,
  pointerProperty,
  writeInputSchema,
  writeOutputSchema,
  answerPointer,
} from './schema-fragments.ts';

interface CopyArgs {
  from: string;
  to: string;
}

export const copy: WriteOperation<CopyArgs> = {
  definition: {
    type: 'copy',
    kind: 'write',
    summary: 'Copies a value to another place in the data.',
    inputSchema: writeInputSchema(
      {
        from: pointerProperty('The value to copy,', '/templates/0'),
        to: {
          type: 'string',
          description:
            'Where the copy goes, as a JSON Pointer relative to this tool\'s data: "/items/-" appends to the array ' +
            '"/items", "/items/2" inserts at index 2, "/drafts/x" sets key "x" of the object "/drafts" (replacing any ' +
            'value there). The parent must exist.',
        },
      },
      ['from', 'to'],
    ),
    configSchema: configSchema(ITEM_SCHEMA_CONFIG),
    outputSchema: writeOutputSchema({
      from: answerPointer('What was copied'),
      to: answerPointer('Where the copy is'),
    }),
  },
  run: ({ node, args }) => {
    const fromTokens = parsePointerArgument(args.from, 'from');
    const toTokens = parsePointerArgument(args.to, 'to');
    const value = resolveTokens(node, fromTokens, { argument: 'from', pointer: args.from });
    // The copy shares structure with its original; that is safe because no write ever mutates a
    // node in place (copy-on-write), and it keeps a large copy cheap.
    const placed = addAt(node, toTokens, value, { argument: 'to', pointer: args.to });
    return {
      context: placed.root,
      result: { from: formatPointer(fromTokens), to: formatPointer(placed.tokens) },
      touched: placed.tokens.length === 0 ? 'all' : placed.tokens.slice(0, 1),
    };
  },
};
