/**
 * The routes the control plane documents in its OpenAPI document, for suites that must cover every
 * one of them (the auth matrix, the fuzz test): method, path template, and what the document says
 * each takes (path and query parameters, body properties) and which token it needs.
 */
import { INTERNAL_TOKEN } from './app.ts';

export interface DocumentedRoute {
  method: string;
  /** The OpenAPI path template, such as `/api/v2/tables/{id}`. */
  path: string;
  pathParams: string[];
  queryParams: string[];
  /** Top-level property names of the JSON body schema (of its items, for an array body). */
  bodyProperties: string[];
  /** True when the route takes a body at all. */
  hasBody: boolean;
  security: 'admin' | 'internal';
  /** True when its answer is a stream of server-sent events (it never ends by itself). */
  streams: boolean;
}

interface Operation {
  parameters?: { in: string; name: string }[];
  requestBody?: { content?: Record<string, { schema?: Schema }> };
  security?: Record<string, unknown>[];
  responses?: Record<string, { content?: Record<string, unknown> }>;
}
interface Schema {
  properties?: Record<string, unknown>;
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
}

function propertiesOf(schema: Schema | undefined): string[] {
  if (!schema) return [];
  const names = new Set(Object.keys(schema.properties ?? {}));
  for (const part of [schema.items, ...(schema.anyOf ?? []), ...(schema.oneOf ?? [])]) {
    for (const name of propertiesOf(part)) names.add(name);
  }
  return [...names];
}

/**
 * Every documented route of the control plane at `baseUrl`: the whole document, internal API
 * included (/internal/openapi.json; the public /openapi.json leaves the internal API out).
 */
export async function documentedRoutes(baseUrl: string): Promise<DocumentedRoute[]> {
  const answer = await fetch(`${baseUrl}/internal/openapi.json`, {
    headers: { authorization: `Bearer ${INTERNAL_TOKEN}` },
  });
  if (!answer.ok) throw new Error(`/internal/openapi.json answered ${answer.status}`);
  const doc = (await answer.json()) as {
    paths: Record<string, Record<string, Operation>>;
  };
  const routes: DocumentedRoute[] = [];
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const parameters = operation.parameters ?? [];
      const body = operation.requestBody?.content?.['application/json']?.schema;
      routes.push({
        method: method.toUpperCase(),
        path,
        pathParams: parameters.filter((p) => p.in === 'path').map((p) => p.name),
        queryParams: parameters.filter((p) => p.in === 'query').map((p) => p.name),
        bodyProperties: propertiesOf(body),
        hasBody: operation.requestBody !== undefined,
        security: operation.security?.some((s) => 'internalToken' in s) ? 'internal' : 'admin',
        streams: 'text/event-stream' in (operation.responses?.['200']?.content ?? {}),
      });
    }
  }
  return routes;
}
