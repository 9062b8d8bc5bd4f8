/**
 * Admin-API set-ups the end-to-end tests share: a user with tables, ADIs, an AEI and bindings.
 */
import { randomBytes } from 'node:crypto';
import { API_KEY_PREFIX, API_KEY_RANDOM_BYTES } from '@bindery/contracts';
import type { Stack } from './stack.ts';

// Answers are arbitrary JSON; each test asserts the fields it cares about.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

export interface Exposed {
  token: string;
  aeiId: string;
  apiKey: string;
  bindings: Record<string, string>;
  tables: Record<string, string>;
}

/** A user whose AEI binds a query tool on `customers` and a preview tool on `orders`. */
export async function twoTableExposure(stack: Stack): Promise<Exposed> {
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

/** Binds `add_order` (a `create` on the whole `orders` table) to the exposure; answers the ADI's id. */
export async function bindAddOrder(stack: Stack, exposed: Exposed): Promise<string> {
  const adi = await stack.admin(
    'POST',
    '/api/v2/adis',
    { table_id: exposed.tables.orders, json_path: '', operation_type: 'create' },
    exposed.token,
  );
  await stack.admin(
    'POST',
    `/api/v2/aeis/${exposed.aeiId}/bindings`,
    { adi_id: adi.id, tool_name: 'add_order' },
    exposed.token,
  );
  return adi.id as string;
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

/** POSTs an MCP initialize to `url` with these headers (fetch: the answer is not read yet). */
export function postInitialize(
  url: string,
  headers: Record<string, string> = {},
  client = 'probe',
): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: client, version: '1' } },
    }),
  });
}

/** A request to the gateway's REST entry (`path` under `/api/v2/rest`): its status and JSON body. */
export async function restCall(
  gatewayUrl: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${gatewayUrl}/api/v2/rest${path}`, {
    method,
    headers: { ...headers, ...(body !== undefined && { 'content-type': 'application/json' }) },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Json };
}
