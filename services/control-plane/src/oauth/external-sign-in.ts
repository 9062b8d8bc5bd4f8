/**
 * Console sign-in through an external OpenID Connect provider (OIDC_ISSUER, OIDC_CLIENT_ID,
 * OIDC_CLIENT_SECRET; decision 073), with `openid-client` (a certified relying-party library):
 * authorization code with PKCE, `state` and `nonce` kept in a signed, short-lived cookie, the ID
 * token verified by the library. The person is found by the provider's subject (`{issuer}|{sub}`),
 * else made at their first sign-in (named by the `name` claim, else the email, else the subject;
 * the verified email kept, and refused when another account has it: an email never opens an
 * existing account). The
 * answer is the console sign-in an admin token gives (decision 072), handed to the console in the
 * URL's fragment, which browsers never send to a server.
 */
import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Configuration } from 'openid-client';
import type { PrismaClient } from '../generated/prisma/client.ts';
import { DomainError } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';
import { signInTokenFor } from '../accounts/passwords.ts';

export interface ExternalProviderSettings {
  issuer: string;
  clientId: string;
  clientSecret: string | undefined;
  /** What the console's button calls it. */
  name: string;
}

/** The cookie that carries a sign-in's state between the redirect and the callback. */
export const STATE_COOKIE = 'bindery_oidc';
/** A sign-in must come back within this long. */
const STATE_TTL_MS = 10 * 60 * 1000;

interface PendingSignIn {
  /** The console tab's own random value: it takes the answer only when it is its own. */
  browser: string;
  state: string;
  nonce: string;
  verifier: string;
  returnTo: string;
  expiresAt: number;
}

/** Where the console may be sent back to: its own pages, or an authorization request's consent screen. */
export function safeReturnTo(value: unknown): string {
  if (typeof value !== 'string') return '/console/';
  return /^\/(console\/[A-Za-z0-9/_.-]*|oauth\/interaction\/[A-Za-z0-9_-]+)$/u.test(value)
    ? value
    : '/console/';
}

export class ExternalSignIn {
  readonly #settings: ExternalProviderSettings;
  readonly #key: Buffer;
  #configuration: Promise<Configuration> | undefined;

  constructor(settings: ExternalProviderSettings, internalToken: string | undefined) {
    this.#settings = settings;
    const secret = internalToken === undefined ? randomBytes(32) : Buffer.from(internalToken, 'utf8');
    this.#key = Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), 'bindery oidc sign-in state', 32));
  }

  get name(): string {
    return this.#settings.name;
  }

  async #config(): Promise<Configuration> {
    this.#configuration ??= (async () => {
      const client = await import('openid-client');
      const issuer = new URL(this.#settings.issuer);
      // Plain HTTP only to a provider on this machine (a test's, a developer's).
      const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(issuer.hostname);
      return client.discovery(
        issuer,
        this.#settings.clientId,
        this.#settings.clientSecret,
        undefined,
        issuer.protocol === 'http:' && loopback ? { execute: [client.allowInsecureRequests] } : undefined,
      );
    })().catch((error: unknown) => {
      this.#configuration = undefined;
      throw error;
    });
    return this.#configuration;
  }

  #seal(pending: PendingSignIn): string {
    const body = Buffer.from(JSON.stringify(pending)).toString('base64url');
    return `${body}.${createHmac('sha256', this.#key).update(body).digest('base64url')}`;
  }

  #open(cookie: string | undefined): PendingSignIn | undefined {
    const [body, mac] = (cookie ?? '').split('.');
    if (!body || !mac) return undefined;
    const expected = createHmac('sha256', this.#key).update(body).digest();
    const given = Buffer.from(mac, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    const pending = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as PendingSignIn;
    return pending.expiresAt > Date.now() ? pending : undefined;
  }

  /** Where to send the browser, and the cookie to set (the sign-in's state). */
  async start(
    callbackUrl: string,
    returnTo: unknown,
    browser: unknown,
  ): Promise<{ location: string; cookie: string }> {
    if (typeof browser !== 'string' || !/^[A-Za-z0-9-]{16,64}$/u.test(browser)) {
      throw new DomainError(
        'VALIDATION_FAILED',
        'start the sign-in from the console (it sends a random `nonce`)',
      );
    }
    const client = await import('openid-client');
    const config = await this.#unavailableWhenFailing();
    const pending: PendingSignIn = {
      browser,
      state: client.randomState(),
      nonce: client.randomNonce(),
      verifier: client.randomPKCECodeVerifier(),
      returnTo: safeReturnTo(returnTo),
      expiresAt: Date.now() + STATE_TTL_MS,
    };
    const location = client.buildAuthorizationUrl(config, {
      redirect_uri: callbackUrl,
      scope: 'openid email profile',
      state: pending.state,
      nonce: pending.nonce,
      code_challenge: await client.calculatePKCECodeChallenge(pending.verifier),
      code_challenge_method: 'S256',
    });
    return { location: location.href, cookie: this.#seal(pending) };
  }

  async #unavailableWhenFailing(): Promise<Configuration> {
    try {
      return await this.#config();
    } catch {
      throw new DomainError(
        'UPSTREAM_FAILED',
        `the sign-in provider (${this.#settings.name}) cannot be reached`,
      );
    }
  }

  /**
   * The callback: the person it signs in (found or made) and the console page to go back to.
   * UNAUTHORIZED when the state is missing, stale or altered, or the provider refused.
   */
  async finish(db: PrismaClient, currentUrl: URL, cookie: string | undefined) {
    const pending = this.#open(cookie);
    if (!pending)
      throw new DomainError('UNAUTHORIZED', 'this sign-in expired or was started elsewhere: sign in again');
    const client = await import('openid-client');
    const config = await this.#unavailableWhenFailing();
    let claims;
    try {
      const tokens = await client.authorizationCodeGrant(config, currentUrl, {
        pkceCodeVerifier: pending.verifier,
        expectedState: pending.state,
        expectedNonce: pending.nonce,
        idTokenExpected: true,
      });
      claims = tokens.claims();
      // The ID token may carry the subject alone; the rest of the profile is at userinfo.
      if (claims && (claims.email === undefined || claims.name === undefined)) {
        const profile = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
        // An email and whether it was verified come from one source together.
        const mail =
          claims.email !== undefined
            ? { email: claims.email, email_verified: claims.email_verified }
            : { email: profile.email, email_verified: profile.email_verified };
        claims = { ...claims, ...mail, name: claims.name ?? profile.name };
      }
    } catch {
      // The provider's answer (its error, its tokens) is never echoed.
      throw new DomainError('UNAUTHORIZED', `${this.#settings.name} did not sign you in`);
    }
    if (!claims) throw new DomainError('UNAUTHORIZED', `${this.#settings.name} sent no identity`);
    const user = await personFor(db, String(claims.iss), claims);
    if (user.disabledAt) throw new DomainError('UNAUTHORIZED', 'this user is disabled');
    return { answer: await signInTokenFor(db, user), returnTo: pending.returnTo, browser: pending.browser };
  }
}

/** The person an ID token names: linked subject, else verified email, else a new user. */
async function personFor(
  db: PrismaClient,
  issuer: string,
  claims: { sub: string; email?: unknown; email_verified?: unknown; name?: unknown },
) {
  const subject = `${issuer}|${claims.sub}`;
  const linked = await db.user.findUnique({ where: { oidcSubject: subject } });
  if (linked) return linked;
  const email =
    typeof claims.email === 'string' && claims.email_verified === true ? claims.email.toLowerCase() : null;
  // An email is never enough to enter an existing account: another subject with it is refused.
  if (email && (await db.user.findUnique({ where: { email } }))) {
    throw new DomainError('UNAUTHORIZED', 'another account already signed in with this email');
  }
  const name =
    typeof claims.name === 'string' && claims.name.trim() !== '' ? claims.name.trim() : (email ?? claims.sub);
  try {
    return await db.user.create({
      data: { id: newId('usr'), name: name.slice(0, 200), oidcSubject: subject, email },
    });
  } catch (error) {
    // The same person's first sign-in twice at once: the other one made them.
    const made = await db.user.findUnique({ where: { oidcSubject: subject } });
    if (made) return made;
    throw error;
  }
}

/** The user an external access token's claim names (external authorization-server mode). */
export async function userOfExternalClaim(
  db: PrismaClient,
  issuer: string,
  claim: 'sub' | 'email',
  value: string,
): Promise<string | undefined> {
  const user =
    claim === 'sub'
      ? await db.user.findUnique({ where: { oidcSubject: `${issuer}|${value}` }, select: { id: true } })
      : // Only a person who signed in through this very provider (an email alone proves nothing).
        await db.user.findFirst({
          where: { email: value.toLowerCase(), oidcSubject: { startsWith: `${issuer}|` } },
          select: { id: true },
        });
  return user?.id;
}
