/**
 * Callers and their entries (DESIGN.md §7b, seed 003): a profile is an AEI; each user has a default
 * profile and a map from caller names (`vscode`, `claude`, `cursor`) to profiles; an unknown or
 * absent caller gets the default one. Personal MCP keys (`bnd_pk_…`) authenticate the caller
 * entries: the gateway's `/api/v2/mcp/caller/{caller}`, the stdio entry `bindery-mcp <caller>`
 * relaying to it, and the REST entry with a caller.
 */
import { Type, type Static } from 'typebox';
import { ConfigV2 } from './internal-api.ts';

/** What every personal MCP key starts with; told apart from an exposure's `bnd_key_` at a glance. */
export const PERSONAL_KEY_PREFIX = 'bnd_pk_';
/** Random bytes behind the prefix (base64url: 32 characters). */
export const PERSONAL_KEY_RANDOM_BYTES = 24;
const PERSONAL_KEY_RE = new RegExp(
  `^${PERSONAL_KEY_PREFIX}[A-Za-z0-9_-]{${(PERSONAL_KEY_RANDOM_BYTES / 3) * 4}}$`,
);

/** True when `key` has the shape of an issued personal MCP key (it may still be unknown or revoked). */
export function isWellFormedPersonalKey(key: string): boolean {
  return PERSONAL_KEY_RE.test(key);
}

export const CALLER_NAME_PATTERN = '^[a-z0-9][a-z0-9._-]{0,63}$';
export const CALLER_NAME_RE = new RegExp(CALLER_NAME_PATTERN);

/** True when `name` is a valid caller name. */
export function isCallerName(name: string): boolean {
  return CALLER_NAME_RE.test(name);
}

/**
 * A client's self-description (`clientInfo.name` of initialize: "Visual Studio Code",
 * "claude-ai", "Cursor") as a caller name: lower case, each run of other characters one `-`,
 * trimmed to a leading letter or digit and 64 characters; undefined when nothing is left.
 */
export function normaliseCallerName(name: string): string | undefined {
  const slug = name
    .slice(0, 256)
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[^a-z0-9]+/, '')
    .slice(0, 64)
    .replace(/[^a-z0-9]+$/, '');
  return slug !== '' && isCallerName(slug) ? slug : undefined;
}

export const CallerName = Type.String({
  pattern: CALLER_NAME_PATTERN,
  maxLength: 64,
  description: 'who is calling: a lower-case name such as vscode, claude or cursor',
});

/** Where the stdio entry and the CLI find the gateway when BINDERY_URL is not set. */
export const DEFAULT_GATEWAY_URL = 'http://127.0.0.1:4100';
/** The gateway's MCP entry for callers: `/{caller}` names one; without it, initialize's clientInfo.name is tried. */
export const MCP_CALLER_PATH = '/api/v2/mcp/caller';
/** The REST entry's base path on the gateway. */
export const REST_PATH = '/api/v2/rest';
/** REST entry: the caller, with a personal key (absent: the default profile). */
export const CALLER_HEADER = 'x-bindery-caller';
/** MCP `tools/call`: `params._meta["bindery/source"]` carries seed 004's source hint. */
export const SOURCE_META_KEY = 'bindery/source';

// admin API ---------------------------------------------------------------------------------------

export const CreateMcpKeyBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 100, description: 'what the key is for, e.g. "laptop"' }) },
  { additionalProperties: false },
);
export type CreateMcpKeyBody = Static<typeof CreateMcpKeyBody>;

export const McpKey = Type.Object({
  id: Type.String(),
  name: Type.String(),
  key_prefix: Type.String({ description: 'the first characters of the key, to recognise it' }),
  created_at: Type.String({ format: 'date-time' }),
  last_used_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'when a gateway last looked the key up (to within a minute)',
  }),
});
export type McpKey = Static<typeof McpKey>;

export const McpKeyWithSecret = Type.Intersect([
  McpKey,
  Type.Object({ key: Type.String({ description: 'the key itself: shown this once, never again' }) }),
]);
export type McpKeyWithSecret = Static<typeof McpKeyWithSecret>;

export const CallerParams = Type.Object({ caller: CallerName });
export const PutCallerBody = Type.Object(
  { aei_id: Type.String({ maxLength: 64 }) },
  { additionalProperties: false },
);
export type PutCallerBody = Static<typeof PutCallerBody>;

export const CallerMapping = Type.Object({
  caller: Type.String(),
  aei_id: Type.String(),
  aei_name: Type.String(),
  updated_at: Type.String({ format: 'date-time' }),
});
export type CallerMapping = Static<typeof CallerMapping>;

export const Profile = Type.Object({ aei_id: Type.String(), aei_name: Type.String() });

export const CallerList = Type.Object({
  default_profile: Profile,
  callers: Type.Array(CallerMapping),
});
export type CallerList = Static<typeof CallerList>;

/** How a caller resolves: its mapping, or the default profile. */
export const CallerResolution = Type.Object({
  caller: Type.Union([Type.String(), Type.Null()]),
  aei_id: Type.String(),
  aei_name: Type.String(),
  via: Type.Union([Type.Literal('map'), Type.Literal('default')]),
});
export type CallerResolution = Static<typeof CallerResolution>;

// internal API ------------------------------------------------------------------------------------

/** The header carrying a personal key on the internal caller lookup (never in a URL). */
export const PERSONAL_KEY_HEADER = 'x-bindery-personal-key';

export const CallerConfigQuery = Type.Object(
  { caller: Type.Optional(Type.String({ maxLength: 64 })) },
  { additionalProperties: false },
);
export type CallerConfigQuery = Static<typeof CallerConfigQuery>;

/** Who a caller entry's session is, besides the profile's config (the gateway logs and audits it). */
export const CallerIdentity = Type.Object({
  /** The caller name asked for (normalised); null when none was given. */
  name: Type.Union([Type.String(), Type.Null()]),
  via: Type.Union([Type.Literal('map'), Type.Literal('default')]),
  key_id: Type.String({ description: 'the personal key’s id' }),
  user_id: Type.String(),
});
export type CallerIdentity = Static<typeof CallerIdentity>;

/**
 * `GET /internal/callers/config?caller=` with the personal key in `x-bindery-personal-key`: the
 * profile the caller maps to (or the default profile, created on first need), as config v2, and
 * who asked. ETag `"{aei_id}.{config_version}"`, so a remapped caller never matches. An unknown or
 * revoked key answers 404 with `details.kind: "unknown"`; a malformed caller name 400.
 */
export const CallerConfig = Type.Object({
  kind: Type.Literal('aei'),
  config: ConfigV2,
  caller: CallerIdentity,
});
export type CallerConfig = Static<typeof CallerConfig>;
