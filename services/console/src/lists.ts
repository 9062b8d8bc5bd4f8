/** Whole lists for pickers (a select needs every choice, not a page of them). */
import { api, withQuery, type Page } from './api.ts';

/** Every item of a list, page after page of 200, up to `maxPages`; `more` says some were left out. */
export async function listAll<T>(
  path: string,
  query: Record<string, string | undefined> = {},
  maxPages = 10,
): Promise<{ items: T[]; more: boolean }> {
  const items: T[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < maxPages; page += 1) {
    const answer = await api<Page<T>>('GET', withQuery(path, { ...query, limit: 200, cursor }));
    items.push(...answer.items);
    if (answer.next_cursor === null) return { items, more: false };
    cursor = answer.next_cursor;
  }
  return { items, more: true };
}
