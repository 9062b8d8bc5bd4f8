// Upstream MCP servers that require OAuth, their accounts brokered by Bindery (decision 079), end to
// end: a real authorization server (`oidc-provider`) and a real MCP server that checks its tokens,
// both on loopback (support/oauth-upstream.ts), a real control plane and gateway, and a headless
// Chromium per person. Two people each add the server as their own row (one over the API, one in
// the console's form), attached to their own exposure; each presses Connect in the console, signs
// in on the authorization server's own page with their own name there, and comes back to the
// console connected. Their agents' calls then reach the server with their own tokens (it answers
// each one's subject; a token it echoes back is redacted), a token refreshed when its lifetime runs
// out, a missing scope asked for once (no loop), kept through a refresh and shown as "Connect
// again". A Connect's callback is bound to the browser that started it (another browser is refused,
// and the attempt is spent), two Connects under way in one browser keep their own; Disconnect
// revokes the grant at the authorization server, and so does a change of the server's URL; a
// callback the control plane refuses is shown as an alert. No token ever shows in a log line of
// either service or in an audit row. Nothing leaves loopback: the browser's requests elsewhere are
// aborted.
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { UPSTREAM_OAUTH_FAILURES } from '@bindery/contracts';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, watchErrors } from './support/browser.ts';
import { startControlPlane, type ControlPlane, type Json } from './support/control-plane.ts';
import {
  ADMIN_SCOPE,
  TOOLS_SCOPE,
  startOAuthUpstream,
  type OAuthUpstream,
} from './support/oauth-upstream.ts';

/** Seconds an access token lives: short, so the test sees one refreshed. */
const ACCESS_TOKEN_TTL = 8;
const SERVER_NAME = 'IdP tools';
const PASSWORD = 'a password long enough for the console';

interface Person {
  /** The name in Bindery. */
  name: string;
  /** The name typed on the authorization server's sign-in page (the tokens' subject). */
  idpName: string;
  token: string;
  serverId: string;
  aeiId: string;
  mcpUrl: string;
  context: BrowserContext;
  page: Page;
  errors: ReturnType<typeof watchErrors>;
  client?: Client;
}

let upstream: OAuthUpstream;
let cp: ControlPlane;
let browser: Browser;
const people: Record<'ada' | 'bob', Person> = {} as Record<'ada' | 'bob', Person>;

/**
 * A person with a password and an exposure; with `server`, their server is added over the API and
 * attached to the exposure (else the test adds it in the console, then calls `attach`).
 */
async function addPerson(name: string, idpName: string, options: { server: boolean }): Promise<Person> {
  const user = (await cp.admin('POST', '/api/v2/users', { name })).body as { token: string };
  const as = (method: string, path: string, body?: unknown) => cp.adminAs(method, path, body, user.token);
  await as('PUT', '/api/v2/me/password', { password: PASSWORD });
  const aei = await as('POST', '/api/v2/aeis', { name: 'agent' });
  let serverId = '';
  if (options.server) {
    // The server asks for mcp:tools only: admin_op, which needs mcp:admin, makes it ask for more.
    const server = await as('POST', '/api/v2/upstream-servers', {
      name: SERVER_NAME,
      transport: 'http',
      url: upstream.mcpUrl,
      auth: 'oauth',
      oauth: { scope: TOOLS_SCOPE },
    });
    serverId = server.id as string;
    await attach(user.token, aei.id as string, serverId);
  }
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: 'light' });
  // Nothing but loopback, whatever a page asks for.
  await context.route(/^https?:\/\/(?!127\.0\.0\.1[:/]|localhost[:/])/u, (route) => route.abort());
  const page = await context.newPage();
  return {
    name,
    idpName,
    token: user.token,
    serverId,
    aeiId: aei.id as string,
    mcpUrl: aei.mcp_url as string,
    context,
    page,
    errors: watchErrors(page),
  };
}

/** Attaches the server to the exposure before its tools are known: the sync after Connect binds them. */
async function attach(token: string, aeiId: string, serverId: string): Promise<void> {
  await cp.adminAs(
    'POST',
    `/api/v2/aeis/${aeiId}/bindings`,
    { upstream_server_id: serverId, prefix: '' },
    token,
  );
}

beforeAll(async () => {
  upstream = await startOAuthUpstream({ accessTokenTtl: ACCESS_TOKEN_TTL });
  cp = await startControlPlane({
    gateway: true,
    env: {
      // The upstream and its authorization server are on loopback (tests reach nothing else).
      HTTP_TOOLS_ALLOWED_NETWORKS: '127.0.0.0/8',
      // Every request logged: the last test looks for tokens in the logs.
      LOG_REQUESTS: 'true',
      LOG_LEVEL: 'debug',
    },
    gatewayEnv: { LOG_REQUESTS: 'true', LOG_LEVEL: 'debug' },
  });
  browser = await launchBrowser();
  people.ada = await addPerson('ada', 'ada-at-idp', { server: true });
  people.bob = await addPerson('bob', 'bob-at-idp', { server: false });
}, 120_000);

afterAll(async () => {
  for (const person of Object.values(people)) await person.client?.close();
  await browser?.close();
  await cp?.close();
  await upstream?.close();
});

const serverOf = (person: Person) =>
  cp.adminAs('GET', `/api/v2/upstream-servers/${person.serverId}`, undefined, person.token);

const panelOf = (person: Person, page = person.page) => page.getByRole('region', { name: SERVER_NAME });

/** The console page of the person's server (where Connect is, and where a callback comes back to). */
const connectPageOf = (person: Person) => `${cp.url}/console/tools/upstreams?server=${person.serverId}`;

/** The alert the console shows for a Connect that came back refused. */
async function refusalIn(page: Page): Promise<string | null> {
  const alert = page.getByRole('alert');
  await alert.waitFor();
  return alert.textContent();
}

/** Signs the person in to the console with their name and password (in `page`, another tab of theirs). */
async function signIn(person: Person, page = person.page): Promise<void> {
  await page.goto(`${cp.url}/console/`);
  await page.getByLabel('Name', { exact: true }).fill(person.name);
  await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
}

/**
 * Presses `button` in the server's panel and follows the browser: to the authorization server's
 * sign-in page when it asks (the person types their name there), and back to the console.
 */
async function connectInConsole(person: Person, button: 'Connect' | 'Connect again'): Promise<void> {
  const { page } = person;
  await panelOf(person).getByRole('button', { name: button, exact: true }).click();
  const signInHeading = page.getByRole('heading', { name: 'Sign in to Test IdP' });
  const back = page.getByRole('status').filter({ hasText: `Connected to ${SERVER_NAME}` });
  await Promise.race([signInHeading.waitFor(), back.waitFor()]);
  if (await signInHeading.isVisible()) {
    expect(new URL(page.url()).origin).toBe(upstream.issuer);
    await page.getByLabel('User name').fill(person.idpName);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await back.waitFor();
  }
  // The console took the outcome out of the address (a reload does not announce it again).
  expect(page.url()).toBe(`${cp.url}/console/tools/upstreams?server=${person.serverId}`);
}

/** The person's agent: the SDK's client on their exposure's key URL, through the gateway. */
async function agentOf(person: Person): Promise<Client> {
  if (!person.client) {
    person.client = new Client({ name: `${person.name}-agent`, version: '1.0.0' });
    await person.client.connect(new StreamableHTTPClientTransport(new URL(person.mcpUrl)));
  }
  return person.client;
}

async function call(person: Person, tool: string): Promise<{ isError: boolean; text: string }> {
  const result = (await (await agentOf(person)).callTool({ name: tool, arguments: {} })) as CallToolResult;
  const text = result.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
  return { isError: result.isError === true, text };
}

/** A tool error's body (`{error: {code, message, details}}`). */
async function callError(person: Person, tool: string): Promise<Json> {
  const answer = await call(person, tool);
  expect(answer.isError, answer.text).toBe(true);
  return (JSON.parse(answer.text) as { error: Json }).error;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('an upstream server that requires OAuth, one account per person', () => {
  it('a server that requires OAuth is added in the console, with the scope to ask for', async () => {
    const bob = people.bob;
    await signIn(bob);
    await bob.page.goto(`${cp.url}/console/tools/upstreams`);
    await bob.page.getByRole('button', { name: 'New upstream server' }).click();
    const form = bob.page.getByRole('form', { name: 'New upstream server' });
    await form.getByRole('radio', { name: /^HTTP/u }).check();
    await form.getByLabel('Server name').fill(SERVER_NAME);
    await form.getByLabel('URL', { exact: true }).fill(upstream.mcpUrl);
    await form.getByRole('checkbox', { name: /^Requires OAuth/u }).check();
    await form.getByLabel('Scope', { exact: true }).fill(TOOLS_SCOPE);
    await form.getByRole('button', { name: 'Add server' }).click();
    await form
      .getByRole('status')
      .filter({ hasText: `Added ${SERVER_NAME}: it requires OAuth.` })
      .waitFor();
    const listed = (await cp.adminAs('GET', '/api/v2/upstream-servers', undefined, bob.token))
      .items as Json[];
    expect(listed).toHaveLength(1);
    bob.serverId = listed[0].id as string;
    await attach(bob.token, bob.aeiId, bob.serverId);
  });

  it('before anyone connects: the console says so and offers Connect; the server lists no tool', async () => {
    // What a person sees of a server whose first sync could not authenticate: not connected, no
    // tools, the reason (naming the console page where they connect) as its last error.
    for (const person of [people.ada, people.bob]) {
      const server = await serverOf(person);
      expect(server).toMatchObject({ auth: 'oauth', oauth: { scope: TOOLS_SCOPE }, tool_count: 0 });
      expect(server.connection).toMatchObject({ status: 'not_connected', scope: null, expires_at: null });
    }
    await signIn(people.ada);
    const ada = people.ada;
    // The sync at creation could not send anything (no tokens yet): the server waits for its owner
    // (not "failing": nothing is wrong with it), and its error names the console page to connect at.
    const server = await serverOf(ada);
    expect(server.status).toBe('needs_connection');
    expect(server.last_error).toBe(
      `upstream server "${SERVER_NAME}" requires OAuth, and its owner has not connected their account to it: ` +
        `connect it in the console at ${cp.url}/console/tools/upstreams?server=${ada.serverId}`,
    );
    // Opening the page with ?server= opens that server's panel.
    await ada.page.goto(`${cp.url}/console/tools/upstreams?server=${ada.serverId}`);
    const panel = panelOf(ada);
    await panel.getByTestId('server-account').getByText('Not connected').waitFor();
    expect(await panel.getByTestId('server-last-error').textContent()).toBe(server.last_error);
    await panel.getByRole('button', { name: 'Connect', exact: true }).waitFor();
    expect(await panel.getByRole('button', { name: 'Disconnect', exact: true }).count()).toBe(0);
    // Without tokens nothing is sent: the upstream got no request yet (no one else's credentials).
    expect(upstream.unauthorized).toBe(0);
    expect(upstream.tokenIds.size).toBe(0);
  });

  it('each person connects in the console, signing in as themselves; their tools are synced', async () => {
    for (const person of [people.ada, people.bob]) {
      await person.page.goto(`${cp.url}/console/tools/upstreams?server=${person.serverId}`);
      await connectInConsole(person, 'Connect');
      const account = panelOf(person).getByTestId('server-account');
      await account.getByText('Connected', { exact: true }).waitFor();
      expect(await account.textContent()).toContain(TOOLS_SCOPE);
      await panelOf(person).getByRole('button', { name: 'Disconnect', exact: true }).waitFor();
      // The sync the connection started (in the background) lists the tools; the panel follows it.
      await panelOf(person).getByRole('heading', { name: 'Tools (3)' }).waitFor({ timeout: 20_000 });
      const server = await serverOf(person);
      expect(server.connection).toMatchObject({ status: 'connected', issuer: upstream.issuer });
      expect(server.connection.scope.split(' ')).toContain(TOOLS_SCOPE);
      expect(server.connection.scope.split(' ')).not.toContain(ADMIN_SCOPE);
      expect(Date.parse(server.connection.expires_at)).toBeGreaterThan(Date.now());
    }
    // Each typed their own name at the authorization server, once.
    expect(upstream.signIns).toEqual(['ada-at-idp', 'bob-at-idp']);
    // The picture in the console guide: bob's server, connected.
    await people.bob.page.evaluate(() => document.fonts.ready);
    await people.bob.page.screenshot({
      path: fileURLToPath(new URL('../../../docs/console/upstream-oauth.png', import.meta.url)),
      fullPage: true,
    });
  });

  it('each agent’s call reaches the upstream with its own person’s token', async () => {
    for (const person of [people.ada, people.bob]) {
      // The attachment bound the synced tools to the person's exposure.
      await expect
        .poll(async () => (await (await agentOf(person)).listTools()).tools.map((tool) => tool.name).sort())
        .toEqual(['admin_op', 'echo_token', 'whoami']);
      expect(await call(person, 'whoami')).toEqual({ isError: false, text: person.idpName });
      // The upstream echoes the token it was sent: the answer has it taken out, named as the token
      // in use, or as the one before it when a refresh replaced it while the call was under way
      // (this test may run when the token is due, 6 s after Connect: the pool's first ping, 5 s
      // after its start, can refresh it then on a loaded machine).
      const echoed = await call(person, 'echo_token');
      expect(echoed.isError, echoed.text).toBe(false);
      expect(['token: [secret oauth_token]', 'token: [secret oauth_token_3]']).toContain(echoed.text);
    }
    expect([...upstream.tokenIds.keys()].sort()).toEqual(['ada-at-idp', 'bob-at-idp']);
  });

  it('a token about to expire is refreshed: the next call answers, with a new token', async () => {
    const ada = people.ada;
    const before = (await serverOf(ada)).connection;
    const expiresAt = Date.parse(before.expires_at);
    const idsBefore = upstream.tokenIds.get(ada.idpName)!.size;
    const refreshesBefore = upstream.refreshes;
    // The control plane refreshes within min(60 s, a quarter of the lifetime) of the expiry.
    const due = expiresAt - Math.min(60_000, (ACCESS_TOKEN_TTL * 1000) / 4);
    await sleep(Math.max(0, due - Date.now() + 300));
    expect(await call(ada, 'whoami')).toEqual({ isError: false, text: ada.idpName });
    expect(upstream.refreshes).toBeGreaterThan(refreshesBefore);
    expect(upstream.tokenIds.get(ada.idpName)!.size).toBeGreaterThan(idsBefore);
    const after = (await serverOf(ada)).connection;
    expect(after.status).toBe('connected');
    expect(Date.parse(after.expires_at)).toBeGreaterThan(expiresAt);
  });

  it('a scope the grant lacks is asked for once, and the console offers to connect again', async () => {
    const ada = people.ada;
    const error = await callError(ada, 'admin_op');
    expect(error.code).toBe('UPSTREAM_AUTH_REQUIRED');
    expect(error.message).toContain(`"${SERVER_NAME}"`);
    expect(error.details).toMatchObject({
      server_id: ada.serverId,
      required_scope: `${TOOLS_SCOPE} ${ADMIN_SCOPE}`,
      connect_url: `${cp.url}/console/tools/upstreams?server=${ada.serverId}`,
    });
    // One 403 at the upstream: no retry, no authorization loop.
    await sleep(500);
    expect(upstream.insufficientScope).toEqual([{ subject: ada.idpName, tool: 'admin_op' }]);
    expect((await serverOf(ada)).connection).toMatchObject({
      status: 'needs_consent',
      required_scope: `${TOOLS_SCOPE} ${ADMIN_SCOPE}`,
    });
    // Bob's connection is his own: untouched.
    expect((await serverOf(people.bob)).connection.status).toBe('connected');
    await ada.page.reload();
    const account = panelOf(ada).getByTestId('server-account');
    await account.getByText('Needs your consent again').waitFor();
    expect(await account.textContent()).toContain(`${TOOLS_SCOPE} ${ADMIN_SCOPE}`);
  });

  it('a refresh keeps the missing scope: the connection still needs consent, for the same scope', async () => {
    const ada = people.ada;
    const before = (await serverOf(ada)).connection;
    expect(before).toMatchObject({
      status: 'needs_consent',
      required_scope: `${TOOLS_SCOPE} ${ADMIN_SCOPE}`,
    });
    const expiresAt = Date.parse(before.expires_at);
    const refreshesBefore = upstream.refreshes;
    // Past the point where the next call refreshes the token first.
    const due = expiresAt - Math.min(60_000, (ACCESS_TOKEN_TTL * 1000) / 4);
    await sleep(Math.max(0, due - Date.now() + 300));
    expect(await call(ada, 'whoami')).toEqual({ isError: false, text: ada.idpName });
    expect(upstream.refreshes).toBeGreaterThan(refreshesBefore);
    const after = (await serverOf(ada)).connection;
    expect(Date.parse(after.expires_at)).toBeGreaterThan(expiresAt);
    // The new tokens are for the same grant: what is missing of it is still missing.
    expect(after).toMatchObject({
      status: 'needs_consent',
      required_scope: before.required_scope,
      scope: before.scope,
      connected_at: before.connected_at,
    });
    await ada.page.reload();
    const account = panelOf(ada).getByTestId('server-account');
    await account.getByText('Needs your consent again').waitFor();
    expect(await account.textContent()).toContain(`${TOOLS_SCOPE} ${ADMIN_SCOPE}`);
    await panelOf(ada).getByRole('button', { name: 'Connect again', exact: true }).waitFor();
  });

  it('a Connect is bound to its browser, used once; two under way in one browser keep their own', async () => {
    const { ada, bob } = people;
    const before = (await serverOf(ada)).connection;
    // The authorization server's redirects back to the control plane are held: the test opens
    // each callback (with its code and state) in the browser it chooses.
    const heldBefore = upstream.heldRedirects.length;
    const tab = await ada.context.newPage();
    const tabErrors = watchErrors(tab);
    upstream.holdRedirects(true);
    try {
      // Connect again in ada's page, then in a second tab of her browser (its own console session,
      // the same cookies), before either comes back.
      await panelOf(ada).getByRole('button', { name: 'Connect again', exact: true }).click();
      await ada.page.getByRole('heading', { name: 'Redirect held' }).waitFor();
      await signIn(ada, tab);
      await tab.goto(connectPageOf(ada));
      await panelOf(ada, tab).getByRole('button', { name: 'Connect again', exact: true }).click();
      await tab.getByRole('heading', { name: 'Redirect held' }).waitFor();
    } finally {
      upstream.holdRedirects(false);
    }
    expect(upstream.heldRedirects).toHaveLength(heldBefore + 2);
    const [first, second] = upstream.heldRedirects.slice(heldBefore) as [string, string];
    for (const callback of [first, second]) {
      const url = new URL(callback);
      expect(`${url.origin}${url.pathname}`).toBe(`${cp.url}/api/v2/upstream-oauth/callback`);
      expect(url.searchParams.get('code')).toBeTruthy();
    }
    expect(new URL(first).searchParams.get('state')).not.toBe(new URL(second).searchParams.get('state'));
    // Each flow has its own cookie, sent to the callback only: the second did not replace the first.
    const flowCookies = async (url: string) =>
      (await ada.context.cookies(url)).filter((cookie) => cookie.name.startsWith('bindery_upstream_oauth_'));
    const cookies = await flowCookies(`${cp.url}/api/v2/upstream-oauth/callback`);
    expect(cookies).toHaveLength(2);
    for (const cookie of cookies) {
      expect(cookie).toMatchObject({
        path: '/api/v2/upstream-oauth/callback',
        httpOnly: true,
        sameSite: 'Lax',
      });
    }
    expect(await flowCookies(`${cp.url}/console/`)).toEqual([]);

    // The second callback opened in bob's browser: refused, it was started in another one.
    await bob.page.goto(second);
    expect(await refusalIn(bob.page)).toBe(`Not connected: ${UPSTREAM_OAUTH_FAILURES.other_browser}`);
    expect(bob.page.url()).toBe(`${cp.url}/console/tools/upstreams`);
    // Nothing changed: ada's connection still needs her consent, bob's is his own.
    expect((await serverOf(ada)).connection).toMatchObject({
      status: 'needs_consent',
      required_scope: before.required_scope,
      scope: before.scope,
      connected_at: before.connected_at,
    });
    expect((await serverOf(bob)).connection.status).toBe('connected');
    // The attempt is spent: opened then in the browser that started it, it is refused as used.
    await tab.goto(second);
    expect(await refusalIn(tab)).toBe(`Not connected: ${UPSTREAM_OAUTH_FAILURES.expired}`);
    expect(tab.url()).toBe(`${cp.url}/console/tools/upstreams`);
    expect((await serverOf(ada)).connection.status).toBe('needs_consent');

    // The first callback in ada's page: her first Connect ends connected, its cookie intact. It
    // asked for the scopes granted and the one missing; then the tool answers.
    await ada.page.goto(first);
    await ada.page
      .getByRole('status')
      .filter({ hasText: `Connected to ${SERVER_NAME}` })
      .waitFor();
    expect(ada.page.url()).toBe(connectPageOf(ada));
    await tab.close();
    expect(tabErrors.problems).toEqual([]);
    // Signed in at the authorization server already: no second sign-in was asked for.
    expect(upstream.signIns).toEqual(['ada-at-idp', 'bob-at-idp']);
    const account = panelOf(ada).getByTestId('server-account');
    await account.getByText('Connected', { exact: true }).waitFor();
    const server = await serverOf(ada);
    expect(server.connection.scope.split(' ')).toEqual(expect.arrayContaining([TOOLS_SCOPE, ADMIN_SCOPE]));
    expect(await call(ada, 'admin_op')).toEqual({
      isError: false,
      text: `admin operation done for ${ada.idpName}`,
    });
    expect(upstream.insufficientScope).toHaveLength(1);
  });

  it('Disconnect revokes the grant at the authorization server; the next call asks to connect', async () => {
    const ada = people.ada;
    const revokedBefore = upstream.grantsRevoked.length;
    await panelOf(ada).getByRole('button', { name: 'Disconnect', exact: true }).click();
    const account = panelOf(ada).getByTestId('server-account');
    await account.getByText('Not connected').waitFor();
    const notice = account.getByRole('status').filter({ hasText: `Disconnected from ${SERVER_NAME}` });
    await notice.waitFor();
    // The refresh token's revocation was accepted (the JWT access token cannot be revoked there).
    expect(await notice.textContent()).toContain('its authorization server revoked your tokens');
    await panelOf(ada).getByRole('button', { name: 'Connect', exact: true }).waitFor();
    // RFC 7009 at the authorization server: the refresh token's revocation ended the grant.
    expect(upstream.grantsRevoked.length).toBeGreaterThan(revokedBefore);
    expect(upstream.revocations).toContain(200);
    const error = await callError(ada, 'whoami');
    expect(error.code).toBe('UPSTREAM_AUTH_REQUIRED');
    const connectUrl = `${cp.url}/console/tools/upstreams?server=${ada.serverId}`;
    expect(error.message).toContain(`"${SERVER_NAME}"`);
    expect(error.message).toContain(connectUrl);
    expect(error.details).toMatchObject({
      upstream: SERVER_NAME,
      server_id: ada.serverId,
      connect_url: connectUrl,
    });
    // The call's failure is recorded on the server as waiting for its owner (not failing).
    await expect
      .poll(async () => {
        const { status, last_error } = await serverOf(ada);
        return { status, last_error };
      })
      .toEqual({ status: 'needs_connection', last_error: error.message });
    // Bob is still connected, as himself.
    expect(await call(people.bob, 'whoami')).toEqual({ isError: false, text: people.bob.idpName });
  });

  it('a callback the control plane refuses comes back to the console as an alert', async () => {
    const { page } = people.bob;
    // A state no Connect of this browser started (a forged or replayed link).
    await page.goto(`${cp.url}/api/v2/upstream-oauth/callback?code=forged&state=forged`);
    expect(await refusalIn(page)).toBe(`Not connected: ${UPSTREAM_OAUTH_FAILURES.expired}`);
    expect(page.url()).toBe(`${cp.url}/console/tools/upstreams`);
    expect((await serverOf(people.bob)).connection.status).toBe('connected');
  });

  it('a change of the server’s URL ends its connections: revoked, and the next call asks to connect', async () => {
    const bob = people.bob;
    const grants = [...(upstream.grants.get(bob.idpName) ?? [])];
    expect(grants).toHaveLength(1);
    const unauthorized = upstream.unauthorized;
    const tokensSeen = upstream.tokenIds.get(bob.idpName)!.size;
    // The same endpoint (the upstream serves it whatever the query string), another URL all the
    // same: the tokens were got for the old one.
    const url = `${upstream.mcpUrl}?v=2`;
    const changed = await cp.adminAs('PATCH', `/api/v2/upstream-servers/${bob.serverId}`, { url }, bob.token);
    expect(changed).toMatchObject({ url, auth: 'oauth', status: 'needs_connection' });
    expect(changed.connection).toMatchObject({ status: 'not_connected', scope: null, expires_at: null });
    // RFC 7009 at the authorization server: bob's refresh token revoked, and his grant with it.
    await expect.poll(() => upstream.grantsRevoked).toEqual(expect.arrayContaining(grants));
    const error = await callError(bob, 'whoami');
    expect(error.code).toBe('UPSTREAM_AUTH_REQUIRED');
    expect(error.details).toMatchObject({ server_id: bob.serverId, connect_url: connectPageOf(bob) });
    // Nothing was sent to the upstream since: not the old token, nor a request without one.
    expect(upstream.unauthorized).toBe(unauthorized);
    expect(upstream.tokenIds.get(bob.idpName)!.size).toBe(tokensSeen);
    await expect.poll(async () => (await serverOf(bob)).status).toBe('needs_connection');
    // The console offers Connect again, for the new URL.
    await bob.page.goto(connectPageOf(bob));
    const panel = panelOf(bob);
    await panel.getByTestId('server-account').getByText('Not connected').waitFor();
    expect(await panel.getByTestId('server-status').textContent()).toContain('needs its owner to connect');
    await panel.getByRole('button', { name: 'Connect', exact: true }).waitFor();
    expect(await panel.getByRole('button', { name: 'Disconnect', exact: true }).count()).toBe(0);
  });

  it('no token is in a log line of either service, nor in an audit row; no page had an error', async () => {
    // Access tokens the upstream was sent, refresh tokens and codes the authorization server issued.
    const tokens = [...upstream.tokens];
    expect(tokens.length).toBeGreaterThan(6);
    const logs = cp.logs();
    expect(logs).toContain('/oauth/connect');
    for (const person of [people.ada, people.bob]) {
      const audit = JSON.stringify(
        await cp.adminAs('GET', '/api/v2/audit?limit=200', undefined, person.token),
      );
      expect(audit).toContain('whoami');
      for (const token of tokens) expect(audit.includes(token), 'a token is in an audit row').toBe(false);
      expect(person.errors.problems).toEqual([]);
    }
    for (const token of tokens) expect(logs.includes(token), 'a token is in the logs').toBe(false);
    console.info(
      `subjects: ${[...upstream.tokenIds].map(([sub, ids]) => `${sub} (${ids.size} tokens)`).join(', ')}; ` +
        `refreshes: ${upstream.refreshes}; revocation answers: ${upstream.revocations.join(', ')}; ` +
        `grants revoked: ${upstream.grantsRevoked.length}; 401s: ${upstream.unauthorized}`,
    );
  });
});
