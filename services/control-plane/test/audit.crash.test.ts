// Pins that a crash loses no acknowledged audit row, on PostgreSQL and on PGlite (a data
// directory): 32 callers loop on a tool through a control plane process, each call with its own
// request id, and the process is killed with SIGKILL mid-load, with calls in flight and rows
// queued. After a restart on the same database every call that was answered has exactly one row,
// every row belongs to a call that was sent, and no row is there twice.
import { afterAll, describe, expect, it } from 'vitest';
import { adminCall, processDatabase, reapAll, startServer, PROCESS_TEST } from './support/server-process.ts';

const ADMIN = 'bnd_admin_audit-crash-test-root-01';
const INTERNAL = 'internal-token-for-audit-crash-tests';
const CALLERS = 32;
const KILL_AFTER = 200;

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  await reapAll();
  for (const cleanup of cleanups) await cleanup();
});

// Answers are arbitrary JSON; the test reads the fields it needs.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

describe('the audit trail across a SIGKILL', PROCESS_TEST, () => {
  it('has a row for every acknowledged call, and none for a call never sent', async () => {
    const db = await processDatabase();
    cleanups.push(db.drop);
    const env = {
      ...db.env,
      BINDERY_ADMIN_TOKEN: ADMIN,
      INTERNAL_TOKEN: INTERNAL,
      BINDERY_SEED_DEMO: 'false',
      LOG_REQUESTS: 'false',
    };
    let server = await startServer(env);
    const admin = async (method: string, path: string, body?: unknown): Promise<Json> =>
      (await adminCall(server.url, ADMIN, method, path, body)).body;
    const table = await admin('POST', '/api/v2/tables', { name: 'crm', data: { items: [1, 2, 3] } });
    const aei = await admin('POST', '/api/v2/aeis', { name: 'crash' });
    const adi = await admin('POST', '/api/v2/adis', {
      table_id: table.id,
      json_path: '/items',
      operation_type: 'query',
    });
    const binding = await admin('POST', `/api/v2/aeis/${aei.id}/bindings`, { adi_id: adi.id });

    const sent = new Set<string>();
    const acknowledged = new Set<string>();
    let next = 0;
    let inFlightAtKill = 0;
    let killed: Promise<void> | undefined;
    const caller = async () => {
      while (!killed) {
        const id = `crash-${next++}`;
        sent.add(id);
        try {
          const res = await fetch(`${server.url}/internal/adi/${adi.id}/execute`, {
            method: 'POST',
            headers: { authorization: `Bearer ${INTERNAL}`, 'content-type': 'application/json' },
            body: JSON.stringify({
              aei_id: aei.id,
              binding_id: binding.id,
              arguments: { query: 'length(@)' },
              request_id: id,
            }),
          });
          const body = (await res.json()) as Json;
          if (res.status === 200 && !body.isError && body.content[0].text === '3') acknowledged.add(id);
        } catch {
          return; // the process died with this call in flight: never acknowledged
        }
        if (acknowledged.size >= KILL_AFTER && !killed) {
          inFlightAtKill = sent.size - acknowledged.size;
          killed = server.kill();
        }
      }
    };
    await Promise.all(Array.from({ length: CALLERS }, caller));
    await killed;
    expect(acknowledged.size).toBeGreaterThanOrEqual(KILL_AFTER);
    // Killed mid-load: the other callers' calls were running (their rows queued or being written).
    expect(inFlightAtKill).toBeGreaterThan(0);

    server = await startServer(env);
    const rows: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Json = await admin(
        'GET',
        `/api/v2/audit?aei_id=${aei.id}&limit=200${cursor ? `&cursor=${cursor}` : ''}`,
      );
      rows.push(...page.items.map((item: Json) => item.request_id as string));
      cursor = page.next_cursor;
    } while (cursor);

    const counts = new Map<string, number>();
    for (const id of rows) counts.set(id, (counts.get(id) ?? 0) + 1);
    expect([...acknowledged].filter((id) => counts.get(id) !== 1)).toEqual([]);
    expect(rows.filter((id) => !sent.has(id))).toEqual([]);
    expect([...counts].filter(([, count]) => count > 1)).toEqual([]);
    expect(await server.stop()).toBe(0);
  });
});
