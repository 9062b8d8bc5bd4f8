/** `preview`: a page of items (array) or entries (object), optionally cut down to `preview_keys`. */
import { isJsonObject, ownChild, setOwn, type JsonObject, type JsonValue } from '../json.ts';
import type { ReadOperation } from '../operation.ts';
import { configSchema, objectSchema, wrappedOutputSchema } from './schema-fragments.ts';

export const DEFAULT_PREVIEW_LIMIT = 50;
export const MAX_PREVIEW_LIMIT = 1_000;

interface PreviewArgs {
  offset?: number;
  limit?: number;
}
interface PreviewConfig {
  preview_keys?: string[];
}

export const preview: ReadOperation<PreviewArgs, PreviewConfig> = {
  definition: {
    type: 'preview',
    kind: 'read',
    summary: 'Returns a page of the items (or entries) of the data, showing only their key fields.',
    inputSchema: objectSchema({
      offset: {
        type: 'integer',
        minimum: 0,
        default: 0,
        description: 'Number of items (or object entries) to skip before the page starts. Defaults to 0.',
      },
      limit: {
        type: 'integer',
        minimum: 1,
        maximum: MAX_PREVIEW_LIMIT,
        default: DEFAULT_PREVIEW_LIMIT,
        description: `Maximum number of items (or object entries) in the page, 1 to ${MAX_PREVIEW_LIMIT}. Defaults to ${DEFAULT_PREVIEW_LIMIT}.`,
      },
    }),
    configSchema: configSchema({
      preview_keys: {
        type: 'array',
        items: { type: 'string' },
        minItems: 1,
        maxItems: 100,
        uniqueItems: true,
        description: 'Keys kept on each object item of a preview; other keys are left out.',
      },
    }),
    outputSchema: wrappedOutputSchema(
      'The page: {items, total, offset, limit} (object data: items are {key, value}), or the data itself when nothing is projected or paged.',
    ),
  },
  run: ({ node, args, config }) => {
    const keys = config.preview_keys;
    // DESIGN.md §5: with nothing to project and no paging asked for, preview is get_all.
    if (keys === undefined && args.offset === undefined && args.limit === undefined) return node;
    const offset = args.offset ?? 0;
    const limit = args.limit ?? DEFAULT_PREVIEW_LIMIT;
    const project = (value: JsonValue): JsonValue => (keys === undefined ? value : projectValue(value, keys));

    if (Array.isArray(node)) {
      return { items: node.slice(offset, offset + limit).map(project), total: node.length, offset, limit };
    }
    if (isJsonObject(node)) {
      const keysOfNode = Object.keys(node);
      const items = keysOfNode
        .slice(offset, offset + limit)
        .map((key): JsonValue => ({ key, value: project(node[key] as JsonValue) }));
      return { items, total: keysOfNode.length, offset, limit };
    }
    return node;
  },
};

function projectValue(value: JsonValue, keys: readonly string[]): JsonValue {
  if (!isJsonObject(value)) return value;
  const projected: JsonObject = {};
  for (const key of keys) {
    const child = ownChild(value, key);
    if (child !== undefined) setOwn(projected, key, child);
  }
  return projected;
}
