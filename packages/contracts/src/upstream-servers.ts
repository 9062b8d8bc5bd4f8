/**
 * Wire shapes of the upstream servers API (`/api/v2/upstream-servers`): external MCP servers whose
 * tools become ADIs of kind `mcp`. A server is reached over stdio (a command the control plane
 * runs, allowed by the operator's UPSTREAM_STDIO_COMMANDS) or Streamable HTTP (with the legacy
 * SSE transport as fallback). Env and header values may reference secrets (`{{secret.NAME}}`); the
 * API answers them as written, never filled in.
 */
import { Type, type Static, type TSchema } from 'typebox';

const Timestamp = Type.String({ format: 'date-time' });
const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const UPSTREAM_LIMITS = Object.freeze({
  maxArgs: 64,
  maxArgChars: 4096,
  maxEnv: 64,
  maxEnvValueChars: 8192,
  maxHeaders: 32,
  maxExposeTools: 200,
  maxInstances: 16,
  maxConcurrentCalls: 256,
  maxCallTimeoutMs: 600_000,
  maxIdleTimeoutMs: 86_400_000,
  /** Tools synced from one server at most (the rest are reported, not stored). */
  maxTools: 1000,
  /** Bytes of one tool's input schema at most. */
  maxSchemaBytes: 256 * 1024,
});

/**
 * What one upstream server may send the control plane at most, by default (the operator's
 * UPSTREAM_MESSAGE_MAX_BYTES and UPSTREAM_CALL_MAX_BYTES): bytes past them are cut as they arrive.
 */
export const UPSTREAM_CAPS = Object.freeze({
  messageMaxBytes: 8 * 1024 * 1024,
  callMaxBytes: 32 * 1024 * 1024,
});

export const UPSTREAM_DEFAULTS = Object.freeze({
  maxInstances: 1,
  concurrentCalls: 16,
  callTimeoutMs: 30_000,
  idleTimeoutMs: 300_000,
});

const EnvName = Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,127}$' });
const HeaderName = Type.String({ pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$" });

export const UpstreamLimits = Type.Object(
  {
    max_instances: Type.Optional(
      Type.Integer({ minimum: 1, maximum: UPSTREAM_LIMITS.maxInstances, description: 'default 1' }),
    ),
    concurrent_calls: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: UPSTREAM_LIMITS.maxConcurrentCalls,
        description: 'calls in flight per instance; default 16',
      }),
    ),
    call_timeout_ms: Type.Optional(
      Type.Integer({ minimum: 100, maximum: UPSTREAM_LIMITS.maxCallTimeoutMs, description: 'default 30000' }),
    ),
    idle_timeout_ms: Type.Optional(
      Type.Integer({
        minimum: 1000,
        maximum: UPSTREAM_LIMITS.maxIdleTimeoutMs,
        description: 'an instance without calls this long is stopped; default 300000',
      }),
    ),
  },
  { additionalProperties: false },
);
export type UpstreamLimits = Static<typeof UpstreamLimits>;

const ExposeTools = Type.Array(Type.String({ minLength: 1, maxLength: 128 }), {
  maxItems: UPSTREAM_LIMITS.maxExposeTools,
  description: 'tool names or globs (`search_*`) to take from the server; absent or empty: all',
});
const SessionMode = Type.Union([Type.Literal('shared'), Type.Literal('per_session')], {
  description:
    'shared (default): every caller’s calls share the pool; per_session: each MCP session gets its own upstream session',
});

const Common = {
  name: Type.String({
    minLength: 1,
    maxLength: 200,
    description: 'display only (not part of the fingerprint)',
  }),
  expose_tools: Type.Optional(ExposeTools),
  session_mode: Type.Optional(SessionMode),
  limits: Type.Optional(UpstreamLimits),
};

const StdioFields = {
  transport: Type.Literal('stdio'),
  command: Type.String({
    minLength: 1,
    maxLength: 1024,
    description: 'the executable; its name must be in the operator’s UPSTREAM_STDIO_COMMANDS',
  }),
  args: Type.Optional(
    Type.Array(Type.String({ maxLength: UPSTREAM_LIMITS.maxArgChars }), {
      maxItems: UPSTREAM_LIMITS.maxArgs,
    }),
  ),
  env: Type.Optional(
    Type.Record(EnvName, Type.String({ maxLength: UPSTREAM_LIMITS.maxEnvValueChars }), {
      maxProperties: UPSTREAM_LIMITS.maxEnv,
      description: 'values may reference secrets: {{secret.NAME}}',
    }),
  ),
  cwd: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
};

const UpstreamAuth = Type.Union([Type.Literal('none'), Type.Literal('oauth')], {
  description:
    'none (default): only the headers given; oauth: the server requires OAuth and each person connects their own account in the console (Bindery is the OAuth client, decision 079). A server that answers 401 with a Bearer challenge is switched to oauth by its sync',
});

export const UpstreamOAuthSettings = Type.Object(
  {
    client_id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 512,
        description:
          'a client an administrator registered with the authorization server; absent: Bindery registers itself (Client ID Metadata Document when the server supports one and the control plane’s public URL is https, else dynamic registration)',
      }),
    ),
    client_secret: Type.Optional(
      Type.String({
        maxLength: UPSTREAM_LIMITS.maxEnvValueChars,
        description: 'the pre-registered client’s secret, as a secret reference: {{secret.NAME}}',
      }),
    ),
    scope: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 1024,
        description: 'the scopes to ask for; absent: those the server’s challenge or metadata names',
      }),
    ),
  },
  { additionalProperties: false },
);
export type UpstreamOAuthSettings = Static<typeof UpstreamOAuthSettings>;

export const UpstreamConnection = Type.Object(
  {
    status: Type.Union(
      [Type.Literal('not_connected'), Type.Literal('connected'), Type.Literal('needs_consent')],
      {
        description:
          'not_connected: calls fail asking the person to connect; connected; needs_consent: the server asked for a scope the grant lacks (required_scope): connect again to grant it',
      },
    ),
    issuer: Nullable(Type.String({ description: 'the authorization server that issued the tokens' })),
    scope: Nullable(Type.String({ description: 'the scopes granted' })),
    required_scope: Nullable(Type.String()),
    expires_at: Nullable(Timestamp),
    connected_at: Nullable(Timestamp),
  },
  { description: 'the calling person’s connection (tokens are never shown)' },
);
export type UpstreamConnection = Static<typeof UpstreamConnection>;

/**
 * Why a Connect did not end connected, as the callback tells the console (a fixed sentence each,
 * so a link cannot make the console say anything else; the control plane's log has the detail).
 */
export const UPSTREAM_OAUTH_FAILURES = {
  expired: 'This connection attempt is unknown, already used or expired: press Connect again.',
  other_browser: 'This connection attempt was started in another browser: press Connect again in this one.',
  denied: 'The authorization server did not grant access.',
  failed:
    'The authorization server’s answer could not be used: press Connect again (the control plane’s log says why).',
} as const;
export type UpstreamOAuthFailure = keyof typeof UPSTREAM_OAUTH_FAILURES;

export const UpstreamConnectAnswer = Type.Object({
  authorization_url: Type.String({
    description:
      'where to send the person’s browser; it comes back to the control plane, which sends it on to the console',
  }),
});
export type UpstreamConnectAnswer = Static<typeof UpstreamConnectAnswer>;

const HttpFields = {
  transport: Type.Literal('http'),
  url: Type.String({ minLength: 1, maxLength: 2048, description: 'the Streamable HTTP (or SSE) endpoint' }),
  headers: Type.Optional(
    Type.Record(HeaderName, Type.String({ maxLength: UPSTREAM_LIMITS.maxEnvValueChars }), {
      maxProperties: UPSTREAM_LIMITS.maxHeaders,
      description: 'values may reference secrets: {{secret.NAME}}',
    }),
  ),
  auth: Type.Optional(UpstreamAuth),
  oauth: Type.Optional(UpstreamOAuthSettings),
};

export const CreateStdioUpstreamBody = Type.Object(
  { ...Common, ...StdioFields },
  { additionalProperties: false, title: 'stdio upstream server' },
);
export const CreateHttpUpstreamBody = Type.Object(
  { ...Common, ...HttpFields },
  { additionalProperties: false, title: 'HTTP upstream server' },
);
export const CreateUpstreamServerBody = Type.Union([CreateStdioUpstreamBody, CreateHttpUpstreamBody]);
export type CreateUpstreamServerBody = Static<typeof CreateUpstreamServerBody>;

/** A PATCH: any field but the transport (a different transport is a different server). */
export const UpdateUpstreamServerBody = Type.Object(
  {
    name: Type.Optional(Common.name),
    expose_tools: Type.Optional(Nullable(ExposeTools)),
    session_mode: Type.Optional(SessionMode),
    limits: Type.Optional(UpstreamLimits),
    command: Type.Optional(StdioFields.command),
    args: Type.Optional(StdioFields.args),
    env: Type.Optional(StdioFields.env),
    cwd: Type.Optional(Nullable(StdioFields.cwd)),
    url: Type.Optional(HttpFields.url),
    headers: Type.Optional(HttpFields.headers),
    auth: Type.Optional(UpstreamAuth),
    oauth: Type.Optional(Nullable(UpstreamOAuthSettings)),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateUpstreamServerBody = Static<typeof UpdateUpstreamServerBody>;

export const UpstreamStatus = Type.Union(
  [
    Type.Literal('ok'),
    Type.Literal('starting'),
    Type.Literal('failing'),
    Type.Literal('circuit_open'),
    Type.Literal('stopped'),
    Type.Literal('needs_connection'),
  ],
  {
    description:
      'ok: last sync or call worked; starting: not synced yet; failing: the last attempt failed (see last_error); ' +
      'circuit_open: calls fail at once until a probe succeeds; stopped: no instance runs (idle); ' +
      'needs_connection: the server requires OAuth and its owner has not connected their account (or must connect again)',
  },
);
export type UpstreamStatus = Static<typeof UpstreamStatus>;

export const UpstreamTool = Type.Object({
  adi_id: Type.String(),
  name: Type.String({ description: 'the ADI’s name (the upstream’s unless renamed)' }),
  upstream_name: Type.String(),
  missing: Type.Boolean(),
});

export const UpstreamServer = Type.Object({
  id: Type.String(),
  name: Type.String(),
  slug: Type.String({ description: 'the default prefix when the whole server is attached to an AEI' }),
  transport: Type.Union([Type.Literal('stdio'), Type.Literal('http')]),
  command: Type.Optional(Type.String()),
  args: Type.Optional(Type.Array(Type.String())),
  env: Type.Optional(Type.Record(Type.String(), Type.String())),
  cwd: Type.Optional(Nullable(Type.String())),
  url: Type.Optional(Type.String()),
  headers: Type.Optional(Type.Record(Type.String(), Type.String())),
  auth: Type.Optional(UpstreamAuth),
  oauth: Type.Optional(Nullable(UpstreamOAuthSettings)),
  connection: Type.Optional(UpstreamConnection),
  expose_tools: Type.Array(Type.String()),
  session_mode: SessionMode,
  limits: Type.Object({
    max_instances: Type.Integer(),
    concurrent_calls: Type.Integer(),
    call_timeout_ms: Type.Integer(),
    idle_timeout_ms: Type.Integer(),
  }),
  fingerprint: Type.String({
    description: 'SHA-256 of the canonical spec (without the name, with the owner)',
  }),
  shared_with: Type.Array(Type.String(), {
    description: 'ids of the caller’s other servers with the same fingerprint (one pool serves them all)',
  }),
  status: UpstreamStatus,
  protocol_era: Nullable(
    Type.Union([Type.Literal('modern'), Type.Literal('legacy')], {
      description:
        'the MCP era the server was found to speak by this control plane: modern (2026-07-28, found by server/discover) or legacy (2025, initialize); null until an instance started here',
    }),
  ),
  protocol_version: Nullable(
    Type.String({ description: 'the protocol version it speaks (2026-07-28, or the one initialize agreed)' }),
  ),
  last_error: Nullable(Type.String()),
  last_sync_at: Nullable(Timestamp),
  tool_count: Type.Integer(),
  tools: Type.Array(UpstreamTool),
  pool: Type.Object({
    instances: Type.Integer({ description: 'instances running in this control plane' }),
    in_flight: Type.Integer(),
    restarts: Type.Integer(),
  }),
  warnings: Type.Array(Type.String(), {
    description:
      'what the last sync could not take or had to change, each named (clashes, limits, entries MCP does not allow, text a database cannot store)',
  }),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type UpstreamServer = Static<typeof UpstreamServer>;

export const UpstreamServerLogs = Type.Object({
  lines: Type.Array(Type.Object({ at: Timestamp, stream: Type.Literal('stderr'), text: Type.String() }), {
    description: 'the newest lines a stdio child wrote to stderr in this control plane, oldest first',
  }),
  dropped: Type.Integer({ description: 'lines dropped from the ring buffer since the pool started' }),
});
export type UpstreamServerLogs = Static<typeof UpstreamServerLogs>;
