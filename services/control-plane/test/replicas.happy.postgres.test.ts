// Pins that two control-plane processes on one PostgreSQL database, sharing tables' versions
// through Redis or, without it, through the database's LISTEN/NOTIFY, never serve a stale read: a
// write acknowledged by either one is seen by the very next read on the other, every time (their
// reads come from their context caches otherwise, and take the table's version from memory under
// their lease, asking nothing), and so are a replacement of the whole data and the deletion of the
// table. Also when the other one's listening connection is cut, or it hangs (SIGSTOP) while the
// write is made: the write waits for its lease to end, and it reads the write once it is back. One
// that stops leaves: writes no longer wait for it.
import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { withConnection } from '@bindery/test-support';
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

const redisClient = () => createClient({ url: REDIS_URL });

async function withRedis<T>(fn: (redis: ReturnType<typeof redisClient>) => Promise<T>): Promise<T> {
  const redis = redisClient();
  await redis.connect();
  try {
    return await fn(redis);
  } finally {
    await redis.close();
  }
}

/** Where the two control planes share versions, and how a test looks at it. */
interface Transport {
  env: Record<string, string>;
  /** Where a read that found no version in memory took it from. */
  fallback: 'redis' | 'database';
  /** Cuts `member`'s listening connection (the announcements it would hear are lost). */
  cut(member: string): Promise<void>;
  /** When `member`'s lease ends, as the shared store says (ms). */
  leaseEnd(member: string): Promise<number>;
  /** The members holding a lease. */
  members(): Promise<string[]>;
}

/** The Redis key of the members' leases (from a control plane's log). */
function membersKey(server: ServerProcess): string {
  const key = /"members":"([^"]+)"/.exec(server.output())?.[1];
  if (!key) throw new Error(`no lease taken:\n${server.output()}`);
  return key;
}

const TRANSPORTS: { name: string; make: (url: string) => Transport }[] = [
  {
    name: 'Redis',
    make: () => ({
      env: { REDIS_URL },
      fallback: 'redis',
      cut: (member) =>
        withRedis(async (redis) => {
          const clients = String(await redis.sendCommand(['CLIENT', 'LIST', 'TYPE', 'pubsub']));
          const line = clients.split('\n').find((l) => l.includes(`name=bindery-versions-${member}`));
          const id = /\bid=(\d+)/.exec(line ?? '')?.[1];
          expect(id, clients).toBeDefined();
          await redis.sendCommand(['CLIENT', 'KILL', 'ID', id!]);
        }),
      leaseEnd: (member) => withRedis(async (redis) => Number(await redis.hGet(membersKey(first), member))),
      members: () =>
        withRedis(async (redis) => (await redis.hKeys(membersKey(first))).filter((f) => !f.startsWith('~'))),
    }),
  },
  {
    name: 'PostgreSQL LISTEN/NOTIFY (no Redis)',
    make: (url) => ({
      env: {},
      fallback: 'database',
      cut: (member) =>
        withConnection(url, async (client) => {
          const { rows } = await client.query<{ cut: boolean }>(
            `SELECT pg_terminate_backend(pid) AS cut FROM pg_stat_activity WHERE application_name = $1`,
            [`bindery-versions-${member}`],
          );
          expect(rows.map((row) => row.cut)).toEqual([true]);
        }),
      leaseEnd: (member) =>
        withConnection(url, async (client) => {
          const { rows } = await client.query<{ end: Date }>(
            'SELECT lease_until AS end FROM table_version_member WHERE member = $1',
            [member],
          );
          return rows[0]?.end.getTime() ?? 0;
        }),
      members: () =>
        withConnection(url, async (client) =>
          (await client.query<{ member: string }>('SELECT member FROM table_version_member')).rows.map(
            (row) => row.member,
          ),
        ),
    }),
  },
];

let database: Awaited<ReturnType<typeof processDatabase>>;
let first: ServerProcess;
let second: ServerProcess;
const tools: Record<string, { adi: string; binding: string }> = {};
let aeiId = '';
let tableId = '';
let transport: Transport;

/** A fresh database and two control planes on it, sharing versions through `make`'s transport. */
async function setUp(make: (url: string) => Transport): Promise<void> {
  database = await processDatabase();
  transport = make(database.url!);
  const env = {
    ...database.env,
    ...transport.env,
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
}

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

async function series(server: ServerProcess, name: string): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

const metric = (server: ServerProcess, result: string) =>
  series(server, `controlplane_context_cache_total{result="${result}"}`);
const versionLookups = (server: ServerProcess, source: 'memory' | 'redis' | 'database') =>
  series(server, `controlplane_table_version_lookups_total{source="${source}"}`);

/** The member id a control plane's table-version lease is held under (from its log). */
function leaseMember(server: ServerProcess): string {
  const match = /"member":"([0-9a-f]{16})"[^\n]*table-version lease taken/.exec(server.output());
  if (!match?.[1]) throw new Error(`no lease taken:\n${server.output()}`);
  return match[1];
}

/** Warnings of `server` that it waited out the lease of `member`. */
function waitedOut(server: ServerProcess, member: string): number {
  return server
    .output()
    .split('\n')
    .filter((l) => l.includes('did not confirm a table version') && l.includes(member)).length;
}

describe.each(TRANSPORTS)(
  'two control planes sharing versions through $name',
  ({ name, make }) => {
    beforeAll(() => setUp(make), PROCESS_TEST.timeout);
    afterAll(async () => {
      await reapAll();
      await database?.drop();
    });

    it('a write acknowledged by one is seen by the next read on the other, every round', async () => {
      // Both caches hold the context before the writes start.
      expect((await call(first, 'read')).value).toEqual([]);
      expect((await call(second, 'read')).value).toEqual([]);
      const hitsBefore = (await metric(first, 'hit')) + (await metric(second, 'hit'));
      const fromMemory = async () =>
        (await versionLookups(first, 'memory')) + (await versionLookups(second, 'memory'));
      const fromFallback = async () =>
        (await versionLookups(first, transport.fallback)) +
        (await versionLookups(second, transport.fallback));
      const [memoryBefore, fallbackBefore] = [await fromMemory(), await fromFallback()];
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
      // Every read took its table's version from memory: announced by the other's write before it
      // was acknowledged, or its own.
      const [memory, fallback] = [
        (await fromMemory()) - memoryBefore,
        (await fromFallback()) - fallbackBefore,
      ];
      expect(memory + fallback).toBeGreaterThanOrEqual(2 * ROUNDS);
      // All of them, unless a process stalled past its lease (then it asks Redis or the database, rightly).
      expect(fallback).toBeLessThan(ROUNDS / 10);
      // Each write was confirmed by the other one: none waited for a lease to end.
      expect(waitedOut(first, leaseMember(second)) + waitedOut(second, leaseMember(first))).toBe(0);
      // With Redis, Redis holds the version too, raised by each write (for readers without a lease).
      if (transport.fallback === 'redis') {
        await withRedis(async (redis) =>
          expect(await redis.get(`bindery:table-version:${tableId}`)).toBe(String(1 + ROUNDS)),
        );
      }
      // The reads were served from the caches (brought forward by the patches), not read again.
      const forwarded = (await metric(first, 'forward')) + (await metric(second, 'forward'));
      expect(forwarded).toBeGreaterThanOrEqual(ROUNDS);
      expect(
        (await metric(first, 'hit')) + (await metric(second, 'hit')) - hitsBefore,
      ).toBeGreaterThanOrEqual(ROUNDS);
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

    it('one that misses a write while its connection is down forgets what it knew once it leases again', async () => {
      const member = leaseMember(second);
      expect((await call(second, 'counter')).isError).toBe(false);
      // Stopped, so it cannot connect again before the write is announced: the announcement is lost.
      process.kill(second.pid, 'SIGSTOP');
      let endBefore = 0;
      try {
        await transport.cut(member);
        expect((await call(first, 'bump', { path: '/n', value: 7001 })).isError).toBe(false);
        endBefore = await transport.leaseEnd(member);
      } finally {
        process.kill(second.pid, 'SIGCONT');
      }
      // No read until its lease is renewed on the new connection: then what it knew must be gone.
      await vi.waitFor(async () => expect(await transport.leaseEnd(member)).toBeGreaterThan(endBefore), {
        timeout: 15_000,
        interval: 50,
      });
      await new Promise((resolve) => setTimeout(resolve, 100));
      const before = await versionLookups(second, 'memory');
      expect((await call(second, 'counter')).value).toEqual({ n: 7001 });
      expect((await call(second, 'counter')).value).toEqual({ n: 7001 });
      expect(await versionLookups(second, 'memory')).toBeGreaterThan(before);
      expect((await call(first, 'bump', { path: '/n', value: 7002 })).isError).toBe(false);
      expect((await call(second, 'counter')).value).toEqual({ n: 7002 });
    });

    it('reads stay right while its listening connection is cut and made again, under writes', async () => {
      const member = leaseMember(second);
      let n = 7002;
      expect((await call(second, 'counter')).value).toEqual({ n });
      const cut = transport.cut(member);
      for (let round = 0; round < 40; round += 1) {
        n += 1;
        expect((await call(first, 'bump', { path: '/n', value: n })).isError).toBe(false);
        expect((await call(second, 'counter')).value, `round ${round}`).toEqual({ n });
        if (round === 5) await cut;
      }
      // It is back on a new connection, answering from memory again.
      const endBefore = await transport.leaseEnd(member);
      await vi.waitFor(async () => expect(await transport.leaseEnd(member)).toBeGreaterThan(endBefore), {
        timeout: 15_000,
        interval: 50,
      });
      const before = await versionLookups(second, 'memory');
      expect((await call(second, 'counter')).value).toEqual({ n });
      expect(await versionLookups(second, 'memory')).toBeGreaterThan(before);
      await call(first, 'bump', { path: '/n', value: 7002 });
    });

    it('one that hangs holds a write up until its lease ends, and reads the write once it wakes', async () => {
      const member = leaseMember(second);
      expect((await call(second, 'counter')).value).toEqual({ n: 7002 });
      const waitedBefore = waitedOut(first, member);
      process.kill(second.pid, 'SIGSTOP');
      try {
        const started = performance.now();
        expect((await call(first, 'bump', { path: '/n', value: 8001 })).isError).toBe(false);
        // Not before the hung one could have stopped answering from memory: three quarters of a
        // lease (2 s) after its last renewal, which was before it hung.
        expect(performance.now() - started).toBeGreaterThanOrEqual(1_500);
        // Acknowledged only once the hung one's lease ended: the writer says it waited it out.
        expect(waitedOut(first, member)).toBe(waitedBefore + 1);
      } finally {
        process.kill(second.pid, 'SIGCONT');
      }
      expect((await call(second, 'counter')).value).toEqual({ n: 8001 });
    });

    // A change no control plane announced (an older version's write during an upgrade, a row
    // deleted in SQL) is announced by the database's trigger at commit.
    it.runIf(name.includes('LISTEN'))(
      'a table deleted behind their backs is gone for both at once',
      async () => {
        const made = await adminCall(first.url, ADMIN, 'POST', '/api/v2/tables', {
          name: 'behind',
          data: { n: 1 },
        });
        const adi = await adminCall(first.url, ADMIN, 'POST', '/api/v2/adis', {
          table_id: made.body.id,
          json_path: '',
          operation_type: 'get_all',
        });
        const binding = await adminCall(first.url, ADMIN, 'POST', `/api/v2/aeis/${aeiId}/bindings`, {
          adi_id: adi.body.id,
          tool_name: 'behind',
        });
        tools.behind = { adi: String(adi.body.id), binding: String(binding.body.id) };
        // Both hold it in their caches, its version known under their leases.
        for (const server of [first, second]) {
          expect((await call(server, 'behind')).value).toEqual({ n: 1 });
          expect((await call(server, 'behind')).value).toEqual({ n: 1 });
        }
        await withConnection(database.url!, (client) =>
          client.query('DELETE FROM "table" WHERE id = $1', [made.body.id]),
        );
        // The announcement is on its way at commit: the next reads find the table gone.
        await vi.waitFor(
          async () => {
            for (const server of [first, second]) expect((await call(server, 'behind')).isError).toBe(true);
          },
          { timeout: 2_000, interval: 20 },
        );
      },
    );

    it("a deleted table is gone for the other one's next read", async () => {
      expect((await call(second, 'read')).isError).toBe(false);
      const deleted = await adminCall(first.url, ADMIN, 'DELETE', `/api/v2/tables/${tableId}?force=true`);
      expect(deleted.status).toBe(204);
      const read = await call(second, 'read');
      expect(read.isError).toBe(true);
      expect(read.value.error.code).toBe('NOT_FOUND');
    });

    it("one that stops leaves: the other one's writes wait for nobody", async () => {
      const member = leaseMember(second);
      const waitedBefore = waitedOut(first, member);
      await second.stop();
      const table = await adminCall(first.url, ADMIN, 'POST', '/api/v2/tables', {
        name: 'after',
        data: { n: 0 },
      });
      expect(table.status).toBe(201);
      for (let n = 1; n <= 3; n += 1) {
        const written = await adminCall(
          first.url,
          ADMIN,
          'PUT',
          `/api/v2/tables/${String(table.body.id)}/data`,
          { n },
        );
        expect(written.status).toBe(200);
      }
      expect(waitedOut(first, member)).toBe(waitedBefore);
      // Its lease is gone from the members' set (only the first one's is left).
      expect(await transport.members()).toEqual([leaseMember(first)]);
    });
  },
  PROCESS_TEST.timeout,
);
