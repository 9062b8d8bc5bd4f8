// The gateway's verification of OAuth access tokens (auth/oauth-resource.ts), against a JWKS served
// by the test on loopback, with keys the test holds: a valid token opens its URL and nothing else;
// an expired one, one for another URL, one from another issuer, one that is not an access token
// (typ), one without a grant, and one signed by an unpublished key are 401 with the reason; a key
// published later (rotation) is found by fetching the set again; a verified token is not verified
// twice; the JWKS being unreachable is 503, never a verdict on the token.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ResourceServer, scopeOf } from '../src/auth/oauth-resource.ts';

const ISSUER = 'https://issuer.test';
const PUBLIC = 'http://127.0.0.1:4100';
const PATH = '/api/v2/mcp/aei/aei_1';

let server: Server;
let base: string;
let published: JWK[] = [];
let fetches = 0;
const keys: Record<string, Awaited<ReturnType<typeof generateKeyPair>>['privateKey']> = {};

async function newKey(kid: string): Promise<JWK> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  keys[kid] = privateKey;
  return { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' };
}

function token(options: {
  kid?: string;
  aud?: string;
  iss?: string;
  typ?: string;
  exp?: number;
  grant?: string | null;
  scope?: string;
}): Promise<string> {
  const kid = options.kid ?? 'k1';
  const claims: Record<string, unknown> = { scope: options.scope ?? 'mcp:tools mcp:resources' };
  if (options.grant !== null) claims.grant_id = options.grant ?? 'grant-1';
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'ES256', kid, typ: options.typ ?? 'at+jwt' })
    .setIssuer(options.iss ?? ISSUER)
    .setSubject('user-1')
    .setAudience(options.aud ?? `${PUBLIC}${PATH}`)
    .setIssuedAt()
    .setExpirationTime(options.exp ?? Math.floor(Date.now() / 1000) + 600)
    .sign(keys[kid]!);
}

/** Built-in mode: the test's server stands where the control plane is (its metadata and JWKS). */
const resourceServer = (
  controlPlaneUrl = base,
  options: Partial<ConstructorParameters<typeof ResourceServer>[0]> = {},
) => new ResourceServer({ publicUrl: PUBLIC, controlPlaneUrl, jwksCooldownMs: 0, ...options });

beforeAll(async () => {
  published = [await newKey('k1')];
  server = createServer((req, res) => {
    const json = (body: unknown) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (req.url === '/.well-known/oauth-authorization-server') return json({ issuer: ISSUER });
    fetches += 1;
    return json({ keys: published });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => server.close());

describe('verifying an access token', () => {
  it('a valid token opens its URL with its grant, person and scopes, verified once', async () => {
    const rs = resourceServer();
    const valid = await token({});
    const first = await rs.verify(valid, PATH);
    if (first.refusal) throw new Error(`refused: ${first.refusal.message}`);
    expect(first.credential).toEqual({
      kind: 'oauth',
      grantId: 'grant-1',
      subject: 'user-1',
      resourcePath: PATH,
    });
    expect([...first.scopes]).toEqual(['mcp:tools', 'mcp:resources']);
    const before = fetches;
    expect((await rs.verify(valid, PATH)).refusal).toBeUndefined();
    expect(fetches).toBe(before);
  });

  it('refuses with the reason: expired, another URL, another issuer, not an access token, no grant', async () => {
    const rs = resourceServer();
    const cases: [Promise<string>, string][] = [
      [token({ exp: Math.floor(Date.now() / 1000) - 60 }), 'it expired'],
      [token({ aud: `${PUBLIC}/api/v2/mcp/aei/aei_2` }), 'it is for another URL'],
      [token({ iss: 'https://elsewhere.test' }), 'its iss claim does not match'],
      [token({ typ: 'JWT' }), 'its typ claim does not match'],
      [token({ grant: null }), 'the token names no grant'],
    ];
    for (const [made, reason] of cases) {
      const { refusal } = await rs.verify(await made, PATH);
      expect(refusal?.status).toBe(401);
      expect(refusal?.message).toContain(reason);
      expect(refusal?.headers?.['www-authenticate']).toContain('error="invalid_token"');
      expect(refusal?.headers?.['www-authenticate']).toContain(
        `resource_metadata="${PUBLIC}/.well-known/oauth-protected-resource${PATH}"`,
      );
    }
    // The same valid token is refused at another URL.
    const other = await rs.verify(await token({}), '/api/v2/mcp/aei/aei_2');
    expect(other.refusal?.status).toBe(401);
  });

  it('a key published later (rotation) is found; an unpublished one is refused', async () => {
    const rs = resourceServer();
    expect((await rs.verify(await token({}), PATH)).refusal).toBeUndefined();
    published = [...published, await newKey('k2')];
    expect((await rs.verify(await token({ kid: 'k2' }), PATH)).refusal).toBeUndefined();
    await newKey('k3');
    const { refusal } = await rs.verify(await token({ kid: 'k3' }), PATH);
    expect(refusal?.status).toBe(401);
    expect(refusal?.message).toContain('a key the authorization server does not publish');
  });

  it('an unreachable authorization server is 503, not a verdict on the token', async () => {
    const rs = resourceServer('http://127.0.0.1:9');
    const { refusal } = await rs.verify(await token({}), PATH);
    expect(refusal?.status).toBe(503);
  });

  it('external mode: its issuer’s tokens, the person in the claim it names, no grant, any typ', async () => {
    const rs = resourceServer('http://127.0.0.1:9', {
      external: {
        issuer: 'https://idp.test',
        jwksUrl: `${base}/jwks`,
        audience: undefined,
        userClaim: 'email',
      },
    });
    const external = (claims: Record<string, unknown>, aud = `${PUBLIC}${PATH}`) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'ES256', kid: 'k1', typ: 'JWT' })
        .setIssuer('https://idp.test')
        .setSubject('idp-user')
        .setAudience(aud)
        .setExpirationTime('10m')
        .sign(keys.k1!);
    const ok = await rs.verify(
      await external({ email: 'ada@example.test', email_verified: true, scp: 'mcp:tools' }),
      PATH,
    );
    if (ok.refusal) throw new Error(`refused: ${ok.refusal.message}`);
    expect(ok.credential).toMatchObject({
      subject: 'ada@example.test',
      external: { issuer: 'https://idp.test', claim: 'email' },
    });
    expect([...ok.scopes]).toEqual(['mcp:tools']);
    expect(
      (
        await rs.verify(
          await external({ email: 'a@b.test', email_verified: true }, 'https://other.test'),
          PATH,
        )
      ).refusal?.status,
    ).toBe(401);
    expect(
      (await rs.verify(await external({ email: 'a@b.test', email_verified: false }), PATH)).refusal?.message,
    ).toContain('not verified');
    expect((await rs.verify(await external({ email: 'a@b.test' }), PATH)).refusal?.message).toContain(
      'not verified',
    );
    expect((await rs.verify(await external({}), PATH)).refusal?.message).toContain('no email claim');
    // The built-in server's tokens are not taken in external mode (another issuer).
    expect((await rs.verify(await token({}), PATH)).refusal?.status).toBe(401);
    expect((await rs.metadata(PATH)).authorization_servers).toEqual(['https://idp.test']);
  });

  it('names the scope each method needs', () => {
    expect(scopeOf({ method: 'tools/call' })).toBe('mcp:tools');
    expect(scopeOf({ method: 'resources/read' })).toBe('mcp:resources');
    expect(scopeOf({ method: 'prompts/get' })).toBe('mcp:prompts');
    expect(scopeOf({ method: 'completion/complete', params: { ref: { type: 'ref/prompt' } } })).toBe(
      'mcp:prompts',
    );
    expect(scopeOf({ method: 'completion/complete', params: { ref: { type: 'ref/resource' } } })).toBe(
      'mcp:resources',
    );
    expect(scopeOf({ method: 'initialize' })).toBeUndefined();
  });

  it('a 403 for a missing scope names the scopes held and the one missing', () => {
    const refusal = resourceServer().insufficientScope(PATH, 'mcp:prompts', new Set(['mcp:tools']));
    expect(refusal.status).toBe(403);
    expect(refusal.headers?.['www-authenticate']).toMatch(
      /^Bearer error="insufficient_scope", scope="mcp:tools mcp:prompts", resource_metadata=/u,
    );
  });
});
