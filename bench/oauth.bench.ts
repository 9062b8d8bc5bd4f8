/**
 * OAuth benchmark (issue: OAuth 2.1 for agents and people).
 *   pnpm --filter @bindery/bench bench:oauth
 * The real control plane (fresh PostgreSQL database) and gateway as processes; one exposure, reached
 * two ways in the same run, call by call in turn: its api_key URL, and its keyless URL with an
 * OAuth access token from the built-in authorization server. Prints p50/p99 and calls per second of
 * `tools/call` at concurrency 32 for each, and the token path's throughput against the key's
 * (target: within 10%).
 */
import { adminCall, freePort, oauthTokens } from '@bindery/test-support';
import { ADMIN_TOKEN, startControlPlane, startGateway } from './support/control-plane.ts';
import { ms, summarize } from './support/stats.ts';
import { toolCallResult } from './support/answers.ts';

const WORKERS = 32;
const PER_WORKER = 60;
const RUNS = 3;
const WARMUP_ROUNDS = Number(process.env.BENCH_WARMUP ?? 500);

const gatewayPort = await freePort();
const publicUrl = `http://127.0.0.1:${gatewayPort}`;
const cp = await startControlPlane('postgres', {
  GATEWAY_PUBLIC_URL: publicUrl,
  BINDERY_SECRET_KEY: '0b'.repeat(32),
});
const gw = await startGateway(cp.url, { GATEWAY_PORT: String(gatewayPort), GATEWAY_PUBLIC_URL: publicUrl });

/** The admin API as root; throws on an error status. */
async function admin(method: string, path: string, body?: unknown) {
  const answer = await adminCall(cp.url, ADMIN_TOKEN, method, path, body);
  if (answer.status >= 300)
    throw new Error(`${method} ${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body as Record<string, unknown>;
}

try {
  const table = await admin('POST', '/api/v2/tables', {
    name: 'bench',
    data: { customers: Array.from({ length: 100 }, (_, i) => ({ id: i, name: `c${i}` })) },
  });
  const adi = await admin('POST', '/api/v2/adis', {
    table_id: table.id,
    json_path: '/customers',
    operation_type: 'query',
  });
  const aei = await admin('POST', '/api/v2/aeis', { name: 'bench' });
  await admin('POST', `/api/v2/aeis/${aei.id}/bindings`, { adi_id: adi.id, tool_name: 'q' });
  const keyless = `${gw.url}/api/v2/mcp/aei/${aei.id}`;
  // The exposure is root's: root consents (its admin token is the person's here).
  const tokens = await oauthTokens(cp.url, `${publicUrl}/api/v2/mcp/aei/${aei.id}`, ADMIN_TOKEN);
  const ways = {
    'api_key URL': { url: `${gw.url}/api/v2/mcp/server/${aei.api_key}`, headers: {} },
    'OAuth access token': { url: keyless, headers: { authorization: `Bearer ${tokens.access_token}` } },
  } as const;
  type Way = keyof typeof ways;
  const names = Object.keys(ways) as Way[];

  // One initialized session per worker and way.
  const sessions = {} as Record<Way, string[]>;
  for (const name of names) {
    sessions[name] = [];
    for (let w = 0; w < WORKERS; w++) {
      const init = await fetch(ways[name].url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...ways[name].headers,
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 0,
          method: 'initialize',
          params: {
            protocolVersion: '2025-11-25',
            capabilities: {},
            clientInfo: { name: 'bench', version: '1' },
          },
        }),
      });
      await init.text();
      if (init.status !== 200) throw new Error(`${name}: initialize answered ${init.status}`);
      sessions[name].push(init.headers.get('mcp-session-id') ?? '');
    }
  }
  let id = 1;
  const call = (name: Way, w: number) =>
    fetch(ways[name].url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': sessions[name][w]!,
        'mcp-protocol-version': '2025-11-25',
        ...ways[name].headers,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: id++,
        method: 'tools/call',
        params: { name: 'q', arguments: { query: '[?id < `3`].name' } },
      }),
    })
      .then((r) => r.text())
      .then((text) => void toolCallResult(text, name));

  for (let i = 0; i < WARMUP_ROUNDS; i++) for (const name of names) await call(name, 0);

  console.log(`OAuth benchmark: tools/call of a query tool, c=${WORKERS}, the two ways in turn (PostgreSQL)`);
  const rates = Object.fromEntries(names.map((n) => [n, [] as number[]])) as Record<Way, number[]>;
  const samples = Object.fromEntries(names.map((n) => [n, [] as number[]])) as Record<Way, number[]>;
  for (let run = 0; run < RUNS; run++) {
    const busy = Object.fromEntries(names.map((n) => [n, 0])) as Record<Way, number>;
    await Promise.all(
      Array.from({ length: WORKERS }, async (_, w) => {
        for (let i = 0; i < PER_WORKER; i++) {
          for (const name of names) {
            const t0 = performance.now();
            await call(name, w);
            const took = performance.now() - t0;
            samples[name].push(took);
            busy[name] += took;
          }
        }
      }),
    );
    // Calls per second of each way: its calls over the time workers spent waiting on it.
    for (const name of names) rates[name].push((WORKERS * PER_WORKER) / (busy[name] / WORKERS / 1000));
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  for (const name of names) {
    const s = summarize(samples[name]);
    console.log(
      `  ${name.padEnd(20)} n=${String(s.n).padEnd(6)} p50 ${ms(s.p50).padStart(9)}  p99 ${ms(s.p99).padStart(9)}  ${median(rates[name]).toFixed(0).padStart(6)} calls/s (median of ${RUNS} runs)`,
    );
  }
  const ratio = median(rates['OAuth access token']) / median(rates['api_key URL']);
  console.log(
    `  OAuth / api_key throughput: ${ratio.toFixed(3)} (target: within 10%, i.e. >= 0.90: ${ratio >= 0.9 ? 'met' : 'NOT met'})`,
  );
} finally {
  await gw.stop();
  await cp.stop();
}
