/**
 * The constants and checks of the caller entries that their clients need too (the stdio entry and
 * the CLI import this file alone, through `@bindery/contracts/entries`, so they start without the
 * rest of the contracts): key and caller-name shapes, paths and headers.
 */

/** What every personal MCP key starts with; told apart from an exposure's `bnd_key_` at a glance. */
export const PERSONAL_KEY_PREFIX = 'bnd_pk_';
/** A sidebar session's token: for that session's sidebar routes on the control plane only. */
export const SIDEBAR_TOKEN_PREFIX = 'bnd_sidebar_';
/** Random bytes behind the prefix (base64url: 32 characters). */
export const PERSONAL_KEY_RANDOM_BYTES = 24;

/**
 * What every playground key starts with: a short-lived key of one exposure that the admin console
 * makes to call it through the gateway (`POST /api/v2/aeis/{id}/playground-keys`). A gateway
 * serves it like the exposure's api_key until it expires, and audits its calls as
 * `PLAYGROUND_CALLER`.
 */
export const PLAYGROUND_KEY_PREFIX = 'bnd_pg_';
/** Random bytes behind the prefix: as many as a personal key's (base64url: 32 characters). */
export const PLAYGROUND_KEY_RANDOM_BYTES = PERSONAL_KEY_RANDOM_BYTES;
/**
 * The caller the audit rows of a playground key's calls name: a name no caller entry can have (a
 * caller's name starts with a letter or a digit), so these rows are never taken for a caller's.
 */
export const PLAYGROUND_CALLER = '@console';

/** The shape of a key issued as `prefix` and `randomBytes` random bytes in base64url. */
function keyShape(prefix: string, randomBytes: number): RegExp {
  return new RegExp(`^${prefix}[A-Za-z0-9_-]{${(randomBytes / 3) * 4}}$`);
}
const PERSONAL_KEY_RE = keyShape(PERSONAL_KEY_PREFIX, PERSONAL_KEY_RANDOM_BYTES);
const PLAYGROUND_KEY_RE = keyShape(PLAYGROUND_KEY_PREFIX, PLAYGROUND_KEY_RANDOM_BYTES);

/** True when `key` has the shape of an issued personal MCP key (it may still be unknown or revoked). */
export function isWellFormedPersonalKey(key: string): boolean {
  return PERSONAL_KEY_RE.test(key);
}

/** True when `key` has the shape of an issued playground key (it may still be unknown or expired). */
export function isWellFormedPlaygroundKey(key: string): boolean {
  return PLAYGROUND_KEY_RE.test(key);
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

/**
 * The caller name audit rows and logs give a caller entry's session that names no caller (and whose
 * client names none): it gets the default profile. Reserved: no caller may be mapped under it.
 */
export const DEFAULT_CALLER = 'default';

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
