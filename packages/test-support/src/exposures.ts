/**
 * Admin-API set-ups the end-to-end tests share: a user with tables, ADIs, an AEI and bindings, and
 * what tests read from the tools of such an exposure.
 */
import { randomBytes } from 'node:crypto';
import { API_KEY_PREFIX, API_KEY_RANDOM_BYTES } from '@bindery/contracts';
import type { Json } from './admin.ts';

/** What calls the admin API as a token (a stack does): throws on an error status. */
export interface AdminApi {
  admin(method: string, path: string, body?: unknown, token?: string): Promise<Json>;
}

export interface Exposed {
  token: string;
  aeiId: string;
  apiKey: string;
  bindings: Record<string, string>;
  tables: Record<string, string>;
}

/** A user whose AEI binds a query tool on `customers` and a preview tool on `orders`. */
export async function twoTableExposure(stack: AdminApi): Promise<Exposed> {
  const user = await stack.admin('POST', '/api/v2/users', { name: `u${Date.now()}` });
  const as = user.token as string;
  const project = await stack.admin('POST', '/api/v2/projects', { name: 'CRM' }, as);
  const customers = await stack.admin(
    'POST',
    '/api/v2/tables',
    {
      name: 'customers',
      project_id: project.id,
      data: {
        list: [
          { id: 1, name: 'Ada' },
          { id: 2, name: 'Grace' },
        ],
      },
    },
    as,
  );
  const orders = await stack.admin(
    'POST',
    '/api/v2/tables',
    {
      name: 'orders',
      data: [
        { id: 'o1', total: 5 },
        { id: 'o2', total: 7 },
      ],
    },
    as,
  );
  const query = await stack.admin(
    'POST',
    '/api/v2/adis',
    { table_id: customers.id, json_path: '/list', operation_type: 'query' },
    as,
  );
  const preview = await stack.admin(
    'POST',
    '/api/v2/adis',
    { table_id: orders.id, json_path: '', operation_type: 'preview', config: { preview_keys: ['id'] } },
    as,
  );
  const aei = await stack.admin('POST', '/api/v2/aeis', { name: 'agent' }, as);
  const bound = await stack.admin(
    'POST',
    `/api/v2/aeis/${aei.id}/bindings`,
    [
      { adi_id: query.id, tool_name: 'find_customers' },
      { adi_id: preview.id, tool_name: 'peek_orders' },
    ],
    as,
  );
  return {
    token: as,
    aeiId: aei.id,
    apiKey: aei.api_key,
    bindings: { find_customers: bound.items[0].id, peek_orders: bound.items[1].id },
    tables: { customers: customers.id, orders: orders.id },
  };
}

/** The JSON inside a tool result's first text content. */
export function resultJson(result: Record<string, unknown>): Json {
  const content = result.content as { type: string; text: string }[];
  return JSON.parse(content[0]!.text);
}

/** An api_key in the shape the control plane issues that no exposure has (odds: 2^-192). */
export function unusedApiKey(): string {
  return `${API_KEY_PREFIX}${randomBytes(API_KEY_RANDOM_BYTES).toString('base64url')}`;
}
