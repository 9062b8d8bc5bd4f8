/**
 * The admin API from the browser: the admin token from sessionStorage as a bearer token, every
 * error answer turned into an ApiError carrying the server's own message.
 */
import type { ErrorBody } from '@bindery/contracts';

const TOKEN_KEY = 'bindery.adminToken';
/** The external sign-in this tab started: its answer must carry the same value. */
export const SIGN_IN_NONCE = 'bindery.signInNonce';

export function storedToken(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function storeToken(token: string | null): void {
  if (token === null) sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, token);
}

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code?: string,
    readonly requestId?: string,
  ) {
    super(message);
  }
}

/** Told when an answer says the token is no longer accepted (the app logs out). */
let onUnauthorized: (message: string) => void = () => {};
export function whenUnauthorized(listener: (message: string) => void): void {
  onUnauthorized = listener;
}

export interface RequestOptions {
  body?: unknown;
  /** A token to try instead of the stored one (the login form). */
  token?: string;
  /** More request headers (a table write's If-Match). */
  headers?: Record<string, string>;
  /** Told the answer's headers, of a success and of a refusal alike (a table's ETag). */
  onHeaders?: (headers: Headers) => void;
}

export async function api<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
  const token = options.token ?? storedToken();
  const headers: Record<string, string> = { accept: 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  Object.assign(headers, options.headers);
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers,
      ...(options.body !== undefined && { body: JSON.stringify(options.body) }),
    });
  } catch (error) {
    throw new ApiError(`The control plane could not be reached (${(error as Error).message}).`, 0);
  }
  options.onHeaders?.(response.headers);
  const text = await response.text();
  let body: unknown = undefined;
  if (text !== '') {
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
  }
  if (!response.ok) {
    const error = (body as Partial<ErrorBody> | undefined)?.error;
    const message = error?.message ?? (text.trim() || `${response.status} ${response.statusText}`);
    const failure = new ApiError(message, response.status, error?.code, error?.request_id);
    if (response.status === 401 && options.token === undefined) onUnauthorized(message);
    throw failure;
  }
  return body as T;
}

/** `{items, next_cursor}`: every list answer of the admin API. */
export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

export function withQuery(path: string, query: Record<string, string | number | undefined>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== '') params.set(name, String(value));
  }
  const search = params.toString();
  return search === '' ? path : `${path}?${search}`;
}

/** Every item of a list, page after page (at most `maxPages` of 200). */
export async function countAll(path: string, maxPages = 50): Promise<{ count: number; more: boolean }> {
  let count = 0;
  let cursor: string | undefined;
  for (let page = 0; page < maxPages; page += 1) {
    const answer = await api<Page<unknown>>('GET', withQuery(path, { limit: 200, cursor }));
    count += answer.items.length;
    if (answer.next_cursor === null) return { count, more: false };
    cursor = answer.next_cursor;
  }
  return { count, more: true };
}

export function messageOf(error: unknown): string {
  if (error instanceof ApiError) {
    return error.code
      ? `${error.message} (${error.code}${error.status ? `, HTTP ${error.status}` : ''})`
      : error.message;
  }
  return error instanceof Error ? error.message : String(error);
}
