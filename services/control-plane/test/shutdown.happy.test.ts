// Pins graceful shutdown of the control plane process on both engines: on SIGTERM, twenty slow
// tool calls already received are all answered and audited, the process exits 0 and the database
// is closed cleanly (a restart sees every audit row); a request that outlives
// SHUTDOWN_GRACE_MS has its connection cut and the process exits 1, saying so.
import { afterAll, describe, expect, it } from 'vitest';
import { sample } from '@bindery/test-support';
import { adminCall, processDatabase, reapAll, startServer, PROCESS_TEST } from './support/server-process.ts';

const ADMIN = 'bnd_admin_shutdown-test-root-token';
const INTERNAL = 'internal-token-for-shutdown-tests';
const CALLS = 20;
/** Runs out the memory budget of a query over a 1,000-item array (64 MiB built, 0.4 s here). */
const SLOW_QUERY = 'map(&map(&map(&map(&map(&map(&map(&@, $), $), $), $), $), $), $)';
/**
 * Builds almost nothing and runs to the step budget (100 million steps, about a second on a quiet
 * 2-core host): a query that is still running when a short grace period ends.
 */
const LONG_QUERY = 'map(&map(&$[?@ == `-1`], $), $)';

// Answers are arbitrary JSON; the test reads the fields it needs.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const drops: (() => Promise<void>)[] = [];
afterAll(async () => {
  await reapAll();
  for (const drop of drops) await drop();
});

async function environment(extra: Record<string, string> = {}): Promise<Record<string, string>> {
  const db = await processDatabase();
  drops.push(db.drop);
  return {
    ...db.env,
    BINDERY_ADMIN_TOKEN: ADMIN,
    INTERNAL_TOKEN: INTERNAL,
    BINDERY_SEED_DEMO: 'false',
    LOG_REQUESTS: 'false',
    ...extra,
  };
}

/** One tool of `operation` on `data` at `path`, bound to a new AEI: what an execute call needs. */
async function oneTool(url: string, data: Json, path: string, operation: string) {
  const admin = async (p: string, body: unknown) =>
    (await adminCall(url, ADMIN, 'POST', p, body)).body as Json;
  const table = await admin('/api/v2/tables', { name: 'big', data });
  const adi = await admin('/api/v2/adis', { table_id: table.id, json_path: path, operation_type: operation });
  const aei = await admin('/api/v2/aeis', { name: 'shutdown' });
  const binding = await admin(`/api/v2/aeis/${aei.id}/bindings`, { adi_id: adi.id });
  /** A gateway's batch of `calls` calls with these arguments (POST /internal/execute-batch). */
  const batch = (args: Json, calls: number) =>
    fetch(`${url}/internal/execute-batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${INTERNAL}`, 'content-type': 'application/x-ndjson' },
      body: `${adi.id}\t${JSON.stringify({ aei_id: aei.id, binding_id: binding.id, arguments: args })}\n`.repeat(
        calls,
      ),
    });
  const execute = (args: Json) =>
    fetch(`${url}/internal/adi/${adi.id}/execute`, {
      method: 'POST',
      headers: { authorization: `Bearer ${INTERNAL}`, 'content-type': 'application/json' },
      body: JSON.stringify({ aei_id: aei.id, binding_id: binding.id, arguments: args }),
    });
  return { table, aei, execute, batch };
}

/** A query tool on 1,000 items, where SLOW_QUERY runs out any budget. */
const queryTool = (url: string) =>
  oneTool(url, { items: Array.from({ length: 1_000 }, (_, i) => i) }, '/items', 'query');

/** Polls /metrics until the gauge `name` (less `less`) reaches `count`; `what` words a failure. */
async function untilGauge(url: string, name: string, count: number, what: string, less = 0): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const text = await (await fetch(`${url}/metrics`)).text();
    const value = (sample(text, name) ?? 0) - less;
    if (value >= count) return;
    if (Date.now() > deadline) throw new Error(`only ${value} of ${count} ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Until `count` requests besides the poll itself are received and unanswered. */
const untilInFlight = (url: string, count: number) =>
  untilGauge(url, 'controlplane_http_requests_in_flight', count, 'requests received', 1);

describe('graceful shutdown of the control plane', PROCESS_TEST, () => {
  it('answers and audits twenty slow tool calls in flight at SIGTERM, then exits 0', async () => {
    // Twenty queries, each running its whole one-second budget on one of four worker threads; those
    // that wait for a thread more than two seconds answer RATE_LIMITED. All of them answer between
    // one and three seconds after they came in.
    const env = await environment({
      QUERY_TIMEOUT_MS: '1000',
      QUERY_WORKERS: '4',
      QUERY_QUEUE: '16',
      QUERY_TENANT_ESCALATIONS: '20',
    });
    let server = await startServer(env);
    const tool = await queryTool(server.url);
    let answered = 0;
    const calls = Array.from({ length: CALLS }, () =>
      tool.execute({ query: SLOW_QUERY }).then(async (res) => {
        answered += 1;
        return { status: res.status, body: (await res.json()) as Json };
      }),
    );
    // SIGTERM once the server has received all twenty (requests it has not read when it closes are
    // refused with their connection, as on any server).
    await untilInFlight(server.url, CALLS);
    const inFlightAtSignal = CALLS - answered;
    const code = await server.stop();
    const answers = await Promise.all(calls);

    expect(inFlightAtSignal).toBe(CALLS);
    const codes = answers.map((answer) => {
      expect(answer.status).toBe(200);
      return JSON.parse(answer.body.content[0].text).error.code as string;
    });
    expect(codes.filter((code) => code === 'LIMIT_EXCEEDED').length).toBeGreaterThanOrEqual(4);
    expect(codes.filter((code) => code !== 'LIMIT_EXCEEDED' && code !== 'RATE_LIMITED')).toEqual([]);
    expect(code).toBe(0);
    expect(server.output()).toContain('shutting down: finishing requests in flight');

    // The database was closed cleanly with every audit row in it.
    server = await startServer(env);
    const audit = (await adminCall(server.url, ADMIN, 'GET', `/api/v2/audit?aei_id=${tool.aei.id}&limit=100`))
      .body as Json;
    expect(audit.items).toHaveLength(CALLS);
    expect(audit.items.map((row: Json) => row.error_code).sort()).toEqual([...codes].sort());
    expect(await server.stop()).toBe(0);
  });

  it('answers every call of a gateway batch in flight at SIGTERM, then exits 0', async () => {
    const env = await environment({
      QUERY_TIMEOUT_MS: '1000',
      QUERY_WORKERS: '4',
      QUERY_TENANT_ESCALATIONS: '20',
    });
    const server = await startServer(env);
    const tool = await queryTool(server.url);
    const answer = tool.batch({ query: SLOW_QUERY }, 4).then(async (res) => ({
      status: res.status,
      lines: (await res.text())
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Json),
    }));
    // The batch's four calls are running (the HTTP request in flight counts once).
    await untilGauge(server.url, 'controlplane_tool_executions_in_flight', 4, 'calls of the batch running');
    const code = await server.stop();
    const { status, lines } = await answer;
    expect(status).toBe(200);
    expect(lines.map((l) => l.i).sort()).toEqual([0, 1, 2, 3]);
    for (const line of lines) {
      expect(line.status).toBe(200);
      expect(JSON.parse(line.body.content[0].text).error.code).toBe('LIMIT_EXCEEDED');
    }
    expect(code).toBe(0);
  });

  it('cuts a request that outlives SHUTDOWN_GRACE_MS and exits 1, saying so', async () => {
    // A query allowed to run for a minute, and a fifth of a second of grace.
    const env = await environment({ SHUTDOWN_GRACE_MS: '200', QUERY_TIMEOUT_MS: '60000' });
    const server = await startServer(env);
    const items = Array.from({ length: 1_000 }, (_, i) => i);
    const tool = await oneTool(server.url, { items }, '/items', 'query');
    const slow = tool.execute({ query: LONG_QUERY }).then(
      async (res) => `answered ${res.status}: ${await res.text()}`,
      () => 'cut',
    );
    // Once the in-process slice is over, the query runs in a worker thread.
    await untilGauge(server.url, 'controlplane_query_pool_running', 1, 'queries in a worker');
    const stopping = performance.now();
    const code = await server.stop();
    const took = performance.now() - stopping;
    expect(await slow).toBe('cut');
    expect(code).toBe(1);
    expect(took).toBeLessThan(10_000);
    expect(server.output()).toContain('shutdown grace period over');
  });
});
