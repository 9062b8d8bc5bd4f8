/**
 * Where the MCP endpoints live: the route patterns (as Fastify names them in metrics) and the test
 * of whether a path is one of them, which decides whether a refusal is a JSON-RPC answer or the
 * REST error body.
 */
import { MCP_AEI_PATH, MCP_CALLER_PATH } from '@bindery/contracts';

export const V2 = '/api/v2/mcp/server';
export const V1 = '/api/v1/mcp/server';
/** The caller entry (a personal key in `Authorization: Bearer`): `/{caller}`, or none. */
export const CALLER = MCP_CALLER_PATH;
/** The keyless exposure URL (an OAuth access token in `Authorization: Bearer`): `/{aei_id}`. */
export const AEI = MCP_AEI_PATH;

/** The MCP route patterns, as Fastify names them in metrics. */
export const MCP_ROUTES = {
  bearer: V2,
  v2: `${V2}/:api_key`,
  v1: `${V1}/:api_key`,
  caller: CALLER,
  namedCaller: `${CALLER}/:caller`,
  aei: `${AEI}/:aei`,
} as const;

/** True for a path (query string removed or not) that one of the MCP routes would serve. */
export function isMcpPath(url: string): boolean {
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  if (path === V2 || path === CALLER) return true;
  for (const base of [V2, V1, CALLER, AEI]) {
    // An empty key (`/api/v1/mcp/server/`) is routed to its MCP route too, which refuses it.
    if (path.startsWith(`${base}/`) && !path.includes('/', base.length + 1)) {
      return true;
    }
  }
  return false;
}
