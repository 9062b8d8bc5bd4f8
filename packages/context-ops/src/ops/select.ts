/** `select`: whole children picked by object key, array index, or the value of `id_field`. */
import { OpError } from '../errors.ts';
import { describeType, isJsonObject, jsonTypeOf, ownChild, type JsonValue } from '../json.ts';
import type { ReadOperation } from '../operation.ts';
import { isArrayIndexToken } from '../resolve.ts';
import { configSchema, objectSchema, outputSchema } from './schema-fragments.ts';

export const MAX_SELECT_KEYS = 1_000;

type SelectKey = string | number;
interface SelectArgs {
  keys: SelectKey[];
}
interface SelectConfig {
  id_field?: string;
}

export const select: ReadOperation<SelectArgs, SelectConfig> = {
  definition: {
    type: 'select',
    kind: 'read',
    summary: 'Returns the complete items (or entries) with the given keys, indexes or ids.',
    inputSchema: objectSchema(
      {
        keys: {
          type: 'array',
          items: { type: ['string', 'integer'] },
          minItems: 1,
          maxItems: MAX_SELECT_KEYS,
          description:
            'Which children to return: object keys when the data is an object; 0-based indexes when it is ' +
            'an array (or the values of its id field, when one is configured). Keys not found are listed in `missing`.',
        },
      },
      ['keys'],
    ),
    configSchema: configSchema({
      id_field: {
        type: 'string',
        minLength: 1,
        description:
          'For array data: the item field whose value `select` matches keys against, instead of indexes.',
      },
    }),
    outputSchema: outputSchema({
      items: { type: 'array', description: 'The complete items found, in the order of `keys`.' },
      missing: { type: 'array', items: { type: ['string', 'integer'] }, description: 'The keys not found.' },
    }),
  },
  run: ({ node, args, config }) => {
    const keys = unique(args.keys);
    if (Array.isArray(node)) {
      return config.id_field === undefined ? byIndex(node, keys) : byId(node, keys, config.id_field);
    }
    if (isJsonObject(node)) {
      const items: JsonValue[] = [];
      const missing: JsonValue[] = [];
      for (const key of keys) {
        const child = ownChild(node, String(key));
        if (child === undefined) missing.push(key);
        else items.push(child);
      }
      return { items, missing };
    }
    throw new OpError(
      'VALIDATION_FAILED',
      `select needs object or array data, but the data is ${describeType(node)}`,
      {
        node_type: jsonTypeOf(node),
      },
    );
  },
};

// 3 and "3" name the same child, so duplicates are dropped by their text (first spelling kept).
function unique(keys: readonly SelectKey[]): SelectKey[] {
  const seen = new Set<string>();
  const result: SelectKey[] = [];
  for (const key of keys) {
    if (seen.has(String(key))) continue;
    seen.add(String(key));
    result.push(key);
  }
  return result;
}

function byIndex(array: readonly JsonValue[], keys: readonly SelectKey[]): JsonValue {
  const items: JsonValue[] = [];
  const missing: JsonValue[] = [];
  for (const key of keys) {
    const index = typeof key === 'number' ? key : isArrayIndexToken(key) ? Number(key) : -1;
    const item = index >= 0 ? array[index] : undefined;
    if (item === undefined) missing.push(key);
    else items.push(item);
  }
  return { items, missing };
}

// Agents often send ids as strings ("42") for numeric ids and vice versa, so string and number ids
// match by their text; every item carrying a requested id is returned, in the order of `keys`.
function byId(array: readonly JsonValue[], keys: readonly SelectKey[], idField: string): JsonValue {
  const wanted = new Map<string, JsonValue[]>(keys.map((key) => [String(key), []]));
  for (const item of array) {
    if (!isJsonObject(item)) continue;
    const id = ownChild(item, idField);
    if (typeof id !== 'string' && typeof id !== 'number') continue;
    wanted.get(String(id))?.push(item);
  }
  const items: JsonValue[] = [];
  const missing: JsonValue[] = [];
  for (const key of keys) {
    const found = wanted.get(String(key)) ?? [];
    if (found.length === 0) missing.push(key);
    else for (const item of found) items.push(item);
  }
  return { items, missing };
}
