// Pins what an HTTP tool sends and answers, against a real API on 127.0.0.1: each argument reaches
// its place (path, query, header, JSON body), a secret header arrives resolved, JSON answers come
// back structured (through result_path), text as text, and the derived schema and annotations.
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  callHttpTool,
  deriveInputSchema,
  httpToolAnnotations,
  httpToolInputSchema,
  httpToolSecretNames,
  validateHttpToolConfig,
  type HttpCallDeps,
} from '../src/kinds/http/index.ts';
import { sendJson, startRecordingApi, type RecordingApi } from './support/recording-api.ts';

const SECRETS: Record<string, string> = { API_TOKEN: 's3cr3t-token-value' };
let api: RecordingApi;
let dispatcher: Agent;
let deps: HttpCallDeps;

beforeAll(async () => {
  api = await startRecordingApi((request, response) => {
    if (request.url.startsWith('/text')) {
      response.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
      response.end('plain words, ünïcödé');
    } else if (request.method === 'HEAD') {
      response.writeHead(200, { 'content-type': 'application/json', etag: '"v7"' });
      response.end();
    } else {
      sendJson(response, 201, { id: 42, items: [{ name: 'a' }, { name: 'b' }], echo: request.body });
    }
  });
  dispatcher = new Agent();
  deps = {
    dispatcher,
    resolveSecrets: (text) =>
      text.replace(/\{\{secret\.(\w+)\}\}/g, (_, name: string) => SECRETS[name] ?? ''),
    redact: (text) => text.replaceAll(SECRETS.API_TOKEN!, '[secret]'),
  };
});

afterAll(async () => {
  await dispatcher.close();
  await api.close();
});

describe('an HTTP tool call', () => {
  it('sends each argument to its place and the secret header resolved', async () => {
    const config = validateHttpToolConfig({
      method: 'POST',
      url: `${api.url}/orgs/{org}/users/{user_id}?version=2`,
      params: [
        { name: 'org', in: 'path' },
        { name: 'user_id', in: 'path', key: 'user_id', type: 'integer' },
        { name: 'q', in: 'query', key: 'search' },
        { name: 'tags', in: 'query', type: 'array' },
        { name: 'trace', in: 'header', key: 'X-Trace-Id' },
        { name: 'user_name', in: 'body', key: 'name' },
        { name: 'age', in: 'body', key: 'age', type: 'integer' },
      ],
      headers: { Authorization: 'Bearer {{secret.API_TOKEN}}', 'X-Static': 'fixed' },
      query: { client: 'bindery' },
    });
    const answer = await callHttpTool(
      config,
      {
        org: 'acme corp/eu',
        user_id: 7,
        q: 'a&b=c',
        tags: ['x', 'y'],
        trace: 't-1',
        user_name: 'Ada',
        age: 36,
      },
      deps,
    );
    const received = api.requests.at(-1)!;
    expect(received.method).toBe('POST');
    expect(received.url).toBe(
      '/orgs/acme%20corp%2Feu/users/7?version=2&client=bindery&search=a%26b%3Dc&tags=x&tags=y',
    );
    expect(received.headers.authorization).toBe('Bearer s3cr3t-token-value');
    expect(received.headers['x-static']).toBe('fixed');
    expect(received.headers['x-trace-id']).toBe('t-1');
    expect(received.headers['content-type']).toBe('application/json');
    expect(JSON.parse(received.body)).toEqual({ name: 'Ada', age: 36 });
    expect(answer).toEqual({
      type: 'json',
      status: 201,
      value: { id: 42, items: [{ name: 'a' }, { name: 'b' }], echo: '{"name":"Ada","age":36}' },
    });
  });

  it('sends a whole-body argument as the JSON body and leaves absent optional arguments out', async () => {
    const config = validateHttpToolConfig({
      method: 'PUT',
      url: `${api.url}/things`,
      params: [
        { name: 'thing', in: 'body' },
        { name: 'dry', in: 'query', type: 'boolean' },
      ],
    });
    await callHttpTool(config, { thing: [1, { a: null }] }, deps);
    const received = api.requests.at(-1)!;
    expect(received.url).toBe('/things');
    expect(JSON.parse(received.body)).toEqual([1, { a: null }]);
  });

  it('applies result_path to a JSON answer', async () => {
    const config = validateHttpToolConfig({
      method: 'GET',
      url: `${api.url}/list`,
      result_path: 'items[].name',
    });
    expect(await callHttpTool(config, {}, deps)).toEqual({ type: 'json', status: 201, value: ['a', 'b'] });
    expect(api.requests.at(-1)!.body).toBe('');
  });

  it('answers text for a text response, in its charset', async () => {
    const config = validateHttpToolConfig({ method: 'GET', url: `${api.url}/text`, result_path: 'ignored' });
    expect(await callHttpTool(config, {}, deps)).toEqual({
      type: 'text',
      status: 200,
      text: 'plain words, ünïcödé',
    });
  });

  it('answers the status and plain headers of a HEAD request', async () => {
    const config = validateHttpToolConfig({ method: 'HEAD', url: `${api.url}/probe` });
    const answer = await callHttpTool(config, {}, deps);
    expect(answer).toEqual({
      type: 'json',
      status: 200,
      value: { status: 200, headers: { 'content-type': 'application/json', etag: '"v7"' } },
    });
  });
});

describe('saving an HTTP tool', () => {
  it('fills in the defaults and derives the input schema from the params', () => {
    const config = validateHttpToolConfig({
      method: 'GET',
      url: 'https://api.example.com/users/{id}',
      params: [
        { name: 'id', in: 'path', type: 'integer', description: 'the user' },
        { name: 'verbose', in: 'query', type: 'boolean', required: true },
        { name: 'lang', in: 'header', key: 'Accept-Language' },
      ],
    });
    expect(config.timeout_ms).toBe(10_000);
    expect(config.max_response_bytes).toBe(1024 * 1024);
    expect(httpToolInputSchema(config)).toEqual({
      type: 'object',
      properties: {
        id: { type: 'integer', description: 'the user' },
        verbose: { type: 'boolean' },
        lang: { type: 'string' },
      },
      required: ['id', 'verbose'],
      additionalProperties: false,
    });
    expect(deriveInputSchema([{ name: 'payload', in: 'body' }])).toEqual({
      type: 'object',
      properties: { payload: { type: 'object' } },
      additionalProperties: false,
    });
  });

  it('keeps an edited input schema that matches the params', () => {
    const input_schema = {
      type: 'object',
      properties: { id: { type: 'string', pattern: '^[a-z]+$' } },
      required: ['id'],
    };
    const config = validateHttpToolConfig({
      method: 'DELETE',
      url: 'https://api.example.com/users/{id}',
      params: [{ name: 'id', in: 'path' }],
      input_schema,
    });
    expect(httpToolInputSchema(config)).toEqual(input_schema);
  });

  it('derives annotations from the method; the author’s win', () => {
    expect(httpToolAnnotations({ method: 'GET' })).toEqual({ readOnlyHint: true, openWorldHint: true });
    expect(httpToolAnnotations({ method: 'HEAD' })).toEqual({ readOnlyHint: true, openWorldHint: true });
    expect(httpToolAnnotations({ method: 'PUT' })).toEqual({
      readOnlyHint: false,
      idempotentHint: true,
      openWorldHint: true,
    });
    expect(httpToolAnnotations({ method: 'DELETE' })).toMatchObject({ idempotentHint: true });
    expect(httpToolAnnotations({ method: 'POST' })).toEqual({ readOnlyHint: false, openWorldHint: true });
    expect(
      httpToolAnnotations({ method: 'POST', annotations: { title: 'Add', idempotentHint: true } }),
    ).toEqual({
      readOnlyHint: false,
      openWorldHint: true,
      title: 'Add',
      idempotentHint: true,
    });
  });

  it('lists the secrets a config references', () => {
    expect(
      httpToolSecretNames({
        headers: { Authorization: 'Bearer {{secret.TOKEN}}', 'X-Both': '{{secret.B}}:{{secret.TOKEN}}' },
        query: { key: '{{secret.A_KEY}}' },
      }),
    ).toEqual(['A_KEY', 'B', 'TOKEN']);
  });
});
