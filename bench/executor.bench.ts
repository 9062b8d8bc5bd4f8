/**
 * Executor benchmark (issue: context operations and the ADI executor).
 *   pnpm --filter @bindery/bench bench:executor [-- --engine pglite] [-- --mb 10] [-- --cheap-only]
 * Starts the real control plane on a fresh database and prints the throughput of cheap reads at
 * concurrency 32 (each one audited) against the HTTP floor, then uploads a generated context of
 * about 10 MB and prints p50/p99 of query, preview and get_schema through
 * POST /internal/adi/{id}/execute, then write throughput (create) with 1 and 32 concurrent writers
 * on one table, for the large context and for a small context in the same table, next to the
 * targets (issue 13: at 32 writers, at least 100 writes/s to the small context and 10 writes/s to
 * the large one). The same writes then go through the context store alone, in a process of its
 * own on a fresh database (support/context-store-run.ts): what storing a write costs, without
 * HTTP, the executor or audit.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { Agent, request } from 'undici';
import {
  ADMIN_TOKEN,
  INTERNAL_TOKEN,
  databaseUrl,
  newDatabase,
  startControlPlane,
} from './support/control-plane.ts';
import { CITIES, generateCustomers } from './support/customers.ts';
import { cpuMs, ms, summarize, throughput, timeSequential } from './support/stats.ts';
import { benchArgs } from './support/args.ts';
import { readMetrics } from '@bindery/test-support';

const { values } = parseArgs({
  args: benchArgs(),
  options: {
    engine: { type: 'string', default: 'postgres' },
    mb: { type: 'string', default: '10' },
    'cheap-only': { type: 'boolean', default: false },
    'cheap-calls': { type: 'string', default: '4000' },
    'audit-flush-ms': { type: 'string' },
  },
});
const engine = values.engine === 'pglite' ? 'pglite' : 'postgres';
const targetBytes = Number(values.mb) * 1024 * 1024;
const CHEAP_WORKERS = 32;
const cheapPerWorker = Math.ceil(Number(values['cheap-calls']) / CHEAP_WORKERS);

function generate(bytes: number) {
  return { customers: generateCustomers(bytes), counters: [] as unknown[] };
}

const cp = await startControlPlane(engine, {
  ...(values['audit-flush-ms'] !== undefined && { AUDIT_FLUSH_MS: values['audit-flush-ms'] }),
});
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
  await cheapReads(call);
  if (values['cheap-only']) {
    // The control plane is a child process: stop it (and drop its database) before leaving.
    await cp.stop();
    process.exit(0);
  }

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
    read_small: { json_path: '/counters', operation_type: 'preview' },
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
    // Warm-up: the first query parses the context in a worker thread, which on a loaded machine can
    // take longer than the query's own time limit; once more then.
    await execute(name, args(0)).catch(() => execute(name, args(0)));
    const s = summarize(await timeSequential(count, (i) => execute(name, args(i))));
    console.log(
      `  ${name.padEnd(22)} n=${String(s.n).padEnd(4)} p50 ${ms(s.p50).padStart(11)}  p99 ${ms(s.p99).padStart(11)}`,
    );
  }

  /** Calls per second and latencies of `writers` clients each calling `perWriter` times in a row. */
  const concurrently = async (
    writers: number,
    perWriter: number,
    one: (w: number, k: number) => Promise<void>,
  ) => {
    const start = performance.now();
    const latencies: number[] = [];
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        for (let k = 0; k < perWriter; k++) {
          const t0 = performance.now();
          await one(w, k);
          latencies.push(performance.now() - t0);
        }
      }),
    );
    const s = summarize(latencies);
    return { s, rate: s.n / ((performance.now() - start) / 1000) };
  };
  // The in-run reference: the executor's ceiling for calls that write nothing (a read of the small
  // context, served from the context cache), at the same concurrency as the writers.
  const reference = await concurrently(32, 16, () => execute('read_small', { limit: 1 }));
  console.log(
    `  ${'read (small ctx) x32'.padEnd(22)} n=${String(reference.s.n).padEnd(4)} ${reference.rate.toFixed(1).padStart(7)} calls/s   p50 ${ms(reference.s.p50)}  p99 ${ms(reference.s.p99)}  (reference: a call that writes nothing)`,
  );
  const TARGETS: Record<string, number> = { create_small: 100, create_big: 10 };
  const writes = async (name: string, writers: number, perWriter: number) => {
    const { s, rate } = await concurrently(writers, perWriter, (w, k) =>
      execute(name, { value: { id: `w${w}-${k}`, at: Date.now() } }),
    );
    const big = name === 'create_big';
    const label = `${big ? `create (${values.mb} MB ctx)` : 'create (small ctx)'} x${writers}`;
    const target = TARGETS[name] ?? 0;
    const verdict =
      writers === 32
        ? `  target >= ${target} writes/s: ${rate >= target ? 'met' : 'NOT met'}; ${(rate / reference.rate).toFixed(2)}x the reference`
        : '';
    console.log(
      `  ${label.padEnd(22)} n=${String(s.n).padEnd(4)} ${rate.toFixed(1).padStart(7)} writes/s  p50 ${ms(s.p50)}  p99 ${ms(s.p99)}${verdict}`,
    );
    return s.n;
  };
  let expected = 0;
  expected += await writes('create_big', 1, 20);
  expected += await writes('create_big', 32, 8);
  expected += await writes('create_small', 1, 20);
  expected += await writes('create_small', 32, 16);
  // A read of the large context after the writes: brought forward by their patches, not read again.
  const after = summarize(await timeSequential(20, (i) => execute('preview', { offset: i, limit: 5 })));
  console.log(
    `  ${'preview after writes'.padEnd(22)} n=${String(after.n).padEnd(4)} p50 ${ms(after.p50).padStart(11)}  p99 ${ms(after.p99).padStart(11)}`,
  );
  const final = await call('GET', `/api/v2/tables/${table.id}`, ADMIN_TOKEN);
  const got =
    (final.data as { customers: unknown[]; counters: unknown[] }).customers.length -
    data.customers.length +
    (final.data as { counters: unknown[] }).counters.length;
  console.log(`  writes stored: ${got} of ${expected}; table version ${final.version}`);
} finally {
  await cp.stop();
}

// The context store alone: the same writes without HTTP, the executor or its audit rows.
const storeDatabase = await newDatabase(engine);
try {
  const where = storeDatabase.env.DATABASE_URL ?? storeDatabase.env.BINDERY_DATA_DIR ?? '';
  const runner = fileURLToPath(new URL('./support/context-store-run.ts', import.meta.url));
  const output = execFileSync(process.execPath, ['--import', 'tsx', runner, where, values.mb], {
    encoding: 'utf8',
    maxBuffer: 16 * 1024 * 1024,
  });
  console.log('  the context store alone (no HTTP, executor or audit rows), same writes:');
  for (const line of output.split('\n').filter((l) => l.startsWith('{'))) {
    const m = JSON.parse(line) as {
      context: string;
      writers: number;
      writes: number;
      rate: number;
      p50: number;
      p99: number;
    };
    const big = m.context === '/customers';
    const label = `store ${big ? `(${values.mb} MB ctx)` : '(small ctx)'} x${m.writers}`;
    const target = big ? 10 : 100;
    const verdict =
      m.writers === 32 ? `  target >= ${target} writes/s: ${m.rate >= target ? 'met' : 'NOT met'}` : '';
    console.log(
      `  ${label.padEnd(22)} n=${String(m.writes).padEnd(4)} ${m.rate.toFixed(1).padStart(7)} writes/s  p50 ${ms(m.p50)}  p99 ${ms(m.p99)}${verdict}`,
    );
  }
} finally {
  await storeDatabase.drop();
}

/**
 * CPU time (ms) the PostgreSQL backends serving the benchmark's database have used so far (0 on
 * PGlite): the control plane's pool keeps its connections open while the load runs, so the
 * difference over a run is the database's work for it.
 */
async function databaseCpuMs(): Promise<number> {
  if (engine !== 'postgres') return 0;
  const client = new pg.Client({ connectionString: databaseUrl(cp.database) });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
    );
    return rows.reduce((sum, row) => sum + cpuMs(row.pid), 0);
  } finally {
    await client.end();
  }
}

/**
 * Cheap reads at concurrency 32: a `query` tool on a 100-item context, each call one audit row,
 * against the HTTP floor (GET /healthz) measured the same way; and how many rows each audit INSERT
 * carried (the group commit's batches, from /metrics).
 */
async function cheapReads(
  call: (method: string, path: string, token: string, body?: unknown) => Promise<Record<string, unknown>>,
) {
  const table = await call('POST', '/api/v2/tables', ADMIN_TOKEN, {
    name: 'cheap',
    data: { customers: generateCustomers(100_000).slice(0, 100) },
  });
  const aei = await call('POST', '/api/v2/aeis', ADMIN_TOKEN, { name: 'cheap' });
  const adi = await call('POST', '/api/v2/adis', ADMIN_TOKEN, {
    table_id: table.id,
    json_path: '/customers',
    operation_type: 'query',
  });
  const binding = await call('POST', `/api/v2/aeis/${aei.id}/bindings`, ADMIN_TOKEN, {
    adi_id: adi.id,
    tool_name: 'cheap_query',
  });
  const agent = new Agent({ connections: 2 * CHEAP_WORKERS, keepAliveTimeout: 60_000 });
  const body = JSON.stringify({
    aei_id: aei.id,
    binding_id: binding.id,
    arguments: { query: 'length(@)' },
  });
  const read = async () => {
    const res = await request(`${cp.url}/internal/adi/${adi.id}/execute`, {
      method: 'POST',
      dispatcher: agent,
      headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' },
      body,
    });
    const answer = (await res.body.json()) as { isError?: boolean };
    if (res.statusCode !== 200 || answer.isError)
      throw new Error(`cheap read failed: ${JSON.stringify(answer)}`);
  };
  const floor = async () => {
    const res = await request(`${cp.url}/healthz`, { dispatcher: agent });
    await res.body.dump();
  };
  const audit = async () => {
    const metrics = await readMetrics(cp.url);
    return {
      rows: metrics.value('controlplane_audit_write_seconds_count'),
      inserts: metrics.value('controlplane_audit_batch_rows_count'),
    };
  };
  await throughput(CHEAP_WORKERS, 10, read); // warm-up
  await throughput(CHEAP_WORKERS, 10, floor);
  console.log(
    `executor benchmark: engine=${engine}; cheap reads (query on 100 items), concurrency 1 and ${CHEAP_WORKERS}` +
      (values['audit-flush-ms'] === undefined ? '' : `, AUDIT_FLUSH_MS=${values['audit-flush-ms']}`),
  );
  const single = summarize(await timeSequential(300, read));
  console.log(
    `  ${'cheap query, audited, c=1'.padEnd(26)} n=${String(single.n).padEnd(5)} ${''.padStart(14)}  p50 ${ms(single.p50).padStart(10)}  p99 ${ms(single.p99).padStart(10)}`,
  );
  const before = await audit();
  const cpuBefore = { controlPlane: cpuMs(cp.pid), database: await databaseCpuMs() };
  const reads = await throughput(CHEAP_WORKERS, cheapPerWorker, read);
  const cpuAfter = { controlPlane: cpuMs(cp.pid), database: await databaseCpuMs() };
  const after = await audit();
  const http = await throughput(CHEAP_WORKERS, cheapPerWorker, floor);
  for (const [label, run] of [
    ['cheap query, audited', reads],
    ['HTTP floor (GET /healthz)', http],
  ] as const) {
    console.log(
      `  ${label.padEnd(26)} n=${String(run.n).padEnd(5)} ${run.perSecond.toFixed(0).padStart(6)} calls/s  p50 ${ms(run.p50).padStart(10)}  p99 ${ms(run.p99).padStart(10)}`,
    );
  }
  const rows = after.rows - before.rows;
  const inserts = after.inserts - before.inserts;
  console.log(
    Number.isNaN(inserts)
      ? `  audit: ${rows} rows, one INSERT each`
      : `  audit: ${rows} rows in ${inserts} INSERTs (${(rows / inserts).toFixed(1)} rows per INSERT)`,
  );
  const perCall = (before: number, after: number) => ((after - before) / reads.n).toFixed(2);
  console.log(
    `  CPU per cheap read: control plane ${perCall(cpuBefore.controlPlane, cpuAfter.controlPlane)} ms` +
      (engine === 'postgres'
        ? `, its PostgreSQL backends ${perCall(cpuBefore.database, cpuAfter.database)} ms`
        : ' (the embedded database included)'),
  );
  console.log(`  cheap reads at ${(reads.perSecond / http.perSecond).toFixed(2)}x the HTTP floor's calls/s`);
  await agent.close();
}
