// Pins that tables stored before the patch log (their whole data in `table.data`) are read the
// same after the migration that moves the data to snapshots: the same data and versions through
// the admin API, an export and the tools, a JSON null table included; and that writes go on from
// the version they had. Runs on PostgreSQL and on PGlite (a data directory migrated in two steps,
// as an upgrade does).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqlSession } from '../src/db/migrate.ts';
import { hashSecret } from '../src/domain/ids.ts';
import { INTERNAL_TOKEN, startTestApp, type TestApp } from './support/app.ts';
import { databaseBefore, migrationsFrom } from './support/migrations.ts';

const PATCH_LOG_MIGRATION = '20261126100000_table_patch_log';

const CRM = {
  customers: [
    { id: 'c1', name: 'Ada', tags: ['vip'], address: { city: 'Oslo' } },
    { id: 'c2', name: 'Grace', score: 1.5, active: true, note: null },
  ],
  counters: { visits: 42, 'a/b': 'slash', 'm~n': 'tilde', '': 'empty key' },
  unicode: 'ÿ 中文 😀',
};

/** Three tables as the release before the patch log stored them, at different versions. */
async function tablesBeforePatchLog(session: SqlSession): Promise<void> {
  await session.query(`INSERT INTO "user" (id, name, is_root) VALUES ('usr_old', 'root', true)`);
  await session.query(
    `INSERT INTO "table" (id, user_id, name, data, version) VALUES
       ('tbl_crm', 'usr_old', 'crm', $1, 7),
       ('tbl_list', 'usr_old', 'list', $2, 1),
       ('tbl_null', 'usr_old', 'nothing', 'null', 3)`,
    [JSON.stringify(CRM), JSON.stringify([1, 'two', { three: 3 }])],
  );
  await session.query(
    `INSERT INTO adi (id, user_id, kind, table_id, json_path, operation_type, name, config) VALUES
       ('adi_read', 'usr_old', 'context', 'tbl_crm', '/customers', 'get_all', 'read_customers', '{}'),
       ('adi_add', 'usr_old', 'context', 'tbl_crm', '/customers', 'create', 'add_customer', '{}'),
       ('adi_city', 'usr_old', 'context', 'tbl_crm', '/customers/0/address', 'get_all', 'city', '{}')`,
  );
  await session.query(
    `INSERT INTO aei (id, user_id, name, api_key_hash, api_key_prefix) VALUES ('aei_old', 'usr_old', 'agent', $1, 'bnd_key_old')`,
    [hashSecret('bnd_key_old-patch-log')],
  );
  await session.query(
    `INSERT INTO aei_binding (id, aei_id, adi_id, tool_name, tool_name_inherited) VALUES
       ('bnd_read', 'aei_old', 'adi_read', 'read_customers', true),
       ('bnd_add', 'aei_old', 'adi_add', 'add_customer', true),
       ('bnd_city', 'aei_old', 'adi_city', 'city', true)`,
  );
}

let t: TestApp;

beforeAll(async () => {
  t = await startTestApp({
    existingDatabase: await databaseBefore(PATCH_LOG_MIGRATION, tablesBeforePatchLog),
  });
});
afterAll(() => t?.close());

async function call(adiId: string, bindingId: string, args: Record<string, unknown> = {}) {
  const res = await t.call('POST', `/internal/adi/${adiId}/execute`, {
    token: INTERNAL_TOKEN,
    body: { aei_id: 'aei_old', binding_id: bindingId, arguments: args },
  });
  expect(res.status).toBe(200);
  return { isError: res.body.isError === true, value: JSON.parse(res.body.content[0].text) };
}

describe('tables stored before the patch log', () => {
  it('are migrated on open, each into a snapshot at its version', async () => {
    expect(t.database.migrated).toEqual(await migrationsFrom(PATCH_LOG_MIGRATION));
    const snapshots = await t.database.prisma.tableSnapshot.findMany({ orderBy: { tableId: 'asc' } });
    expect(snapshots.map((s) => [s.tableId, s.version])).toEqual([
      ['tbl_crm', 7],
      ['tbl_list', 1],
      ['tbl_null', 3],
    ]);
    expect(await t.database.prisma.tablePatch.count()).toBe(0);
  });

  it('read the same through the admin API and an export', async () => {
    const crm = await t.call('GET', '/api/v2/tables/tbl_crm');
    expect(crm.status).toBe(200);
    expect(crm.body).toMatchObject({ version: 7, data: CRM });
    expect(crm.headers.get('etag')).toBe('"7"');
    expect((await t.call('GET', '/api/v2/tables/tbl_list')).body).toMatchObject({
      version: 1,
      data: [1, 'two', { three: 3 }],
    });
    const nothing = await t.call('GET', '/api/v2/tables/tbl_null');
    expect(nothing.body.version).toBe(3);
    expect(nothing.body.data).toBeNull();
    const exported = await t.call('GET', '/api/v2/export');
    expect(exported.status).toBe(200);
    const data = Object.fromEntries(
      exported.body.tables.map((table: { id: string; data: unknown }) => [table.id, table.data]),
    );
    expect(data).toEqual({ tbl_crm: CRM, tbl_list: [1, 'two', { three: 3 }], tbl_null: null });
  });

  it('answer tools as before, and take writes from the version they had', async () => {
    expect(await call('adi_read', 'bnd_read')).toEqual({ isError: false, value: CRM.customers });
    expect(await call('adi_city', 'bnd_city')).toEqual({ isError: false, value: { city: 'Oslo' } });
    const added = await call('adi_add', 'bnd_add', { value: { id: 'c3', name: 'Lin' } });
    expect(added).toMatchObject({ isError: false, value: { table_version: 8 } });
    expect((await call('adi_read', 'bnd_read')).value).toHaveLength(3);
    const crm = await t.call('GET', '/api/v2/tables/tbl_crm');
    expect(crm.body.version).toBe(8);
    expect(crm.body.data).toEqual({ ...CRM, customers: [...CRM.customers, { id: 'c3', name: 'Lin' }] });
    const adis = await t.call('GET', '/api/v2/adis');
    expect(adis.body.items.map((a: { status: string }) => a.status)).toEqual(['ok', 'ok', 'ok']);
  });
});
