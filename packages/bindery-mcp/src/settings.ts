/**
 * What both entries (`bindery-mcp` and `bindery`) read from their environment: the gateway's
 * address (BINDERY_URL) and the key (BINDERY_KEY, never an argument: arguments show in process
 * lists), and where a key of each kind speaks MCP: a personal key (`bnd_pk_…`) the caller entry,
 * any other key (an exposure's api_key) the exposure entry. `bindery-mcp --sidebar` reads the
 * control plane's address and one sidebar session's id and token instead (readSidebarSettings).
 */
import {
  CALLER_HEADER,
  DEFAULT_GATEWAY_URL,
  MCP_CALLER_PATH,
  PERSONAL_KEY_PREFIX,
  SIDEBAR_TOKEN_PREFIX,
  isWellFormedPersonalKey,
} from '@bindery/contracts/entries';

/** The exposure entry taking its key as a bearer header (the key never goes into a URL). */
export const MCP_SERVER_BEARER_PATH = '/api/v2/mcp/server';

/** A problem with how the entry was started: exit code 2. */
export class UsageError extends Error {}

export interface Credentials {
  /** The gateway's base URL, without a trailing slash. */
  url: string;
  key: string;
  /** True for a personal key: its caller picks the profile. */
  personal: boolean;
  /** Something worth a line on stderr (a key of a surprising shape), or undefined. */
  warning?: string;
}

export function readCredentials(env: { BINDERY_URL?: string; BINDERY_KEY?: string }): Credentials {
  const key = env.BINDERY_KEY?.trim() ?? '';
  if (key === '') {
    throw new UsageError(
      'BINDERY_KEY is not set: set it to a personal MCP key (bnd_pk_…, from POST /api/v2/mcp-keys) or an exposure api_key (bnd_key_…)',
    );
  }
  headerSafe('BINDERY_KEY', key, 'key');
  const url = baseUrl(env.BINDERY_URL, {
    variable: 'BINDERY_URL',
    service: 'gateway',
    fallback: DEFAULT_GATEWAY_URL,
    secret: 'the key goes in BINDERY_KEY',
  });
  const personal = key.startsWith(PERSONAL_KEY_PREFIX);
  const warning =
    personal && !isWellFormedPersonalKey(key)
      ? `BINDERY_KEY starts with ${PERSONAL_KEY_PREFIX} but is not shaped like a personal key; the gateway will probably refuse it`
      : undefined;
  return { url, key, personal, ...(warning && { warning }) };
}

/** Where `bindery-mcp --sidebar` finds the control plane when BINDERY_CONTROL_PLANE_URL is not set. */
export const DEFAULT_CONTROL_PLANE_URL = 'http://127.0.0.1:4000';
/**
 * What every sidebar token starts with. The control plane takes any other bearer token on the
 * sidebar's routes for a person's admin token, so anything else is refused here: an agent must
 * never hold the person's own token.
 */
export { SIDEBAR_TOKEN_PREFIX };
/**
 * How long a write waits for the person's verdict by default: under the 60 s many MCP clients
 * give a request, so the agent reads "still waiting" rather than a timeout of its own.
 */
export const DEFAULT_SIDEBAR_WAIT_MS = 50_000;
/** The control plane's bound on `wait_ms`. */
export const MAX_SIDEBAR_WAIT_MS = 120_000;

export interface SidebarSettings {
  /** The control plane's base URL, without a trailing slash. */
  url: string;
  sessionId: string;
  /** The session's token (`bnd_sidebar_…`): sent as a bearer header, never printed. */
  token: string;
  /** How long a write waits for the person's verdict (0: it answers the pending proposal at once). */
  waitMs: number;
}

/**
 * The settings of `bindery-mcp --sidebar`: BINDERY_CONTROL_PLANE_URL, BINDERY_SIDEBAR_SESSION,
 * BINDERY_SIDEBAR_TOKEN (never an argument, never quoted in a message) and BINDERY_SIDEBAR_WAIT_MS.
 * Throws a UsageError saying what to set.
 */
export function readSidebarSettings(env: {
  BINDERY_CONTROL_PLANE_URL?: string;
  BINDERY_SIDEBAR_SESSION?: string;
  BINDERY_SIDEBAR_TOKEN?: string;
  BINDERY_SIDEBAR_WAIT_MS?: string;
}): SidebarSettings {
  const sessionId = env.BINDERY_SIDEBAR_SESSION?.trim() ?? '';
  if (sessionId === '') {
    throw new UsageError(
      'BINDERY_SIDEBAR_SESSION is not set: set it to the id of a sidebar session (POST /api/v2/sidebar/sessions, or the console)',
    );
  }
  // Not quoted: a token pasted into the wrong variable must not reach the log.
  if (sessionId.startsWith('bnd_')) {
    throw new UsageError(
      'BINDERY_SIDEBAR_SESSION holds a token, not a session id: the token goes in BINDERY_SIDEBAR_TOKEN',
    );
  }
  if (!/^[A-Za-z0-9_-]{1,128}$/.test(sessionId)) {
    throw new UsageError(
      'BINDERY_SIDEBAR_SESSION is not a session id (letters, digits, "_" and "-": the id POST /api/v2/sidebar/sessions answers)',
    );
  }
  const token = env.BINDERY_SIDEBAR_TOKEN?.trim() ?? '';
  if (token === '') {
    throw new UsageError(
      `BINDERY_SIDEBAR_TOKEN is not set: set it to the session's token (${SIDEBAR_TOKEN_PREFIX}…, shown once when the session opens)`,
    );
  }
  headerSafe('BINDERY_SIDEBAR_TOKEN', token, 'token');
  if (!token.startsWith(SIDEBAR_TOKEN_PREFIX)) {
    throw new UsageError(
      `BINDERY_SIDEBAR_TOKEN must be a sidebar session's token (${SIDEBAR_TOKEN_PREFIX}…): any other token would let the agent act as you`,
    );
  }
  const url = baseUrl(env.BINDERY_CONTROL_PLANE_URL, {
    variable: 'BINDERY_CONTROL_PLANE_URL',
    service: 'control plane',
    fallback: DEFAULT_CONTROL_PLANE_URL,
    secret: 'the token goes in BINDERY_SIDEBAR_TOKEN',
  });
  const rawWait = env.BINDERY_SIDEBAR_WAIT_MS?.trim() ?? '';
  const waitMs = rawWait === '' ? DEFAULT_SIDEBAR_WAIT_MS : Number(rawWait);
  if (!/^\d*$/.test(rawWait) || waitMs > MAX_SIDEBAR_WAIT_MS) {
    throw new UsageError(
      `BINDERY_SIDEBAR_WAIT_MS must be a whole number of milliseconds from 0 to ${MAX_SIDEBAR_WAIT_MS}, not "${rawWait}"`,
    );
  }
  return { url, sessionId, token, waitMs };
}

/** Refuses a secret Node's header check would refuse: its error quotes the whole value, which reaches stderr. */
function headerSafe(variable: string, secret: string, what: string): void {
  if (!/^[\x21-\x7e]+$/.test(secret)) {
    throw new UsageError(
      `${variable} holds a character no ${what} has (a space, a line break or a non-ASCII character): set it to the ${what} alone`,
    );
  }
}

/**
 * `raw` (or `fallback` when unset) as a service's base URL, without a trailing slash: http or
 * https, no user, password, query or fragment, no API path (the entry adds it).
 */
function baseUrl(
  raw: string | undefined,
  of: { variable: string; service: string; fallback: string; secret: string },
): string {
  const given = raw?.trim() || of.fallback;
  let parsed: URL;
  try {
    parsed = new URL(given);
  } catch {
    throw new UsageError(`${of.variable} is not a URL: "${given}" (for example ${of.fallback})`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new UsageError(`${of.variable} must be an http:// or https:// URL, not "${given}"`);
  }
  // Not quoted: what is wrong with it may be a secret (a password, a key in the query or path).
  if (parsed.username !== '' || parsed.password !== '' || parsed.search !== '' || parsed.hash !== '') {
    throw new UsageError(
      `${of.variable} must be the ${of.service}'s base URL (${parsed.origin}), without a user, password, query or fragment; ${of.secret}`,
    );
  }
  if (/\/api\/v\d/.test(parsed.pathname)) {
    throw new UsageError(
      `${of.variable} must be the ${of.service}'s base URL (${parsed.origin}), not an endpoint: the path is added, and ${of.secret}`,
    );
  }
  return parsed.href.replace(/\/+$/, '');
}

/**
 * The MCP endpoint for these credentials: a personal key's caller entry (`/{caller}`, or none:
 * the gateway then tries the client's clientInfo.name, else the default profile); any other key
 * the exposure entry, where the caller means nothing to the gateway.
 */
export function mcpEndpoint(credentials: Credentials, caller: string | undefined): URL {
  const path = credentials.personal
    ? `${MCP_CALLER_PATH}${caller === undefined ? '' : `/${encodeURIComponent(caller)}`}`
    : MCP_SERVER_BEARER_PATH;
  return new URL(`${credentials.url}${path}`);
}

/** The headers every request to the gateway carries: the key, and with a personal key the caller. */
export function authHeaders(credentials: Credentials, caller?: string): Record<string, string> {
  return {
    authorization: `Bearer ${credentials.key}`,
    ...(credentials.personal && caller !== undefined && { [CALLER_HEADER]: caller }),
  };
}

/** A network failure's most telling part: `ECONNREFUSED` rather than "fetch failed". */
export function networkReason(error: unknown): string {
  if (error instanceof Error) {
    if (error.name === 'TimeoutError') return 'no answer in time';
    const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
    if (cause && typeof cause.code === 'string') return cause.code;
    if (cause && typeof cause.message === 'string') return cause.message;
    return error.message;
  }
  return String(error);
}

/** An answer's body as JSON: undefined when it is empty or not JSON. */
export function answerJson(text: string): unknown {
  try {
    return text === '' ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** What a refused request says: the service's own `code: message`, else the status and the body's start. */
export function refusalMessage(parsed: unknown, status: number, text: string): string {
  const error = (parsed as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
  return error && typeof error.message === 'string'
    ? `${typeof error.code === 'string' ? `${error.code}: ` : ''}${error.message}`
    : `HTTP ${status}${text ? `: ${text.slice(0, 300)}` : ''}`;
}
