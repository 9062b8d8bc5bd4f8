/**
 * An OAuth access token from the control plane's authorization server without a browser, for
 * tests and benchmarks that need a token and are not about the consent screen: the same HTTP
 * exchanges a browser makes (authorization request, the consent screen's decision with the
 * person's admin token and the request's cookies, the redirects back), then the code for tokens.
 * The client registers dynamically, with a loopback redirect URI that is never contacted (its
 * Location is read instead).
 */
import { createHash, randomBytes } from 'node:crypto';

export interface OAuthTokens {
  access_token: string;
  refresh_token?: string;
  expires_in: number;
  scope?: string;
  client_id: string;
}

const REDIRECT = 'http://127.0.0.1:9/callback';

/** Tokens for `resource` (a keyless MCP URL), consented by the person whose admin token is `personToken`. */
export async function oauthTokens(
  issuer: string,
  resource: string,
  personToken: string,
  scope = 'mcp:tools mcp:resources mcp:prompts',
): Promise<OAuthTokens> {
  const registered = await fetch(`${issuer}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'test client', redirect_uris: [REDIRECT] }),
  });
  if (registered.status !== 201) throw new Error(`registration answered ${registered.status}`);
  const clientId = ((await registered.json()) as { client_id: string }).client_id;
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const cookies = new Map<string, string>();
  const send = async (url: string, init: RequestInit = {}) => {
    const res = await fetch(new URL(url, issuer), {
      ...init,
      redirect: 'manual',
      headers: {
        ...(init.headers as Record<string, string> | undefined),
        cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join('; '),
      },
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair!.indexOf('=');
      cookies.set(pair!.slice(0, at), pair!.slice(at + 1));
    }
    return res;
  };
  const authorize = new URL(`${issuer}/oauth/authorize`);
  authorize.search = new URLSearchParams({
    client_id: clientId,
    redirect_uri: REDIRECT,
    response_type: 'code',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    resource,
    scope,
    state: randomBytes(8).toString('hex'),
  }).toString();
  let res = await send(authorize.href);
  const interaction = res.headers.get('location') ?? '';
  const uid = /\/oauth\/interaction\/([^/?]+)/u.exec(interaction)?.[1];
  if (!uid) throw new Error(`the authorization request answered ${res.status}, not the consent screen`);
  await res.text();
  res = await send(`/oauth/interaction/${uid}/decision`, {
    method: 'POST',
    headers: { authorization: `Bearer ${personToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ allow: true }),
  });
  if (res.status !== 200) throw new Error(`the consent answered ${res.status}: ${await res.text()}`);
  let next = ((await res.json()) as { redirect_to: string }).redirect_to;
  for (let hops = 0; !next.startsWith(REDIRECT); hops++) {
    if (hops > 5) throw new Error('the authorization server kept redirecting');
    res = await send(next);
    await res.text();
    next = new URL(res.headers.get('location') ?? '', issuer).href;
  }
  const code = new URL(next).searchParams.get('code');
  if (!code) throw new Error(`no code came back: ${next.replace(/[?].*/u, '')}`);
  const token = await fetch(`${issuer}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT,
      client_id: clientId,
      code_verifier: verifier,
      resource,
    }),
  });
  if (token.status !== 200) throw new Error(`the token request answered ${token.status}`);
  return { ...((await token.json()) as Omit<OAuthTokens, 'client_id'>), client_id: clientId };
}
