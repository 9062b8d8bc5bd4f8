// Pins the catalog derived from a config: apps by id or slug, categories (named after the table
// when the ADI has none), parameters from input schemas, and keyword ranking.
import type { ConfigV2 } from '@bindery/contracts';
import { describe, expect, it } from 'vitest';
import {
  apisOf,
  appsOf,
  categoriesOf,
  categoryId,
  findApp,
  parametersOf,
  searchApis,
} from '../src/mcp/tools/catalog.ts';

const binding = (name: string, app: string, category: string, description: string) => ({
  binding_id: `bnd_${name}`,
  tool_name: name,
  tool_description: description,
  input_schema: { type: 'object', properties: {} },
  output_schema: null,
  enabled: true,
  app,
  app_id: app === 'default' ? 'default' : `prj_${app}`,
  app_name: app,
  category,
  adi_ref: {
    kind: 'context' as const,
    adi_id: `adi_${name}`,
    operation_type: 'query' as const,
    table_id: 't',
    json_path: '',
    adi_config: {},
  },
});

const config: ConfigV2 = {
  aei: {
    id: 'aei_1',
    name: 'x',
    user_id: 'u',
    status: 'enabled',
    exposure_mode: 'progressive',
    catalog_search: true,
    config_version: 3,
  },
  bindings: [
    binding('find_customers', 'crm', 'Customers', 'Search customers by name'),
    binding('add_customer', 'crm', 'Customers', 'Create a customer record'),
    binding('list_orders', 'crm', 'orders', 'Orders of a customer'),
    binding('read_notes', 'default', 'notes', 'The notes'),
  ],
};

describe('catalog', () => {
  it('finds apps by id or slug', () => {
    expect(appsOf(config).map((a) => a.slug)).toEqual(['crm', 'default']);
    expect(findApp(config, 'prj_crm')?.slug).toBe('crm');
    expect(findApp(config, 'crm')?.id).toBe('prj_crm');
    expect(findApp(config, 'billing')).toBeUndefined();
  });

  it('groups an app’s APIs by category', () => {
    const crm = findApp(config, 'crm')!;
    expect(categoriesOf(config, crm)).toEqual([
      { id: 'customers', name: 'Customers', description: '2 APIs about Customers' },
      { id: 'orders', name: 'orders', description: '1 API about orders' },
    ]);
    expect(apisOf(config, crm, 'customers').map((a) => a.name)).toEqual(['find_customers', 'add_customer']);
    expect(apisOf(config, crm, 'notes')).toEqual([]);
    expect(categoryId('Sales & Marketing!')).toBe('sales-marketing');
  });

  it('describes parameters from an input schema', () => {
    expect(
      parametersOf({
        type: 'object',
        properties: {
          query: { type: 'string', description: 'JMESPath' },
          limit: { type: 'integer', default: 50 },
          mode: { enum: ['a', 'b'] },
          id: { type: ['string', 'integer'] },
        },
        required: ['query'],
      }),
    ).toEqual([
      { name: 'query', type: 'string', required: true, description: 'JMESPath', default: null },
      { name: 'limit', type: 'integer', required: false, description: null, default: 50 },
      { name: 'mode', type: 'enum', required: false, description: null, default: null },
      { name: 'id', type: 'string|integer', required: false, description: null, default: null },
    ]);
  });

  it('ranks search results: name over category over description, nothing for no match', () => {
    const crm = findApp(config, 'crm')!;
    const results = searchApis(config, crm, 'customer', 10);
    expect(results.map((r) => r.name)).toEqual(['find_customers', 'add_customer', 'list_orders']);
    expect(results[0]!.score).toBeGreaterThan(results[2]!.score);
    expect(searchApis(config, crm, 'invoice', 10)).toEqual([]);
    expect(searchApis(config, crm, 'customer', 1)).toHaveLength(1);
  });
});
