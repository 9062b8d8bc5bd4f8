/**
 * Admin-API and HTTP set-ups only the gateway's end-to-end tests use; the exposure every
 * end-to-end test starts from (`twoTableExposure`) is @bindery/test-support's.
 */
import type { Exposed, Json } from '@bindery/test-support';
import type { Stack } from './stack.ts';

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
