/**
 * "Did you mean": the exposed tool names closest to an unknown one, for a clear error.
 */
import { distance } from 'fastest-levenshtein';

/** Names are at most 64 characters: a longer `wanted` is close to none, and is not compared at all. */
const MAX_WANTED = 128;

/** Up to `limit` names close to `wanted` (edit distance within a third of its length, or containing it). */
export function closeMatches(wanted: string, names: readonly string[], limit = 3): string[] {
  // A client's name of megabytes would cost an edit distance of megabytes per name.
  if (wanted.length > MAX_WANTED) return [];
  const w = wanted.toLowerCase();
  return names
    .map((name) => {
      const n = name.toLowerCase();
      const score = n.includes(w) || w.includes(n) ? 0 : distance(w, n);
      return { name, score };
    })
    .filter((c) => c.score <= Math.max(2, Math.floor(wanted.length / 3)))
    .sort((a, b) => a.score - b.score || a.name.localeCompare(b.name))
    .slice(0, limit)
    .map((c) => c.name);
}
