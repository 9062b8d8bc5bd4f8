/**
 * The one credential header every Bindery surface reads: `Authorization: Bearer <token>`, and the
 * one way a configured secret (INTERNAL_TOKEN, OPS_TOKEN, METRICS_TOKEN) is checked against it.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

/** The token of an `Authorization: Bearer <token>` header, or undefined for anything else. */
export function bearerToken(header: string | undefined): string | undefined {
  return header === undefined ? undefined : /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1];
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * A check of `Authorization` headers against one configured secret: true only for
 * `Bearer <secret>`. The comparison takes the same time whatever the header holds: both sides are
 * hashed to 32 bytes first, so neither a differing byte nor a differing length shows in the timing.
 */
export function bearerTokenCheck(secret: string): (authorization: string | undefined) => boolean {
  const expected = digest(secret);
  return (authorization) => {
    const token = bearerToken(authorization);
    return token !== undefined && timingSafeEqual(digest(token), expected);
  };
}
