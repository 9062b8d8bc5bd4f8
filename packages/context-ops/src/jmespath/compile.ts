/**
 * Compiling a JMESPath expression written by a user (a `query` argument, an HTTP tool's
 * `result_path`): bounded in length, refused when it does not parse or would build a `__proto__` key.
 */
import { compile } from '@jmespath-community/jmespath';
import { OpError } from '../errors.ts';
import type { ExpressionNode } from './interpreter.ts';

/** The expression's syntax tree; throws INVALID_QUERY (`details.stage` "syntax") when it cannot run. */
export function compileQuery(expression: string, maxLength: number): ExpressionNode {
  if (expression.length > maxLength) {
    throw new OpError(
      'INVALID_QUERY',
      `The query is ${expression.length} characters long; the limit is ${maxLength}.`,
      { length: expression.length, max_length: maxLength },
    );
  }
  let ast: ExpressionNode;
  try {
    ast = compile(expression);
  } catch (error) {
    throw invalidQuery('syntax', error);
  }
  refuseProtoKeys(ast);
  return ast;
}

export function invalidQuery(stage: 'syntax' | 'evaluation', error: unknown): OpError {
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
