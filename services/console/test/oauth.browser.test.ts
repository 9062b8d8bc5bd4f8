// OAuth 2.1 for agents, end to end (decision 073): the SDK's own OAuth client starts from a keyless
// exposure URL only, discovers the gateway's Protected Resource Metadata and the control plane's
// authorization server, registers (once with dynamic registration, once with a Client ID Metadata
// Document served over HTTPS on loopback), and sends a real headless Chromium to authorize: the
// person signs in to the console with their name and password and presses "Allow" on the consent
// screen. The client gets tokens, lists and calls a tool through the real gateway, refreshes; the
// person sees the grant on their account page and revokes it, and the gateway refuses the token at
// once. Around it, what must be refused is: a token at another exposure or another person's caller
// entry, a token signed by another key, PKCE `plain`, a redirect URI one character off, an
// unregistered redirect, a metadata document that redirects, a flood of registrations.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { auth, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
  auth as modernAuth,
} from '@modelcontextprotocol/client';
import { twoTableExposure, type Exposed } from '@bindery/test-support';
import { SignJWT, generateKeyPair } from 'jose';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPage, watchErrors } from './support/browser.ts';
import { startControlPlane, type ControlPlane } from './support/control-plane.ts';

const PASSWORD = 'the person’s own password';
const SCREENSHOTS = fileURLToPath(new URL('../../../docs/console/', import.meta.url));

/** A loopback server that answers with `handler`; closed after the file. */
async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}
const servers: Server[] = [];
/** Every token, code and password the test saw: none may appear in a log line or an audit row. */
const secrets: string[] = [PASSWORD];

/** A self-signed certificate for 127.0.0.1, trusted by the control plane (NODE_EXTRA_CA_CERTS). */
function loopbackCertificate(): { key: string; cert: string; certFile: string } {
  const dir = mkdtempSync(join(tmpdir(), 'bindery-oauth-'));
  const keyFile = join(dir, 'key.pem');
  const certFile = join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  return { key: readFileSync(keyFile, 'utf8'), cert: readFileSync(certFile, 'utf8'), certFile };
}

/** Where the browser lands after the consent screen: the code and `iss` are kept for the test. */
const landed: URL[] = [];
let callbackBase: string;

/** The SDK's client-side OAuth state, kept in memory; `authorizeAt` is where it sends the person. */
class AgentProvider implements OAuthClientProvider {
  authorizeAt: URL | undefined;
  #client: OAuthClientInformationMixed | undefined;
  #tokens: OAuthTokens | undefined;
  #verifier = '';
  constructor(
    readonly name: string,
    readonly clientMetadataUrl?: string,
  ) {}
  get redirectUrl(): string {
    return `http://${callbackBase}/callback`;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.name,
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.#client;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.#client = info;
  }
  tokens() {
    return this.#tokens;
  }
  saveTokens(tokens: OAuthTokens) {
    this.#tokens = tokens;
    secrets.push(tokens.access_token, ...(tokens.refresh_token ? [tokens.refresh_token] : []));
  }
  redirectToAuthorization(url: URL) {
    this.authorizeAt = url;
  }
  saveCodeVerifier(verifier: string) {
    this.#verifier = verifier;
  }
  codeVerifier() {
    return this.#verifier;
  }
  /** What the SDK drops when the server refuses it (a revoked grant: the tokens). */
  invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery') {
    if (scope === 'all' || scope === 'tokens') this.#tokens = undefined;
    if (scope === 'all' || scope === 'client') this.#client = undefined;
    if (scope === 'all' || scope === 'verifier') this.#verifier = '';
  }
}

let cp: ControlPlane;
let browser: Browser;
let page: Page;
let errors: ReturnType<typeof watchErrors>;
let ada: Exposed & { name: string };
let other: Exposed;
let cimdUrl: string;
let issuer: string;

beforeAll(async () => {
  const tls = loopbackCertificate();
  callbackBase = await listen(
    createHttpServer((req, res) => {
      landed.push(new URL(req.url ?? '/', `http://${callbackBase}`));
      res
        .writeHead(200, { 'content-type': 'text/html' })
        .end('<!doctype html><title>Done</title><h1>Done</h1>');
    }),
  );
  const cimdHost = await listen(
    createHttpsServer({ key: tls.key, cert: tls.cert }, (req, res) => {
      const url = `https://${cimdHost}${req.url}`;
      if (req.url === '/redirecting.json') {
        // A document that points elsewhere (a private address): never followed.
        res.writeHead(302, { location: 'https://10.0.0.1/client.json' }).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          client_id: url,
          client_name: 'Metadata Agent',
          redirect_uris: [`http://${callbackBase}/callback`],
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          token_endpoint_auth_method: 'none',
        }),
      );
    }) as unknown as Server,
  );
  cimdUrl = `https://${cimdHost}/client.json`;
  cp = await startControlPlane({
    gateway: true,
    env: {
      // Client ID Metadata Documents on loopback (tests reach nothing else), over TLS it trusts.
      HTTP_TOOLS_ALLOWED_NETWORKS: '127.0.0.0/8',
      NODE_EXTRA_CA_CERTS: tls.certFile,
      // A client the operator registered (it cannot register itself).
      OAUTH_CLIENTS: JSON.stringify([
        {
          client_id: 'operator-client',
          client_name: 'Operator Agent',
          redirect_uris: [`http://${callbackBase}/callback`],
          token_endpoint_auth_method: 'none',
        },
      ]),
      // Every request logged: the last test greps the logs for what must never be in them.
      LOG_REQUESTS: 'true',
      LOG_LEVEL: 'debug',
    },
    gatewayEnv: { LOG_REQUESTS: 'true', LOG_LEVEL: 'debug' },
  });
  issuer = cp.url;
  const admin = { admin: cp.adminAs };
  const exposed = await twoTableExposure(admin);
  const me = await cp.adminAs('GET', '/api/v2/me', undefined, exposed.token);
  await cp.adminAs('PUT', '/api/v2/me/password', { password: PASSWORD }, exposed.token);
  ada = { ...exposed, name: me.name };
  other = await twoTableExposure(admin);
  ({ browser, page, errors } = await openPage());
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await cp?.close();
  for (const server of servers) server.close();
});

/** The screen as it is now fits 390 px, light and dark; a screenshot of each goes to docs/console/. */
async function fitsPhone(name: string): Promise<void> {
  await page.setViewportSize({ width: 390, height: 844 });
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow, `${name} (${scheme}) is wider than the screen by ${overflow} px`).toBeLessThanOrEqual(0);
    await page.screenshot({ path: `${SCREENSHOTS}${name}-${scheme}.png`, fullPage: true });
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: 1280, height: 900 });
}

const keyless = (aeiId: string) => `${cp.gatewayUrl}/api/v2/mcp/aei/${aeiId}`;

/** The person's part: sign in on the console (if need be) and answer the consent screen. */
async function consent(at: URL, answer: 'Allow' | 'Deny', look?: () => Promise<void>): Promise<URL> {
  const before = landed.length;
  await page.goto(at.href);
  const signIn = page.getByRole('button', { name: 'Sign in' });
  const heading = page.getByRole('heading', { name: /^Allow .* to use Bindery as you\?$/u });
  await Promise.race([signIn.waitFor(), heading.waitFor()]);
  if (await signIn.isVisible()) {
    await page.getByLabel('Name', { exact: true }).fill(ada.name);
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await signIn.click();
  }
  await heading.waitFor();
  await look?.();
  await page.getByRole('button', { name: answer }).click();
  await expect.poll(() => landed.length, { timeout: 10_000 }).toBe(before + 1);
  return landed.at(-1)!;
}

/** The whole flow for `provider` on `aeiId`: tokens in the provider. */
async function authorize(
  provider: AgentProvider,
  aeiId: string,
  look?: () => Promise<void>,
  scope?: string,
): Promise<URL> {
  const serverUrl = keyless(aeiId);
  expect(await auth(provider, { serverUrl, ...(scope !== undefined && { scope }) })).toBe('REDIRECT');
  const back = await consent(provider.authorizeAt!, 'Allow', look);
  const code = back.searchParams.get('code');
  expect(code).toBeTruthy();
  secrets.push(code!);
  expect(await auth(provider, { serverUrl, authorizationCode: code! })).toBe('AUTHORIZED');
  return back;
}

async function connect(provider: AgentProvider, aeiId: string): Promise<Client> {
  const client = new Client({ name: provider.name, version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(keyless(aeiId)), { authProvider: provider }),
  );
  return client;
}

async function mcpStatus(url: string, token: string | undefined, method = 'tools/list') {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
      ...(token !== undefined && { authorization: `Bearer ${token}` }),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: {} }),
  });
  await res.text();
  return { status: res.status, challenge: res.headers.get('www-authenticate') ?? '' };
}

describe('discovery', () => {
  it('a keyless URL answers 401 naming its metadata, which names the authorization server', async () => {
    const url = keyless(ada.aeiId);
    const denied = await mcpStatus(url, undefined);
    expect(denied.status).toBe(401);
    const metadataUrl = `${cp.gatewayUrl}/.well-known/oauth-protected-resource/api/v2/mcp/aei/${ada.aeiId}`;
    expect(denied.challenge).toContain(`resource_metadata="${metadataUrl}"`);
    expect(denied.challenge).toContain('scope="mcp:tools mcp:resources mcp:prompts"');
    const metadata = await (await fetch(metadataUrl)).json();
    expect(metadata).toMatchObject({ resource: url, authorization_servers: [issuer] });
    const server = await (await fetch(`${issuer}/.well-known/oauth-authorization-server`)).json();
    expect(server).toMatchObject({
      issuer,
      code_challenge_methods_supported: ['S256'],
      authorization_response_iss_parameter_supported: true,
      client_id_metadata_document_supported: true,
    });
    expect(server.registration_endpoint).toBe(`${issuer}/oauth/register`);
    // Keyed URLs keep their old answer: no metadata named.
    const keyed = await mcpStatus(`${cp.gatewayUrl}/api/v2/mcp/server`, undefined);
    expect(keyed.challenge).toBe('Bearer');
  });
});

describe('an agent authorized by its person', () => {
  const agent = new AgentProvider('Registered Agent');

  it('registers dynamically, is allowed in the browser, lists and calls a tool', async () => {
    const back = await authorize(agent, ada.aeiId);
    // RFC 9207: the answer names its issuer.
    expect(back.searchParams.get('iss')).toBe(issuer);
    expect(agent.clientInformation()?.client_id).toBeTruthy();
    const client = await connect(agent, ada.aeiId);
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name).sort()).toEqual(['find_customers', 'peek_orders']);
    const result = await client.callTool({ name: 'find_customers', arguments: { query: '[0].name' } });
    expect(result.isError).toBeFalsy();
    expect(JSON.stringify(result.content)).toContain('Ada');
    await client.close();
    errors.problems.length = 0;
  });

  it('refreshes; a spent refresh token used again revokes the grant (reuse detection)', async () => {
    const first = agent.tokens()!;
    expect(first.refresh_token).toBeTruthy();
    // The SDK refreshes when it holds a refresh token and is asked to authorize again.
    expect(await auth(agent, { serverUrl: keyless(ada.aeiId) })).toBe('AUTHORIZED');
    const second = agent.tokens()!;
    expect(second.access_token).not.toBe(first.access_token);
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect((await mcpStatus(keyless(ada.aeiId), second.access_token)).status).toBe(200);
    const reuse = await fetch(`${issuer}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: first.refresh_token!,
        client_id: agent.clientInformation()!.client_id,
      }),
    });
    expect(reuse.status).toBe(400);
    expect((await reuse.json()).error).toBe('invalid_grant');
    // A refresh token replayed means it leaked: the grant goes, and the tokens it gave stop.
    await expect
      .poll(async () => (await mcpStatus(keyless(ada.aeiId), second.access_token)).status)
      .toBe(401);
    await authorize(agent, ada.aeiId);
  });

  it('is refused where its token is not for: another exposure, another person’s caller entry', async () => {
    const token = agent.tokens()!.access_token;
    const elsewhere = await mcpStatus(keyless(other.aeiId), token);
    expect(elsewhere.status).toBe(401);
    expect(elsewhere.challenge).toContain('error="invalid_token"');
    expect((await mcpStatus(`${cp.gatewayUrl}/api/v2/mcp/caller/someone`, token)).status).toBe(401);
  });

  it('a token signed by another key, or no JWT at all, is 401', async () => {
    const { privateKey } = await generateKeyPair('ES256');
    const forged = await new SignJWT({ scope: 'mcp:tools', grant_id: 'g1' })
      .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: 'not-ours' })
      .setIssuer(issuer)
      .setSubject('u1')
      .setAudience(keyless(ada.aeiId))
      .setExpirationTime('10m')
      .sign(privateKey);
    expect((await mcpStatus(keyless(ada.aeiId), forged)).status).toBe(401);
    expect((await mcpStatus(keyless(ada.aeiId), 'not-a-token')).status).toBe(401);
  });

  it('shows on the account page, and revoking it stops the token at once', async () => {
    const token = agent.tokens()!.access_token;
    await page.goto(`${cp.url}/console/account`);
    await page.getByRole('heading', { name: 'Agents you allowed' }).waitFor();
    const row = page.locator('.grant-list > li').filter({ hasText: 'Registered Agent' });
    await row.waitFor();
    // The exposure twoTableExposure makes is named "agent".
    expect(await row.textContent()).toContain('agent');
    await fitsPhone('oauth-grants');
    await row.getByRole('button', { name: 'Revoke Registered Agent' }).click();
    await row.waitFor({ state: 'detached' });
    await expect.poll(async () => (await mcpStatus(keyless(ada.aeiId), token)).status).toBe(401);
    expect(errors.problems).toEqual([]);
  });
});

describe('a client identified by its metadata document', () => {
  it('registers nothing, is allowed, and calls a tool', async () => {
    const agent = new AgentProvider('Metadata Agent', cimdUrl);
    await authorize(agent, ada.aeiId, async () => {
      expect(await page.getByText('identified by its published metadata document').count()).toBe(1);
      await fitsPhone('oauth-consent');
    });
    expect(agent.clientInformation()?.client_id).toBe(cimdUrl);
    const client = await connect(agent, ada.aeiId);
    expect((await client.listTools()).tools).toHaveLength(2);
    await client.close();
  });

  it('a token without mcp:tools is 403 insufficient_scope for tools/list, naming what to ask for', async () => {
    const narrow = new AgentProvider('Narrow Agent');
    await authorize(narrow, ada.aeiId, undefined, 'mcp:resources');
    const token = narrow.tokens()!.access_token;
    expect((await mcpStatus(keyless(ada.aeiId), token, 'resources/list')).status).toBe(200);
    const refused = await mcpStatus(keyless(ada.aeiId), token, 'tools/list');
    expect(refused.status).toBe(403);
    expect(refused.challenge).toContain('error="insufficient_scope"');
    expect(refused.challenge).toContain('scope="mcp:resources mcp:tools"');
  });

  it('the v2 SDK’s client (2026-07-28) authorizes the same way and calls a tool', async () => {
    const agent = new AgentProvider('Modern Agent', cimdUrl);
    const serverUrl = keyless(ada.aeiId);
    expect(await modernAuth(agent, { serverUrl })).toBe('REDIRECT');
    const back = await consent(agent.authorizeAt!, 'Allow');
    secrets.push(back.searchParams.get('code')!);
    // This client checks the answer's issuer (RFC 9207) itself.
    const iss = back.searchParams.get('iss')!;
    expect(
      await modernAuth(agent, { serverUrl, authorizationCode: back.searchParams.get('code')!, iss }),
    ).toBe('AUTHORIZED');
    const client = new ModernClient({ name: 'Modern Agent', version: '1.0.0' });
    await client.connect(new ModernTransport(new URL(serverUrl), { authProvider: agent }));
    const result = await client.callTool({ name: 'find_customers', arguments: { query: '[1].name' } });
    expect(JSON.stringify(result.content)).toContain('Grace');
    await client.close();
  });

  it('a client the operator registered is shown as such, and "Deny" sends access_denied back', async () => {
    const url = new URL(`${issuer}/oauth/authorize`);
    url.search = new URLSearchParams({
      client_id: 'operator-client',
      redirect_uri: `http://${callbackBase}/callback`,
      response_type: 'code',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
      resource: keyless(ada.aeiId),
      state: 'denied-state',
    }).toString();
    const back = await consent(url, 'Deny', async () => {
      await page.getByText('registered by an administrator').waitFor();
    });
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(back.searchParams.get('state')).toBe('denied-state');
    expect(back.searchParams.get('code')).toBeNull();
  });

  it('a document that redirects is refused', async () => {
    const redirecting = cimdUrl.replace('client.json', 'redirecting.json');
    const url = new URL(`${issuer}/oauth/authorize`);
    url.search = new URLSearchParams({
      client_id: redirecting,
      redirect_uri: `http://${callbackBase}/callback`,
      response_type: 'code',
      code_challenge: 'x'.repeat(43),
      code_challenge_method: 'S256',
      resource: keyless(ada.aeiId),
    }).toString();
    const res = await fetch(url, { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('invalid_client');
  });
});

describe('what the authorization server refuses', () => {
  let clientId: string;
  const redirect = () => `http://${callbackBase}/callback`;
  const authorizeUrl = (params: Record<string, string>) => {
    const url = new URL(`${issuer}/oauth/authorize`);
    url.search = new URLSearchParams({
      client_id: clientId,
      redirect_uri: redirect(),
      response_type: 'code',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
      resource: keyless(ada.aeiId),
      ...params,
    }).toString();
    return url;
  };

  beforeAll(async () => {
    const res = await fetch(`${issuer}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Probe', redirect_uris: [redirect()] }),
    });
    expect(res.status).toBe(201);
    clientId = (await res.json()).client_id;
  });

  it('PKCE plain, and no PKCE at all', async () => {
    const cases: Record<string, string>[] = [
      { code_challenge_method: 'plain' },
      { code_challenge: '', code_challenge_method: '' },
    ];
    for (const params of cases) {
      const res = await fetch(authorizeUrl(params), { redirect: 'manual' });
      // Errors with a registered redirect go back to it (RFC 6749 §4.1.2.1), never to an interaction.
      const location = new URL(res.headers.get('location') ?? '', issuer);
      expect(location.href.startsWith(redirect())).toBe(true);
      expect(location.searchParams.get('error')).toBe('invalid_request');
    }
  });

  it('a redirect URI one character off, or another site: an error page, no redirect', async () => {
    for (const redirect_uri of [`${redirect()}x`, 'https://attacker.example/callback']) {
      const res = await fetch(authorizeUrl({ redirect_uri }), { redirect: 'manual' });
      expect(res.status).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      expect(await res.text()).toContain('redirect_uri');
    }
  });

  it('a native client’s loopback redirect may use any port (RFC 8252); a web client’s may not', async () => {
    const native = await fetch(`${issuer}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'Native',
        application_type: 'native',
        redirect_uris: ['http://127.0.0.1:1234/cb'],
      }),
    });
    expect(native.status).toBe(201);
    const nativeId = (await native.json()).client_id as string;
    const res = await fetch(authorizeUrl({ client_id: nativeId, redirect_uri: 'http://127.0.0.1:5678/cb' }), {
      redirect: 'manual',
    });
    await res.text();
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toMatch(/^\/oauth\/interaction\//u);
    const web = await fetch(authorizeUrl({ redirect_uri: redirect().replace(/:\d+\//u, ':1/') }), {
      redirect: 'manual',
    });
    expect(web.status).toBe(400);
  });

  it('a resource that is not a keyless URL of this Bindery', async () => {
    const res = await fetch(authorizeUrl({ resource: 'https://elsewhere.example/mcp' }), {
      redirect: 'manual',
    });
    const location = new URL(res.headers.get('location') ?? '', issuer);
    expect(location.searchParams.get('error')).toBe('invalid_target');
  });

  it('a flood of registrations is cut at 20 an hour from one address', async () => {
    let refused = 0;
    for (let i = 0; i < 25; i++) {
      const res = await fetch(`${issuer}/oauth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_name: `Flood ${i}`, redirect_uris: [redirect()] }),
      });
      await res.text();
      if (res.status === 429) refused += 1;
      else expect(res.status).toBe(201);
    }
    // Four registrations came before (the first agent, the narrow one, the probe, the native one).
    expect(refused).toBe(25 - (20 - 4));
  });
});

describe('secrets', () => {
  it('no token, code or password is in a log line of either service, nor in an audit row', async () => {
    expect(secrets.length).toBeGreaterThan(8);
    const logs = cp.logs();
    expect(logs).toContain('/oauth/token');
    const audit = JSON.stringify(await cp.adminAs('GET', '/api/v2/audit?limit=200', undefined, ada.token));
    expect(audit).toContain('find_customers');
    for (const secret of secrets) {
      expect(logs.includes(secret), 'a secret is in the logs').toBe(false);
      expect(audit.includes(secret), 'a secret is in an audit row').toBe(false);
    }
  });
});
