/**
 * The control plane's admin API over HTTP, as tests drive it: a bearer token, a JSON body, the
 * answer's status and parsed JSON.
 */

// Answers are arbitrary JSON; each test asserts the fields it cares about.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

/** Calls `method path` on the control plane at `url` as `token`; the body is undefined when empty. */
export async function adminCall(
  url: string,
  token: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined && { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}
