/**
 * The command the suite's client auth scenarios run (`upstream-auth.ts`): Bindery as the OAuth
 * client of the upstream MCP server at the URL it is given (its last argument), driven the way a
 * person drives it. Through the admin API it adds the server with `auth: "oauth"` (for the
 * pre-registration scenario with the suite's client, its secret stored as a Bindery secret and
 * referenced), presses "Connect" and plays the browser (the authorization server answers at once
 * with a redirect to the control plane's callback, which the flow's cookie goes back to), syncs the
 * server's tools and calls `test-tool` through an exposure on the gateway. An upstream that asks
 * for a scope the grant lacks (UPSTREAM_AUTH_REQUIRED with `required_scope`) is connected again,
 * at most three authorizations in all. Exits 0 once the tool answered (or the server lists none).
 *
 * The control plane, the gateway and the admin token come from BINDERY_CONFORMANCE_CONTROL_PLANE,
 * BINDERY_CONFORMANCE_GATEWAY and BINDERY_CONFORMANCE_TOKEN; the suite gives the scenario's name
 * (MCP_CONFORMANCE_SCENARIO) and, for pre-registration, the client (MCP_CONFORMANCE_CONTEXT).
 * The suite's Node runs this file as it is, stripping its types: only erasable TypeScript here, and
 * no imports but Node's own.
 */
import { randomBytes } from 'node:crypto';

/** Authorizations one run may ask for: the first, then two step-ups (the suite's retry limit). */
const MAX_AUTHORIZATIONS = 3;
const TOOL = 'test-tool';
/** How many times a tool call told to come back later (429) is sent again. */
const MAX_WAITS = 5;

const upstreamUrl = process.argv.at(-1) ?? '';
const controlPlane = setting('BINDERY_CONFORMANCE_CONTROL_PLANE');
const gateway = setting('BINDERY_CONFORMANCE_GATEWAY');
const token = setting('BINDERY_CONFORMANCE_TOKEN');
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? 'upstream';
const context = process.env.MCP_CONFORMANCE_CONTEXT
  ? (JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT) as { client_id?: string; client_secret?: string })
  : {};
// Every run has names of its own: the suite runs its scenarios side by side on one control plane.
const tag = `${scenario.replace(/[^A-Za-z0-9]+/g, '_')}_${randomBytes(4).toString('hex')}`;

function setting(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (run upstream-auth.ts)`);
  return value;
}

interface Answer {
  status: number;
  /** The answer's Retry-After header, when it has one (a 429's). */
  retryAfter: string | null;
  // Answers are arbitrary JSON; each step reads the fields it needs.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

async function call(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  bearer = token,
): Promise<Answer> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${bearer}`,
      ...(body !== undefined && { 'content-type': 'application/json' }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return {
    status: res.status,
    retryAfter: res.headers.get('retry-after'),
    body: text ? (JSON.parse(text) as unknown) : undefined,
  };
}

const admin = (method: string, path: string, body?: unknown) => call(controlPlane, method, path, body);

async function must(method: string, path: string, body?: unknown): Promise<Answer['body']> {
  const answer = await admin(method, path, body);
  if (answer.status >= 400)
    throw new Error(`${method} ${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body;
}

function log(message: string): void {
  console.log(`[${scenario}] ${message}`);
}

let authorizations = 0;

/**
 * "Connect", as the person's browser does it: the control plane answers the authorization URL and
 * a cookie binding the flow; the authorization server redirects at once to the control plane's
 * callback, which gets the cookie back and sends the browser on to the console page.
 */
async function connect(serverId: string): Promise<void> {
  authorizations++;
  const started = await fetch(`${controlPlane}/api/v2/upstream-servers/${serverId}/oauth/connect`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
  });
  const startedBody = (await started.json()) as { authorization_url?: string };
  if (!started.ok || !startedBody.authorization_url) {
    throw new Error(`connect: ${started.status} ${JSON.stringify(startedBody)}`);
  }
  const cookie = (started.headers.get('set-cookie') ?? '').split(';')[0]!;
  log(`authorization ${authorizations}: ${startedBody.authorization_url}`);
  const authorized = await fetch(startedBody.authorization_url, { redirect: 'manual' });
  await authorized.body?.cancel();
  const callback = authorized.headers.get('location');
  if (authorized.status < 300 || authorized.status > 399 || !callback) {
    throw new Error(`the authorization server answered ${authorized.status}, no redirect`);
  }
  const back = await fetch(new URL(callback, startedBody.authorization_url), {
    headers: { cookie },
    redirect: 'manual',
  });
  await back.body?.cancel();
  const landing = back.headers.get('location') ?? '';
  if (!landing.includes('oauth=connected')) {
    throw new Error(`the callback did not connect (${back.status}): ${decodeURIComponent(landing)}`);
  }
  log('connected');
}

/** The admin API's or a tool call's error: its code and the scope it asks for. */
function errorOf(body: unknown): { code?: string; message?: string; requiredScope?: string } {
  const error = (
    body as { error?: { code?: string; message?: string; details?: { required_scope?: string } } }
  )?.error;
  return { code: error?.code, message: error?.message, requiredScope: error?.details?.required_scope };
}

/** Another authorization for a call the upstream refused for want of authorization, while allowed. */
async function reconnect(serverId: string, what: string, body: unknown): Promise<void> {
  const error = errorOf(body);
  if (error.code !== 'UPSTREAM_AUTH_REQUIRED' || authorizations >= MAX_AUTHORIZATIONS) {
    throw new Error(`${what}: ${JSON.stringify(body)}`);
  }
  log(`${what} needs authorization again (${error.requiredScope ?? 'no scope named'})`);
  await connect(serverId);
}

async function main(): Promise<void> {
  let oauth: Record<string, string> | undefined;
  if (context.client_id) {
    oauth = { client_id: context.client_id };
    if (context.client_secret) {
      const name = `${tag}_client_secret`;
      await must('POST', '/api/v2/secrets', { name, value: context.client_secret });
      oauth.client_secret = `{{secret.${name}}}`;
    }
  }
  const server = await must('POST', '/api/v2/upstream-servers', {
    name: tag,
    transport: 'http',
    url: upstreamUrl,
    auth: 'oauth',
    ...(oauth && { oauth }),
  });
  log(`server ${server.id as string}: ${server.status as string} (${String(server.last_error)})`);
  await connect(server.id as string);

  let tools: { name: string; upstream_name: string }[];
  for (;;) {
    const synced = await admin('POST', `/api/v2/upstream-servers/${server.id as string}/sync`);
    if (synced.status < 400) {
      tools = synced.body.server.tools;
      break;
    }
    await reconnect(server.id as string, 'sync', synced.body);
  }
  log(`tools: ${tools.map((t) => t.upstream_name).join(', ') || 'none'}`);
  if (!tools.some((t) => t.upstream_name === TOOL)) return;

  // The tool as an agent calls it: through an exposure of its own, on the gateway.
  const aei = await must('POST', '/api/v2/aeis', { name: tag });
  await must('POST', `/api/v2/aeis/${aei.id as string}/bindings`, {
    upstream_server_id: server.id,
    prefix: '',
  });
  for (let waited = 0; ;) {
    const answer = await call(gateway, 'POST', `/api/v2/rest/tools/${TOOL}`, {}, aei.api_key as string);
    if (answer.status < 400 && answer.body?.ok === true) {
      log(`${TOOL} answered ${JSON.stringify(answer.body.result)}`);
      return;
    }
    // The scenarios run side by side from one address, each with a key the gateway has not seen:
    // past the lookups one address may have in flight, a new key is told to come back (429 with
    // Retry-After, docs/reference/gateway.md), as a client that follows it does, a few times.
    if (answer.status === 429 && waited < MAX_WAITS) {
      waited++;
      const seconds = Math.min(Number(answer.retryAfter) || 1, 5);
      log(`${TOOL}: ${answer.status} ${errorOf(answer.body).message ?? ''}; again in ${seconds} s`);
      await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
      continue;
    }
    await reconnect(server.id as string, `${TOOL}`, answer.body);
  }
}

try {
  await main();
  log(`done after ${authorizations} authorization(s)`);
  process.exit(0);
} catch (error) {
  console.error(`[${scenario}] ${(error as Error).message} (after ${authorizations} authorization(s))`);
  process.exit(1);
}
