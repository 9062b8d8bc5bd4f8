/**
 * What an upstream MCP server offers besides tools, passed through to the AEIs it is attached to
 * (seed 003): its resources and resource templates, with their URIs unchanged, and its prompts,
 * named `{prefix}_{name}` like its tools (their own names when attached without a prefix). The control plane lists them at each sync (and when the server announces a
 * list change), keeps a bounded snapshot per server, and puts each attached server's entries into
 * the AEI's config v2; the gateway lists them next to the AEI's own, and reads a resource or gets
 * a prompt through the control plane (`POST /internal/aei/{aei_id}/upstream-request`), which asks
 * the server and audits the request.
 */
import { Type, type Static, type TSchema } from 'typebox';
import { ClientInput, InputRequired } from './client-input.ts';

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const UPSTREAM_CATALOG_LIMITS = Object.freeze({
  /** Resources kept per server (the rest are reported in the server's warnings). */
  maxResources: 1000,
  /** Prompts kept per server. */
  maxPrompts: 500,
  /** Resource templates kept per server. */
  maxResourceTemplates: 200,
  /** Characters of a resource URI at most (longer ones are skipped). */
  maxUriChars: 2048,
  /** Characters of a name, title or description kept (longer ones are cut). */
  maxTextChars: 2000,
  /** Arguments of one prompt at most. */
  maxPromptArguments: 32,
  /** Characters of JSON an entry's `_meta`, `icons` and `annotations` take together, at most (more: left out). */
  maxPresentationChars: 16_384,
});

const JsonObject = Type.Record(Type.String(), Type.Unknown());

/**
 * What an upstream entry (a tool, resource, template or prompt) says of itself for clients to show,
 * passed on as the server listed it: `meta` is its `_meta` (MCP Apps: a tool's `ui.resourceUri`, a
 * `ui://` resource's sandbox settings), `icons` its icons.
 */
export const PresentationFields = {
  meta: Type.Optional(JsonObject),
  icons: Type.Optional(Type.Array(Type.Unknown())),
};

/** One resource of an upstream server, as listed (`resources/list`), in config v2. */
export const ConfigUpstreamResource = Type.Object({
  upstream_server_id: Type.String(),
  uri: Type.String(),
  name: Type.String(),
  title: Type.Optional(Type.String()),
  description: Type.Optional(Type.String()),
  mime_type: Type.Optional(Type.String()),
  size: Type.Optional(Type.Integer({ minimum: 0 })),
  annotations: Type.Optional(JsonObject),
  ...PresentationFields,
});
export type ConfigUpstreamResource = Static<typeof ConfigUpstreamResource>;

/**
 * One resource template of an upstream server (`resources/templates/list`), in config v2: a URI
 * that matches it (RFC 6570) is read from that server, as a listed resource is.
 */
export const ConfigUpstreamResourceTemplate = Type.Object({
  upstream_server_id: Type.String(),
  uri_template: Type.String(),
  name: Type.String(),
  title: Type.Optional(Type.String()),
  description: Type.Optional(Type.String()),
  mime_type: Type.Optional(Type.String()),
  annotations: Type.Optional(JsonObject),
  ...PresentationFields,
});
export type ConfigUpstreamResourceTemplate = Static<typeof ConfigUpstreamResourceTemplate>;

export const UpstreamPromptArgument = Type.Object({
  name: Type.String(),
  description: Type.Optional(Type.String()),
  required: Type.Optional(Type.Boolean()),
});

/** One prompt of an upstream server in config v2: `name` as the AEI serves it (`{prefix}_{upstream_name}`). */
export const ConfigUpstreamPrompt = Type.Object({
  upstream_server_id: Type.String(),
  name: Type.String(),
  upstream_name: Type.String(),
  title: Type.Optional(Type.String()),
  description: Type.Optional(Type.String()),
  arguments: Type.Array(UpstreamPromptArgument),
  ...PresentationFields,
});
export type ConfigUpstreamPrompt = Static<typeof ConfigUpstreamPrompt>;

/**
 * `POST /internal/aei/{aei_id}/upstream-request`: one resources/read, prompts/get or
 * completion/complete for an upstream server attached to the AEI. Exactly one of `read_resource`,
 * `get_prompt` and `complete`.
 */
export const UpstreamRequestBody = Type.Object(
  {
    upstream_server_id: Type.String({ minLength: 1, maxLength: 64 }),
    /** The AEI's config version the gateway serves (informative: the route reads the AEI, the attachment and the snapshot each time). */
    config_version: Type.Optional(Type.Integer({ minimum: 0 })),
    request_id: Type.Optional(Type.String({ maxLength: 256 })),
    /** The MCP session it came in (per_session servers serve each session on its own instance). */
    session_id: Type.Optional(Type.String({ maxLength: 256 })),
    caller: Type.Optional(
      Type.String({
        maxLength: 64,
        description: 'the caller of a caller entry’s session (personal key + caller), for the audit row',
      }),
    ),
    read_resource: Type.Optional(
      Type.Object(
        { uri: Type.String({ minLength: 1, maxLength: UPSTREAM_CATALOG_LIMITS.maxUriChars }) },
        {
          additionalProperties: false,
        },
      ),
    ),
    input: Type.Optional(ClientInput),
    complete: Type.Optional(
      Type.Object(
        {
          /** A prompt by its name on the upstream server, or a resource template by its URI template. */
          ref: Type.Union([
            Type.Object(
              { type: Type.Literal('ref/prompt'), name: Type.String({ minLength: 1, maxLength: 256 }) },
              { additionalProperties: false },
            ),
            Type.Object(
              {
                type: Type.Literal('ref/resource'),
                uri: Type.String({ minLength: 1, maxLength: UPSTREAM_CATALOG_LIMITS.maxUriChars }),
              },
              { additionalProperties: false },
            ),
          ]),
          argument: Type.Object(
            { name: Type.String({ maxLength: 256 }), value: Type.String({ maxLength: 65_536 }) },
            { additionalProperties: false },
          ),
          context: Type.Optional(
            Type.Object(
              {
                arguments: Type.Optional(
                  Type.Record(Type.String({ maxLength: 256 }), Type.String({ maxLength: 65_536 }), {
                    maxProperties: UPSTREAM_CATALOG_LIMITS.maxPromptArguments,
                  }),
                ),
              },
              { additionalProperties: false },
            ),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    get_prompt: Type.Optional(
      Type.Object(
        {
          /** The prompt's name on the upstream server (not the prefixed one). */
          name: Type.String({ minLength: 1, maxLength: 256 }),
          arguments: Type.Optional(
            Type.Record(Type.String({ maxLength: 256 }), Type.String({ maxLength: 65_536 }), {
              maxProperties: UPSTREAM_CATALOG_LIMITS.maxPromptArguments,
            }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
export type UpstreamRequestBody = Static<typeof UpstreamRequestBody>;

/**
 * Its answer, 200 either way: `result`, the upstream's MCP result as it came (a ReadResourceResult's
 * `contents`, a GetPromptResult's `messages`), `input_required` (a modern upstream asked the client
 * for input: its requests, and a signed state carrying its own), or `error` with a Bindery code: NOT_FOUND (no such
 * server attached, resource or prompt listed), FORBIDDEN (AEI or owner disabled), VALIDATION_FAILED
 * (the upstream refused the arguments), UPSTREAM_FAILED / TIMEOUT (the upstream failed or did not
 * answer), RESULT_TOO_LARGE.
 */
export const UpstreamRequestAnswer = Type.Union([
  Type.Object({ result: Type.Record(Type.String(), Type.Unknown()) }),
  Type.Object({ input_required: InputRequired }),
  Type.Object({
    error: Type.Object({
      code: Type.String(),
      message: Type.String(),
      details: Type.Optional(Nullable(Type.Record(Type.String(), Type.Unknown()))),
    }),
  }),
]);
export type UpstreamRequestAnswer = Static<typeof UpstreamRequestAnswer>;

/** How long a watch of an upstream resource lasts unless a gateway renews it (it does, at half). */
export const UPSTREAM_WATCH_TTL_MS = 60_000;
/** URIs one watch request names at most. */
export const UPSTREAM_WATCH_MAX_URIS = 100;

/**
 * `POST /internal/aei/{aei_id}/upstream-watch`: a gateway's clients subscribed to these resources
 * of an upstream server attached to the AEI (legacy `resources/subscribe`, or a modern listen
 * stream's `resourceSubscriptions`): the control plane subscribes to them upstream for
 * `UPSTREAM_WATCH_TTL_MS`, and tells the gateways (`resource_updates` on the invalidation
 * channels) when the server announces a change. Sent again to renew.
 */
export const UpstreamWatchBody = Type.Object(
  {
    upstream_server_id: Type.String({ minLength: 1, maxLength: 64 }),
    uris: Type.Array(Type.String({ minLength: 1, maxLength: UPSTREAM_CATALOG_LIMITS.maxUriChars }), {
      minItems: 1,
      maxItems: UPSTREAM_WATCH_MAX_URIS,
    }),
  },
  { additionalProperties: false },
);
export type UpstreamWatchBody = Static<typeof UpstreamWatchBody>;

/** Which URIs are watched now, and why the others are not (NOT_FOUND, VALIDATION_FAILED: no subscriptions upstream). */
export const UpstreamWatchAnswer = Type.Object({
  ttl_ms: Type.Integer(),
  watched: Type.Array(Type.String()),
  refused: Type.Array(Type.Object({ uri: Type.String(), code: Type.String(), message: Type.String() })),
});
export type UpstreamWatchAnswer = Static<typeof UpstreamWatchAnswer>;
