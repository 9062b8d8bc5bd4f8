/**
 * The one credential header every Bindery surface reads: `Authorization: Bearer <token>`. Browser
 * safe; checking a header against a configured secret needs node:crypto and lives in
 * `@bindery/service-kit`.
 */

/** The token of an `Authorization: Bearer <token>` header, or undefined for anything else. */
export function bearerToken(header: string | undefined): string | undefined {
  return header === undefined ? undefined : /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1];
}
