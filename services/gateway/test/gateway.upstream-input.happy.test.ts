// Pins an upstream prompt that asks its client for input (a 2026-07-28 server's MRTR), relayed
// through an exposure that attaches the server without a prefix, with real SDK clients:
// - a modern client is answered input_required with the upstream's own requests (only those its
//   capabilities allow: the upstream sees them), and its retry with inputResponses and the
//   requestState reaches the upstream with the upstream's own state; the prompt completes;
// - an altered state is -32602 (the upstream's state rides signed inside Bindery's);
// - a legacy client (a v1 SDK session) is asked by the gateway on the request's stream, its
//   handlers answer, and prompts/get returns the finished prompt.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { modernNamedRequest } from './support/mcp-raw.ts';
import { startStack, type Stack } from './support/stack.ts';

const MODERN_SCRIPT = fileURLToPath(
  new URL('../../control-plane/test/support/upstream/modern-server.mjs', import.meta.url),
);

let stack: Stack;
let path: string;

beforeAll(async () => {
  stack = await startStack({ controlPlaneEnv: { UPSTREAM_STDIO_COMMANDS: 'node' } });
  const token = (await stack.admin('POST', '/api/v2/users', { name: 'relay' })).token as string;
  const as = (method: string, to: string, body?: unknown) => stack.admin(method, to, body, token);
  const upstream = await as('POST', '/api/v2/upstream-servers', {
    name: 'Modern briefings',
    transport: 'stdio',
    command: 'node',
    args: [MODERN_SCRIPT],
  });
  expect(upstream.status).toBe('ok');
  const aei = await as('POST', '/api/v2/aeis', { name: 'relay' });
  await as('POST', `/api/v2/aeis/${String(aei.id)}/bindings`, {
    upstream_server_id: upstream.id,
    prefix: '',
  });
  path = `/api/v2/mcp/server/${String(aei.api_key)}`;
}, 90_000);
afterAll(() => stack?.close());

/** A modern prompts/get of the briefing; the JSON-RPC answer. */
async function getBriefing(capabilities: Record<string, unknown>, retry: Record<string, unknown> = {}) {
  const answer = await modernNamedRequest(
    stack.gatewayUrl,
    path,
    { id: 3, method: 'prompts/get', params: { name: 'briefing', arguments: { topic: 'owls' }, ...retry } },
    capabilities,
  );
  return answer as {
    result?: {
      resultType: string;
      inputRequests?: Record<string, { method: string }>;
      requestState?: string;
      messages?: unknown[];
    };
    error?: { code: number; message: string };
  };
}

const who = { action: 'accept', content: { name: 'Ada' } };
const summary = { role: 'assistant', content: { type: 'text', text: 'birds of the night' }, model: 'm' };
const text = (messages: unknown[] | undefined) =>
  (messages as { content: { text: string } }[])[0]!.content.text;

describe('a modern client', () => {
  it('is asked what the upstream asks, within its capabilities, and the retry completes the prompt', async () => {
    const first = await getBriefing({ elicitation: {} });
    expect(first.result).toMatchObject({
      resultType: 'input_required',
      inputRequests: { who: { method: 'elicitation/create' } },
    });
    expect(Object.keys(first.result!.inputRequests!)).toEqual(['who']);
    const done = await getBriefing(
      { elicitation: {} },
      { inputResponses: { who }, requestState: first.result!.requestState },
    );
    expect(done.result?.resultType).toBe('complete');
    expect(text(done.result?.messages)).toBe('Brief Ada on owls: no summary');

    const both = await getBriefing({ elicitation: {}, sampling: {} });
    expect(Object.keys(both.result!.inputRequests!).sort()).toEqual(['summary', 'who']);
    const answered = await getBriefing(
      { elicitation: {}, sampling: {} },
      { inputResponses: { who, summary }, requestState: both.result!.requestState },
    );
    expect(text(answered.result?.messages)).toBe('Brief Ada on owls: birds of the night');
  });

  it('gets -32602 for an altered state', async () => {
    const first = await getBriefing({ elicitation: {} });
    const altered = await getBriefing(
      { elicitation: {} },
      { inputResponses: { who }, requestState: `${first.result!.requestState!}x` },
    );
    expect(altered.error).toMatchObject({ code: -32602, message: expect.stringContaining('altered') });
  });
});

describe('a legacy client', () => {
  it('is asked by the gateway on the request’s stream and gets the finished prompt', async () => {
    const client = new Client(
      { name: 'legacy-reader', version: '1.0.0' },
      { capabilities: { elicitation: {}, sampling: {} } },
    );
    const asked: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      asked.push(request.params.message);
      return who;
    });
    client.setRequestHandler(CreateMessageRequestSchema, () => {
      asked.push('sampling');
      return summary as never;
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${stack.gatewayUrl}${path}`)));
    const prompt = await client.getPrompt({ name: 'briefing', arguments: { topic: 'owls' } });
    expect(text(prompt.messages)).toBe('Brief Ada on owls: birds of the night');
    expect(asked.sort()).toEqual(['Who reads the briefing?', 'sampling']);
    await client.close();
  });
});
