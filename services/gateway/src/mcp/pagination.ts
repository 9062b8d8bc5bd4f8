/**
 * Cursors of paginated MCP lists (tools, prompts; one way for every list): keyset cursors that
 * name the snapshot they were cut from. A cursor is base64url of `{version}.{key}`: the config
 * version of the list it came from and the key (the name) of the last item of the page before.
 *
 * A list is paged only within one snapshot: a cursor from another version (an admin changed the
 * exposure since, on any gateway) is -32602 telling the client to list again from the start, so a
 * client never gets a listing that mixes two snapshots. Decoding is strict: only what
 * `encodeCursor` produces is accepted, so a cursor made up or mangled is -32602 too, never a
 * silent first page.
 */
import { hash } from 'node:crypto';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import type { Exposure } from '../control-plane/exposure-cache.ts';
import { WireError } from './wire-error.ts';

/**
 * The version of an exposure's lists: its config_version (bumped by every admin change to what the
 * AEI exposes, the same on every gateway); a legacy instance's few tools always fit one page.
 */
export function versionOf(exposure: Exposure): number {
  return exposure.kind === 'aei' ? exposure.config.aei.config_version : 0;
}

/** The cursor of the page after the one ending with the item keyed `key`, in snapshot `version`. */
export function encodeCursor(version: number, key: string): string {
  return Buffer.from(`${version}.${key}`).toString('base64url');
}

/**
 * Keys are names of at most 64 characters, or resource URIs (an upstream's, at most 2,048
 * characters, up to 8 KiB of UTF-8): room for those in base64url, and no more.
 */
const SHAPE = /^[A-Za-z0-9_-]{3,11000}$/;
const FORM = /^(0|[1-9][0-9]{0,14})\.(.+)$/s;

export interface ListSnapshot {
  /** The version of the list's config: a cursor is good for this version only. */
  version: number;
  /** How many items the list has. */
  length: number;
  /** The position of the item keyed `key`, or -1. */
  indexOf(key: string): number;
}

const invalid = (cursor: string) =>
  new WireError(
    ErrorCode.InvalidParams,
    `invalid cursor ${JSON.stringify(cursor.slice(0, 64))}: pass the nextCursor of an earlier page unchanged`,
  );

/**
 * Where the page a cursor names starts in `list` (0 without a cursor), or WireError -32602 when it
 * is not a cursor this gateway hands out, was cut from another version of the list, or names no
 * item of it.
 */
export function pageStart(cursor: string | undefined, list: ListSnapshot): number {
  if (cursor === undefined) return 0;
  const text = SHAPE.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  const form = FORM.exec(text);
  if (!form || Buffer.from(text).toString('base64url') !== cursor) throw invalid(cursor);
  const version = Number(form[1]);
  if (version !== list.version) {
    throw new WireError(
      ErrorCode.InvalidParams,
      `the list changed since this cursor was handed out (version ${version}, now ${list.version}): ` +
        'list again without a cursor',
      { cursor_version: version, version: list.version },
    );
  }
  const index = list.indexOf(form[2] ?? '');
  if (index < 0 || index + 1 >= list.length) {
    throw new WireError(
      ErrorCode.InvalidParams,
      'the cursor names no page of this list: list again without a cursor',
    );
  }
  return index + 1;
}

/** One page of `items` from `start`, with the cursor of the next one when there is more. */
export function pageOf<T>(
  items: readonly T[],
  start: number,
  size: number,
  version: number,
  keyOf: (item: T) => string,
): { items: T[]; nextCursor?: string } {
  const page = items.slice(start, start + size);
  const last = page.at(-1);
  return start + page.length < items.length && last !== undefined
    ? { items: page, nextCursor: encodeCursor(version, keyOf(last)) }
    : { items: page };
}

/** Where the page `cursor` names starts in `items` (keyed by `keyOf`), a list of the exposure as it is. */
export function startIn<T>(
  exposure: Exposure,
  items: readonly T[],
  cursor: string | undefined,
  keyOf: (item: T) => string,
): number {
  return pageStart(cursor, {
    version: versionOf(exposure),
    length: items.length,
    indexOf: (key) => items.findIndex((item) => keyOf(item) === key),
  });
}

/** The page of `items` (keyed by `keyOf`, in the exposure's current version) that `cursor` names. */
export function listPageOf<T>(
  exposure: Exposure,
  items: readonly T[],
  cursor: string | undefined,
  pageSize: number,
  keyOf: (item: T) => string,
): { items: T[]; nextCursor?: string } {
  return pageOf(items, startIn(exposure, items, cursor, keyOf), pageSize, versionOf(exposure), keyOf);
}

/**
 * A function answering a digest of what `listed` derives from an exposure, computed once per cached
 * config (a config is immutable and replaced whole): what a session compares to tell whether a
 * list changed.
 */
export function digestPerExposure(listed: (exposure: Exposure) => unknown): (exposure: Exposure) => string {
  const digests = new WeakMap<Exposure, string>();
  return (exposure) => {
    let digest = digests.get(exposure);
    if (digest === undefined) {
      digest = hash('sha256', JSON.stringify(listed(exposure)), 'base64url');
      digests.set(exposure, digest);
    }
    return digest;
  };
}
