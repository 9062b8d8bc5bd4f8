// Pins crash consistency of keyed writes: the control plane is killed with SIGKILL in the middle
// of a burst of appends sent with idempotency keys (the answers of every fourth call are treated
// as lost, as by a gateway that timed out after the control plane committed); after a restart on the same database every call that got
// no answer is retried with its key, and each append ends up applied exactly once (none lost,
// none doubled, though some unanswered ones had been applied), while retries of answered calls
// get their first answer back word for word.
import { afterAll, describe, expect, it } from 'vitest';
import { adminCall, processDatabase, reapAll, startServer, PROCESS_TEST } from './support/server-process.ts';

const ADMIN = 'bnd_admin_crash-test-root-token-01';
const INTERNAL = 'internal-token-for-crash-tests';
const CALLS = 240;
const CONCURRENCY = 12;
const KILL_AFTER = 60;

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  await reapAll();
  for (const cleanup of cleanups) await cleanup();
});

async function databaseEnv(): Promise<Record<string, string>> {
  const db = await processDatabase();
  cleanups.push(db.drop);
  return db.env;
}

// Answers are arbitrary JSON; the test reads the fields it needs.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

describe('keyed writes across a SIGKILL', PROCESS_TEST, () => {
  it('retrying every unanswered call with its key applies each write exactly once', async () => {
    const env = {
      ...(await databaseEnv()),
      BINDERY_ADMIN_TOKEN: ADMIN,
      INTERNAL_TOKEN: INTERNAL,
      BINDERY_SEED_DEMO: 'false',
      LOG_REQUESTS: 'false',
    };
    let server = await startServer(env);
    const admin = async (method: string, path: string, body?: unknown): Promise<{ body: Json }> =>
      adminCall(server.url, ADMIN, method, path, body);
    const table = (await admin('POST', '/api/v2/tables', { name: 'ledger', data: { items: [] } })).body;
    const aei = (await admin('POST', '/api/v2/aeis', { name: 'writer' })).body;
    const adi = (
      await admin('POST', '/api/v2/adis', {
        table_id: table.id,
        json_path: '/items',
        operation_type: 'create',
      })
    ).body;
    const binding = (await admin('POST', `/api/v2/aeis/${aei.id}/bindings`, { adi_id: adi.id })).body;
    const call = async (i: number): Promise<{ status: number; body: Json }> => {
      const res = await fetch(`${server.url}/internal/adi/${adi.id}/execute`, {
        method: 'POST',
        headers: { authorization: `Bearer ${INTERNAL}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          aei_id: aei.id,
          binding_id: binding.id,
          arguments: { value: `v-${i}` },
          idempotency_key: `append-${i}`,
        }),
      });
      return { status: res.status, body: await res.json() };
    };

    // The burst: CONCURRENCY callers; the process is killed once KILL_AFTER answers came back.
    const answered = new Map<number, string>();
    const pending = Array.from({ length: CALLS }, (_, i) => i);
    let killed: Promise<unknown> | undefined;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        for (let i = pending.shift(); i !== undefined; i = pending.shift()) {
          try {
            const res = await call(i);
            // Every fourth answer is lost on its way back: the write is applied, the caller never knows.
            const lost = i % 4 === 0;
            if (!lost && res.status === 200 && !res.body.isError) answered.set(i, res.body.content[0].text);
          } catch {
            // No answer: the caller gave up, or the process died with this call in flight.
          }
          if (answered.size >= KILL_AFTER && !killed) killed = server.kill();
        }
      }),
    );
    await killed;
    expect(answered.size).toBeGreaterThanOrEqual(KILL_AFTER);
    expect(answered.size).toBeLessThan(CALLS);

    server = await startServer(env);
    const itemsNow = async () =>
      (await admin('GET', `/api/v2/tables/${table.id}`)).body.data.items as string[];
    const unanswered = Array.from({ length: CALLS }, (_, i) => i).filter((i) => !answered.has(i));
    // The retries below have something to deduplicate: some unanswered writes were applied.
    const applied = new Set(await itemsNow());
    expect(unanswered.filter((i) => applied.has(`v-${i}`)).length).toBeGreaterThan(0);
    // Every call without an answer is retried with its key.
    for (const i of unanswered) {
      const res = await call(i);
      expect(res.status).toBe(200);
      expect(res.body.isError).toBeFalsy();
    }
    // Retries of answered calls get their first answer back, word for word.
    for (const i of [...answered.keys()].slice(0, 10)) {
      const res = await call(i);
      expect(res.body.content[0].text).toBe(answered.get(i));
    }

    const items = await itemsNow();
    const counts = new Map<string, number>();
    for (const item of items) counts.set(item, (counts.get(item) ?? 0) + 1);
    const wrong = Array.from({ length: CALLS }, (_, i) => `v-${i}`).filter((v) => counts.get(v) !== 1);
    expect(wrong).toEqual([]);
    expect(items).toHaveLength(CALLS);
    await server.stop();
  });
});
