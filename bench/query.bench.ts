/**
 * Query budget benchmark (issue: hardening, query and computation budgets).
 *   pnpm --filter @bindery/bench bench:query [-- --engine pglite] [-- --mb 10]
 * Prints:
 * 1. what the budgeted interpreter costs per query against the plain JMESPath library, in this
 *    process, on a small context and on a generated one of about 10 MB (same queries, same data);
 * 2. what moving a query to a worker thread costs, on the real control plane over HTTP: a query
 *    that outgrows the in-process slice against the same query evaluated in-process;
 * 3. the latency of a cheap call while hostile queries (a nested map over 1,000 items) keep the
 *    query workers busy, against the same call on an idle control plane.
 */
import { search } from '@jmespath-community/jmespath';
import { executeRead, type JsonValue } from '@bindery/context-ops';
import { parseArgs } from 'node:util';
import { ADMIN_TOKEN, INTERNAL_TOKEN, startControlPlane } from './support/control-plane.ts';
import { generateCustomers } from './support/customers.ts';
import { ms, summarize } from './support/stats.ts';
import { benchArgs } from './support/args.ts';

const { values } = parseArgs({
  args: benchArgs(),
  options: { engine: { type: 'string', default: 'postgres' }, mb: { type: 'string', default: '10' } },
});
const engine = values.engine === 'pglite' ? 'pglite' : 'postgres';
const big = generateCustomers(Number(values.mb) * 1024 * 1024) as unknown as JsonValue[];
const small = big.slice(0, 50);
const numbers = Array.from({ length: 1_000 }, (_, i) => i);

const QUERIES = [
  'length(@)',
  "[?city=='Oslo'] | [:20].name",
  "[?tier=='gold' && contains(tags, 'tag7')].{id: id, name: name} | [:10]",
  'sort_by(@, &name)[:5].id',
  'max_by(@, &orders[0].total).id',
  'sum([].orders[].total)',
];

function time(rounds: number, run: () => unknown): number[] {
  const samples: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const started = performance.now();
    run();
    samples.push(performance.now() - started);
  }
  return samples;
}

console.log(
  `query benchmark: engine=${engine}, large context ${(JSON.stringify(big).length / 1048576).toFixed(1)} MB (${big.length} items), small context ${small.length} items`,
);

// 1. Interpreter cost, in-process. Rounds alternate between the two, so drift hits both alike.
console.log('\n1. per query, in this process: budgeted (executeRead) vs the plain library (search), p50');
for (const [label, data, rounds] of [
  ['small', small, 2_000],
  ['large', big, 15],
] as const) {
  for (const query of QUERIES) {
    const budgeted = () => executeRead('query', data, { query }, {}).result;
    const plain = () => search(data, query);
    time(Math.min(rounds, 50), budgeted);
    time(Math.min(rounds, 50), plain);
    const a: number[] = [];
    const b: number[] = [];
    for (let i = 0; i < rounds; i++) {
      a.push(...time(1, budgeted));
      b.push(...time(1, plain));
    }
    const x = summarize(a).p50;
    const y = summarize(b).p50;
    console.log(
      `  ${label.padEnd(5)} ${query.padEnd(72)} budgeted ${ms(x).padStart(10)}  library ${ms(y).padStart(10)}  ratio ${(x / y).toFixed(2)}`,
    );
  }
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
  const table = await call('POST', '/api/v2/tables', ADMIN_TOKEN, {
    name: 'bench',
    data: { customers: big, small, numbers },
  });
  const aei = await call('POST', '/api/v2/aeis', ADMIN_TOKEN, { name: 'bench' });
  const tools: Record<string, { adi: string; binding: string }> = {};
  for (const path of ['customers', 'small', 'numbers']) {
    const adi = await call('POST', '/api/v2/adis', ADMIN_TOKEN, {
      table_id: table.id,
      json_path: `/${path}`,
      operation_type: 'query',
    });
    const binding = await call('POST', `/api/v2/aeis/${aei.id}/bindings`, ADMIN_TOKEN, {
      adi_id: adi.id,
      tool_name: path,
    });
    tools[path] = { adi: String(adi.id), binding: String(binding.id) };
  }
  const query = async (tool: string, expression: string) => {
    const { adi, binding } = tools[tool]!;
    const started = performance.now();
    const answer = await call('POST', `/internal/adi/${adi}/execute`, INTERNAL_TOKEN, {
      aei_id: aei.id,
      binding_id: binding,
      arguments: { query: expression },
    });
    const elapsed = performance.now() - started;
    const text = (answer.content as { text: string }[])[0]!.text;
    return {
      elapsed,
      isError: answer.isError === true,
      code: answer.isError ? JSON.parse(text).error.code : 'ok',
    };
  };

  // 2. Escalation: a query of 20-60 ms in-process outgrows the 10 ms slice and runs again in a worker.
  console.log(
    '\n2. moving a query to a worker thread (HTTP round trips to the control plane, default settings)',
  );
  const slow = 'sort_by(@, &name)[:3].id';
  for (let i = 0; i < 20; i++) await query('small', 'length(@)');
  const floor = summarize(
    await Promise.all([]).then(async () => {
      const samples: number[] = [];
      for (let i = 0; i < 100; i++) samples.push((await query('small', 'length(@)')).elapsed);
      return samples;
    }),
  );
  const first = await query('customers', slow);
  const warm: number[] = [];
  for (let i = 0; i < 30; i++) warm.push((await query('customers', slow)).elapsed);
  const inProcess = summarize(time(30, () => executeRead('query', big, { query: slow }, {})));
  const escalated = summarize(warm);
  console.log(
    `  cheap query (small context), the HTTP floor   p50 ${ms(floor.p50).padStart(10)}  p99 ${ms(floor.p99).padStart(10)}`,
  );
  console.log(`  ${slow} in-process (this process)  p50 ${ms(inProcess.p50).padStart(10)}`);
  console.log(
    `  ${slow} via HTTP, first call       ${ms(first.elapsed).padStart(14)}  (${first.code}; the worker parses the ${values.mb} MB context)`,
  );
  console.log(
    `  ${slow} via HTTP, worker warm      p50 ${ms(escalated.p50).padStart(10)}  p99 ${ms(escalated.p99).padStart(10)}`,
  );
  console.log(
    `  escalation cost at p50 (via HTTP - in-process - floor): ${ms(escalated.p50 - inProcess.p50 - floor.p50)} (after the first call the query is known to be slow and skips the 10 ms slice)`,
  );

  // 3. A cheap call while hostile queries run.
  console.log(
    '\n3. a cheap call while hostile queries (nested map, 6 deep, over 1,000 items) keep the workers busy',
  );
  const hostile = 'map(&map(&map(&map(&map(&map(&@, $), $), $), $), $), $)';
  const cheapLatencies = async (seconds: number) => {
    const samples: number[] = [];
    const until = performance.now() + seconds * 1000;
    while (performance.now() < until) {
      samples.push((await query('small', '[0].name')).elapsed);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return samples;
  };
  const idle = summarize(await cheapLatencies(3));
  const idleMax = Math.max(...(await cheapLatencies(1)));
  console.log(
    `  idle control plane             n=${String(idle.n).padEnd(4)} p50 ${ms(idle.p50).padStart(10)}  p99 ${ms(idle.p99).padStart(10)}  (max of 1 s: ${ms(idleMax)})`,
  );
  for (const clients of [2, 12]) {
    let running = true;
    const outcomes: Record<string, number> = {};
    const attackers = Array.from({ length: clients }, async () => {
      while (running) {
        const res = await query('numbers', hostile);
        outcomes[res.code] = (outcomes[res.code] ?? 0) + 1;
        if (res.code === 'RATE_LIMITED') await new Promise((resolve) => setTimeout(resolve, 50));
      }
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const samples = await cheapLatencies(5);
    running = false;
    await Promise.all(attackers);
    const s = summarize(samples);
    console.log(
      `  ${String(clients).padStart(2)} hostile clients in a loop n=${String(s.n).padEnd(4)} p50 ${ms(s.p50).padStart(10)}  p99 ${ms(s.p99).padStart(10)}  max ${ms(Math.max(...samples)).padStart(10)}  hostile answers ${JSON.stringify(outcomes)}`,
    );
  }
} finally {
  await cp.stop();
}
