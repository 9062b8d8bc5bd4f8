// Pins HTTP tools end to end (SDK Client -> gateway -> control plane process -> a real API on
// 127.0.0.1, allowed by HTTP_TOOLS_ALLOWED_NETWORKS): a hand-made HTTP ADI maps path, query, header
// and body arguments and sends its secret header (the API checks what it received), answering
// structured content; the petstore-expanded example imported through POST /api/v2/openapi-imports
// gives 4 tools an MCP client lists with their annotations and calls; a progressive exposure lists
// the tools under their project's app; the secret's value is in no tool result, admin answer or
// line of the control plane's log (at level trace, requests included).
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resultJson, type Json } from '@bindery/test-support';
import { startStack, type Stack } from './support/stack.ts';

const PETSTORE = readFileSync(
  new URL('../../control-plane/test/fixtures/openapi/petstore-expanded.yaml', import.meta.url),
  'utf8',
);
const VALUE = `sv-${randomBytes(12).toString('hex')}`;
const answers: string[] = [];
let stack: Stack;
let api: {
  server: Server;
  url: string;
  received: { method: string; url: string; headers: IncomingMessage['headers']; body: string }[];
};
let token: string;
let directKey: string;
let progressiveKey: string;

/** The API: checks each part of an add-note request; answers petstore calls with what it got. */
async function startApi(): Promise<typeof api> {
  const received: typeof api.received = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      const url = new URL(req.url ?? '/', 'http://api');
      const send = (status: number, value: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(value));
      };
      if (url.pathname.startsWith('/users/')) {
        const problems: string[] = [];
        if (url.pathname !== '/users/ada%20l/notes') problems.push(`path ${url.pathname}`);
        if (url.searchParams.get('lang') !== 'en') problems.push('query');
        if (req.headers['x-trace-id'] !== 'trace-9') problems.push('header');
        if (req.headers.authorization !== `Bearer ${VALUE}`) problems.push('secret header');
        if (body !== '{"text":"hello"}') problems.push(`body ${body}`);
        return problems.length > 0 ? send(400, { problems }) : send(201, { id: 'n1', saved: true });
      }
      if (req.method === 'DELETE') return void res.writeHead(204).end();
      send(200, [{ id: 1, name: 'Rex', asked: `${req.method} ${req.url}` }]);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received };
}

async function admin(method: string, path: string, body?: unknown): Promise<Json> {
  const res = await stack.adminRaw(method, path, body, token);
  answers.push(JSON.stringify(res.body ?? null));
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

beforeAll(async () => {
  api = await startApi();
  stack = await startStack({
    controlPlaneEnv: {
      HTTP_TOOLS_ALLOWED_NETWORKS: '127.0.0.1/32',
      BINDERY_SECRET_KEY: randomBytes(32).toString('base64'),
      LOG_LEVEL: 'trace',
      LOG_REQUESTS: 'true',
    },
  });
  token = (await stack.admin('POST', '/api/v2/users', { name: 'http tools' })).token;
  const project = await admin('POST', '/api/v2/projects', { name: 'Pet Shop' });
  await admin('POST', '/api/v2/secrets', { name: 'NOTES_TOKEN', value: VALUE });
  const note = await admin('POST', '/api/v2/adis', {
    kind: 'http',
    name: 'add_note',
    project_id: project.id,
    method: 'POST',
    url: `${api.url}/users/{user}/notes`,
    params: [
      { name: 'user', in: 'path' },
      { name: 'lang', in: 'query' },
      { name: 'trace', in: 'header', key: 'X-Trace-Id' },
      { name: 'text', in: 'body', key: 'text', required: true },
    ],
    headers: { Authorization: 'Bearer {{secret.NOTES_TOKEN}}' },
  });
  const imported = await admin('POST', '/api/v2/openapi-imports', {
    document: PETSTORE,
    project_id: project.id,
    base_url: api.url,
  });
  const adiIds = [note.id, ...imported.adis.map((a: { id: string }) => a.id)];
  const direct = await admin('POST', '/api/v2/aeis', { name: 'direct' });
  const progressive = await admin('POST', '/api/v2/aeis', { name: 'catalog', exposure_mode: 'progressive' });
  for (const aei of [direct, progressive]) {
    await admin(
      'POST',
      `/api/v2/aeis/${aei.id}/bindings`,
      adiIds.map((id) => ({ adi_id: id })),
    );
  }
  directKey = direct.api_key;
  progressiveKey = progressive.api_key;
});
afterAll(async () => {
  await stack?.close();
  await new Promise((resolve) => api?.server.close(resolve));
});

describe('HTTP tools through the gateway', () => {
  it('a hand-made tool maps every argument and its secret header, as the API checks', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${directKey}`);
    const result = await client.callTool({
      name: 'add_note',
      arguments: { user: 'ada l', lang: 'en', trace: 'trace-9', text: 'hello' },
    });
    answers.push(JSON.stringify(result));
    expect(result.isError, JSON.stringify(result)).toBeFalsy();
    expect(result.structuredContent).toEqual({ id: 'n1', saved: true });
    expect(resultJson(result)).toEqual({ id: 'n1', saved: true });
    expect(api.received.at(-1)!.headers.authorization).toBe(`Bearer ${VALUE}`);
  });

  it('the imported petstore tools are listed with their annotations and answer calls', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${directKey}`);
    const { tools } = await client.listTools();
    answers.push(JSON.stringify(tools));
    const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool]));
    expect(Object.keys(byName).sort()).toEqual([
      'addPet',
      'add_note',
      'deletePet',
      'findPets',
      'find_pet_by_id',
    ]);
    expect(byName.findPets!.annotations).toMatchObject({ readOnlyHint: true, openWorldHint: true });
    expect(byName.findPets!.title).toMatch(/^GET 127\.0\.0\.1:\d+\/pets$/);
    expect(byName.deletePet!.annotations).toMatchObject({ readOnlyHint: false, idempotentHint: true });
    expect(byName.find_pet_by_id!.inputSchema).toMatchObject({
      properties: { id: { type: 'integer' } },
      required: ['id'],
    });
    const found = await client.callTool({ name: 'findPets', arguments: { tags: ['dog'], limit: 1 } });
    answers.push(JSON.stringify(found));
    // A JSON array answer: JSON text (structured content holds objects only).
    expect(resultJson(found)).toEqual([{ id: 1, name: 'Rex', asked: 'GET /pets?tags=dog&limit=1' }]);
    const one = await client.callTool({ name: 'find_pet_by_id', arguments: { id: 3 } });
    expect(resultJson(one)[0].asked).toBe('GET /pets/3');
    const bad = await client.callTool({ name: 'find_pet_by_id', arguments: { id: 'three' } });
    expect(bad.isError).toBe(true);
    expect(resultJson(bad).error.code).toBe('VALIDATION_FAILED');
  });

  it('a progressive exposure lists the tools under their project’s app', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${progressiveKey}`);
    const early = await client.callTool({ name: 'get_categories', arguments: {} });
    expect(early.isError).toBe(true);
    // Every tool is in the project's app: there is no default app to choose.
    expect(resultJson(early).error.details.apps).toEqual(['pet-shop']);
    await client.callTool({ name: 'initialize_session', arguments: { app_id: 'pet-shop' } });
    const apis = resultJson(
      await client.callTool({ name: 'get_apis_by_category', arguments: { category_id: 'http' } }),
    );
    expect(apis.apis.map((a: { name: string }) => a.name).sort()).toEqual([
      'addPet',
      'add_note',
      'deletePet',
      'findPets',
      'find_pet_by_id',
    ]);
  });

  it('leaves the secret’s value out of every answer and of the control plane’s log', async () => {
    await admin('GET', '/api/v2/adis?kind=http&limit=100');
    await admin('GET', '/api/v2/export');
    const leak = (text: string) => text.includes(VALUE) || text.includes(VALUE.slice(3, 15));
    expect(answers.filter(leak)).toEqual([]);
    const log = stack.controlPlaneOutput();
    expect(log).toContain('openapi-imports');
    expect(leak(log)).toBe(false);
  });
});
