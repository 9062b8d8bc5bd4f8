/**
 * Guards on a JSON value an agent sends to be written (`value` of create/update): it must be plain
 * JSON, no deeper than the depth limit, and free of `__proto__` keys.
 */
import { OpError } from './errors.ts';
import type { JsonValue } from './json.ts';
import { escapePointerToken } from './pointer.ts';

/**
 * Returns `value` typed as JSON, or throws VALIDATION_FAILED when it is not plain JSON, nests more
 * than `maxDepth` containers, or holds a `__proto__` key.
 */
export function checkValueArgument(value: unknown, argument: string, maxDepth: number): JsonValue {
  visit(value, argument, maxDepth, 0, '');
  return value as JsonValue;
}

// Recursion stops at maxDepth + 1, so a hostile, very deep value cannot overflow the stack here.
function visit(value: unknown, argument: string, maxDepth: number, depth: number, at: string): void {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return;
  if (typeof value === 'number') {
    if (Number.isFinite(value)) return;
    throw invalid(argument, at, `${String(value)} is not a JSON number`);
  }
  if (typeof value !== 'object') throw invalid(argument, at, `a ${typeof value} is not JSON`);
  if (depth + 1 > maxDepth) {
    throw new OpError(
      'VALIDATION_FAILED',
      `\`${argument}\` is nested deeper than the limit of ${maxDepth} levels`,
      { argument, max_depth: maxDepth, pointer: at },
    );
  }
  if (Array.isArray(value)) {
    value.forEach((item, index) => visit(item, argument, maxDepth, depth + 1, `${at}/${index}`));
    return;
  }
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) {
    throw invalid(argument, at, 'only plain JSON objects can be stored');
  }
  for (const key of Object.keys(value)) {
    if (key === '__proto__') {
      // A stored "__proto__" key turns into a prototype swap for any later code that copies with
      // assignment, so it is refused at the door.
      throw invalid(argument, at, 'the key "__proto__" is not allowed');
    }
    visit(
      (value as Record<string, unknown>)[key],
      argument,
      maxDepth,
      depth + 1,
      `${at}/${escapePointerToken(key)}`,
    );
  }
}

function invalid(argument: string, at: string, reason: string): OpError {
  const where = at === '' ? '' : ` at ${at}`;
  return new OpError('VALIDATION_FAILED', `\`${argument}\`${where}: ${reason}`, { argument, pointer: at });
}
