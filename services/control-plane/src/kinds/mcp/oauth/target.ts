/** What the OAuth broker needs of an upstream server that requires OAuth, for one person. */
export interface OAuthTarget {
  serverId: string;
  /** The server's display name (for messages). */
  name: string;
  /** The person whose tokens are used: the server's owner. */
  userId: string;
  /** The server's URL: the protected resource its tokens are for. */
  url: string;
  clientId: string | null;
  /** The pre-registered client's secret, its reference already filled in. */
  clientSecret: string | null;
  scope: string | null;
}

/** The page of the console where a person connects a server. */
export function connectPagePath(serverId: string): string {
  return `/console/tools/upstreams?server=${encodeURIComponent(serverId)}`;
}
