/**
 * The configuration of an HTTP API tool (an ADI of kind `http`): which request one tool call sends,
 * where each argument goes, and the bounds of the answer. The control plane checks it when the ADI
 * is saved (domain/http-tools) and the OpenAPI import produces it.
 */
import { Type, type Static } from 'typebox';
import { SECRET_NAME_RE } from './secrets.ts';
import { ToolAnnotations } from './tool-kinds/tool-annotations.ts';

export const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

/** Where an argument goes: a `{placeholder}` of the URL's path, the query string, a header, the JSON body. */
export const HTTP_PARAM_LOCATIONS = ['path', 'query', 'header', 'body'] as const;
export type HttpParamLocation = (typeof HTTP_PARAM_LOCATIONS)[number];

export const HTTP_PARAM_TYPES = ['string', 'number', 'integer', 'boolean', 'array', 'object'] as const;

/**
 * Names of tool arguments. The pattern is the one model APIs accept for the property names of a
 * tool's input schema, so a tool imported from any API stays callable.
 */
export const ARGUMENT_NAME_PATTERN = '^[A-Za-z0-9_.-]{1,64}$';
export const ARGUMENT_NAME_RE = new RegExp(ARGUMENT_NAME_PATTERN);

/** A secret's name as `{{secret.NAME}}` references it. */

/**
 * The `{{...}}` references in a header or query value: the secret names of the well-formed
 * `{{secret.NAME}}` ones, and every other `{{...}}` as written (a typo is refused when the tool is
 * saved rather than sent to the API verbatim).
 */
export function templateReferences(text: string): { secrets: string[]; malformed: string[] } {
  const secrets: string[] = [];
  const malformed: string[] = [];
  for (const match of text.matchAll(/\{\{(.*?)\}\}/g)) {
    const name = /^secret\.(.*)$/.exec(match[1] ?? '')?.[1];
    if (name !== undefined && SECRET_NAME_RE.test(name)) secrets.push(name);
    else malformed.push(match[0]);
  }
  // An opening "{{" left without its "}}" is a broken reference too.
  const rest = text.replace(/\{\{.*?\}\}/g, '');
  const open = rest.indexOf('{{');
  if (open >= 0) malformed.push(rest.slice(open, open + 40));
  return { secrets, malformed };
}

/** Defaults and bounds of one call. */
export const HTTP_TOOL_LIMITS = Object.freeze({
  defaultTimeoutMs: 10_000,
  minTimeoutMs: 100,
  maxTimeoutMs: 60_000,
  defaultResponseBytes: 1024 * 1024,
  maxResponseBytes: 10 * 1024 * 1024,
  maxUrlLength: 2048,
  maxParams: 100,
  maxHeaders: 50,
  maxQuery: 50,
  maxResultPathLength: 2000,
});

export const HttpToolParam = Type.Object(
  {
    name: Type.String({ pattern: ARGUMENT_NAME_PATTERN, description: 'the argument’s name' }),
    in: Type.Enum(HTTP_PARAM_LOCATIONS),
    key: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 256,
        description:
          'the name on the wire (path placeholder, query key, header name, body property) when it is not `name`; ' +
          'for `body`, absent means the argument is the whole JSON body',
      }),
    ),
    type: Type.Optional(
      Type.Enum(HTTP_PARAM_TYPES, { description: 'for the derived input schema; default string' }),
    ),
    required: Type.Optional(Type.Boolean({ description: 'path parameters are always required' })),
    description: Type.Optional(Type.String({ maxLength: 1000 })),
  },
  { additionalProperties: false },
);
export type HttpToolParam = Static<typeof HttpToolParam>;

export const HttpToolConfig = Type.Object(
  {
    method: Type.Enum(HTTP_METHODS),
    url: Type.String({
      minLength: 1,
      maxLength: HTTP_TOOL_LIMITS.maxUrlLength,
      description: 'absolute http(s) URL; `{name}` in the path is filled from a path parameter',
    }),
    params: Type.Optional(Type.Array(HttpToolParam, { maxItems: HTTP_TOOL_LIMITS.maxParams })),
    headers: Type.Optional(
      Type.Record(Type.String(), Type.String({ maxLength: 8192 }), {
        maxProperties: HTTP_TOOL_LIMITS.maxHeaders,
        description: 'static headers; values may hold {{secret.NAME}}',
      }),
    ),
    query: Type.Optional(
      Type.Record(Type.String(), Type.String({ maxLength: 2048 }), {
        maxProperties: HTTP_TOOL_LIMITS.maxQuery,
        description: 'static query parameters (an API key, say); values may hold {{secret.NAME}}',
      }),
    ),
    timeout_ms: Type.Optional(
      Type.Integer({
        minimum: HTTP_TOOL_LIMITS.minTimeoutMs,
        maximum: HTTP_TOOL_LIMITS.maxTimeoutMs,
        description: `whole call, connection to last byte; default ${HTTP_TOOL_LIMITS.defaultTimeoutMs}`,
      }),
    ),
    max_response_bytes: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: HTTP_TOOL_LIMITS.maxResponseBytes,
        description: `default ${HTTP_TOOL_LIMITS.defaultResponseBytes}`,
      }),
    ),
    result_path: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: HTTP_TOOL_LIMITS.maxResultPathLength,
        description: 'JMESPath applied to a JSON answer',
      }),
    ),
    input_schema: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description: 'the tool’s input schema; derived from params when absent',
      }),
    ),
    annotations: Type.Optional(ToolAnnotations),
  },
  { additionalProperties: false },
);
export type HttpToolConfig = Static<typeof HttpToolConfig>;
