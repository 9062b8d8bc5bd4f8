/**
 * The context store alone, in a process of its own: writes through `ContextStore` straight to the
 * database, without HTTP, the executor or its audit rows, so the figure is what storing a write
 * costs. A table holds a large context (`/customers`, generated) and a small one (`/counters`);
 * 1 and 32 concurrent writers append to each.
 *   node --import tsx support/context-store-run.ts <postgres URL | pglite data directory> <MB>
 * Prints one JSON line per measure: context, writers, writes, writes per second, p50 and p99 (ms).
 */
import { executeWrite, parsePointer, type JsonValue } from '@bindery/context-ops';
import { openDatabase } from '../../services/control-plane/src/db/database.ts';
import { ContextCache } from '../../services/control-plane/src/context/context-cache.ts';
import { ContextStore } from '../../services/control-plane/src/context/context-store.ts';
import { createTable } from '../../services/control-plane/src/context/tables.ts';
import {
  DatabaseTableVersions,
  LocalTableVersions,
} from '../../services/control-plane/src/context/table-versions.ts';
import { createMetrics } from '../../services/control-plane/src/metrics.ts';
import { generateCustomers } from './customers.ts';
import { summarize } from './stats.ts';

const [where, mb] = process.argv.slice(2);
if (where === undefined || mb === undefined) throw new Error('usage: context-store-run.ts <url | dir> <MB>');
const postgres = where.startsWith('postgres');
const database = await openDatabase(
  postgres ? { kind: 'postgres', url: where } : { kind: 'pglite', dataDir: where },
);
const metrics = createMetrics();
const store = new ContextStore({
  prisma: database.prisma,
  cache: new ContextCache(256 * 1024 * 1024, metrics.contextCache),
  // As the app chooses without REDIS_URL; writes cost the same with Redis plus one round trip.
  versions: postgres ? new DatabaseTableVersions() : new LocalTableVersions(),
  log: { warn: (details, message) => console.error(message, details) },
});
try {
  await database.prisma.user.create({ data: { id: 'usr_bench', name: 'bench', isRoot: true } });
  const data = { customers: generateCustomers(Number(mb) * 1024 * 1024), counters: [] };
  const table = await createTable(
    database.prisma,
    { userId: 'usr_bench', isRoot: true },
    { name: 'bench', data },
  );
  const at = (pointer: string) => ({ tableId: table.id, pointer, tokens: parsePointer(pointer) });
  // The first read parses the context; every write after it is brought from the cache.
  await store.read(at('/customers'));
  await store.read(at('/counters'));
  for (const [pointer, writers, each] of [
    ['/customers', 1, 20],
    ['/customers', 32, 16],
    ['/counters', 1, 20],
    ['/counters', 32, 16],
  ] as const) {
    const latencies: number[] = [];
    const started = performance.now();
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        for (let k = 0; k < each; k += 1) {
          const t0 = performance.now();
          const value = { id: `w${w}-${k}`, at: Date.now() };
          await store.write(
            at(pointer),
            undefined,
            (node: JsonValue) => executeWrite('create', node, { value }, {}),
            metrics.writes,
          );
          latencies.push(performance.now() - t0);
        }
      }),
    );
    const s = summarize(latencies);
    const rate = s.n / ((performance.now() - started) / 1000);
    console.log(JSON.stringify({ context: pointer, writers, writes: s.n, rate, p50: s.p50, p99: s.p99 }));
  }
} finally {
  await store.close();
  await database.close();
}
