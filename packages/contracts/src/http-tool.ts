/**
 * The configuration of an HTTP API tool (an ADI of kind `http`): which request one tool call sends,
 * where each argument goes, and the bounds of the answer. The control plane checks it when the ADI
 * is saved (kinds/http) and the OpenAPI import produces it.
 */
import { Type, type Static } from 'typebox';
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

/**
 * Where an imported tool came from: the OpenAPI document (its `info.title`) and the operation. A
 * re-import of that document into the same project finds the tool by it and updates it in place.
 */
export const HttpToolSource = Type.Object(
  {
    api: Type.String({ maxLength: 200, description: 'the OpenAPI document’s info.title' }),
    operation_id: Type.String({
      minLength: 1,
      maxLength: 4096,
      description: 'the operation’s operationId, or `METHOD /path` when it has none',
    }),
  },
  { additionalProperties: false, description: 'set by an OpenAPI import; re-imports match on it' },
);
export type HttpToolSource = Static<typeof HttpToolSource>;

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
    source: Type.Optional(HttpToolSource),
  },
  { additionalProperties: false },
);
export type HttpToolConfig = Static<typeof HttpToolConfig>;
