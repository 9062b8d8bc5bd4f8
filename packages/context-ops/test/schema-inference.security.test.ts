// Pins that get_schema's work is bounded whatever the shape of the data, since it runs on the
// control plane's event loop: nested maps cost linear time (copying merged shapes made them
// quadratic), objects with very many keys are sampled like arrays, and one inference reads at most
// MAX_OBSERVED_VALUES keys and values, saying so in the schema.
import { describe, expect, it } from 'vitest';
import { executeRead, inferSchema, type JsonValue } from '../src/index.ts';
import { MAX_OBSERVED_VALUES, MAX_SAMPLED_ITEMS } from '../src/schema-inference.ts';

// `depth` nested maps (501 keys each: 500 scalars and the next level), over `width` x `width` records.
function nestedMaps(depth: number, width: number): JsonValue {
  const bottom: Record<string, JsonValue> = {};
  for (let i = 0; i < width; i += 1) {
    bottom[`q${i}`] = Object.fromEntries(Array.from({ length: width }, (_, j) => [`p${j}`, j]));
  }
  let node: JsonValue = bottom;
  for (let d = 0; d < depth; d += 1) {
    const level: Record<string, JsonValue> = Object.fromEntries(
      Array.from({ length: 500 }, (_, i) => [`k${i}`, 0]),
    );
    level.next = node;
    node = level;
  }
  return node;
}

function timed<T>(run: () => T): { value: T; elapsed: number } {
  const started = performance.now();
  const value = run();
  return { value, elapsed: performance.now() - started };
}

describe('get_schema is bounded', () => {
  it('sixty nested maps over a wide record cost about what one does (they took 19 s)', () => {
    const { value, elapsed } = timed(() => inferSchema(nestedMaps(60, 300)));
    expect(elapsed).toBeLessThan(3_000);
    expect(value.description).toMatch(/^A map with 501 distinct keys/);
  });

  it('reads at most MAX_OBSERVED_VALUES keys and values, and says so', () => {
    // 100 records of 800 distinct keys each: 160,000 keys and values, built from text (fast).
    const records = Array.from(
      { length: 100 },
      (_, i) => `"q${i}":{${Array.from({ length: 800 }, (_, j) => `"p${i}_${j}":${j}`).join(',')}}`,
    );
    const data = JSON.parse(`{"wide":{${records.join(',')}}}`) as JsonValue;
    const { value, elapsed } = timed(() => inferSchema(data));
    expect(elapsed).toBeLessThan(3_000);
    expect(value.description).toBe(
      `Inferred from the first ${MAX_OBSERVED_VALUES} keys and values read; the rest was not read.`,
    );
    // What was read is described: the first records, with every key of theirs.
    const properties = value.properties as Record<string, { properties: Record<string, unknown> }>;
    expect(Object.keys(properties.wide?.properties ?? {})).toContain('q0');
  });

  it('samples an object with very many keys like an array, and still calls it a map', () => {
    const map = Object.fromEntries(
      Array.from({ length: 20_000 }, (_, i) => [`user_${i}`, { name: `n${i}`, tags: ['a', 'b'] }]),
    );
    const { value, elapsed } = timed(
      // The schema's shape is pinned by the assertions below.
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      () => executeRead('get_schema', { map }, {}, {}).result as Record<string, any>,
    );
    expect(elapsed).toBeLessThan(3_000);
    expect(value.properties.map.description).toBe(
      `A map with more than ${MAX_SAMPLED_ITEMS} distinct keys (${MAX_SAMPLED_ITEMS} sampled); additionalProperties describes its values.`,
    );
    expect(value.properties.map.additionalProperties).toMatchObject({
      type: 'object',
      properties: { name: { type: 'string' }, tags: { type: 'array' } },
      required: ['name', 'tags'],
    });
    expect(value.description).toBeUndefined();
  });
});
