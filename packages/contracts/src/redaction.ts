/**
 * How credentials appear where people can see them: only their display prefix. Both services
 * redact api_keys that travel in URL paths before a URL reaches a log line.
 */

/** Characters of a credential shown in lists and logs (`bnd_key_` + 4). */
export const DISPLAY_PREFIX_LENGTH = 12;

// An api_key travels in the path of the MCP endpoints and of the internal config lookups.
const KEY_IN_PATH = /(\/(?:mcp\/server|internal\/keys|internal\/aei\/mcp|internal\/mcp-instance)\/)([^/?#]+)/;

/** The URL with an api_key in its path cut to the display prefix (and an ellipsis). */
export function redactApiKeyInUrl(url: string): string {
  return url.replace(KEY_IN_PATH, (_match, route: string, key: string) =>
    key.length > DISPLAY_PREFIX_LENGTH ? `${route}${key.slice(0, DISPLAY_PREFIX_LENGTH)}…` : `${route}${key}`,
  );
}

/** A URL (a database's, Redis's) as it may be shown: its password, if any, replaced by `***`. */
export function redactUrlPassword(url: string): string {
  if (!URL.canParse(url)) return '(not a URL)';
  const parsed = new URL(url);
  if (parsed.password !== '') parsed.password = '***';
  return parsed.toString();
}
