/**
 * Wire shapes of the `custom` kind: an ADI running JavaScript its author wrote
 * (`export default async function (args, ctx) { ... }`) in the control plane's sandbox, with an
 * input schema, optionally an output schema, one context of the author's (read-only or
 * read-write), the hosts `ctx.fetch` may reach and the secrets `ctx.secrets` holds.
 */
import { Type, type Static } from 'typebox';
import { SecretName } from '../secrets.ts';
import { ToolAnnotations } from './tool-annotations.ts';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) =>
  Type.Union([schema, Type.Null()]);

/** Bounds of a custom tool's settings (the source's byte bound is the sandbox's, 256 KiB). */
export const CUSTOM_TOOL_LIMITS = Object.freeze({
  maxCodeChars: 256 * 1024,
  maxAllowedHosts: 50,
  maxHostLength: 262,
  maxSecrets: 50,
});

/** The one context of a custom tool: a table of the author's and a JSON Pointer in it. */
export const CustomToolContext = Type.Object(
  {
    table_id: Type.String({ maxLength: 64 }),
    json_path: Type.String({
      maxLength: 2048,
      description: 'RFC 6901 JSON Pointer of the context; "" = whole table',
    }),
    write: Type.Optional(
      Type.Boolean({
        description: 'true: ctx.context.write may change the context; default false (read-only)',
      }),
    ),
  },
  { additionalProperties: false },
);
export type CustomToolContext = Static<typeof CustomToolContext>;

const Code = Type.String({
  minLength: 1,
  maxLength: CUSTOM_TOOL_LIMITS.maxCodeChars,
  description:
    'an ES module whose default export is `async function (args, ctx)`; its answer (JSON) is the tool result',
});
const InputSchema = Type.Record(Type.String(), Type.Unknown(), {
  description: 'JSON Schema of the arguments, "type": "object"',
});
const OutputSchema = Type.Record(Type.String(), Type.Unknown(), {
  description:
    'JSON Schema of the answer, "type": "object"; answers are checked against it and sent as structuredContent',
});
const AllowedHosts = Type.Array(Type.String({ minLength: 1, maxLength: CUSTOM_TOOL_LIMITS.maxHostLength }), {
  maxItems: CUSTOM_TOOL_LIMITS.maxAllowedHosts,
  uniqueItems: true,
  description:
    'hosts ctx.fetch may reach: "host" (ports 80 and 443) or "host:port"; [::1]:8080 for IPv6. Empty: no ctx.fetch',
});
const Secrets = Type.Array(SecretName, {
  maxItems: CUSTOM_TOOL_LIMITS.maxSecrets,
  uniqueItems: true,
  description: 'names of your secrets the tool reads as ctx.secrets.NAME',
});

/** The fields of a custom ADI's create body besides the ones every kind has. */
export const CustomAdiFields = {
  kind: Type.Literal('custom'),
  code: Code,
  input_schema: InputSchema,
  output_schema: Type.Optional(OutputSchema),
  context: Type.Optional(CustomToolContext),
  allowed_hosts: Type.Optional(AllowedHosts),
  secrets: Type.Optional(Secrets),
  annotations: Type.Optional(ToolAnnotations),
};

/**
 * The fields a PATCH of a custom ADI may change besides the ones every kind has; `null` removes
 * an optional one (the output schema, the context, the declared annotations).
 */
export const CustomAdiPatchFields = {
  code: Type.Optional(Code),
  input_schema: Type.Optional(InputSchema),
  output_schema: Type.Optional(Nullable(OutputSchema)),
  context: Type.Optional(Nullable(CustomToolContext)),
  allowed_hosts: Type.Optional(AllowedHosts),
  secrets: Type.Optional(Secrets),
  annotations: Type.Optional(Nullable(ToolAnnotations)),
};

/**
 * What a custom ADI stores in `adi.config` (its context is in `table_id` and `json_path`, so
 * deleting the table deletes the tool): checked again whenever it is saved or imported.
 */
export const CustomToolConfig = Type.Object(
  {
    code: Code,
    input_schema: InputSchema,
    output_schema: Type.Optional(OutputSchema),
    context_write: Type.Boolean({ description: 'the context is read-write' }),
    allowed_hosts: AllowedHosts,
    secrets: Secrets,
    annotations: Type.Optional(ToolAnnotations),
  },
  { additionalProperties: false },
);
export type CustomToolConfig = Static<typeof CustomToolConfig>;

/** What a gateway is told about a custom ADI in config v2 (it only needs `adi_id`). */
export const CustomAdiRef = Type.Object({
  kind: Type.Literal('custom'),
  adi_id: Type.String(),
});
