/**
 * Paths in sidebar commands. A command's path is relative to the session's context and written as
 * a JSON Pointer, its leading "/" optional ("0/name" = "/0/name"); "", "." and "/" are the context
 * itself. `cd` also takes "..".
 */
import { formatPointer, parsePointerArgument } from '@bindery/context-ops';
import { fromOpError } from '../domain/errors.ts';

/** The tokens of a command's path, relative to the context. */
export function relativeTokens(path: string | undefined, argument = 'path'): string[] {
  if (path === undefined || path === '' || path === '.' || path === '/') return [];
  const pointer = path.startsWith('/') ? path : `/${path}`;
  return fromOpError(() => parsePointerArgument(pointer, argument));
}

/** A pointer from the table's root, as stored ("" or "/a/b"). */
export function contextPointer(path: string): string {
  return formatPointer(relativeTokens(path));
}

/** `cd`: the context's tokens moved by `path` ("..", "../x", "items/0"). */
export function moved(tokens: readonly string[], path: string): string[] {
  const out = [...tokens];
  const parts = path
    .replace(/^\/+/, '')
    .split('/')
    .filter((p) => p !== '' && p !== '.');
  for (const part of parts) {
    if (part === '..') out.pop();
    else out.push(...relativeTokens(part));
  }
  return out;
}
