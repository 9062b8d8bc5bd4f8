// Pins that tools saved before tool kinds keep working after the migration that adds `adi.kind`:
// rows written under the previous schema become context ADIs with the same tool names, their
// exposure lists the same tools, and calls answer as before (a query, a preview with its keys, a
// write checked by its item schema). Runs on PostgreSQL and on PGlite (a data directory migrated in
// two steps, as an upgrade does).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqlSession } from '../src/db/migrate.ts';
import { hashSecret } from '../src/domain/ids.ts';
import { INTERNAL_TOKEN, startTestApp, type TestApp } from './support/app.ts';
import { databaseBefore, migrationsFrom } from './support/migrations.ts';

const KIND_MIGRATION = '20261124090000_adi_kind';
const API_KEY = 'bnd_key_from-before-tool-kinds';

/** What a user had before tool kinds: three tools on one table, bound to one exposure. */
async function toolsBeforeKinds(session: SqlSession): Promise<void> {
  // The root user, so the test's root token reaches these ADIs through the admin API.
  await session.query(`INSERT INTO "user" (id, name, is_root) VALUES ('usr_old', 'root', true)`);
  await session.query(
    `INSERT INTO "table" (id, user_id, name, data) VALUES ('tbl_old', 'usr_old', 'crm', $1)`,
    [
      JSON.stringify({
        customers: [
          { id: 'c1', name: 'Ada', tier: 'gold' },
          { id: 'c2', name: 'Grace' },
        ],
      }),
    ],
  );
  await session.query(
    `INSERT INTO adi (id, user_id, table_id, json_path, operation_type, name, config) VALUES
       ('adi_q', 'usr_old', 'tbl_old', '', 'query', 'query_x7k2pa', '{}'),
       ('adi_p', 'usr_old', 'tbl_old', '/customers', 'preview', 'peek_customers', $1),
       ('adi_c', 'usr_old', 'tbl_old', '/customers', 'create', 'add_customer', $2)`,
    [
      JSON.stringify({ preview_keys: ['id'] }),
      JSON.stringify({ item_schema: { type: 'object', required: ['id', 'name'] } }),
    ],
  );
  await session.query(
    `INSERT INTO aei (id, user_id, name, api_key_hash, api_key_prefix) VALUES ('aei_old', 'usr_old', 'agent', $1, 'bnd_key_fro')`,
    [hashSecret(API_KEY)],
  );
  await session.query(
    `INSERT INTO aei_binding (id, aei_id, adi_id, tool_name, tool_name_inherited) VALUES
       ('bnd_1', 'aei_old', 'adi_q', 'query_x7k2pa', true),
       ('bnd_2', 'aei_old', 'adi_p', 'peek', false),
       ('bnd_3', 'aei_old', 'adi_c', 'add_customer', true)`,
  );
}

let t: TestApp;

beforeAll(async () => {
  t = await startTestApp({ existingDatabase: await databaseBefore(KIND_MIGRATION, toolsBeforeKinds) });
});
afterAll(() => t?.close());

async function call(adiId: string, bindingId: string, args: Record<string, unknown>) {
  const res = await t.call('POST', `/internal/adi/${adiId}/execute`, {
    token: INTERNAL_TOKEN,
    body: { aei_id: 'aei_old', binding_id: bindingId, arguments: args },
  });
  expect(res.status).toBe(200);
  return { isError: res.body.isError === true, value: JSON.parse(res.body.content[0].text) };
}

describe('ADIs saved before tool kinds', () => {
  it('are migrated by the kind migration and those after it, into context ADIs with their names', async () => {
    expect(t.database.migrated).toEqual(await migrationsFrom(KIND_MIGRATION));
    const res = await t.call('GET', '/api/v2/adis');
    expect(res.status).toBe(200);
    expect(
      res.body.items.map((a: { id: string; kind: string; name: string; operation_type: string }) => [
        a.id,
        a.kind,
        a.name,
        a.operation_type,
      ]),
    ).toEqual([
      ['adi_c', 'context', 'add_customer', 'create'],
      ['adi_p', 'context', 'peek_customers', 'preview'],
      ['adi_q', 'context', 'query_x7k2pa', 'query'],
    ]);
  });

  it('keep the tool names and schemas their exposure serves', async () => {
    const res = await t.call('GET', `/internal/keys/${API_KEY}/config`, { token: INTERNAL_TOKEN });
    expect(res.status).toBe(200);
    const bindings = res.body.config.bindings;
    expect(bindings.map((b: { tool_name: string }) => b.tool_name)).toEqual([
      'query_x7k2pa',
      'peek',
      'add_customer',
    ]);
    expect(bindings[0].input_schema.required).toEqual(['query']);
    expect(bindings.map((b: { adi_ref: { kind: string } }) => b.adi_ref.kind)).toEqual([
      'context',
      'context',
      'context',
    ]);
  });

  it('answer calls as before: a query, a preview with its keys, a write held to its item schema', async () => {
    expect(await call('adi_q', 'bnd_1', { query: 'customers[].name' })).toEqual({
      isError: false,
      value: ['Ada', 'Grace'],
    });
    const peeked = await call('adi_p', 'bnd_2', {});
    expect(peeked.value.items).toEqual([{ id: 'c1' }, { id: 'c2' }]);
    const added = await call('adi_c', 'bnd_3', { value: { id: 'c3', name: 'Lin' } });
    expect(added).toMatchObject({ isError: false, value: { table_version: 2 } });
    const refused = await call('adi_c', 'bnd_3', { value: { id: 'c4' } });
    expect(refused.isError).toBe(true);
    expect(refused.value.error.code).toBe('VALIDATION_FAILED');
    expect(await call('adi_q', 'bnd_1', { query: 'length(customers)' })).toEqual({
      isError: false,
      value: 3,
    });
  });
});
