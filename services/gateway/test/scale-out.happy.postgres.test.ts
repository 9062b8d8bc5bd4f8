// Pins that a scaled-out deployment survives the crash of any one replica without losing or
// doubling a write: two control planes on one PostgreSQL database and one Redis, two gateways,
// each pair behind a round-robin balancer, all processes of their own on loopback. Under a load of
// reads and writes sent again with their idempotency keys until acknowledged, one control plane
// and then one gateway are killed (SIGKILL) and started again: the calls that fail do so within a
// short window after each kill, the surviving replicas answer calls meanwhile, and afterwards
// every acknowledged write is in the table exactly once (no write the load never acknowledged is
// there twice either). Then, on the replicas started again, sessions open on both gateways hear
// (tools/list_changed, and the next tools/list shows it) an admin edit made on either control plane.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  checkLedger,
  crashEach,
  disruption,
  ledgerExposure,
  startLoad,
  startReplicas,
  type Crash,
  type Disruption,
  type Ledger,
  type Replicas,
} from '@bindery/test-support';

/** Calls at once: enough that a kill always finds calls in flight, few enough for a busy host. */
const LOAD = { writers: 6, readers: 6 };

let replicas: Replicas;
let ledger: Ledger;
const clients: Client[] = [];

beforeAll(async () => {
  replicas = await startReplicas({ purpose: 'scaleout' });
  ledger = await ledgerExposure((method, path, body) => replicas.admin(method, path, body));
});
afterAll(async () => {
  for (const client of clients) await client.close().catch(() => undefined);
  await replicas?.close();
});

function described(what: string, d: Disruption): string {
  const at =
    d.firstMs === undefined ? '' : ` between +${d.firstMs.toFixed(0)} and +${d.lastMs!.toFixed(0)} ms`;
  return (
    `${what}: ${d.failed} failed calls (${d.failedReads} reads, ${d.failedWrites} writes)${at}, ` +
    `error window ${d.windowMs.toFixed(0)} ms, ${d.answered} answered meanwhile ${JSON.stringify(d.problems)}`
  );
}

describe('two control planes and two gateways behind balancers', () => {
  it('answer through the crash of a control plane and of a gateway, and keep each acknowledged write once', async () => {
    const run = startLoad({ url: replicas.gatewayBalancer.url, ledger, ...LOAD, label: 'kill' });
    let crashes: Crash[];
    try {
      crashes = await crashEach(replicas, run);
    } finally {
      await run.stop();
    }
    const [controlPlaneCrash, gatewayCrash] = crashes;

    const controlPlane = disruption(run, controlPlaneCrash!.killedAt, controlPlaneCrash!.restartedAt);
    const gateway = disruption(run, gatewayCrash!.killedAt, gatewayCrash!.restartedAt);
    console.log(described('control plane killed', controlPlane));
    console.log(described('gateway killed', gateway));
    // Each kill cut calls in flight, writes among them: the retries below were needed.
    expect(controlPlane.failed).toBeGreaterThan(0);
    expect(gateway.failed).toBeGreaterThan(0);
    expect(run.retriedWrites()).toBeGreaterThan(0);
    // Nothing failed while the replicas started again, nor after.
    expect(disruption(run, controlPlaneCrash!.restartedAt, gatewayCrash!.killedAt).failed).toBe(0);
    expect(disruption(run, gatewayCrash!.restartedAt, Number.POSITIVE_INFINITY).failed).toBe(0);

    const table = await replicas.admin('GET', `/api/v2/tables/${ledger.tableId}`, undefined, 1);
    const check = checkLedger(table.data.entries, [run]);
    console.log(
      `${check.acknowledged} writes acknowledged (${run.retriedWrites()} after a retry), ${check.stored} stored`,
    );
    expect(check.missing).toEqual([]);
    expect(check.duplicated).toEqual([]);
    expect(check.foreign).toEqual([]);
    // Every write sent was acknowledged in the end (the load retries until it is).
    expect(check.unacknowledged).toEqual([]);
    expect(check.stored).toBe(check.acknowledged);
  }, 180_000);

  it('sessions on both gateways hear an admin edit made on either control plane', async () => {
    for (const gateway of replicas.gateways) {
      const client = new Client({ name: 'scale-out', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.url}${ledger.path}`)));
      clients.push(client);
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('probe');
    }
    for (const [index, name] of [
      [0, 'probe_renamed_on_a'],
      [1, 'probe_renamed_on_b'],
    ] as const) {
      const changed = clients.map(
        (client, i) =>
          new Promise<void>((resolve, reject) => {
            const timer = setTimeout(
              () =>
                reject(new Error(`gateway ${i}: no tools/list_changed within 5 s of the edit on ${index}`)),
              5_000,
            );
            client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
              clearTimeout(timer);
              resolve();
            });
          }),
      );
      await replicas.admin(
        'PATCH',
        `/api/v2/aeis/${ledger.aeiId}/bindings/${ledger.bindings.probe}`,
        { tool_name: name },
        index,
      );
      await Promise.all(changed);
      for (const client of clients) {
        expect((await client.listTools()).tools.map((t) => t.name)).toContain(name);
      }
    }
  });
});
