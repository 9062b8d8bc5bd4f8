/**
 * Tool names for imported operations: the `operationId` made fit for `^[A-Za-z0-9_.-]{1,64}$`, or
 * `<method>_<path>` when there is none; a name already taken gets a suffix hashed from the
 * operation's method and path, so it is the same on every import of the document.
 */
import { shortHash } from '../../tool-naming.ts';

const MAX_NAME = 64;
const SUFFIX = 7; // "_" and 6 hash characters

/** `text` with every character outside [A-Za-z0-9_.-] replaced by "_" (runs collapsed), cut to 64. */
export function sanitizeName(text: string, fallback: string): string {
  const cleaned = text
    .replace(/[^A-Za-z0-9_.-]+/g, '_')
    .replace(/_{2,}/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, MAX_NAME);
  return cleaned === '' ? fallback : cleaned;
}

/** The base name of an operation, before clashes are settled. */
export function operationBaseName(operationId: string | undefined, method: string, path: string): string {
  const generated = sanitizeName(`${method.toLowerCase()}_${path}`, method.toLowerCase());
  return operationId === undefined ? generated : sanitizeName(operationId, generated);
}

/**
 * Gives each operation (in document order) its base name, or when that is taken the base name cut
 * to fit and suffixed with a hash of `identity` (its method and path).
 */
export class ToolNames {
  private readonly taken = new Set<string>();

  claim(base: string, identity: string): string {
    let name = base;
    for (let attempt = 0; this.taken.has(name); attempt++) {
      const seed = attempt === 0 ? identity : `${identity}#${attempt}`;
      name = `${base.slice(0, MAX_NAME - SUFFIX)}_${shortHash(seed)}`;
    }
    this.taken.add(name);
    return name;
  }
}
