/**
 * DNS-rebinding protection for the MCP endpoints (the MCP spec's "servers MUST validate Origin"):
 * the Host header must name an allowed host, and a browser Origin must be on an allowed host or
 * listed explicitly. Requests without Origin (non-browser clients) pass the Origin check.
 */

function hostnameOf(hostHeader: string): string {
  // "[::1]:4100" -> "::1", "example.com:4100" -> "example.com"
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(hostHeader);
  if (bracketed?.[1]) return bracketed[1].toLowerCase();
  return hostHeader.replace(/:\d+$/, '').toLowerCase();
}

export interface OriginPolicy {
  allowedHosts: readonly string[];
  allowedOrigins: readonly string[];
}

/** Why a request is refused, or undefined when it may go on. */
export function checkOrigin(
  policy: OriginPolicy,
  host: string | undefined,
  origin: string | undefined,
): string | undefined {
  const anyHost = policy.allowedHosts.includes('*');
  if (!anyHost) {
    if (!host || !policy.allowedHosts.includes(hostnameOf(host))) {
      return `host "${host ?? ''}" is not allowed (set GATEWAY_ALLOWED_HOSTS)`;
    }
  }
  if (origin === undefined || policy.allowedOrigins.includes('*') || policy.allowedOrigins.includes(origin)) {
    return undefined;
  }
  let originHost: string;
  try {
    originHost = new URL(origin).hostname.replace(/^\[|\]$/g, '').toLowerCase();
  } catch {
    return `origin "${origin}" is not a URL`;
  }
  if (!anyHost && policy.allowedHosts.includes(originHost)) return undefined;
  return `origin "${origin}" is not allowed (set GATEWAY_ALLOWED_ORIGINS)`;
}
