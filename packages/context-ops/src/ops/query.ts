/** `query`: a JMESPath expression evaluated on the context node. */
import { compile, TreeInterpreter } from '@jmespath-community/jmespath';
import { OpError } from '../errors.ts';
import { isJsonObject, setOwn, type JsonObject, type JsonValue } from '../json.ts';
import type { ReadOperation } from '../operation.ts';
import { configSchema, objectSchema } from './schema-fragments.ts';

interface QueryArgs {
  query: string;
}

export const query: ReadOperation<QueryArgs> = {
  definition: {
    type: 'query',
    kind: 'read',
    summary: 'Runs a JMESPath expression on the data and returns its result.',
    inputSchema: objectSchema(
      {
        query: {
          type: 'string',
          minLength: 1,
          description:
            'A JMESPath expression evaluated on the data, e.g. "items[?status==\'open\'].{id: id, name: name}" ' +
            'or "length(@)". Select only the fields you need: large results are refused.',
        },
      },
      ['query'],
    ),
    configSchema: configSchema({}),
  },
  run: ({ node, args, limits }) => {
    const expression = args.query;
    if (expression.length > limits.maxQueryLength) {
      throw new OpError(
        'INVALID_QUERY',
        `The query is ${expression.length} characters long; the limit is ${limits.maxQueryLength}.`,
        { length: expression.length, max_length: limits.maxQueryLength },
      );
    }
    let ast: ReturnType<typeof compile>;
    try {
      ast = compile(expression);
    } catch (error) {
      throw invalidQuery('syntax', error);
    }
    refuseProtoKeys(ast);
    // The library reads fields with `value[name]`, so a field named after an Object.prototype member
    // (`constructor`, `toString`, ...) would return a function or the prototype itself. Such queries
    // run on a prototype-free copy of the data, where only own keys exist.
    const data = readsPrototypeNames(ast) ? withoutPrototypes(node) : node;
    let result: unknown;
    try {
      result = TreeInterpreter.search(ast, data);
    } catch (error) {
      throw invalidQuery('evaluation', error);
    }
    return data === node ? (result as JsonValue) : withPrototypes(result as JsonValue);
  },
};

function invalidQuery(stage: 'syntax' | 'evaluation', error: unknown): OpError {
  const message = error instanceof Error ? error.message : String(error);
  const lead = stage === 'syntax' ? 'The query is not valid JMESPath' : 'The query failed on this data';
  return new OpError('INVALID_QUERY', `${lead}: ${message}`, { stage, message });
}

// `{__proto__: x}` would be assigned onto a plain object by the library, swapping its prototype.
function refuseProtoKeys(ast: unknown): void {
  if (Array.isArray(ast)) return ast.forEach(refuseProtoKeys);
  if (typeof ast !== 'object' || ast === null) return;
  const node = ast as Record<string, unknown>;
  if (node.type === 'KeyValuePair' && node.name === '__proto__') {
    throw new OpError('INVALID_QUERY', 'The query may not build an object with the key "__proto__".', {
      stage: 'syntax',
      message: 'reserved key __proto__',
    });
  }
  Object.values(node).forEach(refuseProtoKeys);
}

function readsPrototypeNames(ast: unknown): boolean {
  if (Array.isArray(ast)) return ast.some(readsPrototypeNames);
  if (typeof ast !== 'object' || ast === null) return false;
  const node = ast as Record<string, unknown>;
  if (node.type === 'Field' && typeof node.name === 'string' && node.name in Object.prototype) return true;
  return Object.values(node).some(readsPrototypeNames);
}

function withoutPrototypes(value: JsonValue): JsonValue {
  if (Array.isArray(value)) return value.map(withoutPrototypes);
  if (!isJsonObject(value)) return value;
  const copy = Object.create(null) as JsonObject;
  for (const key of Object.keys(value)) copy[key] = withoutPrototypes(value[key] as JsonValue);
  return copy;
}

function withPrototypes(value: JsonValue): JsonValue {
  if (Array.isArray(value)) return value.map(withPrototypes);
  if (!isJsonObject(value)) return value;
  const copy: JsonObject = {};
  for (const key of Object.keys(value)) setOwn(copy, key, withPrototypes(value[key] as JsonValue));
  return copy;
}
