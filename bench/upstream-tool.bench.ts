/**
 * Upstream MCP tool benchmark (issue: upstream MCP servers).
 *   pnpm --filter @bindery/bench bench:upstream
 * Starts the real control plane (fresh PostgreSQL database, `node` allowed for stdio upstreams) and
 * the real gateway, adds a stdio upstream server running the repository's test MCP server (written
 * with the MCP SDK) and binds its `echo` tool to an exposure. Then measures `echo` calls at
 * concurrency 1 and 32: called directly with an SDK `Client` over stdio on a process of its own
 * (the in-run reference: one client shared by every worker, as Bindery's pool shares one instance
 * by default), and through the gateway with SDK Clients over Streamable HTTP (one per worker). The
 * path through Bindery is client → gateway → control plane → pool → the same kind of process. A
 * context `query` tool on the same exposure and clients shows what that path costs without an
 * upstream (the gateway, the executor and its audit row).
 * Environment: BENCH_CALLS (calls per worker at concurrency 32, default 40), BENCH_SEQUENTIAL
 * (calls at concurrency 1, default 300), BENCH_ROUNDS (alternating runs per path, median kept;
 * default 3).
 */
import { setMaxListeners } from 'node:events';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { request } from 'undici';
import { ADMIN_TOKEN, startControlPlane, startGateway } from './support/control-plane.ts';
import { ms, summarize, throughput, timeSequential, type Summary } from './support/stats.ts';

const SCRIPT = fileURLToPath(
  new URL('../services/control-plane/test/support/upstream/mcp-server.mjs', import.meta.url),
);
const WORKERS = 32;
const PER_WORKER = Number(process.env.BENCH_CALLS ?? 40);
const SEQUENTIAL = Number(process.env.BENCH_SEQUENTIAL ?? 300);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const cp = await startControlPlane('postgres', { UPSTREAM_STDIO_COMMANDS: 'node', LOG_REQUESTS: 'false' });
const gw = await startGateway(cp.url, { CONFIG_CACHE_TTL_MS: '30000' });

async function admin(method: string, path: string, body?: unknown) {
  const res = await request(`${cp.url}${path}`, {
    method: method as 'GET' | 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.body.json()) as Record<string, unknown>;
  if (res.statusCode >= 300) throw new Error(`${method} ${path}: ${res.statusCode} ${JSON.stringify(json)}`);
  return json;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const clients: Client[] = [];

try {
  const server = await admin('POST', '/api/v2/upstream-servers', {
    name: 'bench upstream',
    transport: 'stdio',
    command: 'node',
    args: [SCRIPT],
    // Long enough for the hanging calls of the last part to hang throughout it.
    limits: { concurrent_calls: WORKERS, call_timeout_ms: 120_000 },
  });
  if (server.status !== 'ok')
    throw new Error(`upstream server: ${String(server.status)} ${String(server.last_error)}`);
  const tools = server.tools as { adi_id: string; upstream_name: string }[];
  const echo = tools.find((t) => t.upstream_name === 'echo');
  const hang = tools.find((t) => t.upstream_name === 'hang');
  if (!echo || !hang) throw new Error('the upstream lists no echo or hang tool');
  const aei = await admin('POST', '/api/v2/aeis', { name: 'bench upstream' });
  await admin('POST', `/api/v2/aeis/${String(aei.id)}/bindings`, { adi_id: echo.adi_id });
  await admin('POST', `/api/v2/aeis/${String(aei.id)}/bindings`, { adi_id: hang.adi_id });
  const table = await admin('POST', '/api/v2/tables', {
    name: 'bench reference',
    data: { items: [1, 2, 3] },
  });
  const query = await admin('POST', '/api/v2/adis', {
    table_id: table.id,
    json_path: '/items',
    operation_type: 'query',
    name: 'count',
  });
  await admin('POST', `/api/v2/aeis/${String(aei.id)}/bindings`, { adi_id: query.id });
  const mcpUrl = new URL(`${gw.url}/api/v2/mcp/server/${String(aei.api_key)}`);

  const direct = new Client({ name: 'bench-direct', version: '1' });
  await direct.connect(
    new StdioClientTransport({ command: process.execPath, args: [SCRIPT], stderr: 'ignore' }),
  );
  clients.push(direct);
  for (let w = 0; w < WORKERS; w++) {
    const client = new Client({ name: 'bench', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl));
    clients.push(client);
  }
  const gateway = clients.slice(1);

  const check = (text: string, result: Record<string, unknown>) => {
    const got = (result.content as { text?: string }[] | undefined)?.[0]?.text;
    if (result.isError || got !== text) throw new Error(`echo answered ${JSON.stringify(result)}`);
  };
  const viaDirect = async (w: number, i: number) => {
    const text = `d-${w}-${i}`;
    check(text, await direct.callTool({ name: 'echo', arguments: { text } }));
  };
  const viaGateway = async (w: number, i: number) => {
    const text = `g-${w}-${i}`;
    check(text, await gateway[w]!.callTool({ name: 'echo', arguments: { text } }));
  };

  const viaContext = async (w: number) => {
    const result = await gateway[w]!.callTool({ name: 'count', arguments: { query: 'length(@)' } });
    if (result.isError) throw new Error(`count answered ${JSON.stringify(result)}`);
  };

  // Warm-up: the pool's instance, connections, the gateway's config cache, JIT.
  await throughput(WORKERS, 10, viaDirect);
  await throughput(WORKERS, 10, viaGateway);
  await throughput(WORKERS, 10, viaContext);

  console.log(
    `Upstream tool benchmark: echo on a stdio MCP server (SDK), direct SDK client vs through Bindery ` +
      `(PostgreSQL); concurrency 1: ${SEQUENTIAL} calls, concurrency ${WORKERS}: ${WORKERS * PER_WORKER} calls; ` +
      `median of ${ROUNDS} alternating runs`,
  );
  type Path = 'direct' | 'gateway' | 'context';
  const sequential: Record<Path, Summary[]> = { direct: [], gateway: [], context: [] };
  const concurrent: Record<Path, (Summary & { perSecond: number })[]> = {
    direct: [],
    gateway: [],
    context: [],
  };
  const paths = { direct: viaDirect, gateway: viaGateway, context: viaContext };
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, path] of Object.entries(paths) as [Path, typeof viaDirect][]) {
      sequential[name].push(summarize(await timeSequential(SEQUENTIAL, (i) => path(0, i))));
      concurrent[name].push(await throughput(WORKERS, PER_WORKER, path));
    }
  }
  const pick = <T extends Summary>(runs: T[], key: keyof T) => median(runs.map((r) => Number(r[key])));
  const row = (label: string, runs: Summary[], rate?: number) =>
    console.log(
      `  ${label.padEnd(34)} p50 ${ms(pick(runs, 'p50')).padStart(10)}  p99 ${ms(pick(runs, 'p99')).padStart(10)}` +
        (rate === undefined ? '' : `  ${rate.toFixed(0).padStart(6)} calls/s`),
    );
  console.log('concurrency 1');
  row('direct (SDK client over stdio)', sequential.direct);
  row('through Bindery (SDK client, HTTP)', sequential.gateway);
  row('reference: context tool, same path', sequential.context);
  const overhead = pick(sequential.gateway, 'p50') - pick(sequential.direct, 'p50');
  console.log(
    `  p50 overhead of Bindery: ${ms(overhead)} (ratio ${(pick(sequential.gateway, 'p50') / pick(sequential.direct, 'p50')).toFixed(2)}x)`,
  );
  console.log(
    `  of which the upstream hop (vs the context tool): ${ms(pick(sequential.gateway, 'p50') - pick(sequential.context, 'p50'))}`,
  );
  console.log(`concurrency ${WORKERS}`);
  const directRate = pick(concurrent.direct, 'perSecond');
  const gatewayRate = pick(concurrent.gateway, 'perSecond');
  row('direct (one SDK client over stdio)', concurrent.direct, directRate);
  row('through Bindery (32 SDK clients)', concurrent.gateway, gatewayRate);
  row('reference: context tool, same path', concurrent.context, pick(concurrent.context, 'perSecond'));
  console.log(
    `  throughput through Bindery: ${(gatewayRate / directRate).toFixed(2)}x the direct client's; ` +
      `p50 ratio ${(pick(concurrent.gateway, 'p50') / pick(concurrent.direct, 'p50')).toFixed(2)}x`,
  );

  // tools/list of the AEI while every instance slot of its upstream is taken by a call that hangs:
  // the list comes from the gateway's cached config and never waits for the upstream.
  const lister = gateway[0]!;
  const listOnce = async () => {
    const listed = await lister.listTools();
    if (listed.tools.length !== 3) throw new Error(`tools/list answered ${listed.tools.length} tools`);
  };
  const LISTS = 300;
  await timeSequential(50, listOnce);
  const quiet = summarize(await timeSequential(LISTS, listOnce));
  const abort = new AbortController();
  // One signal for every hanging call (each adds a listener).
  setMaxListeners(WORKERS + 10, abort.signal);
  const hanging = gateway.map((client) =>
    client
      .callTool({ name: 'hang', arguments: {} }, undefined, { signal: abort.signal, timeout: 300_000 })
      .catch(() => undefined),
  );
  await new Promise((resolve) => setTimeout(resolve, 500));
  const during = summarize(await timeSequential(LISTS, listOnce));
  abort.abort();
  await Promise.all(hanging);
  console.log(
    `tools/list (SDK client, ${LISTS} lists) while ${WORKERS} calls to a hanging upstream tool are in flight`,
  );
  console.log(
    `  ${'no call in flight (reference)'.padEnd(34)} p50 ${ms(quiet.p50).padStart(10)}  p99 ${ms(quiet.p99).padStart(10)}`,
  );
  console.log(
    `  ${`${WORKERS} hanging calls in flight`.padEnd(34)} p50 ${ms(during.p50).padStart(10)}  p99 ${ms(during.p99).padStart(10)}` +
      `  (target < 50 ms: ${during.p99 < 50 ? 'met' : 'NOT met'} at p99)`,
  );
} finally {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  await gw.stop();
  await cp.stop();
}
