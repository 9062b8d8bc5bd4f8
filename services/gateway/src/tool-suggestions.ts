/**
 * "Did you mean": the exposed tool names closest to an unknown one, for a clear error.
 */

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]!;
      row[j] = Math.min(above + 1, row[j - 1]! + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length]!;
}

/** Up to `limit` names close to `wanted` (edit distance within a third of its length, or containing it). */
export function closeMatches(wanted: string, names: readonly string[], limit = 3): string[] {
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
