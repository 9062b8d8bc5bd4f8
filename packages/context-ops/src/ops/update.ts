/** `update`: replaces the value at `path`, or merges into it (RFC 7396) with `merge: true`. */
import { replaceAt } from '../copy-on-write.ts';
import { isJsonObject, type JsonValue } from '../json.ts';
import { mergePatch } from '../merge-patch.ts';
import type { TouchedChildren, WriteOperation } from '../operation.ts';
import { formatPointer, parsePointerArgument } from '../pointer.ts';
import { resolveTokens } from '../resolve.ts';
import {
  configSchema,
  ITEM_SCHEMA_CONFIG,
  writeInputSchema,
  pointerProperty,
  valueProperty,
  writeOutputSchema,
  answerPointer,
} from './schema-fragments.ts';

interface UpdateArgs {
  path: string;
  value: JsonValue;
  merge?: boolean;
}

export const update: WriteOperation<UpdateArgs> = {
  definition: {
    type: 'update',
    kind: 'write',
    summary: 'Replaces a value in the data, or merges changes into it.',
    inputSchema: writeInputSchema(
      {
        path: pointerProperty('The existing value to change,', '/items/0'),
        value: valueProperty(
          'The new JSON value. With `merge: true`, a JSON merge patch instead: its keys are set, keys set to null are removed, nested objects are merged.',
        ),
        merge: {
          type: 'boolean',
          default: false,
          description:
            'true: merge `value` into the existing value (RFC 7396 JSON Merge Patch); false (default): replace it.',
        },
      },
      ['path', 'value'],
    ),
    configSchema: configSchema(ITEM_SCHEMA_CONFIG),
    outputSchema: writeOutputSchema({
      pointer: answerPointer('What was updated'),
      value: { description: 'The value now there.' },
    }),
  },
  run: ({ node, args }) => {
    const tokens = parsePointerArgument(args.path, 'path');
    const current = resolveTokens(node, tokens, { argument: 'path', pointer: args.path });
    const next = args.merge === true ? mergePatch(current, args.value) : args.value;
    return {
      context: replaceAt(node, tokens, next),
      result: { pointer: formatPointer(tokens), value: next },
      touched: touchedChildren(tokens, current, args),
    };
  },
};

// A merge into the whole context only changes the children its patch names; any other whole-context
// update may have changed every child.
function touchedChildren(tokens: readonly string[], current: JsonValue, args: UpdateArgs): TouchedChildren {
  if (tokens.length > 0) return tokens.slice(0, 1);
  if (args.merge === true && isJsonObject(current) && isJsonObject(args.value))
    return Object.keys(args.value);
  return 'all';
}
