/** `move`: RFC 6902 move of the value at `from` to `to`, both inside the context. */
import { OpError } from '../errors.ts';
import { addAt, removeAt } from '../json-patch.ts';
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

interface MoveArgs {
  from: string;
  to: string;
}

export const move: WriteOperation<MoveArgs> = {
  definition: {
    type: 'move',
    kind: 'write',
    summary: 'Moves a value to another place in the data.',
    inputSchema: writeInputSchema(
      {
        from: pointerProperty('The value to move,', '/items/0'),
        to: {
          type: 'string',
          description:
            'Where the value ends up, as a JSON Pointer relative to this tool\'s data: "/archive/-" appends to the ' +
            'array "/archive", "/items/2" inserts at index 2, "/done/x" sets key "x" of the object "/done" (replacing ' +
            'any value there). The parent must exist and `to` cannot be inside `from`.',
        },
      },
      ['from', 'to'],
    ),
    configSchema: configSchema(ITEM_SCHEMA_CONFIG),
    outputSchema: writeOutputSchema({
      from: answerPointer('Where the value was'),
      to: answerPointer('Where it is now'),
    }),
  },
  run: ({ node, args }) => {
    const fromTokens = parsePointerArgument(args.from, 'from');
    const toTokens = parsePointerArgument(args.to, 'to');
    const fromSource = { argument: 'from', pointer: args.from };
    if (isProperPrefix(fromTokens, toTokens)) {
      throw new OpError(
        'VALIDATION_FAILED',
        `Cannot move "${args.from}" into itself ("${args.to}" is inside it)`,
        {
          argument: 'to',
          from: args.from,
          to: args.to,
        },
      );
    }
    if (sameTokens(fromTokens, toTokens)) {
      resolveTokens(node, fromTokens, fromSource);
      return {
        context: node,
        result: { from: formatPointer(fromTokens), to: formatPointer(toTokens) },
        touched: [],
      };
    }
    // RFC 6902 §4.4: remove first, then add, so `to` is read against the data without the value.
    const { root, removed } = removeAt(node, fromTokens, fromSource);
    const placed = addAt(root, toTokens, removed, { argument: 'to', pointer: args.to });
    return {
      context: placed.root,
      result: { from: formatPointer(fromTokens), to: formatPointer(placed.tokens) },
      touched: touchedChildren(node, fromTokens, placed.tokens),
    };
  },
};

function isProperPrefix(prefix: readonly string[], tokens: readonly string[]): boolean {
  return prefix.length < tokens.length && prefix.every((token, i) => token === tokens[i]);
}

function sameTokens(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((token, i) => token === b[i]);
}

// The moved value's new top-level child, plus the top-level child it was taken out of (when it came
// from deeper down). That child's index shifts by one if the value was inserted into the context
// array in front of it.
function touchedChildren(
  context: unknown,
  fromTokens: readonly string[],
  finalTokens: readonly string[],
): readonly string[] | 'all' {
  const [target] = finalTokens;
  if (target === undefined) return 'all';
  const touched = [target];
  const [source] = fromTokens;
  if (fromTokens.length > 1 && source !== undefined) {
    const shifted = Array.isArray(context) && finalTokens.length === 1 && Number(target) <= Number(source);
    touched.push(shifted ? String(Number(source) + 1) : source);
  }
  return touched;
}
