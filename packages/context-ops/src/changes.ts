/**
 * What a write changed, as a short list of edits, so a store keeps the edits instead of the whole
 * new document. Writes copy on write (only the containers on the path to an edit are new), so
 * comparing the old and new context by reference finds the edits in time proportional to the
 * containers that changed, not to the context. The edits apply to an older copy of the data (a
 * stored snapshot, a cached node), and a reader of one context can tell which edits reach it.
 *
 * Paths are pointer tokens from the table's root. Reading a path follows PostgreSQL's `#>`
 * (what the stored data is read with): an array token is an integer, a negative one counts from
 * the end; anything else finds nothing.
 */
import { isJsonObject, ownChild, setOwn, type JsonObject, type JsonValue } from './json.ts';

/** One edit of a table's data. */
export type DataChange =
  /** The node at `path` becomes `value` (a new or replaced object key, a replaced array item). */
  | { op: 'set'; path: string[]; value: JsonValue }
  /** The object key at `path` is removed. */
  | { op: 'remove'; path: string[] }
  /** The array at `path` loses `remove` items at `index`, and gets `insert` there instead. */
  | { op: 'splice'; path: string[]; index: number; remove: number; insert: JsonValue[] };

/** Edits of one version of a table, in order. */
export interface VersionChanges {
  version: number;
  changes: DataChange[];
}

/** Above this many edits a write is stored as one `set` of its whole context (simpler to replay). */
export const MAX_CHANGES = 10_000;

const CANONICAL_INDEX = /^(0|[1-9][0-9]*)$/;
// PostgreSQL reads an array token with strtol: optional blanks and sign, then digits only.
const POSTGRES_INDEX = /^[ \t\n\v\f\r]*[+-]?[0-9]+$/;
const INT32_MAX = 2 ** 31 - 1;

/**
 * The edits turning `before` into `after` (the context at `at`), or one `set` of the whole
 * context when they would be more than MAX_CHANGES. Unchanged subtrees must be shared by reference
 * (as the operations leave them): a copied but equal subtree is compared all the way down.
 */
export function diffChanges(
  before: JsonValue,
  after: JsonValue,
  at: readonly string[],
  maxChanges = MAX_CHANGES,
): DataChange[] {
  const out: DataChange[] = [];
  const path = [...at];
  if (!diffInto(before, after, path, out, maxChanges)) return [{ op: 'set', path: [...at], value: after }];
  return out;
}

/** Appends the edits to `out`; false once there are more than `max`. */
function diffInto(
  before: JsonValue,
  after: JsonValue,
  path: string[],
  out: DataChange[],
  max: number,
): boolean {
  if (before === after) return true;
  if (Array.isArray(before) && Array.isArray(after)) return diffArrays(before, after, path, out, max);
  if (isJsonObject(before) && isJsonObject(after)) return diffObjects(before, after, path, out, max);
  // Anything else (another scalar, another type) replaces the node.
  out.push({ op: 'set', path: [...path], value: after });
  return out.length <= max;
}

function diffObjects(before: JsonObject, after: JsonObject, path: string[], out: DataChange[], max: number) {
  for (const key of Object.keys(before)) {
    if (!Object.hasOwn(after, key)) {
      out.push({ op: 'remove', path: [...path, key] });
      if (out.length > max) return false;
    }
  }
  for (const key of Object.keys(after)) {
    const next = after[key] as JsonValue;
    const previous = ownChild(before, key);
    if (previous === undefined) {
      out.push({ op: 'set', path: [...path, key], value: next });
      if (out.length > max) return false;
      continue;
    }
    if (previous === next) continue;
    path.push(key);
    const ok = diffInto(previous, next, path, out, max);
    path.pop();
    if (!ok) return false;
  }
  return true;
}

/**
 * Where two arrays stop sharing items (by reference) from the start and from the end: `before`
 * differs from `after` in [start, endBefore) against [start, endAfter). The diff and the size
 * delta (json-size.ts) must cut arrays alike, so both take it from here.
 */
export function sharedEnds(
  before: readonly JsonValue[],
  after: readonly JsonValue[],
): { start: number; endBefore: number; endAfter: number } {
  let start = 0;
  const shortest = Math.min(before.length, after.length);
  while (start < shortest && before[start] === after[start]) start += 1;
  let endBefore = before.length;
  let endAfter = after.length;
  while (endBefore > start && endAfter > start && before[endBefore - 1] === after[endAfter - 1]) {
    endBefore -= 1;
    endAfter -= 1;
  }
  return { start, endBefore, endAfter };
}

/**
 * Items shared at both ends are kept; the middle is compared item by item when it kept its length
 * (items edited in place), else it is one splice (items added or removed, possibly edited).
 */
function diffArrays(before: JsonValue[], after: JsonValue[], path: string[], out: DataChange[], max: number) {
  const { start, endBefore, endAfter } = sharedEnds(before, after);
  if (endBefore - start === endAfter - start) {
    for (let i = start; i < endBefore; i += 1) {
      path.push(String(i));
      const ok = diffInto(before[i] as JsonValue, after[i] as JsonValue, path, out, max);
      path.pop();
      if (!ok) return false;
    }
    return true;
  }
  out.push({
    op: 'splice',
    path: [...path],
    index: start,
    remove: endBefore - start,
    insert: after.slice(start, endAfter),
  });
  return out.length <= max;
}

/** PostgreSQL's reading of `token` as an index into an array of `length` items, or undefined. */
function postgresIndex(token: string, length: number): number | undefined {
  if (!POSTGRES_INDEX.test(token)) return undefined;
  let index = Number(token.trim());
  if (!Number.isSafeInteger(index) || Math.abs(index) > INT32_MAX) return undefined;
  if (index < 0) index += length;
  return index >= 0 && index < length ? index : undefined;
}

/** The child `token` of `node` as PostgreSQL's `#>` finds it, or undefined. */
function childOf(node: JsonValue, token: string): JsonValue | undefined {
  if (Array.isArray(node)) {
    const index = postgresIndex(token, node.length);
    return index === undefined ? undefined : node[index];
  }
  return isJsonObject(node) ? ownChild(node, token) : undefined;
}

/** The node at `tokens` under `node` as PostgreSQL's `data #> tokens` finds it, or undefined. */
export function nodeAtTokens(node: JsonValue | undefined, tokens: readonly string[]): JsonValue | undefined {
  let current = node;
  for (const token of tokens) {
    if (current === undefined) return undefined;
    current = childOf(current, token);
  }
  return current;
}

/** Thrown when edits do not fit the data they are applied to (the data and its edits disagree). */
export class ChangeMismatch extends Error {
  override name = 'ChangeMismatch';
}

/**
 * `root` with `changes` applied in order, never mutating `root`: containers on the edited paths
 * are copied once per call, everything else is shared. Throws ChangeMismatch when a path does not
 * lead where its edit needs.
 */
export function applyChanges(root: JsonValue, changes: readonly DataChange[]): JsonValue {
  const copies = new WeakSet<object>();
  let out = root;
  for (const change of changes) out = applyChange(out, change, copies);
  return out;
}

type Container = JsonObject | JsonValue[];

function copyOf(node: JsonValue, copies: WeakSet<object>): Container {
  if (Array.isArray(node)) {
    if (copies.has(node)) return node;
    const copy = node.slice();
    copies.add(copy);
    return copy;
  }
  if (isJsonObject(node)) {
    if (copies.has(node)) return node;
    const copy = { ...node };
    copies.add(copy);
    return copy;
  }
  throw new ChangeMismatch('an edit reaches inside a scalar');
}

function applyChange(root: JsonValue, change: DataChange, copies: WeakSet<object>): JsonValue {
  const { path } = change;
  if (path.length === 0) {
    if (change.op === 'set') return change.value;
    if (change.op === 'remove') throw new ChangeMismatch('the root cannot be removed');
  }
  const top = copyOf(root, copies);
  // The container the edit happens in: the parent of `path`, or the array itself for a splice.
  const depth = change.op === 'splice' ? path.length : path.length - 1;
  let container = top;
  for (let i = 0; i < depth; i += 1) {
    const token = path[i] as string;
    const child = childOf(container, token);
    if (child === undefined) throw new ChangeMismatch(`no node at "${path.slice(0, i + 1).join('/')}"`);
    const copy = copyOf(child, copies);
    setChildOf(container, token, copy);
    container = copy;
  }
  switch (change.op) {
    case 'set': {
      const token = path[path.length - 1] as string;
      if (Array.isArray(container)) {
        const index = postgresIndex(token, container.length);
        if (index === undefined) throw new ChangeMismatch(`no array item "${token}" to replace`);
        container[index] = change.value;
      } else setOwn(container, token, change.value);
      break;
    }
    case 'remove': {
      const token = path[path.length - 1] as string;
      if (Array.isArray(container) || !Object.hasOwn(container, token)) {
        throw new ChangeMismatch(`no object key "${token}" to remove`);
      }
      delete container[token];
      break;
    }
    case 'splice': {
      if (!Array.isArray(container) || change.index + change.remove > container.length) {
        throw new ChangeMismatch('a splice does not fit its array');
      }
      spliceInPlace(container, change.index, change.remove, change.insert);
      break;
    }
  }
  return top;
}

function setChildOf(container: Container, token: string, value: JsonValue): void {
  if (Array.isArray(container)) {
    const index = postgresIndex(token, container.length);
    if (index === undefined) throw new ChangeMismatch(`no array item "${token}"`);
    container[index] = value;
  } else setOwn(container, token, value);
}

// Spreading a large `insert` into splice() would overflow the call's argument limit.
function spliceInPlace(
  array: JsonValue[],
  index: number,
  remove: number,
  insert: readonly JsonValue[],
): void {
  if (insert.length <= 1024) {
    array.splice(index, remove, ...insert);
    return;
  }
  const tail = array.slice(index + remove);
  array.length = index;
  for (const item of insert) array.push(item);
  for (const item of tail) array.push(item);
}

/** A context known to exist whose value is not at hand (enough to answer "is it still there?"). */
export const PRESENT: unique symbol = Symbol('present');

/** A context's value (undefined when it does not exist), or PRESENT. */
export type ContextState = JsonValue | undefined | typeof PRESENT;

/**
 * What edits do to the context at `at`: its new state, or `{ rereadFrom: depth }` when an edit
 * may have moved it (items spliced into an array above it, an index that could name the same item
 * as another): the context is then found again from its ancestor `at.slice(0, depth)`, read
 * before the edits.
 */
export function advanceContext(
  state: ContextState,
  at: readonly string[],
  versions: readonly VersionChanges[],
): { state: ContextState } | { rereadFrom: number } {
  let current = state;
  for (const { changes } of versions) {
    for (const change of changes) {
      const next = advanceOne(current, at, change);
      if (typeof next === 'object' && next !== null && 'rereadFrom' in next) return next;
      current = next.state;
    }
  }
  return { state: current };
}

function advanceOne(
  state: ContextState,
  at: readonly string[],
  change: DataChange,
): { state: ContextState } | { rereadFrom: number } {
  const { path } = change;
  const shared = Math.min(path.length, at.length);
  for (let i = 0; i < shared; i += 1) {
    const a = path[i] as string;
    const b = at[i] as string;
    if (a === b) continue;
    // Two spellings of one array item ("-1" and "4", "04" and "4") are the same node or not,
    // depending on data not at hand.
    if (mayNameSameItem(a, b)) return { rereadFrom: i };
    return { state };
  }
  if (path.length >= at.length) {
    // The edit is at the context or inside it.
    if (path.length === at.length) {
      if (change.op === 'set') return { state: change.value };
      if (change.op === 'remove') return { state: undefined };
    }
    // An edit inside a context that is not there: the state at hand is wrong; start from the root.
    if (state === undefined) return { rereadFrom: 0 };
    if (state === PRESENT) return { state };
    const relative = { ...change, path: path.slice(at.length) };
    try {
      return { state: applyChanges(state, [relative]) };
    } catch (error) {
      if (error instanceof ChangeMismatch) return { rereadFrom: 0 };
      throw error;
    }
  }
  // The edit is above the context.
  const rest = at.slice(path.length);
  switch (change.op) {
    case 'set':
      return { state: nodeAtTokens(change.value, rest) };
    case 'remove':
      return { state: undefined };
    case 'splice': {
      const token = rest[0] as string;
      // Not an index: the context was never inside this array, nor is it now.
      if (!POSTGRES_INDEX.test(token)) return { state };
      if (!CANONICAL_INDEX.test(token)) return { rereadFrom: path.length };
      const index = Number(token);
      if (index < change.index) return { state };
      if (index < change.index + change.insert.length) {
        return { state: nodeAtTokens(change.insert[index - change.index], rest.slice(1)) };
      }
      // An item after the splice: which one it is now depends on the items before it.
      return { rereadFrom: path.length };
    }
  }
}

function mayNameSameItem(a: string, b: string): boolean {
  return (
    POSTGRES_INDEX.test(a) && POSTGRES_INDEX.test(b) && !(CANONICAL_INDEX.test(a) && CANONICAL_INDEX.test(b))
  );
}
