// An external OpenID Connect provider (decision 073): a second, independent `oidc-provider` started
// by this test on loopback signs a person in to the console (a real headless Chromium follows the
// redirects; the provider signs its one account in at once, its own screens are not under test).
// The person is made at the first sign-in and found again by the provider's subject at the next.
// Then a gateway in external authorization-server mode takes that provider's access tokens for the
// person's exposure, names the provider in its metadata, and refuses a token without the right
// audience. Nothing leaves loopback: the browser's requests elsewhere are aborted.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { freePort, startGateway, type ServiceProcess } from '@bindery/test-support';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import Provider from 'oidc-provider';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPage, watchErrors } from './support/browser.ts';
import { startControlPlane, type ControlPlane } from './support/control-plane.ts';

const ACCOUNT = 'ext-ada';

let idp: Server;
let issuer: string;
let signingKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
let cp: ControlPlane;
let browser: Browser;
let page: Page;
let errors: ReturnType<typeof watchErrors>;
let gateway: ServiceProcess | undefined;
let gatewayUrl: string;

beforeAll(async () => {
  // The provider's address first: the control plane is told it, then the provider is made with the
  // control plane's callback as its client's redirect URI.
  let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.writeHead(503).end();
  idp = createServer((req, res) => handler(req, res));
  await new Promise<void>((resolve) => idp.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(idp.address() as AddressInfo).port}`;
  cp = await startControlPlane({
    env: {
      OIDC_ISSUER: issuer,
      OIDC_CLIENT_ID: 'bindery-console',
      OIDC_CLIENT_SECRET: 'console-secret',
      OIDC_NAME: 'Test IdP',
    },
  });
  const keys = await generateKeyPair('ES256', { extractable: true });
  signingKey = keys.privateKey;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: 'bindery-console',
        client_secret: 'console-secret',
        redirect_uris: [`${cp.url}/api/v2/sign-in/oidc/callback`],
        id_token_signed_response_alg: 'ES256',
      },
    ],
    jwks: { keys: [{ ...(await exportJWK(keys.privateKey)), kid: 'idp-1', alg: 'ES256', use: 'sig' }] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    findAccount: async (_ctx, sub) => ({
      accountId: sub,
      claims: () => ({ sub, email: 'ada@idp.test', email_verified: true, name: 'Ada External' }),
    }),
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    pkce: { required: () => true },
  });
  const library = provider.callback();
  handler = (req, res) => {
    if (!req.url?.startsWith('/interaction/')) return void library(req, res);
    // The provider's sign-in: its one account, at once.
    void (async () => {
      const details = await provider.interactionDetails(req, res);
      const grant = new provider.Grant({ accountId: ACCOUNT, clientId: String(details.params.client_id) });
      grant.addOIDCScope('openid email profile');
      const grantId = await grant.save();
      await provider.interactionFinished(req, res, { login: { accountId: ACCOUNT }, consent: { grantId } });
    })();
  };
  ({ browser, page, errors } = await openPage());
  // Nothing but loopback, whatever a page asks for.
  await page.context().route(/^https?:\/\/(?!127\.0\.0\.1[:/]|localhost[:/])/u, (route) => route.abort());
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await gateway?.stop();
  await cp?.close();
  idp?.close();
});

/** Signs in through the provider from the console's sign-in screen; answers the console token. */
async function signInThroughProvider(): Promise<string> {
  await page.goto(`${cp.url}/console/`);
  await page.getByRole('link', { name: 'Sign in with Test IdP' }).click();
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
  expect(page.url()).not.toContain('bindery_token');
  const token = await page.evaluate(() => sessionStorage.getItem('bindery.adminToken'));
  expect(token).toBeTruthy();
  return token!;
}

describe('signing in through an external provider', () => {
  let token: string;

  it('makes the person at the first sign-in, named as the provider says', async () => {
    token = await signInThroughProvider();
    const me = await cp.adminAs('GET', '/api/v2/me', undefined, token);
    expect(me.name).toBe('Ada External');
    await page.getByRole('button', { name: 'Log out' }).click();
  });

  it('finds the same person at the next sign-in', async () => {
    const again = await signInThroughProvider();
    expect(again).not.toBe(token);
    const me = await cp.adminAs('GET', '/api/v2/me', undefined, again);
    expect(me.id).toBe((await cp.adminAs('GET', '/api/v2/me', undefined, token)).id);
    expect(errors.problems).toEqual([]);
  });

  it('a token in a link this tab did not ask for is ignored (no signing in as someone else)', async () => {
    // A new tab opening a link that carries someone's sign-in.
    const tab = await page.context().newPage();
    await tab.goto(
      `${cp.url}/console/#bindery_token=${encodeURIComponent(token)}&bindery_nonce=not-this-tab`,
    );
    await tab.getByText('A sign-in this tab did not start was ignored.').waitFor();
    expect(await tab.evaluate(() => sessionStorage.getItem('bindery.adminToken'))).toBeNull();
    expect(tab.url()).not.toContain('bindery_token');
    await tab.close();
  });

  it('a callback without the sign-in’s state is refused, and the console says why', async () => {
    await page.evaluate(() => sessionStorage.clear());
    await page.goto(`${cp.url}/api/v2/sign-in/oidc/callback?code=forged&state=forged`);
    await page.getByText('Not signed in:').waitFor();
    expect(page.url()).not.toContain('sign_in_error');
  });

  describe('a gateway in external authorization-server mode', () => {
    let aeiId: string;
    const keyless = () => `${gatewayUrl}/api/v2/mcp/aei/${aeiId}`;
    const providerToken = (audience: string) =>
      new SignJWT({ scope: 'mcp:tools' })
        .setProtectedHeader({ alg: 'ES256', kid: 'idp-1', typ: 'at+jwt' })
        .setIssuer(issuer)
        .setSubject(ACCOUNT)
        .setAudience(audience)
        .setIssuedAt()
        .setExpirationTime('10m')
        .sign(signingKey);
    const list = async (bearer: string) => {
      const res = await fetch(keyless(), {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-11-25',
          authorization: `Bearer ${bearer}`,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
      });
      return { status: res.status, text: await res.text() };
    };

    beforeAll(async () => {
      const as = (method: string, path: string, body?: unknown) => cp.adminAs(method, path, body, token);
      const table = await as('POST', '/api/v2/tables', { name: 'notes', data: { list: [{ id: 1 }] } });
      const adi = await as('POST', '/api/v2/adis', {
        table_id: table.id,
        json_path: '/list',
        operation_type: 'query',
      });
      const aei = await as('POST', '/api/v2/aeis', { name: 'external' });
      await as('POST', `/api/v2/aeis/${aei.id}/bindings`, { adi_id: adi.id, tool_name: 'find_notes' });
      aeiId = aei.id as string;
      const port = await freePort();
      gatewayUrl = `http://127.0.0.1:${port}`;
      gateway = await startGateway(cp.url, {
        GATEWAY_PORT: String(port),
        GATEWAY_PUBLIC_URL: gatewayUrl,
        OAUTH_EXTERNAL_ISSUER: issuer,
        OAUTH_EXTERNAL_JWKS_URL: `${issuer}/jwks`,
      });
    });

    it('names the provider in the keyless URL’s metadata', async () => {
      const metadata = await (
        await fetch(`${gatewayUrl}/.well-known/oauth-protected-resource/api/v2/mcp/aei/${aeiId}`)
      ).json();
      expect(metadata.authorization_servers).toEqual([issuer]);
    });

    it('takes the provider’s token for the exposure of the person it names', async () => {
      const answer = await list(await providerToken(keyless()));
      expect(answer.status).toBe(200);
      expect(answer.text).toContain('find_notes');
    });

    it('refuses the provider’s token without the right audience', async () => {
      const answer = await list(await providerToken(`${gatewayUrl}/api/v2/mcp/aei/another`));
      expect(answer.status).toBe(401);
    });
  });
});
