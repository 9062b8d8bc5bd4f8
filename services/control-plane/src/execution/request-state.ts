/**
 * The `requestState` of a call that asked its client for input (MCP 2026-07-28 Multi Round-Trip
 * Requests): what the next round needs to go on without any state kept here. It carries the answers
 * the tool already used (so a tool that asks twice gets the first answer again on the third round),
 * the call it belongs to and an expiry, signed with HMAC-SHA256 under a key every control plane
 * derives from the internal token they share (HKDF), so any control plane can take the next round.
 *
 * A state is refused (RequestStateError) when it was altered, is past its expiry, or is brought
 * back for another call: another exposure, binding, caller or arguments. Within its expiry the same
 * state may be sent again (a client retrying a lost answer); a tool that must not repeat an effect
 * keys its writes, as for any retry (DESIGN.md §8). Answers are visible to the client that gave
 * them; the state is signed, not encrypted.
 */
import { createHash, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import type { JsonValue } from '@bindery/context-ops';
import { MAX_REQUEST_STATE_CHARS } from '@bindery/contracts';
import { DomainError } from '../domain/errors.ts';

/** How long a round's state can be brought back: time for a person to answer a form. */
export const REQUEST_STATE_TTL_MS = 30 * 60_000;
const VERSION = 1;
const LABEL = 'bindery request state';

/** The call a state belongs to; a state brought back for another call is refused. */
export interface StateOwner {
  aeiId: string;
  bindingId: string;
  /** The caller of a caller entry, null for an api key. */
  caller: string | null;
  /** Digest of the arguments (defaults applied). */
  argsDigest: string;
}

interface Payload {
  v: number;
  /** Digest of the owner. */
  o: string;
  /** Expiry, milliseconds since the epoch. */
  e: number;
  /** The answers used so far, by key. */
  r: Record<string, JsonValue>;
}

/** Why a state cannot be used; the message is safe to show the client. */
export class RequestStateError extends Error {}

export class RequestStates {
  readonly #key: Buffer;
  readonly #ttlMs: number;
  readonly #now: () => number;

  /** `secret`: the internal token (absent: a key of this process alone, for a single control plane). */
  constructor(secret: string | undefined, options: { ttlMs?: number; now?: () => number } = {}) {
    const input = secret === undefined ? randomBytes(32) : Buffer.from(secret, 'utf8');
    this.#key = Buffer.from(hkdfSync('sha256', input, Buffer.alloc(0), LABEL, 32));
    this.#ttlMs = options.ttlMs ?? REQUEST_STATE_TTL_MS;
    this.#now = options.now ?? Date.now;
  }

  seal(owner: StateOwner, responses: Record<string, JsonValue>): string {
    const payload: Payload = {
      v: VERSION,
      o: ownerDigest(owner),
      e: this.#now() + this.#ttlMs,
      r: responses,
    };
    const body = Buffer.from(JSON.stringify(payload), 'utf8').toString('base64url');
    const state = `${body}.${this.#sign(body)}`;
    // The client sends it back: no larger than a retry may carry.
    if (state.length > MAX_REQUEST_STATE_CHARS) {
      throw new DomainError(
        'RESULT_TOO_LARGE',
        `the answers this call carries to its next round take ${state.length} characters of requestState, more than the ${MAX_REQUEST_STATE_CHARS} allowed; ask for less at once`,
        { limit_chars: MAX_REQUEST_STATE_CHARS },
      );
    }
    return state;
  }

  /** The answers a state carries, once it is shown to be this call's, unaltered and in time. */
  open(state: string, owner: StateOwner): Record<string, JsonValue> {
    const dot = state.indexOf('.');
    const body = dot === -1 ? '' : state.slice(0, dot);
    const signature = Buffer.from(dot === -1 ? '' : state.slice(dot + 1), 'base64url');
    const expected = Buffer.from(this.#sign(body), 'base64url');
    if (
      body === '' ||
      signature.length !== expected.length ||
      !timingSafeEqual(signature, expected) ||
      `${body}.${signature.toString('base64url')}` !== state
    ) {
      throw new RequestStateError('requestState was altered or is not one this server handed out');
    }
    const payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Payload;
    if (payload.v !== VERSION)
      throw new RequestStateError('requestState is of another version; call again without it');
    if (payload.o !== ownerDigest(owner)) {
      throw new RequestStateError(
        'requestState belongs to another call (another tool, caller or arguments); send it only with the call that answered it',
      );
    }
    if (payload.e < this.#now()) {
      throw new RequestStateError('requestState has expired; call the tool again without it');
    }
    return payload.r;
  }

  #sign(body: string): string {
    return createHmac('sha256', this.#key).update(`v${VERSION}.${body}`).digest('base64url');
  }
}

function ownerDigest(owner: StateOwner): string {
  return createHash('sha256')
    .update(JSON.stringify([owner.aeiId, owner.bindingId, owner.caller, owner.argsDigest]))
    .digest('base64url');
}
