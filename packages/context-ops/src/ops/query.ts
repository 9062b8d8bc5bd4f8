/** `query`: a JMESPath expression evaluated on the context node. */
import { OpError } from '../errors.ts';
import { compileQuery, invalidQuery } from '../jmespath/compile.ts';
import { evaluate } from '../jmespath/interpreter.ts';
import { limitExceeded } from '../jmespath/meter.ts';
import type { ReadOperation } from '../operation.ts';
import { configSchema, objectSchema, wrappedOutputSchema } from './schema-fragments.ts';

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
    outputSchema: wrappedOutputSchema('What the expression returned.'),
  },
  run: ({ node, args, limits }) => {
    const ast = compileQuery(args.query, limits.maxQueryLength);
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
