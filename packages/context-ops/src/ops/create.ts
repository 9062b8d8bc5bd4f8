/** `create`: adds a new value under an object (by `key`) or an array (at `index`, default append). */
import { editContainer, setChild } from '../copy-on-write.ts';
import { OpError } from '../errors.ts';
import type { JsonValue } from '../json.ts';
import { insertIntoArray, resolveContainer } from '../json-patch.ts';
import type { WriteOperation } from '../operation.ts';
import { checkObjectKey, formatPointer, parsePointerArgument } from '../pointer.ts';
import {
  configSchema,
  ITEM_SCHEMA_CONFIG,
  writeInputSchema,
  pointerProperty,
  valueProperty,
  writeOutputSchema,
  answerPointer,
} from './schema-fragments.ts';

interface CreateArgs {
  path?: string;
  value: JsonValue;
  key?: string;
  index?: number;
}

export const create: WriteOperation<CreateArgs> = {
  definition: {
    type: 'create',
    kind: 'write',
    summary: 'Adds a new item to an array or a new key to an object in the data.',
    inputSchema: writeInputSchema(
      {
        path: {
          ...pointerProperty('Where to add: the object or array that receives the new value,', '/items'),
          default: '',
        },
        value: valueProperty('The JSON value to add.'),
        key: {
          type: 'string',
          description:
            'Required when `path` is an object: the new key. Creating a key that already exists fails with CONFLICT (use update instead).',
        },
        index: {
          type: 'integer',
          minimum: 0,
          description:
            'Only when `path` is an array: the 0-based position to insert at (later items shift). Leave it out to append.',
        },
      },
      ['value'],
    ),
    configSchema: configSchema(ITEM_SCHEMA_CONFIG),
    outputSchema: writeOutputSchema({
      pointer: answerPointer('Where the value was added'),
      value: { description: 'The value added.' },
    }),
  },
  run: ({ node, args }) => {
    const path = args.path ?? '';
    const source = { argument: 'path', pointer: path };
    const parentTokens = parsePointerArgument(path, 'path');
    const parent = resolveContainer(node, parentTokens, source);

    if (Array.isArray(parent)) {
      if (args.key !== undefined) {
        throw new OpError(
          'VALIDATION_FAILED',
          '`key` is only for objects; this `path` is an array (use `index`)',
          {
            argument: 'key',
            pointer: path,
          },
        );
      }
      const placed = insertIntoArray(
        node,
        parentTokens,
        parent.length,
        args.index ?? parent.length,
        args.value,
        {
          argument: 'index',
          pointer: path,
        },
      );
      return written(placed.root, placed.tokens, args.value);
    }

    if (args.index !== undefined) {
      throw new OpError(
        'VALIDATION_FAILED',
        '`index` is only for arrays; this `path` is an object (use `key`)',
        {
          argument: 'index',
          pointer: path,
        },
      );
    }
    const key = args.key;
    if (key === undefined) {
      throw new OpError('VALIDATION_FAILED', '`key` is required when `path` is an object', {
        argument: 'key',
        pointer: path,
      });
    }
    checkObjectKey(key, 'key');
    const tokens = [...parentTokens, key];
    if (Object.hasOwn(parent, key)) {
      throw new OpError(
        'CONFLICT',
        `"${formatPointer(tokens)}" already exists; create never overwrites (use update to change it)`,
        { pointer: formatPointer(tokens), key },
      );
    }
    const root = editContainer(node, parentTokens, (object) => setChild(object, key, args.value));
    return written(root, tokens, args.value);
  },
};

function written(root: JsonValue, tokens: readonly string[], value: JsonValue) {
  return {
    context: root,
    result: { pointer: formatPointer(tokens), value },
    touched: tokens.slice(0, 1),
  };
}
