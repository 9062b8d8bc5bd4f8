/** The control plane's settings: every environment variable it reads, with kind, default and doc. */
import { GATEWAY_HOST, GATEWAY_PORT, HOST, PORT, localUrl } from './addresses.ts';
import {
  boolean,
  derived,
  defineSettings,
  encryptionKey,
  encryptionKeys,
  integer,
  list,
  networks,
  secret,
  string,
  url,
} from './schema.ts';
import { UPSTREAM_CAPS } from '@bindery/contracts';
import {
  LOG_FORMAT,
  LOG_LEVEL,
  LOG_REQUESTS,
  METRICS_TOKEN,
  OPS_TOKEN,
  REDIS_URL,
  SHUTDOWN_GRACE_MS,
  TRACING_SETTINGS,
} from './shared.ts';

const MiB = 1024 * 1024;

export const CONTROL_PLANE_SETTINGS = defineSettings(
  'control plane',
  {
    HOST,
    PORT,
    GATEWAY_HOST: {
      ...GATEWAY_HOST,
      doc: 'the gateway’s listening address; `GATEWAY_PUBLIC_URL` follows it',
    },
    GATEWAY_PORT: { ...GATEWAY_PORT, doc: 'the gateway’s port; `GATEWAY_PUBLIC_URL` follows it' },
    DATABASE_URL: url({
      schemes: ['postgres', 'postgresql'],
      secret: true,
      doc: 'PostgreSQL server to use (migrated on start); unset = the embedded PGlite database',
    }),
    BINDERY_DATA_DIR: string({ default: '.bindery', doc: 'the embedded database’s directory' }),
    BINDERY_ADMIN_TOKEN: secret({
      doc: 'the root admin token to install at start (replaces earlier root tokens); unset = one is generated once and printed',
    }),
    BODY_LIMIT_BYTES: integer({
      min: 1024,
      max: 1024 * MiB,
      unit: 'bytes',
      default: 10 * MiB,
      doc: 'largest request body (413 above)',
    }),
    LOG_LEVEL,
    LOG_FORMAT,
    LOG_REQUESTS,
    INTERNAL_TOKEN: secret({
      doc: 'the gateways’ credential for `/internal/*`; unset = the internal API refuses every call. `pnpm start` generates one per start',
    }),
    METRICS_TOKEN,
    RESULT_LIMIT_BYTES: integer({
      min: 1024,
      max: 256 * MiB,
      unit: 'bytes',
      default: 1_000_000,
      doc: 'largest tool answer, in bytes of JSON (`RESULT_TOO_LARGE` above)',
    }),
    TABLE_MAX_BYTES: integer({
      min: 1024,
      max: 1024 * MiB,
      unit: 'bytes',
      default: 32 * MiB,
      doc: 'largest data of one table, in bytes of its compact JSON (UTF-8): a write that would grow a table past it is refused (`PAYLOAD_TOO_LARGE`, `details.limit: "table_bytes"`), by tools and the admin API alike (create, `PUT …/data`, import); a tool write that shrinks a table always passes (a table over a lowered cap can be trimmed by its tools; data given whole, by create, PUT or import, must fit)',
    }),
    TABLE_WRITE_MAX_BYTES: integer({
      min: 1024,
      max: 1024 * MiB,
      unit: 'bytes',
      default: 4 * MiB,
      doc: 'largest change one tool write (a context tool’s or `ctx.context.write`) may store, in bytes of its JSON (`PAYLOAD_TOO_LARGE`, `details.limit: "write_bytes"`); whole documents from the admin API are bounded by `BODY_LIMIT_BYTES` and `TABLE_MAX_BYTES` instead',
    }),
    CONTEXT_CACHE_MB: integer({
      min: 0,
      max: 64 * 1024,
      unit: 'MiB',
      default: 64,
      doc: 'parsed contexts kept in memory (0 = off)',
    }),
    BINDING_CACHE_ENTRIES: integer({
      min: 0,
      max: 10_000_000,
      default: 20_000,
      doc: 'bindings a tool call finds in memory instead of the database (0 = off); exposure changes drop them at once',
    }),
    GATEWAY_URLS: list({
      items: 'url',
      doc: 'gateway base URLs told of exposure changes and of tables’ data changes, for resource subscriptions (`POST {url}/cache/invalidate`); `pnpm start` sets the local gateway',
    }),
    OPS_TOKEN: {
      ...OPS_TOKEN,
      doc: 'the gateways’ ops credential, sent with each invalidation; required with `GATEWAY_URLS`',
    },
    ...TRACING_SETTINGS,
    TRACE_URL_TEMPLATE: string({
      doc:
        'where the console’s live log links a call’s trace: your tracing backend’s page of a trace, with `{trace_id}` ' +
        'where the id goes (`https://traces.example.com/trace/{trace_id}`); unset = the log shows the id alone',
    }),
    REDIS_URL: {
      ...REDIS_URL,
      doc:
        'Redis for exposure-change and table-change fan-out (channel `bindery:config-invalidate`; an exposure change is answered ' +
        'once each receiver confirmed it on `bindery:config-invalidate:ack`, or after 1 s) and, on PostgreSQL, for tables’ ' +
        'latest versions shared by every control plane: each write announces its version to the others and waits until each ' +
        'applied it or its lease ended, so reads served from the context cache ask neither the database nor Redis; a write is ' +
        'refused while Redis is unreachable; unset = HTTP only, and on PostgreSQL the same announcements and leases run over the ' +
        'database’s LISTEN/NOTIFY (one listening connection per control plane; reads ask the database while it is lost)',
    },
    TABLE_VERSION_LEASE_MS: integer({
      min: 200,
      // A write waits up to a lease inside its transaction; a table's deletion runs in one of 30 s.
      max: 10_000,
      unit: 'ms',
      default: 2_000,
      doc:
        'on PostgreSQL: how long a control plane’s lease on the table versions it knows lasts (renewed every quarter ' +
        'of it, in Redis with REDIS_URL, else in the table_version_member table); while a control plane hangs or after it dies ' +
        'without leaving, each write of the others waits this long (and, with Redis, for one lease after the members’ set in ' +
        'Redis is made)',
    }),
    GATEWAY_PUBLIC_URL: url({
      base: true,
      default: derived('`http://127.0.0.1:$GATEWAY_PORT`', (v) =>
        localUrl(v.GATEWAY_HOST as string, v.GATEWAY_PORT as number),
      ),
      doc: 'where MCP clients reach a gateway (printed with the demo’s MCP URL); unset = the local gateway (at `GATEWAY_HOST` when that names one address)',
    }),
    OAUTH_ISSUER: url({
      base: true,
      doc:
        'the built-in OAuth authorization server’s issuer: the control plane’s public URL, as agents’ browsers reach it ' +
        '(its consent screen and endpoints live there); unset = the address the control plane listens on',
    }),
    OAUTH_KEY_ROTATION_DAYS: integer({
      min: 1,
      max: 365,
      unit: 'days',
      default: 30,
      doc: 'the OAuth access tokens’ signing key is replaced after this many days (the old one is published a day longer)',
    }),
    OAUTH_CLIENTS: string({
      doc:
        'OAuth clients registered by the operator, as a JSON array of client metadata (RFC 7591: `client_id`, ' +
        '`client_name`, `redirect_uris`, and `client_secret` for a confidential client); for clients that cannot ' +
        'register themselves; unset = none',
    }),
    OIDC_ISSUER: url({
      doc:
        'an external OpenID Connect provider people may sign in to the console with (its issuer URL; HTTPS, or HTTP on ' +
        'loopback); its redirect URI is `{OAUTH_ISSUER}/api/v2/sign-in/oidc/callback`; unset = passwords only',
    }),
    OIDC_CLIENT_ID: string({ doc: 'the console’s client id at OIDC_ISSUER' }),
    OIDC_CLIENT_SECRET: secret({
      minLength: 1,
      doc: 'the console’s client secret at OIDC_ISSUER (unset: a public client)',
    }),
    OIDC_NAME: string({
      default: 'single sign-on',
      doc: 'what the console’s button calls OIDC_ISSUER ("Sign in with …")',
    }),
    BINDERY_SEED_DEMO: boolean({
      doc: '`true`/`false`: seed (or not) the demo on an empty database; unset = only on embedded PGlite',
    }),
    IDEMPOTENCY_TTL_HOURS: integer({
      min: 1,
      max: 24 * 30,
      unit: 'hours',
      default: 24,
      doc: 'how long a write’s idempotency key is remembered (a retry with it answers the first outcome)',
    }),
    SHUTDOWN_GRACE_MS,
    AUDIT_FLUSH_MS: integer({
      min: 0,
      max: 1_000,
      unit: 'ms',
      default: 0,
      doc: 'how long the first audit row queued while none is being written waits for others (0 = to the end of the event loop’s turn); a call is answered once its row is committed',
    }),
    AUDIT_BATCH_MAX: integer({
      min: 1,
      max: 5_000,
      unit: 'rows',
      default: 500,
      doc: 'audit rows written by one INSERT at most',
    }),
    AUDIT_QUEUE_MAX: integer({
      min: 1,
      max: 1_000_000,
      unit: 'rows',
      default: 5_000,
      doc: 'audit rows queued at most (at least `AUDIT_BATCH_MAX`); beyond, the calls finishing wait for room before queuing theirs',
    }),
    QUERY_TIMEOUT_MS: integer({
      min: 10,
      max: 60_000,
      unit: 'ms',
      default: 1_000,
      doc: 'wall time of one `query`, in-process slice and worker thread together (`LIMIT_EXCEEDED` above)',
    }),
    QUERY_INLINE_MS: integer({
      min: 0,
      max: 1_000,
      unit: 'ms',
      default: 10,
      doc: 'how long a query runs on the event loop before it moves to a worker thread (0 = always a worker)',
    }),
    QUERY_WORKERS: integer({
      min: 1,
      max: 64,
      default: 2,
      doc: 'worker threads for long queries (all started with the server and kept running)',
    }),
    QUERY_QUEUE: integer({
      min: 0,
      max: 10_000,
      default: 8,
      doc: 'long queries waiting for a worker thread at most (`RATE_LIMITED` beyond)',
    }),
    QUERY_MAX_WAIT_MS: integer({
      min: 0,
      max: 3_600_000,
      unit: 'ms',
      default: 0,
      doc: 'how long a long query may wait for a worker thread before `RATE_LIMITED` (0: twice `QUERY_TIMEOUT_MS`)',
    }),
    QUERY_TENANT_ESCALATIONS: integer({
      min: 1,
      max: 10_000,
      default: 2,
      doc: 'long queries of one tenant (the user owning the exposure) in the worker pool at once, running or waiting',
    }),
    QUERY_WORKER_MEMORY_MB: integer({
      min: 32,
      max: 64 * 1024,
      unit: 'MiB',
      default: 256,
      doc: 'heap cap of each query worker; a query may build a quarter of it (`LIMIT_EXCEEDED`, limit `memory`)',
    }),
    BINDERY_SECRET_KEY: encryptionKey({
      doc: 'the key users’ secrets are encrypted with (AES-256-GCM); unset = on embedded PGlite one is generated once into `BINDERY_DATA_DIR/secret.key`, on PostgreSQL secrets are unavailable (503 `NOT_CONFIGURED`)',
    }),
    BINDERY_SECRET_OLD_KEYS: encryptionKeys({
      doc: 'earlier values of `BINDERY_SECRET_KEY`, still used to read secrets written with them (rotation: move the old key here, set the new one)',
    }),
    HTTP_TOOLS_ALLOWED_NETWORKS: networks({
      doc: 'networks outgoing tool and import requests may reach although they are loopback, private, link-local or otherwise not public (e.g. `10.1.0.0/16`); empty = public addresses only',
    }),
    OPENAPI_IMPORT_MAX_BYTES: integer({
      min: 1024,
      max: 1024 * MiB,
      unit: 'bytes',
      default: 64 * MiB,
      doc: 'largest OpenAPI document `POST /api/v2/openapi-imports` takes, as its request body or fetched from a URL (413 / `LIMIT_EXCEEDED` above); the route’s own limit instead of `BODY_LIMIT_BYTES`',
    }),
    CUSTOM_TOOL_TIMEOUT_MS: integer({
      min: 10,
      max: 60_000,
      unit: 'ms',
      default: 1_000,
      doc: 'wall time of one custom JavaScript tool call, host calls included (`TIMEOUT` above)',
    }),
    CUSTOM_TOOL_MEMORY_MB: integer({
      min: 8,
      max: 1_024,
      unit: 'MiB',
      default: 32,
      doc: 'memory of one custom JavaScript tool call (`LIMIT_EXCEEDED`, limit `memory`, above)',
    }),
    CUSTOM_TOOL_WORKERS: integer({
      min: 1,
      max: 64,
      default: 2,
      doc: 'worker threads running custom JavaScript tools (all kept running)',
    }),
    CUSTOM_TOOL_QUEUE: integer({
      min: 0,
      max: 10_000,
      default: 32,
      doc: 'custom tool calls waiting for a worker thread at most (`RATE_LIMITED` beyond)',
    }),
    CUSTOM_TOOL_TENANT_CALLS: integer({
      min: 1,
      max: 10_000,
      default: 8,
      doc: 'custom tool calls of one tenant (the user owning the exposure) running or waiting at once (`RATE_LIMITED` beyond)',
    }),
    CUSTOM_TOOL_MAX_WRITES: integer({
      min: 1,
      max: 1_000_000,
      default: 1_000,
      doc: '`ctx.context.write` calls one custom tool call may make (`LIMIT_EXCEEDED` past it; the writes before it stand)',
    }),
    CUSTOM_TOOL_WRITES_PER_SECOND: integer({
      min: 1,
      max: 100_000,
      unit: 'writes/s',
      default: 100,
      doc: '`ctx.context.write` calls one custom tool call makes per second at most, in bursts of up to 16 (its host calls in flight); a write past that waits for its turn, within the call’s time limit',
    }),
    UPSTREAM_STDIO_COMMANDS: list({
      doc: 'executables stdio upstream MCP servers may run, by name (`node` allows `node` and `/usr/bin/node`); empty = stdio servers refused. They run on this host as this process’s user: allow only what you trust. `pnpm start` allows `npx,node,uvx,python3`',
    }),
    UPSTREAM_REFRESH_S: integer({
      min: 0,
      max: 86_400,
      unit: 's',
      default: 300,
      doc: 'how often the tools of upstream servers with a running instance are listed again (0 = only on create, `sync` and the upstream’s `tools/list_changed`)',
    }),
    UPSTREAM_MESSAGE_MAX_BYTES: integer({
      min: 64 * 1024,
      max: 256 * MiB,
      unit: 'bytes',
      default: UPSTREAM_CAPS.messageMaxBytes,
      doc:
        'the largest message an upstream MCP server may send (a JSON body, one SSE event, one stdio line), counted as it arrives: ' +
        'past it the message is cut and the request fails with `RESULT_TOO_LARGE` (a stream that answers no one request, and ' +
        'a stdio server, lose their connection); at least `RESULT_LIMIT_BYTES`',
    }),
    UPSTREAM_CALL_MAX_BYTES: integer({
      min: 64 * 1024,
      max: 1024 * MiB,
      unit: 'bytes',
      default: UPSTREAM_CAPS.callMaxBytes,
      doc: 'what one request to an upstream MCP server may bring back, at least `UPSTREAM_MESSAGE_MAX_BYTES`: the whole answer stream of a Streamable HTTP request (progress, logs, result), and on every transport its progress reports; past it the request is cut and fails with `RESULT_TOO_LARGE`',
    }),
  },
  [
    (v) =>
      v.TRACE_URL_TEMPLATE !== undefined && !/^https?:\/\/[^\s]*\{trace_id\}/.test(v.TRACE_URL_TEMPLATE)
        ? 'TRACE_URL_TEMPLATE must be an http(s) URL with {trace_id} in it'
        : undefined,
    (v) =>
      v.GATEWAY_URLS.length > 0 && v.OPS_TOKEN === undefined
        ? 'OPS_TOKEN must be set when GATEWAY_URLS is: it is the credential the gateways ask for on /cache/invalidate'
        : undefined,
    (v) =>
      v.QUERY_INLINE_MS > v.QUERY_TIMEOUT_MS
        ? `QUERY_INLINE_MS (${v.QUERY_INLINE_MS}) must not be larger than QUERY_TIMEOUT_MS (${v.QUERY_TIMEOUT_MS})`
        : undefined,
    (v) =>
      v.UPSTREAM_MESSAGE_MAX_BYTES < v.RESULT_LIMIT_BYTES
        ? `UPSTREAM_MESSAGE_MAX_BYTES (${v.UPSTREAM_MESSAGE_MAX_BYTES}) must not be smaller than RESULT_LIMIT_BYTES (${v.RESULT_LIMIT_BYTES}): an upstream answer the control plane may pass on would be cut`
        : undefined,
    (v) =>
      v.UPSTREAM_CALL_MAX_BYTES < v.UPSTREAM_MESSAGE_MAX_BYTES
        ? `UPSTREAM_CALL_MAX_BYTES (${v.UPSTREAM_CALL_MAX_BYTES}) must not be smaller than UPSTREAM_MESSAGE_MAX_BYTES (${v.UPSTREAM_MESSAGE_MAX_BYTES}): one request's answer holds at least one message`
        : undefined,
    (v) =>
      v.AUDIT_QUEUE_MAX < v.AUDIT_BATCH_MAX
        ? `AUDIT_QUEUE_MAX (${v.AUDIT_QUEUE_MAX}) must not be smaller than AUDIT_BATCH_MAX (${v.AUDIT_BATCH_MAX})`
        : undefined,
    (v) =>
      v.BINDERY_SECRET_OLD_KEYS.length > 0 && v.BINDERY_SECRET_KEY === undefined
        ? 'BINDERY_SECRET_OLD_KEYS needs BINDERY_SECRET_KEY: new secrets are written with the current key, the old ones only read'
        : undefined,
  ],
);
