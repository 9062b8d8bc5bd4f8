/**
 * Route-schema pieces every admin route shares: the error responses per status and the bearer
 * security requirement for the OpenAPI document.
 */
import { ErrorBody } from '@bindery/contracts';

/** `{401: ErrorBody, ...}` for the given statuses: each route documents the errors it can answer. */
export function errorResponses(...statuses: number[]): Record<number, typeof ErrorBody> {
  return Object.fromEntries([401, 400, ...statuses].map((s) => [s, ErrorBody]));
}

export const adminSecurity = [{ adminToken: [] }];
