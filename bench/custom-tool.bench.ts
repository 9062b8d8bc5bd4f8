/**
 * Custom tool benchmark (issue: tool kinds).
 *   pnpm --filter @bindery/bench bench:custom-tool
 * Starts the real control plane (fresh PostgreSQL database) and the real gateway as processes and
 * prints p50/p99 of tools/call through the gateway with the SDK Client at concurrency 1 for a
 * trivial custom tool (`export default (args) => args.x + 1`), a custom tool reading its context
 * once, and the in-run reference: a context `query` tool on the same small context. The paths take
 * turns call by call, so they see the same machine load; the overhead of the custom tool is the
 * difference of the p50s and the median of per-call differences ("paired"). Target: at most 3 ms.
 * Environment: BENCH_CALLS (calls per path, default 1000), BENCH_WARMUP (rounds, default 300).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ADMIN_TOKEN, startControlPlane, startGateway } from './support/control-plane.ts';
import { ms, summarize } from './support/stats.ts';

const CALLS = Number(process.env.BENCH_CALLS ?? 1000);
const WARMUP_ROUNDS = Number(process.env.BENCH_WARMUP ?? 300);
const TARGET_MS = 3;

const cp = await startControlPlane('postgres');
const gw = await startGateway(cp.url, { CONFIG_CACHE_TTL_MS: '30000' });

async function admin(method: string, path: string, body?: unknown) {
  const res = await fetch(`${cp.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as Record<string, unknown>;
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

const row = (label: string, samples: number[]) => {
  const s = summarize(samples);
  console.log(
    `  ${label.padEnd(40)} n=${String(s.n).padEnd(5)} p50 ${ms(s.p50).padStart(10)}  p99 ${ms(s.p99).padStart(10)}`,
  );
  return s;
};
const paired = (via: number[], reference: number[]) => summarize(via.map((v, k) => v - reference[k]!)).p50;

try {
  const table = await admin('POST', '/api/v2/tables', {
    name: 'bench',
    data: { customers: Array.from({ length: 100 }, (_, i) => ({ id: i, name: `c${i}` })) },
  });
  const adis = [
    await admin('POST', '/api/v2/adis', {
      name: 'q',
      table_id: table.id,
      json_path: '/customers',
      operation_type: 'query',
    }),
    await admin('POST', '/api/v2/adis', {
      kind: 'custom',
      name: 'trivial',
      code: 'export default (args) => args.x + 1',
      input_schema: { type: 'object', required: ['x'], properties: { x: { type: 'number' } } },
    }),
    await admin('POST', '/api/v2/adis', {
      kind: 'custom',
      name: 'reads',
      code: 'export default async (args, ctx) => (await ctx.context.read("/" + args.i)).name',
      input_schema: { type: 'object', required: ['i'], properties: { i: { type: 'integer' } } },
      context: { table_id: table.id, json_path: '/customers' },
    }),
  ];
  const aei = await admin('POST', '/api/v2/aeis', { name: 'bench' });
  await admin(
    'POST',
    `/api/v2/aeis/${String(aei.id)}/bindings`,
    adis.map((adi) => ({ adi_id: adi.id })),
  );
  const client = new Client({ name: 'bench', version: '1' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${gw.url}/api/v2/mcp/server/${String(aei.api_key)}`)),
  );
  const call = async (name: string, args: Record<string, unknown>) => {
    const result = await client.callTool({ name, arguments: args });
    if (result.isError) throw new Error(`${name}: ${JSON.stringify(result.content)}`);
  };
  const paths = {
    query: () => call('q', { query: '[?id < `3`].name' }),
    trivial: () => call('trivial', { x: 41 }),
    reads: () => call('reads', { i: 7 }),
  };
  // Warm processes (JIT, pools, the context cache, both sandbox threads): a server runs for hours.
  for (let i = 0; i < WARMUP_ROUNDS; i++) for (const run of Object.values(paths)) await run();

  const samples = { query: [] as number[], trivial: [] as number[], reads: [] as number[] };
  for (let i = 0; i < CALLS; i++) {
    for (const name of ['query', 'trivial', 'reads'] as const) {
      const t0 = performance.now();
      await paths[name]();
      samples[name].push(performance.now() - t0);
    }
  }
  console.log(
    'custom tool benchmark: tools/call through the gateway, SDK Client, concurrency 1 (PostgreSQL)',
  );
  console.log('  (the paths take turns call by call, so they see the same machine load)');
  const q = row('context query tool (reference)', samples.query);
  const t = row('custom tool, trivial function', samples.trivial);
  const r = row('custom tool, one ctx.context.read', samples.reads);
  const overhead = t.p50 - q.p50;
  console.log(
    `  trivial custom tool over the query tool at p50: ${ms(overhead)}; paired per call: ${ms(paired(samples.trivial, samples.query))} ` +
      `(target <= ${TARGET_MS} ms: ${overhead <= TARGET_MS ? 'met' : 'NOT met'})`,
  );
  console.log(
    `  custom tool with one context read over the query tool at p50: ${ms(r.p50 - q.p50)}; paired per call: ${ms(paired(samples.reads, samples.query))}`,
  );
  await client.close();
} finally {
  await gw.stop();
  await cp.stop();
}
