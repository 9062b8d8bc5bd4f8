/**
 * Tool arguments the platform cannot store as sent, refused by the gateway before anything runs.
 * A number such as `1e999` parses to Infinity here and would reach the control plane as `null`
 * (that is how JSON writes it), so only the gateway can still see it; NULs and lone surrogates are
 * refused with the same message the control plane would give, without the round trip.
 */
import { findUnstorable, printable, unstorableMessage, type ToolError } from '@bindery/contracts';

/**
 * The `VALIDATION_FAILED` error of the first unstorable key or value in `value`, or undefined.
 * `at` is where `value` sits in the tool's arguments (`/executions/0/parameters` for an
 * `execute_apis` item); the message and `details.pointer` name the place from the arguments down.
 */
export function unstorableArguments(value: unknown, at = ''): ToolError['error'] | undefined {
  const found = findUnstorable(value, at);
  if (!found) return undefined;
  return {
    code: 'VALIDATION_FAILED',
    message: unstorableMessage('arguments', found),
    details: { pointer: printable(found.pointer), problem: found.problem },
  };
}
