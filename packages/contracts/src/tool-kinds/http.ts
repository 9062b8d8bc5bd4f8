/**
 * Wire shapes of the `http` kind: an ADI that calls an HTTP API. Its create body carries the fields
 * of HttpToolConfig (http-tool.ts) at the top level, next to the ones every kind has; a tool without
 * a table may name the project it belongs to.
 */
import { Type, type TSchema } from 'typebox';
import { HTTP_METHODS, HttpToolConfig } from '../http-tool.ts';

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const config = HttpToolConfig.properties;

/** `project_id` of an ADI without a table: the app it is listed under (null: the default app). */
export const AdiProjectField = Type.String({
  minLength: 1,
  maxLength: 64,
  description:
    'the project (app) of a tool without a table; a tool with a table belongs to its table’s project',
});

/** The fields of an HTTP ADI's create body besides the ones every kind has. */
export const HttpAdiFields = {
  kind: Type.Literal('http'),
  project_id: Type.Optional(Nullable(AdiProjectField)),
  ...config,
};

/**
 * The fields a PATCH of an HTTP ADI may change besides the ones every kind has: any config field
 * (null removes an optional one, restoring its default) and the project.
 */
export const HttpAdiPatchFields = {
  project_id: Type.Optional(Nullable(AdiProjectField)),
  method: Type.Optional(config.method),
  url: Type.Optional(config.url),
  params: Type.Optional(Nullable(config.params)),
  headers: Type.Optional(Nullable(config.headers)),
  query: Type.Optional(Nullable(config.query)),
  timeout_ms: Type.Optional(Nullable(config.timeout_ms)),
  max_response_bytes: Type.Optional(Nullable(config.max_response_bytes)),
  result_path: Type.Optional(Nullable(config.result_path)),
  input_schema: Type.Optional(Nullable(config.input_schema)),
  annotations: Type.Optional(Nullable(config.annotations)),
  source: Type.Optional(Nullable(config.source)),
};

/** The PATCH fields of an HTTP ADI (each config field is checked again with the whole config). */
export const HTTP_ADI_PATCH_FIELDS: readonly string[] = Object.keys(HttpAdiPatchFields);

/** What a gateway is told about an HTTP ADI in config v2 (it only needs `adi_id`). */
export const HttpAdiRef = Type.Object({
  kind: Type.Literal('http'),
  adi_id: Type.String(),
  method: Type.Enum(HTTP_METHODS),
  url: Type.String({ description: 'the URL template as configured (never with a secret filled in)' }),
});
