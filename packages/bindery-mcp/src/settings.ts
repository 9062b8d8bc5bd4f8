/**
 * What both entries (`bindery-mcp` and `bindery`) read from their environment: the gateway's
 * address (BINDERY_URL) and the key (BINDERY_KEY, never an argument: arguments show in process
 * lists), and where a key of each kind speaks MCP: a personal key (`bnd_pk_…`) the caller entry,
 * any other key (an exposure's api_key) the exposure entry.
 */
import {
  CALLER_HEADER,
  DEFAULT_GATEWAY_URL,
  MCP_CALLER_PATH,
  PERSONAL_KEY_PREFIX,
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
  // Node's header check would quote the whole key in its error, which reaches stderr and the client.
  if (!/^[\x21-\x7e]+$/.test(key)) {
    throw new UsageError(
      'BINDERY_KEY holds a character no key has (a space, a line break or a non-ASCII character): set it to the key alone',
    );
  }
  const raw = env.BINDERY_URL?.trim() || DEFAULT_GATEWAY_URL;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new UsageError(`BINDERY_URL is not a URL: "${raw}" (for example ${DEFAULT_GATEWAY_URL})`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new UsageError(`BINDERY_URL must be an http:// or https:// URL, not "${raw}"`);
  }
  // Not quoted: what is wrong with it may be a secret (a password, a key in the query or path).
  if (parsed.username !== '' || parsed.password !== '' || parsed.search !== '' || parsed.hash !== '') {
    throw new UsageError(
      `BINDERY_URL must be the gateway's base URL (${parsed.origin}), without a user, password, query or fragment; the key goes in BINDERY_KEY`,
    );
  }
  if (/\/api\/v\d/.test(parsed.pathname)) {
    throw new UsageError(
      `BINDERY_URL must be the gateway's base URL (${parsed.origin}), not an endpoint: the path is added, and the key goes in BINDERY_KEY`,
    );
  }
  const url = parsed.href.replace(/\/+$/, '');
  const personal = key.startsWith(PERSONAL_KEY_PREFIX);
  const warning =
    personal && !isWellFormedPersonalKey(key)
      ? `BINDERY_KEY starts with ${PERSONAL_KEY_PREFIX} but is not shaped like a personal key; the gateway will probably refuse it`
      : undefined;
  return { url, key, personal, ...(warning && { warning }) };
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
