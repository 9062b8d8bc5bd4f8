/**
 * Reads a service's `/metrics` page (the Prometheus text both services print) the way a scraper
 * would: each series line parsed into its name, its labels and its value. One parser for the tests
 * (`sample`, on a page they fetched or injected) and the benchmarks (`readMetrics`, one fetch per
 * reading, any number of values read from it).
 */

interface Series {
  name: string;
  labels: Map<string, string>;
  value: number;
}

const SERIES = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /(\w+)="((?:[^"\\]|\\.)*)"/g;

function labelsOf(printed: string): Map<string, string> {
  const labels = new Map<string, string>();
  for (const [, key, value] of printed.matchAll(LABEL)) labels.set(key!, value!);
  return labels;
}

/** Every series line of `text` (comments and blank lines skipped). */
function seriesOf(text: string): Series[] {
  const series: Series[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = SERIES.exec(line);
    if (match) series.push({ name: match[1]!, labels: labelsOf(match[2] ?? ''), value: Number(match[3]) });
  }
  return series;
}

const includes = (series: Series, labels: readonly [string, string][]) =>
  labels.every(([key, value]) => series.labels.get(key) === value);

function sumOf(series: Series[], name: string, labels: readonly [string, string][]): number | undefined {
  let sum: number | undefined;
  for (const one of series) if (one.name === name && includes(one, labels)) sum = (sum ?? 0) + one.value;
  return sum;
}

/**
 * The sum of every sample of `name` in `text` whose labels include `labels`, or undefined when
 * there is none.
 */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  return sumOf(seriesOf(text), name, Object.entries(labels));
}

/** One reading of a service's `/metrics` page. */
export interface MetricsReading {
  /**
   * The value of the series `name` with exactly `labels` (as printed: `{result="miss"}`, or none).
   * A series the page does not print reads as `absent`: NaN unless the caller says otherwise (a
   * labelled counter prints a series only once it has counted, so such a read passes 0).
   */
  value(name: string, labels?: string, absent?: number): number;
  /**
   * The sum of the series of `name` (with labels or without) whose labels include each of `match`
   * (each `key="value"`): a histogram's `_sum` or `_count` over its labels, say. 0 when none does.
   */
  total(name: string, match?: readonly string[]): number;
}

/** Reads `url`/metrics once; rejects when the service does not answer it with 200. */
export async function readMetrics(url: string): Promise<MetricsReading> {
  const res = await fetch(`${url}/metrics`);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${url}/metrics answered ${res.status}`);
  const series = seriesOf(text);
  return {
    value(name, labels = '', absent = Number.NaN) {
      const wanted = labelsOf(labels);
      const found = series.find(
        (one) => one.name === name && one.labels.size === wanted.size && includes(one, [...wanted]),
      );
      return found === undefined ? absent : found.value;
    },
    total(name, match = []) {
      return sumOf(series, name, [...labelsOf(match.join(','))]) ?? 0;
    },
  };
}
