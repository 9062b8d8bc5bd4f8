/**
 * JSON Pointers (RFC 6901), parsed strictly: every path an agent passes is relative to its context,
 * so tokens that only make sense as an attempt to climb or to reach object internals are refused.
 */
import { OpError } from './errors.ts';

// `..` and `.` mean nothing special in RFC 6901, but an agent sending them is trying to climb out of
// its context; refusing them gives it a clear answer instead of a confusing NOT_FOUND.
const CLIMBING_TOKENS: ReadonlySet<string> = new Set(['..', '.']);
// Object internals: never data a tool should read or write (prototype pollution).
const RESERVED_TOKENS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * Splits an RFC 6901 pointer into unescaped tokens (`""` gives `[]`); throws VALIDATION_FAILED for a
 * missing leading `/`, a bad `~` escape, a `.`/`..` token or a reserved token (`__proto__`,
 * `constructor`, `prototype`).
 */
export function parsePointer(pointer: string): string[] {
  return parsePointerArgument(pointer, undefined);
}

/** Like parsePointer, naming the agent's argument (`path`, `from`, ...) in messages and details. */
export function parsePointerArgument(pointer: string, argument: string | undefined): string[] {
  const label = argument === undefined ? 'JSON Pointer' : `\`${argument}\``;
  const details = (extra: Record<string, unknown>): Record<string, unknown> =>
    argument === undefined ? { pointer, ...extra } : { argument, pointer, ...extra };

  if (typeof pointer !== 'string') {
    throw new OpError('VALIDATION_FAILED', `${label} must be a string`, details({}));
  }
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) {
    throw new OpError(
      'VALIDATION_FAILED',
      `${label} "${pointer}" is not a JSON Pointer: use "" for the context itself or start with "/", e.g. "/items/0"`,
      details({ reason: 'missing_leading_slash' }),
    );
  }
  return pointer
    .slice(1)
    .split('/')
    .map((raw) => {
      if (/~(?![01])/.test(raw)) {
        throw new OpError(
          'VALIDATION_FAILED',
          `${label} "${pointer}" has a bad escape in "${raw}": "~" must be followed by 0 ("~0" = "~") or 1 ("~1" = "/")`,
          details({ token: raw, reason: 'bad_escape' }),
        );
      }
      // RFC 6901 §4: ~1 first, then ~0, so "~01" decodes to "~1" and not "/".
      const token = raw.replace(/~1/g, '/').replace(/~0/g, '~');
      checkAddressable(token, `${label} "${pointer}"`, details);
      return token;
    });
}

/** Joins unescaped tokens into an RFC 6901 pointer (`[]` gives `""`). */
export function formatPointer(tokens: readonly string[]): string {
  return tokens.map((token) => `/${escapePointerToken(token)}`).join('');
}

/** Escapes one token for a pointer: `~` as `~0`, `/` as `~1`. */
export function escapePointerToken(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

/**
 * Throws VALIDATION_FAILED when `key` could not be addressed by a pointer (`.`, `..`, `__proto__`,
 * `constructor`, `prototype`), so an operation never creates a key it could not reach again.
 */
export function checkObjectKey(key: string, argument: string): void {
  checkAddressable(key, `\`${argument}\``, (extra) => ({ argument, ...extra }));
}

function checkAddressable(
  token: string,
  subject: string,
  details: (extra: Record<string, unknown>) => Record<string, unknown>,
): void {
  if (CLIMBING_TOKENS.has(token)) {
    throw new OpError(
      'VALIDATION_FAILED',
      `${subject} contains "${token}": paths are relative to the context and cannot climb out of it`,
      details({ token, reason: 'climbing_token' }),
    );
  }
  if (RESERVED_TOKENS.has(token)) {
    throw new OpError(
      'VALIDATION_FAILED',
      `${subject} contains the reserved name "${token}", which no tool may read or write`,
      details({ token, reason: 'reserved_token' }),
    );
  }
}
