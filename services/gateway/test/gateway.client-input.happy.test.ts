// Pins custom tools that ask their client for input (ctx.elicit, ctx.sample, ctx.roots), end to end
// (client -> gateway -> control plane -> sandbox), in both protocol eras:
// - modern (2026-07-28, MRTR): a call answers input_required with the tool's requests, keyed as it
//   named them, and a signed requestState; the retry with inputResponses and the state completes
//   it, round after round; the rounds may go to another gateway after the control plane restarted
//   (nothing of the call is kept between them); an altered state, or one brought back for another
//   call, is JSON-RPC -32602; a capability the client did not declare is HTTP 400 with -32021
//   naming it in requiredCapabilities, and ctx.client says what the client declared;
// - legacy (a v1 SDK client's session): the gateway sends elicitation/create, sampling/createMessage
//   and roots/list on the call's stream, answered by the client's handlers, and the call completes;
//   a handler that fails, and a client without the capability, get a tool error naming what.
// Each round is one audit row, `input_required` until the last.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { rawPost } from './support/raw-post.ts';
import { readAnswer } from './support/mcp-raw.ts';
import { startStack, type Stack } from './support/stack.ts';

const VERSION = '2026-07-28';
const CLIENT = { name: 'input-test', version: '1.0.0' };
const envelope = (capabilities: Record<string, unknown>) => ({
  'io.modelcontextprotocol/protocolVersion': VERSION,
  'io.modelcontextprotocol/clientCapabilities': capabilities,
  'io.modelcontextprotocol/clientInfo': CLIENT,
});
const ALL = { elicitation: {}, sampling: {}, roots: { listChanged: true } };

const NAME_SCHEMA = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] };
const GREET = `export default async (args, ctx) => {
  const answer = await ctx.elicit('What is your name?', ${JSON.stringify(NAME_SCHEMA)}, { key: 'user_name' });
  if (answer.action !== 'accept') return 'no name given';
  return { content: [{ type: 'text', text: args.greeting + ', ' + answer.content.name + '!' }] };
}`;
const SURVEY = `export default async (args, ctx) => {
  const name = await ctx.elicit('Step 1: what is your name?', ${JSON.stringify(NAME_SCHEMA)}, { key: 'step1' });
  const [color, roots] = await Promise.all([
    ctx.elicit('Step 2: your favourite colour?', { type: 'object', properties: { color: { type: 'string' } } }, { key: 'step2' }),
    ctx.roots(),
  ]);
  const verdict = await ctx.sample('Is ' + color.content.color + ' a good colour?', { key: 'judge' });
  return { name: name.content.name, color: color.content.color, roots: roots.map((r) => r.uri), verdict: verdict.content.text };
}`;
const WHO = `export default (args, ctx) => ctx.client`;

let stack: Stack;
let path: string;
let aeiId: string;
let token: string;

beforeAll(async () => {
  stack = await startStack();
  token = (await stack.admin('POST', '/api/v2/users', { name: 'asker' })).token as string;
  const as = (method: string, to: string, body?: unknown) => stack.admin(method, to, body, token);
  const custom = (name: string, code: string, properties: Record<string, unknown> = {}) =>
    as('POST', '/api/v2/adis', { kind: 'custom', name, code, input_schema: { type: 'object', properties } });
  const adis = [
    await custom('greet', GREET, { greeting: { type: 'string', default: 'Hello' } }),
    await custom('survey', SURVEY),
    await custom('who', WHO),
  ];
  const aei = await as('POST', '/api/v2/aeis', { name: 'asking' });
  aeiId = aei.id as string;
  await as(
    'POST',
    `/api/v2/aeis/${aeiId}/bindings`,
    adis.map((adi) => ({ adi_id: adi.id })),
  );
  path = `/api/v2/mcp/server/${String(aei.api_key)}`;
});
afterAll(() => stack.close());

interface Call {
  name: string;
  args?: Record<string, unknown>;
  capabilities?: Record<string, unknown>;
  inputResponses?: Record<string, unknown>;
  requestState?: string;
  gatewayUrl?: string;
}

/** A modern tools/call; the status and the JSON-RPC answer. */
async function call({ name, args = {}, capabilities = ALL, inputResponses, requestState, gatewayUrl }: Call) {
  const res = await rawPost(
    gatewayUrl ?? stack.gatewayUrl,
    path,
    JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: {
        name,
        arguments: args,
        ...(inputResponses !== undefined && { inputResponses }),
        ...(requestState !== undefined && { requestState }),
        _meta: envelope(capabilities),
      },
    }),
    {
      headers: {
        'mcp-protocol-version': VERSION,
        'mcp-method': 'tools/call',
        'mcp-name': name,
        accept: 'application/json, text/event-stream',
      },
    },
  );
  const answer = readAnswer(res).messages.at(-1) as {
    result?: Record<string, unknown> & { requestState?: string; inputRequests?: Record<string, unknown> };
    error?: { code: number; message: string; data?: Record<string, unknown> };
  };
  return { status: res.status, ...answer };
}

const accept = (content: Record<string, unknown>) => ({ action: 'accept', content });
/** The JSON a tool answered (its text content). */
const answered = (result: Record<string, unknown> | undefined) =>
  JSON.parse((result?.content as { text: string }[])[0]!.text) as unknown;

describe('a modern client (input_required, then a retry)', () => {
  it('is asked what the tool asks, keyed as the tool named it, with a signed state', async () => {
    const first = await call({ name: 'greet' });
    expect(first.status).toBe(200);
    expect(first.result).toMatchObject({
      resultType: 'input_required',
      inputRequests: {
        user_name: {
          method: 'elicitation/create',
          params: { message: 'What is your name?', requestedSchema: NAME_SCHEMA },
        },
      },
    });
    expect(first.result).not.toHaveProperty('content');
    expect(first.result!.requestState).toMatch(/^[\w-]+\.[\w-]+$/);

    const second = await call({
      name: 'greet',
      inputResponses: { user_name: accept({ name: 'Alice' }) },
      requestState: first.result!.requestState,
    });
    expect(second.result).toMatchObject({
      resultType: 'complete',
      content: [{ type: 'text', text: 'Hello, Alice!' }],
    });
    expect(second.result).not.toHaveProperty('isError');
  });

  it('goes round after round, each round on any gateway, even after the control plane restarted', async () => {
    const other = await stack.addGateway();
    const r1 = await call({ name: 'survey' });
    expect(Object.keys(r1.result!.inputRequests!)).toEqual(['step1']);

    // Nothing of the call is kept: the next round goes to another gateway and a new control plane.
    await stack.stopControlPlane();
    await stack.startControlPlane();
    const r2 = await call({
      name: 'survey',
      inputResponses: { step1: accept({ name: 'Bo' }) },
      requestState: r1.result!.requestState,
      gatewayUrl: other,
    });
    expect(r2.result).toMatchObject({
      resultType: 'input_required',
      inputRequests: {
        step2: { method: 'elicitation/create' },
        'roots-1': { method: 'roots/list', params: {} },
      },
    });
    expect(r2.result!.requestState).not.toBe(r1.result!.requestState);

    const r3 = await call({
      name: 'survey',
      inputResponses: {
        step2: accept({ color: 'teal' }),
        'roots-1': { roots: [{ uri: 'file:///work', name: 'work' }] },
      },
      requestState: r2.result!.requestState,
    });
    expect(r3.result).toMatchObject({
      resultType: 'input_required',
      inputRequests: {
        judge: {
          method: 'sampling/createMessage',
          params: {
            messages: [{ role: 'user', content: { type: 'text', text: 'Is teal a good colour?' } }],
          },
        },
      },
    });

    const r4 = await call({
      name: 'survey',
      inputResponses: {
        judge: { role: 'assistant', content: { type: 'text', text: 'yes' }, model: 'm' },
        extra_key_nobody_asked: accept({}),
      },
      requestState: r3.result!.requestState,
      gatewayUrl: other,
    });
    expect(r4.result).toMatchObject({ resultType: 'complete' });
    expect(answered(r4.result)).toEqual({
      name: 'Bo',
      color: 'teal',
      roots: ['file:///work'],
      verdict: 'yes',
    });

    // One audit row per round: three asked for input, the last one ok.
    const events = await stack.admin('GET', `/api/v2/audit?aei_id=${aeiId}&limit=100`, undefined, token);
    const rows = (events.items as { tool_name: string; status: string }[]).filter(
      (e) => e.tool_name === 'survey',
    );
    expect(rows.map((e) => e.status).sort()).toEqual([
      'input_required',
      'input_required',
      'input_required',
      'ok',
    ]);
  });

  it('refuses an altered state, and a state brought back for another call, with -32602', async () => {
    const first = await call({ name: 'greet', args: { greeting: 'Hi' } });
    const state = first.result!.requestState!;
    const altered = await call({
      name: 'greet',
      args: { greeting: 'Hi' },
      inputResponses: { user_name: accept({ name: 'Eve' }) },
      requestState: `${state}-TAMPERED`,
    });
    expect(altered.error).toMatchObject({ code: -32602, message: expect.stringContaining('altered') });

    const elsewhere = await call({
      name: 'greet',
      args: { greeting: 'Howdy' },
      inputResponses: { user_name: accept({ name: 'Eve' }) },
      requestState: state,
    });
    expect(elsewhere.error).toMatchObject({ code: -32602, message: expect.stringContaining('another call') });

    const notAResult = await call({ name: 'greet', inputResponses: { user_name: 12345 } });
    expect(notAResult.error).toMatchObject({ code: -32602, message: expect.stringContaining('user_name') });
  });

  it('asks again for what the retry did not answer', async () => {
    const retry = await call({ name: 'greet', inputResponses: { wrong_key: accept({ name: 'X' }) } });
    expect(retry.result).toMatchObject({ resultType: 'input_required', inputRequests: { user_name: {} } });
  });

  it('answers 400 with -32021 naming a capability the client did not declare; ctx.client tells', async () => {
    const refused = await call({ name: 'greet', capabilities: { sampling: {} } });
    expect(refused.status).toBe(400);
    expect(refused.error).toMatchObject({
      code: -32021,
      message: expect.stringContaining('elicitation'),
      data: { requiredCapabilities: { elicitation: {} } },
    });
    const who = await call({ name: 'who', capabilities: { sampling: {} } });
    expect(answered(who.result)).toEqual({ elicitation: false, sampling: true, roots: false });
  });
});

describe('a legacy client (the gateway asks it on the call’s stream)', () => {
  async function legacyClient(capabilities: Record<string, unknown>) {
    const client = new Client(CLIENT, { capabilities });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${stack.gatewayUrl}${path}`)));
    return client;
  }

  it('answers elicitation, roots and sampling requests and the call completes', async () => {
    const client = await legacyClient(ALL);
    const asked: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      asked.push(request.params.message);
      return request.params.message.startsWith('Step 1') ? accept({ name: 'Cy' }) : accept({ color: 'plum' });
    });
    client.setRequestHandler(ListRootsRequestSchema, () => {
      asked.push('roots');
      return { roots: [{ uri: 'file:///home', name: 'home' }] };
    });
    client.setRequestHandler(CreateMessageRequestSchema, (request) => {
      const first = request.params.messages[0]!.content as { text: string };
      asked.push(first.text);
      return { role: 'assistant', content: { type: 'text', text: 'lovely' }, model: 'test-model' };
    });
    const result = await client.callTool({ name: 'survey', arguments: {} });
    expect(result.isError).toBeFalsy();
    expect(answered(result)).toEqual({
      name: 'Cy',
      color: 'plum',
      roots: ['file:///home'],
      verdict: 'lovely',
    });
    // Round by round: the name, then the colour and the roots at once, then the model.
    expect(asked[0]).toBe('Step 1: what is your name?');
    expect(asked.slice(1, 3).sort()).toEqual(['Step 2: your favourite colour?', 'roots']);
    expect(asked[3]).toBe('Is plum a good colour?');
    expect(asked).toHaveLength(4);
    await client.close();
  });

  it('gets a tool error naming the request when its handler fails to answer', async () => {
    const client = await legacyClient({ elicitation: {} });
    client.setRequestHandler(ElicitRequestSchema, () => {
      throw new Error('the user closed the form');
    });
    const result = await client.callTool({ name: 'greet', arguments: {} });
    expect(result.isError).toBe(true);
    const text = (result.content as { text: string }[])[0]!.text;
    expect(JSON.parse(text)).toMatchObject({
      error: {
        code: 'VALIDATION_FAILED',
        message: expect.stringMatching(/did not answer input request "user_name": .*closed the form/),
      },
    });
    await client.close();
  });

  it('gets a tool error naming the capability it lacks', async () => {
    const client = await legacyClient({ sampling: {} });
    const result = await client.callTool({ name: 'greet', arguments: {} });
    expect(result.isError).toBe(true);
    const text = (result.content as { text: string }[])[0]!.text;
    expect(JSON.parse(text)).toMatchObject({
      error: { code: 'PRECONDITION_FAILED', message: expect.stringContaining('elicitation') },
    });
    expect(result).not.toHaveProperty('protocol_error');
    await client.close();
  });
});
