/**
 * Console sign-in with a name and a password (decision 072). A person sets their password with an
 * admin token (`PUT /api/v2/me/password`); `POST /api/v2/sign-in` checks it and answers an admin
 * token that expires (SIGN_IN_TOKEN_TTL_MS), named after the sign-in, so everything else keeps
 * working with admin tokens as before.
 *
 * Passwords are hashed with scrypt (Node's own, memory-hard, no native build to ship; OWASP lists
 * it beside argon2id) with a random salt, stored as `scrypt$N$r$p$salt$hash`, and compared in
 * constant time. Hashing is bounded: a password is at most MAX_PASSWORD_CHARS long, each hash runs
 * on libuv's pool (never the event loop), and at most HASHES_AT_ONCE run at once, a few more wait,
 * the rest are refused (RATE_LIMITED). Wrong names and wrong passwords answer alike, after
 * the same work (an unknown name is checked against a hash of nothing). Failures are counted per
 * name (SIGN_IN_FAILURES in SIGN_IN_WINDOW_MS) and per client address (ADDRESS_FAILURES, more: a
 * proxy's address is many people's), in each control plane: past them, sign-in answers RATE_LIMITED
 * until the window has passed. Passwords and tokens never reach a log, an audit row or an error.
 */
import { randomBytes, scrypt as scryptCallback, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import { LRUCache } from 'lru-cache';
import type { SignInAnswer } from '@bindery/contracts';
import type { Db, Principal } from '../domain/context.ts';
import { DomainError } from '../domain/errors.ts';
import { newCredential, newId } from '../domain/ids.ts';
import { signInNameTaken, userBody } from './users.ts';
import type { User } from '../generated/prisma/client.ts';

const scrypt = promisify(scryptCallback) as (
  password: string,
  salt: Buffer,
  keylen: number,
  options: { N: number; r: number; p: number; maxmem: number },
) => Promise<Buffer>;

export const MIN_PASSWORD_CHARS = 12;
export const MAX_PASSWORD_CHARS = 1024;
/** scrypt's cost: 2^15 blocks of 8 (32 MiB, about 50 ms on a laptop core), one lane. */
const COST = { N: 2 ** 15, r: 8, p: 1 };
const KEY_BYTES = 32;
const SALT_BYTES = 16;
/** The name of the admin tokens sign-ins answer (a changed password revokes them). */
export const SIGN_IN_TOKEN_NAME = 'console sign-in';
/** How long the admin token a sign-in answers lasts. */
export const SIGN_IN_TOKEN_TTL_MS = 12 * 60 * 60_000;
/** Failed sign-ins a name may have in a window before sign-in with it is refused. */
export const SIGN_IN_FAILURES = 10;
/** Failed sign-ins one client address may have in a window (of any names). */
export const ADDRESS_FAILURES = 50;
export const SIGN_IN_WINDOW_MS = 15 * 60_000;

/** Hashes running at once, at most (the rest wait, up to HASHES_WAITING): libuv's pool serves others too. */
const HASHES_AT_ONCE = 2;
const HASHES_WAITING = 64;
let hashing = 0;
const waiting: (() => void)[] = [];

async function derive(password: string, salt: Buffer, cost: typeof COST): Promise<Buffer> {
  if (hashing >= HASHES_AT_ONCE) {
    // A flood of sign-ins (from many addresses) waits its turn, or is refused: never more memory
    // and threads than HASHES_AT_ONCE hashes take.
    if (waiting.length >= HASHES_WAITING) {
      throw new DomainError('RATE_LIMITED', 'too many sign-ins at once; try again in a few seconds', {
        retry_after_seconds: 2,
      });
    }
    await new Promise<void>((resolve) => waiting.push(resolve));
  } else {
    hashing += 1;
  }
  try {
    // maxmem: what the cost needs (128 · N · r bytes) and some room.
    return await scrypt(password, salt, KEY_BYTES, { ...cost, maxmem: 256 * cost.N * cost.r });
  } finally {
    // The turn passes to the next waiting hash, or is given back.
    const next = waiting.shift();
    if (next) next();
    else hashing -= 1;
  }
}

/** The stored form of `password`: `scrypt$N$r$p$salt$hash`, salt and hash in base64url. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const hash = await derive(password, salt, COST);
  return ['scrypt', COST.N, COST.r, COST.p, salt.toString('base64url'), hash.toString('base64url')].join('$');
}

/** True when `password` is the one `stored` was made from (constant-time comparison). */
export async function passwordMatches(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const cost = { N: Number(n), r: Number(r), p: Number(p) };
  // A cost this code would not have used (past ours, or no valid scrypt cost) is no hash it made.
  const wholeAtLeastOne = (value: number) => Number.isInteger(value) && value >= 1;
  if (
    !(wholeAtLeastOne(cost.N) && cost.N > 1 && (cost.N & (cost.N - 1)) === 0 && cost.N <= COST.N) ||
    !(wholeAtLeastOne(cost.r) && cost.r <= COST.r) ||
    !(wholeAtLeastOne(cost.p) && cost.p <= COST.p)
  )
    return false;
  const expected = Buffer.from(hash, 'base64url');
  const derived = await derive(password, Buffer.from(salt, 'base64url'), cost);
  return derived.length === expected.length && timingSafeEqual(derived, expected);
}

/** Refuses a password that is too short or too long (a bound on the work a hash costs). */
function checkedPassword(password: string): string {
  if (password.length < MIN_PASSWORD_CHARS || password.length > MAX_PASSWORD_CHARS) {
    throw new DomainError(
      'VALIDATION_FAILED',
      `a password is ${MIN_PASSWORD_CHARS} to ${MAX_PASSWORD_CHARS} characters long`,
      { field: 'password' },
    );
  }
  return password;
}

/**
 * Sets the caller's password. One already set must be given as `current_password` (an admin token
 * alone does not replace it); CONFLICT when another person signs in with the same name.
 */
export async function setPassword(
  db: Db,
  caller: Principal,
  input: { password: string; current_password?: string | undefined },
): Promise<void> {
  const password = checkedPassword(input.password);
  const user = await db.user.findUniqueOrThrow({ where: { id: caller.userId } });
  if (user.passwordHash !== null) {
    const current = input.current_password;
    if (current === undefined || !(await passwordMatches(current, user.passwordHash))) {
      throw new DomainError('FORBIDDEN', 'give the current password (current_password) to change it', {
        field: 'current_password',
      });
    }
  }
  const hash = await hashPassword(password);
  try {
    await db.user.update({
      where: { id: user.id },
      data: { passwordHash: hash, passwordChangedAt: new Date() },
    });
    // A changed password ends the sign-ins made with the old one (not the token asking).
    await db.adminToken.updateMany({
      where: {
        userId: user.id,
        name: SIGN_IN_TOKEN_NAME,
        revokedAt: null,
        ...(caller.tokenId !== undefined && { id: { not: caller.tokenId } }),
      },
      data: { revokedAt: new Date() },
    });
  } catch (error) {
    if (!signInNameTaken(error)) throw error;
    throw new DomainError(
      'CONFLICT',
      `another user named "${user.name}" signs in with a password: ask the root user to rename one of you first`,
      { field: 'name' },
    );
  }
}

/**
 * Counts sign-in attempts by person and by client address (per control plane): each attempt is
 * counted before its password is checked (a burst sent at once cannot slip past the limit while the
 * hashes run) and given back when it succeeds. The LRU cache bounds the keys kept; a key's count
 * only lasts a window.
 */
export class SignInThrottle {
  readonly #attempts: LRUCache<string, number[]>;
  readonly #now: () => number;
  readonly #windowMs: number;

  /** `windowMs`: how long an attempt counts (the sign-in's 15 minutes unless told). */
  constructor(now: () => number = Date.now, windowMs = SIGN_IN_WINDOW_MS) {
    this.#now = now;
    this.#windowMs = windowMs;
    this.#attempts = new LRUCache<string, number[]>({ max: 50_000, ttl: windowMs });
  }

  #recent(key: string, now: number): number[] {
    return (this.#attempts.get(key) ?? []).filter((at) => now - at < this.#windowMs);
  }

  /**
   * Counts an attempt for each of `keys` (with the failures it may have): the seconds until they may
   * try again when one has no attempt left (nothing is counted then), else 0.
   */
  attempt(keys: [string, number][]): number {
    const now = this.#now();
    let wait = 0;
    for (const [key, allowed] of keys) {
      const recent = this.#recent(key, now);
      if (recent.length >= allowed)
        wait = Math.max(wait, Math.ceil((recent[recent.length - allowed]! + this.#windowMs - now) / 1000));
    }
    if (wait > 0) return wait;
    for (const [key, allowed] of keys)
      this.#attempts.set(key, [...this.#recent(key, now), now].slice(-allowed));
    return 0;
  }

  /** Gives back the attempt just counted for `keys`: it succeeded. */
  succeeded(keys: [string, number][]): void {
    for (const [key] of keys) {
      const recent = this.#attempts.get(key);
      if (recent && recent.length > 0) this.#attempts.set(key, recent.slice(0, -1));
    }
  }
}

/**
 * A stored value nothing matches: a random salt and hash in the stored form, checked for a name
 * nobody signs in with so that a refusal costs what a real check does. Made without hashing.
 */
const DECOY = [
  'scrypt',
  COST.N,
  COST.r,
  COST.p,
  randomBytes(SALT_BYTES).toString('base64url'),
  randomBytes(KEY_BYTES).toString('base64url'),
].join('$');

/**
 * Signs a person in: their name (any case, as the database lowers it) and password, checked;
 * answers a new admin token that expires in SIGN_IN_TOKEN_TTL_MS. UNAUTHORIZED alike for an unknown
 * name, a wrong password and a disabled user, after the same work (one query, one hash);
 * RATE_LIMITED (with `retry_after_seconds`) past the attempts a window allows.
 */
export async function signIn(
  db: Db,
  throttle: SignInThrottle,
  input: { name: string; password: string },
  address: string,
): Promise<SignInAnswer> {
  // The person is named as the database finds them (its lower(), the index's), so two spellings of
  // one name are one person's attempts; an unknown name counts under what it lowers to.
  const [found] = await db.$queryRaw<{ id: string; password_hash: string; disabled: boolean }[]>`
    SELECT "id", "password_hash", "disabled_at" IS NOT NULL AS "disabled"
    FROM "user" WHERE lower(btrim("name")) = lower(${input.name.trim()}) AND "password_hash" IS NOT NULL LIMIT 1`;
  const person = found ? `user:${found.id}` : `name:${input.name.trim().toLowerCase()}`;
  const keys: [string, number][] = [
    [person, SIGN_IN_FAILURES],
    [`address:${address}`, ADDRESS_FAILURES],
  ];
  const wait = throttle.attempt(keys);
  if (wait > 0) {
    throw new DomainError('RATE_LIMITED', `too many failed sign-ins; try again in ${wait} s`, {
      retry_after_seconds: wait,
    });
  }
  const refused = new DomainError('UNAUTHORIZED', 'wrong name or password');
  // Too long to be anyone's: refused without a hash.
  if (input.password.length > MAX_PASSWORD_CHARS) throw refused;
  const matches = await passwordMatches(input.password, found?.password_hash ?? DECOY);
  if (!found || !matches || found.disabled) throw refused;
  throttle.succeeded(keys);
  return signInTokenFor(db, await db.user.findUniqueOrThrow({ where: { id: found.id } }));
}

/** A console sign-in for `row`: an admin token that expires in SIGN_IN_TOKEN_TTL_MS. */
export async function signInTokenFor(db: Db, row: User): Promise<SignInAnswer> {
  const credential = newCredential('admin');
  const expiresAt = new Date(Date.now() + SIGN_IN_TOKEN_TTL_MS);
  await db.adminToken.create({
    data: {
      id: newId('tok'),
      userId: row.id,
      name: SIGN_IN_TOKEN_NAME,
      tokenHash: credential.hash,
      prefix: credential.prefix,
      expiresAt,
    },
  });
  return { token: credential.secret, expires_at: expiresAt.toISOString(), user: userBody(row) };
}
