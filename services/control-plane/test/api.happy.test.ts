// Pins the admin API's main path as a user walks it: user, project, tables, three ADIs on two
// tables, an AEI, bindings with default names, the tool preview, renames and config_version bumps.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.ts';

let t: TestApp;
let user: { id: string; token: string };

beforeAll(async () => {
  t = await startTestApp();
  user = await t.newUser('alice');
});
afterAll(() => t.close());

const as = () => ({ token: user.token });

describe('admin API happy path', () => {
  const ids: Record<string, string> = {};

  it('creates a project with a slug derived from its name', async () => {
    const res = await t.call('POST', '/api/v2/projects', { ...as(), body: { name: 'CRM Main' } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: 'CRM Main', slug: 'crm-main', description: null });
    expect(res.body.id).toMatch(/^prj_/);
    ids.project = res.body.id;
  });

  it('creates two tables and serves data with its version as ETag', async () => {
    const customers = await t.call('POST', '/api/v2/tables', {
      ...as(),
      body: { name: 'customers', project_id: ids.project, data: { customers: [{ id: 1, name: 'Ada' }] } },
    });
    expect(customers.status).toBe(201);
    expect(customers.body).toMatchObject({ name: 'customers', project_id: ids.project, version: 1 });
    expect(customers.body.data).toBeUndefined();
    ids.customers = customers.body.id;
    const orders = await t.call('POST', '/api/v2/tables', { ...as(), body: { name: 'orders', data: [] } });
    expect(orders.status).toBe(201);
    ids.orders = orders.body.id;

    const got = await t.call('GET', `/api/v2/tables/${ids.customers}`, as());
    expect(got.status).toBe(200);
    expect(got.headers.get('etag')).toBe('"1"');
    expect(got.body.data).toEqual({ customers: [{ id: 1, name: 'Ada' }] });
  });

  it('replaces data, conditionally on If-Match, bumping the version', async () => {
    const res = await t.call('PUT', `/api/v2/tables/${ids.orders}/data`, {
      ...as(),
      body: [{ id: 'o1', total: 5 }],
      headers: { 'if-match': '"1"' },
    });
    expect(res.status).toBe(200);
    expect(res.body.version).toBe(2);
    expect(res.headers.get('etag')).toBe('"2"');
    const got = await t.call('GET', `/api/v2/tables/${ids.orders}`, as());
    expect(got.body.data).toEqual([{ id: 'o1', total: 5 }]);
  });

  it('creates three ADIs on two tables with default names {op}_{hash}', async () => {
    const specs = [
      { table_id: ids.customers, json_path: '/customers', operation_type: 'query' },
      { table_id: ids.customers, json_path: '/customers', operation_type: 'create', category: 'writes' },
      { table_id: ids.orders, json_path: '', operation_type: 'preview', config: { preview_keys: ['id'] } },
    ];
    for (const [i, spec] of specs.entries()) {
      const res = await t.call('POST', '/api/v2/adis', { ...as(), body: spec });
      expect(res.status).toBe(201);
      expect(res.body.name).toMatch(/^[a-z_]+_[a-z2-7]{6}$/);
      expect(res.body.name.startsWith(`${spec.operation_type}_`)).toBe(true);
      expect(res.body.input_schema.type).toBe('object');
      ids[`adi${i}`] = res.body.id;
    }
    const listed = await t.call('GET', `/api/v2/adis?table_id=${ids.customers}`, as());
    expect(listed.body.items.map((a: { id: string }) => a.id)).toEqual([ids.adi0, ids.adi1]);
    expect(listed.body.items[0].project_id).toBe(ids.project);
  });

  it('creates an AEI whose api_key is shown once', async () => {
    const res = await t.call('POST', '/api/v2/aeis', { ...as(), body: { name: 'crm agent' } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      type: 'mcp',
      status: 'enabled',
      exposure_mode: 'direct',
      config_version: 1,
    });
    expect(res.body.api_key).toMatch(/^bnd_key_/);
    expect(res.body.api_key.startsWith(res.body.api_key_prefix)).toBe(true);
    ids.aei = res.body.id;
    const got = await t.call('GET', `/api/v2/aeis/${ids.aei}`, as());
    expect(got.body.api_key).toBeUndefined();
  });

  it('binds all three tools at once with inherited default names and previews the tool list', async () => {
    const res = await t.call('POST', `/api/v2/aeis/${ids.aei}/bindings`, {
      ...as(),
      body: [
        { adi_id: ids.adi0 },
        { adi_id: ids.adi1 },
        { adi_id: ids.adi2, tool_description: 'Peek at orders' },
      ],
    });
    expect(res.status).toBe(201);
    expect(res.body.items).toHaveLength(3);
    for (const b of res.body.items) {
      expect(b.tool_name).toMatch(/^[a-z_]+_[a-z2-7]{6}$/);
      expect(b.tool_name_inherited).toBe(true);
    }
    ids.binding0 = res.body.items[0].id;
    expect(t.configChanges.at(-1)).toEqual([ids.aei]);

    const preview = await t.call('GET', `/api/v2/aeis/${ids.aei}/tools`, as());
    expect(preview.status).toBe(200);
    expect(preview.body.tools.map((x: { name: string }) => x.name)).toEqual(
      res.body.items.map((b: { tool_name: string }) => b.tool_name),
    );
    const [query, , orders] = preview.body.tools;
    expect(query.description).toContain('"/customers" of table "customers"');
    expect(query.inputSchema.required).toEqual(['query']);
    expect(orders.description).toBe('Peek at orders');
    const aei = await t.call('GET', `/api/v2/aeis/${ids.aei}`, as());
    expect(aei.body.config_version).toBe(2);
  });

  it('renaming a binding, then the ADI, changes the tool list and bumps config_version', async () => {
    const renamed = await t.call('PATCH', `/api/v2/aeis/${ids.aei}/bindings/${ids.binding0}`, {
      ...as(),
      body: { tool_name: 'find_customers' },
    });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ tool_name: 'find_customers', tool_name_inherited: false });

    const adi = await t.call('PATCH', `/api/v2/adis/${ids.adi1}`, {
      ...as(),
      body: { name: 'add_customer' },
    });
    expect(adi.status).toBe(200);
    const tools = await t.call('GET', `/api/v2/aeis/${ids.aei}/tools`, as());
    const names = tools.body.tools.map((x: { name: string }) => x.name);
    expect(names.slice(0, 2)).toEqual(['find_customers', 'add_customer']);

    // Back to inheriting: the binding follows the ADI's (default) name again.
    const back = await t.call('PATCH', `/api/v2/aeis/${ids.aei}/bindings/${ids.binding0}`, {
      ...as(),
      body: { tool_name: null },
    });
    expect(back.body.tool_name).toMatch(/^query_[a-z2-7]{6}$/);
    expect(back.body.tool_name_inherited).toBe(true);
    const aei = await t.call('GET', `/api/v2/aeis/${ids.aei}`, as());
    expect(aei.body.config_version).toBe(5);
  });

  it('disabling a binding hides its tool; disabling the AEI hides all', async () => {
    await t.call('PATCH', `/api/v2/aeis/${ids.aei}/bindings/${ids.binding0}`, {
      ...as(),
      body: { enabled: false },
    });
    let tools = await t.call('GET', `/api/v2/aeis/${ids.aei}/tools`, as());
    expect(tools.body.tools).toHaveLength(2);
    await t.call('PATCH', `/api/v2/aeis/${ids.aei}`, { ...as(), body: { status: 'disabled' } });
    tools = await t.call('GET', `/api/v2/aeis/${ids.aei}/tools`, as());
    expect(tools.body.tools).toEqual([]);
  });

  it('in progressive mode the preview lists the catalog tools, search_apis when enabled', async () => {
    const res = await t.call('POST', '/api/v2/aeis', {
      ...as(),
      body: { name: 'catalog', exposure_mode: 'progressive' },
    });
    expect(res.body).toMatchObject({ exposure_mode: 'progressive', catalog_search: false });
    const five = await t.call('GET', `/api/v2/aeis/${res.body.id}/tools`, as());
    expect(five.body.tools.map((x: { name: string }) => x.name)).toEqual([
      'initialize_session',
      'get_categories',
      'get_apis_by_category',
      'get_api_details',
      'execute_apis',
    ]);
    const patched = await t.call('PATCH', `/api/v2/aeis/${res.body.id}`, {
      ...as(),
      body: { catalog_search: true },
    });
    expect(patched.body).toMatchObject({ catalog_search: true, config_version: 2 });
    const six = await t.call('GET', `/api/v2/aeis/${res.body.id}/tools`, as());
    expect(six.body.tools.at(-1).name).toBe('search_apis');
    expect(six.body.tools.at(-1).inputSchema.required).toEqual(['query']);
  });

  it('rotating the key returns a new one and invalidates the AEI', async () => {
    const before = await t.call('GET', `/api/v2/aeis/${ids.aei}`, as());
    const res = await t.call('POST', `/api/v2/aeis/${ids.aei}/rotate-key`, as());
    expect(res.status).toBe(200);
    expect(res.body.api_key).toMatch(/^bnd_key_/);
    expect(res.body.api_key_prefix).not.toBe(before.body.api_key_prefix);
    expect(res.body.config_version).toBe(before.body.config_version + 1);
  });

  it('pages lists with a cursor', async () => {
    for (let i = 0; i < 3; i++)
      await t.call('POST', '/api/v2/projects', { ...as(), body: { name: `p${i}` } });
    const first = await t.call('GET', '/api/v2/projects?limit=2', as());
    expect(first.body.items).toHaveLength(2);
    expect(first.body.next_cursor).toBe(first.body.items[1].id);
    const second = await t.call('GET', `/api/v2/projects?limit=2&cursor=${first.body.next_cursor}`, as());
    expect(second.body.items).toHaveLength(2);
    expect(second.body.next_cursor).toBeNull();
    const all = [...first.body.items, ...second.body.items].map((p: { slug: string }) => p.slug);
    expect(all).toEqual(['crm-main', 'p0', 'p1', 'p2']);
  });

  it('deletes a bound ADI only with force, unbinding it', async () => {
    const refused = await t.call('DELETE', `/api/v2/adis/${ids.adi2}`, as());
    expect(refused.status).toBe(409);
    expect(refused.body.error.details.aei_ids).toEqual([ids.aei]);
    const forced = await t.call('DELETE', `/api/v2/adis/${ids.adi2}?force=true`, as());
    expect(forced.status).toBe(204);
    const bindings = await t.call('GET', `/api/v2/aeis/${ids.aei}/bindings`, as());
    expect(bindings.body.items).toHaveLength(2);
  });

  it('serves the OpenAPI document and its UI', async () => {
    const doc = await fetch(`${t.baseUrl}/openapi.json`);
    expect(doc.status).toBe(200);
    const json = (await doc.json()) as { paths: Record<string, unknown> };
    expect(Object.keys(json.paths)).toContain('/api/v2/aeis/{id}/bindings');
    const ui = await fetch(`${t.baseUrl}/docs/`);
    expect(ui.status).toBe(200);
    expect(await ui.text()).toContain('<html');
  });
});
