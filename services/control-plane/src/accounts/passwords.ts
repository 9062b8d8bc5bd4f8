/**
 * Console sign-in with a name and a password (decision 072). A person sets their password with an
 * admin token (`PUT /api/v2/me/password`); `POST /api/v2/sign-in` checks it and answers an admin
 * token that expires (SIGN_IN_TOKEN_TTL_MS), named after the sign-in, so everything else keeps
 * working with admin tokens as before.
 *
 * Passwords are hashed with scrypt (Node's own, memory-hard, no native build to ship; OWASP lists
 * it beside argon2id) with a random salt, stored as `scrypt$N$r$p$salt$hash`, and compared in
 * constant time. Hashing is bounded: a password is at most MAX_PASSWORD_CHARS long and each hash
 * runs on libuv's pool, never the event loop. Wrong names and wrong passwords answer alike, after
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
import { uniqueViolation } from '../domain/prisma-errors.ts';
import { userBody } from './users.ts';

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
/** How long the admin token a sign-in answers lasts. */
export const SIGN_IN_TOKEN_TTL_MS = 12 * 60 * 60_000;
/** Failed sign-ins a name may have in a window before sign-in with it is refused. */
export const SIGN_IN_FAILURES = 10;
/** Failed sign-ins one client address may have in a window (of any names). */
export const ADDRESS_FAILURES = 50;
export const SIGN_IN_WINDOW_MS = 15 * 60_000;

async function derive(password: string, salt: Buffer, cost: typeof COST): Promise<Buffer> {
  // maxmem: what the cost needs (128 · N · r bytes) and some room.
  return scrypt(password, salt, KEY_BYTES, { ...cost, maxmem: 256 * cost.N * cost.r });
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
  // A stored cost past ours is no hash this code made: refused rather than run.
  if (!(cost.N <= COST.N && cost.r <= COST.r && cost.p <= COST.p && cost.N > 1)) return false;
  const expected = Buffer.from(hash, 'base64url');
  const derived = await derive(password, Buffer.from(salt, 'base64url'), cost);
  return derived.length === expected.length && timingSafeEqual(derived, expected);
}

/** A hash nothing matches, checked for a name nobody signs in with: it costs what a real check does. */
let decoy: Promise<string> | undefined;

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
  try {
    await db.user.update({
      where: { id: user.id },
      data: { passwordHash: await hashPassword(password), passwordChangedAt: new Date() },
    });
  } catch (error) {
    if (!uniqueViolation(error) && !String((error as Error).message).includes('user_sign_in_name_key'))
      throw error;
    throw new DomainError(
      'CONFLICT',
      `another user named "${user.name}" signs in with a password: ask the root user to rename one of you first`,
      { field: 'name' },
    );
  }
}

/** Counts failed sign-ins by name and by client address (per control plane). */
export class SignInThrottle {
  readonly #failures = new LRUCache<string, number[]>({ max: 50_000 });
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Seconds until each of `keys` (with the failures it may have) may try again, 0 when all may now. */
  wait(keys: [string, number][]): number {
    const now = this.#now();
    let wait = 0;
    for (const [key, allowed] of keys) {
      const recent = (this.#failures.get(key) ?? []).filter((at) => now - at < SIGN_IN_WINDOW_MS);
      if (recent.length >= allowed)
        wait = Math.max(wait, Math.ceil((recent[recent.length - allowed]! + SIGN_IN_WINDOW_MS - now) / 1000));
    }
    return wait;
  }

  failed(keys: [string, number][]): void {
    const now = this.#now();
    for (const [key, allowed] of keys) {
      const recent = (this.#failures.get(key) ?? []).filter((at) => now - at < SIGN_IN_WINDOW_MS);
      recent.push(now);
      this.#failures.set(key, recent.slice(-allowed));
    }
  }
}

/**
 * Signs a person in: their name (any case) and password, checked; answers a new admin token that
 * expires in SIGN_IN_TOKEN_TTL_MS. UNAUTHORIZED alike for an unknown name, a wrong password and a
 * disabled user; RATE_LIMITED (with `retry_after_seconds`) past the failures a window allows.
 */
export async function signIn(
  db: Db,
  throttle: SignInThrottle,
  input: { name: string; password: string },
  address: string,
): Promise<SignInAnswer> {
  const name = input.name.trim().toLowerCase();
  const keys: [string, number][] = [
    [`name:${name}`, SIGN_IN_FAILURES],
    [`address:${address}`, ADDRESS_FAILURES],
  ];
  const wait = throttle.wait(keys);
  if (wait > 0) {
    throw new DomainError('RATE_LIMITED', `too many failed sign-ins; try again in ${wait} s`, {
      retry_after_seconds: wait,
    });
  }
  const refused = () => {
    throttle.failed(keys);
    return new DomainError('UNAUTHORIZED', 'wrong name or password');
  };
  // Too long to be anyone's: refused without a hash.
  if (input.password.length > MAX_PASSWORD_CHARS) throw refused();
  const [user] = await db.$queryRaw<{ id: string }[]>`
    SELECT "id" FROM "user" WHERE lower("name") = ${name} AND "password_hash" IS NOT NULL LIMIT 1`;
  const row = user && (await db.user.findUnique({ where: { id: user.id } }));
  decoy ??= hashPassword(randomBytes(16).toString('hex'));
  const matches = await passwordMatches(input.password, row?.passwordHash ?? (await decoy));
  if (!row || !matches || row.disabledAt !== null) throw refused();
  const credential = newCredential('admin');
  const expiresAt = new Date(Date.now() + SIGN_IN_TOKEN_TTL_MS);
  await db.adminToken.create({
    data: {
      id: newId('tok'),
      userId: row.id,
      name: 'console sign-in',
      tokenHash: credential.hash,
      prefix: credential.prefix,
      expiresAt,
    },
  });
  return { token: credential.secret, expires_at: expiresAt.toISOString(), user: userBody(row) };
}
