// Pins what a control plane sharing tables' versions through Redis does when Redis fails it: a
// write is refused with nothing written (acknowledging it could let another control plane serve
// the old data), reads go on from the database, and a version in Redis lower than one this
// process has seen (Redis restored from an old copy) is not trusted.
import { createServer } from 'node:net';
import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.ts';
import { buildFixture, execute, tableState, toolAnswer, type Fixture } from './support/tools.ts';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const SPECS = {
  read: { json_path: '/items', operation_type: 'get_all' },
  add: { json_path: '/items', operation_type: 'create' },
};

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('Redis unreachable', () => {
  let t: TestApp;
  let f: Fixture;

  beforeAll(async () => {
    t = await startTestApp({ redisUrl: `redis://127.0.0.1:${await closedPort()}` });
    f = await buildFixture(t, { items: ['kept'] }, SPECS);
  });
  afterAll(() => t.close());

  it('refuses a write, writing nothing, and serves reads from the database', async () => {
    const before = await tableState(t, f);
    const refused = toolAnswer(await execute(t, f, 'add', { value: 'lost?' }));
    expect(refused.isError).toBe(true);
    expect(refused.value.error).toMatchObject({
      code: 'UPSTREAM_FAILED',
      details: { reason: 'redis_unreachable' },
    });
    expect(refused.value.error.message).toContain('nothing was written');
    expect(await tableState(t, f)).toEqual(before);
    expect(toolAnswer(await execute(t, f, 'read')).value).toEqual(['kept']);
    const replaced = await t.call('PUT', `/api/v2/tables/${f.tableId}/data`, {
      token: f.token,
      body: { items: [] },
    });
    expect(replaced.status).toBe(502);
    expect(await tableState(t, f)).toEqual(before);
  });
});

describe('Redis behind this process', () => {
  let t: TestApp;
  let f: Fixture;
  const redis = createClient({ url: REDIS_URL });

  beforeAll(async () => {
    await redis.connect();
    t = await startTestApp({ redisUrl: REDIS_URL });
    f = await buildFixture(t, { items: [] }, SPECS);
  });
  afterAll(async () => {
    await redis.close();
    await t.close();
  });

  it('a version lower than one this process saw is not trusted', async () => {
    toolAnswer(await execute(t, f, 'add', { value: 1 }));
    expect(toolAnswer(await execute(t, f, 'read')).value).toEqual([1]);
    const key = `bindery:table-version:${f.tableId}`;
    expect(await redis.get(key)).toBe('2');
    toolAnswer(await execute(t, f, 'add', { value: 2 }));
    // Redis restored from a copy taken before the last write.
    await redis.set(key, '2');
    expect(toolAnswer(await execute(t, f, 'read')).value).toEqual([1, 2]);
    // Nor once the version is read from Redis again (what it knew forgotten: as after a dropped
    // connection): the database's version is read, and put back for the other control planes.
    await redis.sendCommand(['CLIENT', 'KILL', 'TYPE', 'pubsub', 'SKIPME', 'yes']);
    await expect
      .poll(async () => {
        expect(toolAnswer(await execute(t, f, 'read')).value).toEqual([1, 2]);
        return redis.get(key);
      })
      .toBe('3');
  });
});
