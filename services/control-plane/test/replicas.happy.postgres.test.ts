// Pins that two control-plane processes on one PostgreSQL database, sharing tables' versions
// through Redis, never serve a stale read: a write acknowledged by either one is seen by the very
// next read on the other, every time (their reads come from their context caches otherwise), and
// so are a replacement of the whole data and the deletion of the table.
import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL_TOKEN } from './support/app.ts';
import {
  PROCESS_TEST,
  adminCall,
  processDatabase,
  reapAll,
  startServer,
  type ServerProcess,
} from './support/server-process.ts';

const ADMIN = 'bnd_admin_replicas-test-root-token';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const ROUNDS = 100;

let database: Awaited<ReturnType<typeof processDatabase>>;
let first: ServerProcess;
let second: ServerProcess;
const tools: Record<string, { adi: string; binding: string }> = {};
let aeiId = '';
let tableId = '';

beforeAll(async () => {
  database = await processDatabase();
  const env = {
    ...database.env,
    REDIS_URL,
    INTERNAL_TOKEN,
    BINDERY_ADMIN_TOKEN: ADMIN,
    BINDERY_SEED_DEMO: 'false',
  };
  // One after the other: both migrate the same database on start.
  first = await startServer(env);
  second = await startServer(env);
  const ok = <T>(res: { status: number; body: T }, what: string): T => {
    if (res.status >= 300) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  const table = ok(
    await adminCall(first.url, ADMIN, 'POST', '/api/v2/tables', {
      name: 'shared',
      data: { items: [], at: { n: 0 } },
    }),
    'table',
  );
  tableId = String(table.id);
  const aei = ok(await adminCall(first.url, ADMIN, 'POST', '/api/v2/aeis', { name: 'agent' }), 'aei');
  aeiId = String(aei.id);
  const specs = {
    read: { json_path: '/items', operation_type: 'get_all' },
    add: { json_path: '/items', operation_type: 'create' },
    counter: { json_path: '/at', operation_type: 'get_all' },
    bump: { json_path: '/at', operation_type: 'update' },
  };
  for (const [name, spec] of Object.entries(specs)) {
    const adi = ok(
      await adminCall(first.url, ADMIN, 'POST', '/api/v2/adis', { table_id: tableId, ...spec }),
      name,
    );
    const binding = ok(
      await adminCall(first.url, ADMIN, 'POST', `/api/v2/aeis/${aeiId}/bindings`, {
        adi_id: adi.id,
        tool_name: name,
      }),
      `bind ${name}`,
    );
    tools[name] = { adi: String(adi.id), binding: String(binding.id) };
  }
}, PROCESS_TEST.timeout);

afterAll(async () => {
  await reapAll();
  await database?.drop();
});

async function call(server: ServerProcess, name: string, args: Record<string, unknown> = {}) {
  const tool = tools[name]!;
  const res = await fetch(`${server.url}/internal/adi/${tool.adi}/execute`, {
    method: 'POST',
    headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ aei_id: aeiId, binding_id: tool.binding, arguments: args }),
  });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { isError?: boolean; content: { text: string }[] };
  return { isError: body.isError === true, value: JSON.parse(body.content[0]!.text) };
}

async function metric(server: ServerProcess, result: string): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`controlplane_context_cache_total{result="${result}"}`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

describe('two control planes sharing versions through Redis', PROCESS_TEST, () => {
  it('a write acknowledged by one is seen by the next read on the other, every round', async () => {
    // Both caches hold the context before the writes start.
    expect((await call(first, 'read')).value).toEqual([]);
    expect((await call(second, 'read')).value).toEqual([]);
    const hitsBefore = (await metric(first, 'hit')) + (await metric(second, 'hit'));
    for (let i = 0; i < ROUNDS; i += 1) {
      const [writer, reader] = i % 2 === 0 ? [first, second] : [second, first];
      const written = await call(writer, 'add', { value: i });
      expect(written.isError).toBe(false);
      const read = await call(reader, 'read');
      expect(read.value, `round ${i}`).toHaveLength(i + 1);
      expect(read.value.at(-1)).toBe(i);
      // And the writer's own next read, from its cache.
      expect((await call(writer, 'read')).value).toHaveLength(i + 1);
    }
    // The version every read checked is Redis's, raised by each write before it was acknowledged.
    const redis = createClient({ url: REDIS_URL });
    await redis.connect();
    try {
      expect(await redis.get(`bindery:table-version:${tableId}`)).toBe(String(1 + ROUNDS));
    } finally {
      await redis.close();
    }
    // The reads were served from the caches (brought forward by the patches), not read again.
    const forwarded = (await metric(first, 'forward')) + (await metric(second, 'forward'));
    expect(forwarded).toBeGreaterThanOrEqual(ROUNDS);
    expect((await metric(first, 'hit')) + (await metric(second, 'hit')) - hitsBefore).toBeGreaterThanOrEqual(
      ROUNDS,
    );
  });

  it('a replacement of the whole data through one is read by the other at once', async () => {
    expect((await call(second, 'counter')).value).toEqual({ n: 0 });
    for (let n = 1; n <= 10; n += 1) {
      const replaced = await adminCall(first.url, ADMIN, 'PUT', `/api/v2/tables/${tableId}/data`, {
        items: [n],
        at: { n },
      });
      expect(replaced.status).toBe(200);
      expect((await call(second, 'counter')).value).toEqual({ n });
      expect((await call(second, 'read')).value).toEqual([n]);
      await call(second, 'bump', { path: '/n', value: n * 100 });
      expect((await call(first, 'counter')).value).toEqual({ n: n * 100 });
    }
  });

  it("a deleted table is gone for the other one's next read", async () => {
    expect((await call(second, 'read')).isError).toBe(false);
    const deleted = await adminCall(first.url, ADMIN, 'DELETE', `/api/v2/tables/${tableId}?force=true`);
    expect(deleted.status).toBe(204);
    const read = await call(second, 'read');
    expect(read.isError).toBe(true);
    expect(read.value.error.code).toBe('NOT_FOUND');
  });
});
