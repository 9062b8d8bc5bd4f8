/** `query`: a JMESPath expression evaluated on the context node. */
import { compile } from '@jmespath-community/jmespath';
import { OpError } from '../errors.ts';
import { evaluate } from '../jmespath/interpreter.ts';
import { limitExceeded } from '../jmespath/meter.ts';
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
    try {
      return evaluate(ast, node, limits.query);
    } catch (error) {
      if (error instanceof OpError) throw error;
      // The engine's own size limits, met by a string or array the meter did not see coming.
      if (error instanceof RangeError && /Invalid (string|array|typed array) length/.test(error.message)) {
        throw limitExceeded('memory', limits.query);
      }
      throw invalidQuery('evaluation', error);
    }
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
