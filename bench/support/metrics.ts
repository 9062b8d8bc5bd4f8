/**
 * One reading of a service's `/metrics` page (Prometheus text, as both services print it), from
 * which a benchmark reads any number of values: the page is fetched once per reading.
 */

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

/** The number a series line ends with (its value; the services print no timestamps). */
function valueOf(line: string): number {
  return Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** Reads `url`/metrics once; rejects when the service does not answer it with 200. */
export async function readMetrics(url: string): Promise<MetricsReading> {
  const res = await fetch(`${url}/metrics`);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${url}/metrics answered ${res.status}`);
  const lines = text.split('\n');
  return {
    value(name, labels = '', absent = Number.NaN) {
      const line = lines.find((l) => l.startsWith(`${name}${labels} `));
      return line === undefined ? absent : valueOf(line);
    },
    total(name, match = []) {
      let sum = 0;
      for (const line of lines) {
        if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
        // A label counts where it starts the set or follows a comma (not inside another's name).
        if (match.every((label) => line.includes(`{${label}`) || line.includes(`,${label}`)))
          sum += valueOf(line);
      }
      return sum;
    },
  };
}
