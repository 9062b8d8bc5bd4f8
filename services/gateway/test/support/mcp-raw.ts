/**
 * Raw JSON-RPC over HTTP against a gateway, for tests that send what no SDK client would: a
 * session opened by hand, the paths a request can take to an answer, and answers read alike
 * whether they came as JSON or as an SSE stream.
 */
import { readMetrics, type Json } from '@bindery/test-support';
import { rawPost, type RawAnswer } from './raw-post.ts';

export const PROTOCOL_VERSION = '2025-06-18';

export interface McpAnswer {
  status: number;
  /** The JSON-RPC messages of the answer: the JSON body (one or a batch) or each SSE `data:` line. */
  messages: Json[];
  text: string;
}

/** Reads a raw answer: JSON bodies parsed, SSE streams split into their messages. */
export function readAnswer(res: RawAnswer): McpAnswer {
  const type = String(res.headers['content-type'] ?? '');
  let messages: Json[] = [];
  if (type.includes('text/event-stream')) {
    messages = res.text
      .split('\n')
      .filter((line) => line.startsWith('data: ') && line.length > 6)
      .map((line) => JSON.parse(line.slice(6)));
  } else if (type.includes('application/json') && res.text !== '') {
    const body: Json = JSON.parse(res.text);
    messages = Array.isArray(body) ? body : [body];
  }
  return { status: res.status, messages, text: res.text };
}

/** The answer's response to request `id` (not a notification), or undefined. */
export function responseTo(answer: McpAnswer, id: unknown): Json {
  return answer.messages.find((m) => m.id === id && ('result' in m || 'error' in m));
}

/**
 * Opens a session by hand (initialize, then the initialized notification); with `logs` the
 * session also asks for log messages, which makes its tool calls take the SDK transport.
 * `headers` go with every request (`Authorization` for the bearer entry).
 */
export async function openSession(
  gatewayUrl: string,
  path: string,
  logs = false,
  headers: Record<string, string> = {},
): Promise<string> {
  const init = await rawPost(
    gatewayUrl,
    path,
    JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: PROTOCOL_VERSION,
        capabilities: {},
        clientInfo: { name: 'raw', version: '1' },
      },
    }),
    { headers },
  );
  const sessionId = init.headers['mcp-session-id'];
  if (init.status !== 200 || typeof sessionId !== 'string') {
    throw new Error(`initialize failed: ${init.status} ${init.text}`);
  }
  const onSession = { ...headers, 'mcp-session-id': sessionId, 'mcp-protocol-version': PROTOCOL_VERSION };
  await rawPost(gatewayUrl, path, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), {
    headers: onSession,
  });
  if (logs) {
    const set = await rawPost(
      gatewayUrl,
      path,
      JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'logging/setLevel', params: { level: 'debug' } }),
      { headers: onSession },
    );
    if (set.status !== 200) throw new Error(`logging/setLevel failed: ${set.status} ${set.text}`);
  }
  return sessionId;
}

/** The ways a POST reaches its answer; each test of a refusal runs on every one of them. */
export type Lane = 'fast lane' | 'framework' | 'SDK, held session' | 'SDK, stateless';
export const LANES: readonly Lane[] = ['fast lane', 'framework', 'SDK, held session', 'SDK, stateless'];

export interface Lanes {
  /** POSTs `body` the way `lane` names: a held session with a known length (the fast lane's
   * direct answer), the same chunked (Fastify's route, direct answer), a session that asked for
   * logs (the SDK transport), no session (a stateless SDK server). */
  post(lane: Lane, body: string): Promise<McpAnswer>;
}

/** The four lanes of `path`; `headers` go with every request (`Authorization` for the bearer entry). */
export async function lanesFor(
  gatewayUrl: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<Lanes> {
  const plain = await openSession(gatewayUrl, path, false, headers);
  const logging = await openSession(gatewayUrl, path, true, headers);
  const session = (id: string) => ({
    ...headers,
    'mcp-session-id': id,
    'mcp-protocol-version': PROTOCOL_VERSION,
  });
  return {
    async post(lane, body) {
      const options =
        lane === 'fast lane'
          ? { headers: session(plain) }
          : lane === 'framework'
            ? { headers: session(plain), chunked: true }
            : lane === 'SDK, held session'
              ? { headers: session(logging) }
              : { headers };
      return readAnswer(await rawPost(gatewayUrl, path, body, options));
    },
  };
}

/** gateway_requests_total summed per lane, from one /metrics read. */
export async function servedByLane(gatewayUrl: string): Promise<{ fast: number; framework: number }> {
  const metrics = await readMetrics(gatewayUrl);
  return {
    fast: metrics.total('gateway_requests_total', ['lane="fast"']),
    framework: metrics.total('gateway_requests_total', ['lane="framework"']),
  };
}

/**
 * One modern (2026-07-28) request that names a tool or prompt (`params.name`) or a task
 * (`params.taskId`), sent as a client of
 * `capabilities` would send it (the `_meta` envelope, `Mcp-Method` and `Mcp-Name`); answers the
 * last JSON-RPC message of the answer (its response, after any notifications).
 */
export async function modernNamedRequest(
  gatewayUrl: string,
  path: string,
  request: { id: number; method: string; params: Record<string, unknown> },
  capabilities: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<Json> {
  return (await modernNamedPost(gatewayUrl, path, request, capabilities, headers)).message;
}

/** modernNamedRequest, with the answer's HTTP status. */
export async function modernNamedPost(
  gatewayUrl: string,
  path: string,
  request: { id: number; method: string; params: Record<string, unknown> },
  capabilities: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<{ status: number; message: Json }> {
  const version = '2026-07-28';
  const res = await rawPost(
    gatewayUrl,
    path,
    JSON.stringify({
      jsonrpc: '2.0',
      id: request.id,
      method: request.method,
      params: {
        ...request.params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': version,
          'io.modelcontextprotocol/clientCapabilities': capabilities,
        },
      },
    }),
    {
      headers: {
        ...headers,
        'mcp-protocol-version': version,
        'mcp-method': request.method,
        // What the method is named by: a tool's or prompt's name, a task's id (tasks/*).
        'mcp-name': String(request.params.name ?? request.params.taskId),
        accept: 'application/json, text/event-stream',
      },
    },
  );
  return { status: res.status, message: readAnswer(res).messages.at(-1) };
}
