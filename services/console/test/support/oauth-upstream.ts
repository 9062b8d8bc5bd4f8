/**
 * An upstream MCP server that requires OAuth, and its authorization server, both on loopback, for
 * the tests of servers whose accounts Bindery brokers:
 * - the authorization server is `oidc-provider`: dynamic registration (no initial token), PKCE,
 *   resource indicators (JWT access tokens for the MCP URL, `mcp:tools mcp:admin`), refresh tokens
 *   (rotated), RFC 7009 revocation. Its sign-in is a page of its own asking for a user name (a
 *   browser fills it in); the scopes and resource asked for are then granted without a question.
 * - the MCP server is the MCP SDK's, stateless (a server and transport per request). It names its
 *   authorization server in its Protected Resource Metadata (RFC 9728), answers a request without a
 *   valid bearer token 401 with a challenge naming that metadata, and checks each token's
 *   signature (the authorization server's keys), issuer and audience. Its tools: `whoami` answers
 *   the token's subject; `echo_token` answers the bearer token it was sent (as a careless server
 *   might); `admin_op` needs `mcp:admin`, else the request is answered 403 insufficient_scope (as
 *   the MCP authorization spec's step-up says). It serves its endpoint whatever the query string.
 * What both saw is kept for the test: the token ids per subject, every token issued or presented,
 * the grants per subject, the 403s, the revocations. The authorization server's redirects back to
 * its clients can be held (kept for the test, not followed), so a test can open one elsewhere.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createRemoteJWKSet, exportJWK, generateKeyPair, jwtVerify, type JWTPayload } from 'jose';
import Provider, { errors, type Configuration, type KoaContextWithOIDC } from 'oidc-provider';

export const TOOLS_SCOPE = 'mcp:tools';
export const ADMIN_SCOPE = 'mcp:admin';

export interface OAuthUpstream {
  /** The authorization server's issuer. */
  issuer: string;
  /** The MCP endpoint (the resource the tokens are for). */
  mcpUrl: string;
  /** Its Protected Resource Metadata. */
  metadataUrl: string;
  /** Per subject, the ids (`jti`) of the access tokens the MCP server accepted. */
  tokenIds: Map<string, Set<string>>;
  /** Every token value seen: access tokens presented, refresh tokens and codes issued. */
  tokens: Set<string>;
  /** Names typed on the sign-in page, in order. */
  signIns: string[];
  /** The 403 insufficient_scope answers of the MCP server: the subject and the tool. */
  insufficientScope: { subject: string; tool: string }[];
  /** Requests the MCP server answered 401 (no token, or one it refused). */
  unauthorized: number;
  /** Answers of the revocation endpoint (their status), and the grants revoked. */
  revocations: number[];
  grantsRevoked: string[];
  /** Per subject, the ids of the grants refresh tokens were issued under. */
  grants: Map<string, Set<string>>;
  /**
   * While on, a redirect of the authorization server back to a client (the answer carrying the
   * code, or an error) is not sent to the browser: its URL is kept in `heldRedirects`, and the
   * browser gets a page saying so (heading "Redirect held").
   */
  holdRedirects(on: boolean): void;
  heldRedirects: string[];
  /** Refresh tokens used (a refresh each). */
  refreshes: number;
  close(): Promise<void>;
}

/** A loopback HTTP server whose handler is set once its address is known. */
async function listening(): Promise<{
  server: Server;
  origin: string;
  handle(handler: (req: IncomingMessage, res: ServerResponse) => void): void;
}> {
  let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.writeHead(503).end();
  const server = createServer((req, res) => handler(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    handle: (next) => {
      handler = next;
    },
  };
}

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/gu, (c) => `&#${c.charCodeAt(0)};`);

/** What the browser gets in place of a redirect back to a client that is held. */
const HELD_PAGE = `<!doctype html>
<html lang="en">
<meta charset="utf-8">
<title>Redirect held: Test IdP</title>
<main><h1>Redirect held</h1><p>The test keeps this redirect back to the client.</p></main>
</html>`;

/** The sign-in page: one field, the user name (any name is an account). */
function signInPage(uid: string, client: string): string {
  return `<!doctype html>
<html lang="en">
<meta charset="utf-8">
<title>Sign in: Test IdP</title>
<main>
<h1>Sign in to Test IdP</h1>
<p>${escapeHtml(client)} asks to use your account.</p>
<form method="post" action="/interaction/${escapeHtml(uid)}/login">
<label for="name">User name</label>
<input id="name" name="name" required autocomplete="off">
<button type="submit">Sign in</button>
</form>
</main>
</html>`;
}

/**
 * Starts both servers; `accessTokenTtl` (seconds) is kept short so a test sees a refresh.
 */
export async function startOAuthUpstream(options: { accessTokenTtl: number }): Promise<OAuthUpstream> {
  const as = await listening();
  const mcp = await listening();
  const issuer = as.origin;
  const mcpUrl = `${mcp.origin}/mcp`;
  const metadataUrl = `${mcp.origin}/.well-known/oauth-protected-resource/mcp`;
  const state: Omit<OAuthUpstream, 'issuer' | 'mcpUrl' | 'metadataUrl' | 'holdRedirects' | 'close'> = {
    tokenIds: new Map(),
    tokens: new Set(),
    signIns: [],
    insufficientScope: [],
    unauthorized: 0,
    revocations: [],
    grantsRevoked: [],
    grants: new Map(),
    heldRedirects: [],
    refreshes: 0,
  };
  let holding = false;

  const keys = await generateKeyPair('ES256', { extractable: true });
  const configuration: Configuration = {
    jwks: {
      keys: [{ ...(await exportJWK(keys.privateKey)), kid: 'upstream-as-1', alg: 'ES256', use: 'sig' }],
    },
    cookies: { keys: ['a test key for the authorization server cookies'] },
    scopes: ['openid', 'offline_access', TOOLS_SCOPE, ADMIN_SCOPE],
    claims: { openid: ['sub'] },
    responseTypes: ['code'],
    pkce: { required: () => true },
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      id_token_signed_response_alg: 'ES256',
    },
    ttl: {
      AccessToken: options.accessTokenTtl,
      AuthorizationCode: 60,
      Grant: 3600,
      IdToken: 3600,
      Interaction: 600,
      RefreshToken: 3600,
      Session: 3600,
    },
    // Refresh tokens for any client that registered the grant (`offline_access` is not needed),
    // not tied to the browser session: the control plane refreshes without the browser.
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    expiresWithSession: async () => false,
    findAccount: async (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      // A client revokes its own tokens only.
      revocation: {
        enabled: true,
        allowedPolicy: async (_ctx, client, token) => token.clientId === client.clientId,
      },
      resourceIndicators: {
        enabled: true,
        defaultResource: async () => mcpUrl,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx: KoaContextWithOIDC, indicator: string) => {
          if (indicator !== mcpUrl) throw new errors.InvalidTarget(`only ${mcpUrl} is served here`);
          return {
            scope: `${TOOLS_SCOPE} ${ADMIN_SCOPE}`,
            audience: mcpUrl,
            accessTokenFormat: 'jwt',
            accessTokenTTL: options.accessTokenTtl,
            jwt: { sign: { alg: 'ES256' } },
          };
        },
      },
    },
  };
  const provider = new Provider(issuer, configuration);
  provider.on('grant.revoked', (_ctx: unknown, grantId: string) => state.grantsRevoked.push(grantId));
  // Opaque tokens are their id: kept so the test can look for them where they must not be.
  provider.on('refresh_token.saved', (token) => {
    state.tokens.add(token.jti);
    const grants = state.grants.get(token.accountId) ?? new Set<string>();
    if (token.grantId) grants.add(token.grantId);
    state.grants.set(token.accountId, grants);
  });
  provider.on('authorization_code.saved', (token: { jti: string }) => state.tokens.add(token.jti));
  provider.on('refresh_token.consumed', () => (state.refreshes += 1));
  const library = provider.callback();

  /** The provider's prompts: the sign-in page, then the consent given at once. */
  const interaction = async (req: IncomingMessage, res: ServerResponse, uid: string, action: string) => {
    const details = await provider.interactionDetails(req, res);
    if (details.uid !== uid) throw new Error('interaction mismatch');
    if (details.prompt.name === 'login') {
      if (req.method === 'POST' && action === 'login') {
        const name = new URLSearchParams(await bodyOf(req)).get('name')?.trim() ?? '';
        if (name === '') {
          res.writeHead(400, { 'content-type': 'text/plain' }).end('a user name is needed');
          return;
        }
        state.signIns.push(name);
        await provider.interactionFinished(
          req,
          res,
          { login: { accountId: name } },
          { mergeWithLastSubmission: false },
        );
        return;
      }
      const client = await provider.Client.find(String(details.params.client_id));
      res
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
        .end(signInPage(uid, client?.clientName ?? 'A client'));
      return;
    }
    // Consent: what is missing of the scopes and resource asked for is granted.
    const accountId = details.session?.accountId;
    if (!accountId) throw new Error('consent without a signed-in account');
    const clientId = String(details.params.client_id);
    const existing = details.grantId ? await provider.Grant.find(details.grantId) : undefined;
    const grant = existing ?? new provider.Grant({ accountId, clientId });
    const missing = details.prompt.details as {
      missingOIDCScope?: string[];
      missingOIDCClaims?: string[];
      missingResourceScopes?: Record<string, string[]>;
    };
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    for (const [resource, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
      grant.addResourceScope(resource, scopes.join(' '));
    }
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  };

  as.handle((req, res) => {
    const path = new URL(req.url ?? '/', issuer).pathname;
    if (path === '/favicon.ico') return void res.writeHead(204).end();
    const prompt = /^\/interaction\/([\w-]+)(?:\/(login))?$/u.exec(path);
    if (prompt) {
      interaction(req, res, prompt[1]!, prompt[2] ?? '').catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(400, { 'content-type': 'text/plain' });
        res.end(`interaction failed: ${(error as Error).message}`);
      });
      return;
    }
    if (path === '/token/revocation') res.on('finish', () => state.revocations.push(res.statusCode));
    if (holding) holdRedirectBack(res);
    void library(req, res);
  });

  /**
   * Keeps the answer's redirect when it leaves the authorization server (back to a client): the
   * library sets the status and headers, then ends the answer with its body, so the answer is
   * rewritten at its end (its cookies kept).
   */
  const holdRedirectBack = (res: ServerResponse) => {
    const end = res.end.bind(res) as (body?: unknown) => ServerResponse;
    res.end = ((...args: unknown[]) => {
      const location = res.getHeader('location');
      const target = typeof location === 'string' ? new URL(location, issuer) : undefined;
      if (res.statusCode >= 300 && res.statusCode < 400 && target && target.origin !== issuer) {
        state.heldRedirects.push(target.href);
        res.statusCode = 200;
        res.removeHeader('location');
        res.removeHeader('content-length');
        res.setHeader('content-type', 'text/html; charset=utf-8');
        return end(HELD_PAGE);
      }
      return (end as (...rest: unknown[]) => ServerResponse)(...args);
    }) as ServerResponse['end'];
  };

  // The MCP server.
  const jwks = createRemoteJWKSet(new URL(`${issuer}/jwks`));
  const challenge = (extra = '') =>
    `Bearer ${extra}resource_metadata="${metadataUrl}", scope="${TOOLS_SCOPE}"`;
  const metadata = JSON.stringify({
    resource: mcpUrl,
    authorization_servers: [issuer],
    scopes_supported: [TOOLS_SCOPE, ADMIN_SCOPE],
    bearer_methods_supported: ['header'],
  });

  /** The token's claims when it is valid for this server, else undefined. */
  const verified = async (header: string | undefined): Promise<JWTPayload | undefined> => {
    const token = /^Bearer (\S+)$/u.exec(header ?? '')?.[1];
    if (token === undefined) return undefined;
    state.tokens.add(token);
    try {
      const { payload } = await jwtVerify(token, jwks, { issuer, audience: mcpUrl, typ: 'at+jwt' });
      return payload;
    } catch {
      return undefined;
    }
  };

  const serveMcp = async (req: IncomingMessage, res: ServerResponse) => {
    const claims = await verified(req.headers.authorization);
    if (!claims?.sub) {
      state.unauthorized += 1;
      const invalid = req.headers.authorization === undefined ? '' : 'error="invalid_token", ';
      res.writeHead(401, { 'www-authenticate': challenge(invalid), 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'unauthorized' }));
      return;
    }
    const subject = claims.sub;
    const ids = state.tokenIds.get(subject) ?? new Set<string>();
    ids.add(String(claims.jti));
    state.tokenIds.set(subject, ids);
    const scopes = String(claims.scope ?? '').split(' ');
    const text = req.method === 'POST' ? await bodyOf(req) : '';
    const message =
      text === '' ? undefined : (JSON.parse(text) as { method?: string; params?: { name?: string } });
    // A step-up: the tool needs a scope the token lacks, said by the HTTP answer (not the tool's).
    if (
      message?.method === 'tools/call' &&
      message.params?.name === 'admin_op' &&
      !scopes.includes(ADMIN_SCOPE)
    ) {
      state.insufficientScope.push({ subject, tool: 'admin_op' });
      res.writeHead(403, {
        'www-authenticate': `Bearer error="insufficient_scope", scope="${TOOLS_SCOPE} ${ADMIN_SCOPE}", resource_metadata="${metadataUrl}"`,
        'content-type': 'application/json',
      });
      res.end(JSON.stringify({ error: 'insufficient_scope' }));
      return;
    }
    const server = new McpServer({ name: 'oauth-upstream', version: '1.0.0' });
    server.registerTool('whoami', { description: 'Answers the subject the bearer token names.' }, () => ({
      content: [{ type: 'text', text: subject }],
    }));
    const bearer = /^Bearer (\S+)$/u.exec(req.headers.authorization ?? '')?.[1] ?? '';
    server.registerTool('echo_token', { description: 'Answers the bearer token it was sent.' }, () => ({
      content: [{ type: 'text', text: `token: ${bearer}` }],
    }));
    server.registerTool('admin_op', { description: 'An operation that needs the mcp:admin scope.' }, () => ({
      content: [{ type: 'text', text: `admin operation done for ${subject}` }],
    }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    const authed = Object.assign(req, {
      auth: { token: '', clientId: String(claims.client_id ?? ''), scopes, extra: { sub: subject } },
    });
    await transport.handleRequest(authed, res, message);
  };

  mcp.handle((req, res) => {
    const path = new URL(req.url ?? '/', mcp.origin).pathname;
    if (path === '/favicon.ico') return void res.writeHead(204).end();
    if (
      path === '/.well-known/oauth-protected-resource/mcp' ||
      path === '/.well-known/oauth-protected-resource'
    ) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(metadata);
      return;
    }
    if (path !== '/mcp') return void res.writeHead(404).end();
    serveMcp(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`failed: ${(error as Error).message}`);
    });
  });

  return {
    issuer,
    mcpUrl,
    metadataUrl,
    tokenIds: state.tokenIds,
    tokens: state.tokens,
    signIns: state.signIns,
    insufficientScope: state.insufficientScope,
    revocations: state.revocations,
    grantsRevoked: state.grantsRevoked,
    grants: state.grants,
    heldRedirects: state.heldRedirects,
    holdRedirects: (on) => {
      holding = on;
    },
    // Counters: read where they are kept.
    get unauthorized() {
      return state.unauthorized;
    },
    get refreshes() {
      return state.refreshes;
    },
    async close() {
      for (const server of [as.server, mcp.server]) {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    },
  };
}
