/**
 * Keyset pagination by id (ids are time-sortable): `{items, next_cursor}` for every list.
 */
import type { PageQuery } from '@bindery/contracts';

export const DEFAULT_PAGE_SIZE = 50;

export interface PageWindow {
  take: number;
  idAfter: { id?: { gt: string } | { lt: string } };
  orderBy: { id: 'asc' | 'desc' };
}

/**
 * The Prisma arguments for one page: one row more than asked, to know whether another page exists.
 * `desc` pages newest first (audit trails).
 */
export function pageWindow(query: PageQuery, direction: 'asc' | 'desc' = 'asc'): PageWindow {
  const limit = query.limit ?? DEFAULT_PAGE_SIZE;
  const after = direction === 'asc' ? { gt: query.cursor ?? '' } : { lt: query.cursor ?? '' };
  return {
    take: limit + 1,
    idAfter: query.cursor ? { id: after } : {},
    orderBy: { id: direction },
  };
}

/** Turns the rows of a pageWindow query into a page of mapped items. */
export function toPage<R extends { id: string }, T>(
  rows: R[],
  query: PageQuery,
  map: (row: R) => T,
): { items: T[]; next_cursor: string | null } {
  const limit = query.limit ?? DEFAULT_PAGE_SIZE;
  const more = rows.length > limit;
  const kept = more ? rows.slice(0, limit) : rows;
  return { items: kept.map(map), next_cursor: more ? (kept.at(-1)?.id ?? null) : null };
}
