/**
 * How a proposal shows its change: as an RFC 6902 patch (paths from the table's root) and as a
 * before/after view of each place it changes. Both come from the edits context-ops found
 * (DataChange), replayed on the context before the change, so an array splice becomes its removes
 * and adds at the indexes they happen at.
 */
import { formatPointer, nodeAtTokens, type DataChange, type JsonValue } from '@bindery/context-ops';
import { PROPOSAL_VIEW_PLACES, type ChangeView, type PatchOperation } from '@bindery/contracts';

/** Values in a view above this many bytes of JSON are shown as a summary. */
const MAX_VIEW_VALUE_BYTES = 4_096;

/** The RFC 6902 operations for `changes` made on the context `before` at `at` (paths from the root). */
export function patchOf(
  at: readonly string[],
  before: JsonValue,
  changes: readonly DataChange[],
): PatchOperation[] {
  const out: PatchOperation[] = [];
  for (const change of changes) {
    const pointer = formatPointer(change.path);
    if (change.op === 'set') {
      const existed = nodeAtTokens(before, change.path.slice(at.length)) !== undefined;
      out.push({
        op: existed || change.path.length === at.length ? 'replace' : 'add',
        path: pointer,
        value: change.value,
      });
    } else if (change.op === 'remove') {
      out.push({ op: 'remove', path: pointer });
    } else {
      for (let i = 0; i < change.remove; i += 1)
        out.push({ op: 'remove', path: `${pointer}/${change.index}` });
      change.insert.forEach((value, i) =>
        out.push({ op: 'add', path: `${pointer}/${change.index + i}`, value }),
      );
    }
  }
  return out;
}

/** Each place the change reaches with its value before and after (absent: nothing there). */
export function viewOf(
  at: readonly string[],
  before: JsonValue,
  after: JsonValue,
  changes: readonly DataChange[],
): ChangeView[] {
  const out: ChangeView[] = [];
  const seen = new Set<string>();
  for (const change of changes.slice(0, PROPOSAL_VIEW_PLACES)) {
    const path = formatPointer(change.path);
    if (seen.has(path)) continue;
    seen.add(path);
    const relative = change.path.slice(at.length);
    const was = nodeAtTokens(before, relative);
    const now = nodeAtTokens(after, relative);
    out.push({
      path,
      ...(was !== undefined && { before: shown(was) }),
      ...(now !== undefined && { after: shown(now) }),
    });
  }
  return out;
}

function shown(value: JsonValue): JsonValue {
  const text = JSON.stringify(value);
  if (text.length <= MAX_VIEW_VALUE_BYTES) return value;
  const kind = Array.isArray(value)
    ? `an array of ${value.length} items`
    : typeof value === 'object'
      ? 'an object'
      : 'a string';
  return `… ${kind}, ${text.length} bytes of JSON (see the patch)`;
}
