/**
 * Executor benchmark (issue: context operations and the ADI executor).
 *   pnpm --filter @bindery/bench bench:executor [-- --engine pglite] [-- --mb 10]
 * Starts the real control plane on a fresh database, uploads a generated context of about 10 MB,
 * and prints p50/p99 of query, preview and get_schema through POST /internal/adi/{id}/execute,
 * then write throughput (create) with 1 and 32 concurrent writers on one table.
 */
import { parseArgs } from 'node:util';
import { ADMIN_TOKEN, INTERNAL_TOKEN, startControlPlane } from './support/control-plane.ts';
import { CITIES, generateCustomers } from './support/customers.ts';
import { ms, summarize, timeSequential } from './support/stats.ts';

const { values } = parseArgs({
  options: { engine: { type: 'string', default: 'postgres' }, mb: { type: 'string', default: '10' } },
});
const engine = values.engine === 'pglite' ? 'pglite' : 'postgres';
const targetBytes = Number(values.mb) * 1024 * 1024;

function generate(bytes: number) {
  return { customers: generateCustomers(bytes), counters: [] as unknown[] };
}

const cp = await startControlPlane(engine);
try {
  const call = async (method: string, path: string, token: string, body?: unknown) => {
    const res = await fetch(`${cp.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await res.json()) as Record<string, unknown>;
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  const data = generate(targetBytes);
  const dataBytes = JSON.stringify(data).length;
  const table = await call('POST', '/api/v2/tables', ADMIN_TOKEN, { name: 'bench', data });
  const aei = await call('POST', '/api/v2/aeis', ADMIN_TOKEN, { name: 'bench' });
  const tools: Record<string, { adi: string; binding: string }> = {};
  const specs = {
    query: { json_path: '/customers', operation_type: 'query' },
    preview: {
      json_path: '/customers',
      operation_type: 'preview',
      config: { preview_keys: ['id', 'name', 'tier'] },
    },
    get_schema: { json_path: '/customers', operation_type: 'get_schema' },
    create_big: { json_path: '/customers', operation_type: 'create' },
    create_small: { json_path: '/counters', operation_type: 'create' },
  };
  for (const [name, spec] of Object.entries(specs)) {
    const adi = await call('POST', '/api/v2/adis', ADMIN_TOKEN, { table_id: table.id, ...spec });
    const binding = await call('POST', `/api/v2/aeis/${aei.id}/bindings`, ADMIN_TOKEN, {
      adi_id: adi.id,
      tool_name: name,
    });
    tools[name] = { adi: String(adi.id), binding: String(binding.id) };
  }
  const execute = async (name: string, args: Record<string, unknown>) => {
    const tool = tools[name]!;
    const answer = await call('POST', `/internal/adi/${tool.adi}/execute`, INTERNAL_TOKEN, {
      aei_id: aei.id,
      binding_id: tool.binding,
      arguments: args,
    });
    if (answer.isError) throw new Error(`${name} failed: ${JSON.stringify(answer.content)}`);
  };

  console.log(`executor benchmark: engine=${engine}, context=${(dataBytes / 1024 / 1024).toFixed(1)} MB`);
  console.log(
    `  (${data.customers.length} items at /customers; every figure is one HTTP round trip to the executor)`,
  );
  const reads: [string, number, (i: number) => Record<string, unknown>][] = [
    ['query', 60, (i) => ({ query: `[?city=='${CITIES[i % CITIES.length]}'] | [:20].name` })],
    ['preview', 200, (i) => ({ offset: (i * 997) % data.customers.length, limit: 50 })],
    ['get_schema', 30, () => ({})],
  ];
  for (const [name, count, args] of reads) {
    await execute(name, args(0)); // warm-up
    const s = summarize(await timeSequential(count, (i) => execute(name, args(i))));
    console.log(
      `  ${name.padEnd(22)} n=${String(s.n).padEnd(4)} p50 ${ms(s.p50).padStart(11)}  p99 ${ms(s.p99).padStart(11)}`,
    );
  }

  const writes = async (name: string, writers: number, perWriter: number) => {
    const start = performance.now();
    const latencies: number[] = [];
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        for (let k = 0; k < perWriter; k++) {
          const t0 = performance.now();
          await execute(name, { value: { id: `w${w}-${k}`, at: Date.now() } });
          latencies.push(performance.now() - t0);
        }
      }),
    );
    const seconds = (performance.now() - start) / 1000;
    const s = summarize(latencies);
    const label = `${name === 'create_big' ? 'create (10 MB ctx)' : 'create (small ctx)'} x${writers}`;
    console.log(
      `  ${label.padEnd(22)} n=${String(s.n).padEnd(4)} ${(s.n / seconds).toFixed(1).padStart(7)} writes/s  p50 ${ms(s.p50)}  p99 ${ms(s.p99)}`,
    );
  };
  await writes('create_big', 1, 20);
  await writes('create_big', 32, 2);
  await writes('create_small', 1, 20);
  await writes('create_small', 32, 2);
  const final = await call('GET', `/api/v2/tables/${table.id}`, ADMIN_TOKEN);
  const expected = 20 + 64 + 20 + 64;
  const got =
    (final.data as { customers: unknown[]; counters: unknown[] }).customers.length -
    data.customers.length +
    (final.data as { counters: unknown[] }).counters.length;
  console.log(`  writes stored: ${got} of ${expected}; table version ${final.version}`);
} finally {
  await cp.stop();
}
