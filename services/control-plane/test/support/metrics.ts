/**
 * Reads samples out of a Prometheus text exposition, the way a scraper would.
 */

/**
 * The sum of every sample of `name` whose labels include `labels`, or undefined when there is none.
 */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  let sum: number | undefined;
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = new Map<string, string>();
    for (const [, key, value] of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
      found.set(key!, value!);
    }
    if (Object.entries(labels).every(([key, value]) => found.get(key) === value)) {
      sum = (sum ?? 0) + Number(match[3]);
    }
  }
  return sum;
}
