/**
 * What an upstream's refusal says (RFC 9728 5.1: where its Protected Resource Metadata is, the
 * scope it wants), asked the way an instance starts: an unauthenticated `server/discover` (the
 * modern era), else an `initialize` and, should the server let that through (some guard only what
 * follows it), a `tools/list` in the session it began. A server that answers them all is asked
 * through the well-known paths by the SDK instead.
 */
import { extractWWWAuthenticateParams } from '@modelcontextprotocol/client';

type FetchLike = (url: string | URL, init?: RequestInit) => Promise<Response>;

export interface Challenge {
  resourceMetadataUrl?: URL;
  scope?: string;
  /** It answered 401 with a Bearer challenge (RFC 6750): it requires OAuth. */
  bearer?: boolean;
}

export async function probeChallenge(url: string, fetch: FetchLike): Promise<Challenge> {
  const MODERN = '2026-07-28';
  const LEGACY = '2025-11-25';
  const clientInfo = { name: 'bindery', version: '1' };
  const send = async (
    method: string,
    params: Record<string, unknown>,
    headers: Record<string, string> = {},
  ) => {
    const answer = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...headers,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method, params }),
    });
    await answer.body?.cancel();
    return answer;
  };
  const refused = (answer: Response) => answer.status === 401 || answer.status === 403;
  try {
    let answer = await send(
      'server/discover',
      {
        _meta: {
          'io.modelcontextprotocol/protocolVersion': MODERN,
          'io.modelcontextprotocol/clientInfo': clientInfo,
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
      { 'mcp-protocol-version': MODERN },
    );
    if (!refused(answer)) {
      answer = await send('initialize', { protocolVersion: LEGACY, capabilities: {}, clientInfo });
    }
    if (answer.ok) {
      const session = answer.headers.get('mcp-session-id');
      const headers = { 'mcp-protocol-version': LEGACY, ...(session && { 'mcp-session-id': session }) };
      answer = await send('tools/list', {}, headers);
      // The session begun here ends here (a server that keeps none answers 405, or nothing).
      if (session) {
        await fetch(url, { method: 'DELETE', headers })
          .then((ended) => ended.body?.cancel())
          .catch(() => undefined);
      }
    }
    if (!refused(answer)) return {};
    const params = extractWWWAuthenticateParams(answer);
    return {
      bearer: answer.status === 401 && /^\s*bearer\b/i.test(answer.headers.get('www-authenticate') ?? ''),
      ...(params.resourceMetadataUrl && { resourceMetadataUrl: params.resourceMetadataUrl }),
      ...(params.scope && { scope: params.scope }),
    };
  } catch {
    return {};
  }
}
