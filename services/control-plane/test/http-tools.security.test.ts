// Pins what a caller of an HTTP tool cannot do, against a real API on 127.0.0.1: move the request
// to another path with a path argument, add headers through a header argument, get a secret
// resolved from an argument or read one back from an error, or hold the thread with result_path.
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callHttpTool, validateHttpToolConfig, type HttpCallDeps } from '../src/kinds/http/index.ts';
import { sendJson, startRecordingApi, type RecordingApi } from './support/recording-api.ts';
import { failure } from './support/domain-failure.ts';

const TOKEN = 'tok_9f8e7d6c5b4a';
let api: RecordingApi;
let dispatcher: Agent;
let deps: HttpCallDeps;

beforeAll(async () => {
  api = await startRecordingApi((request, response) => {
    if (request.url.startsWith('/echo-auth')) {
      // An API that repeats the credential it refused, as some do.
      response.writeHead(401, { 'content-type': 'text/plain' });
      response.end(`invalid credential: ${String(request.headers['x-api-key'])} (${request.url})`);
    } else if (request.url.startsWith('/numbers')) {
      sendJson(
        response,
        200,
        Array.from({ length: 1_000 }, (_, i) => i),
      );
    } else {
      sendJson(response, 200, { ok: true });
    }
  });
  dispatcher = new Agent();
  deps = {
    dispatcher,
    resolveSecrets: (text) => text.replaceAll('{{secret.API_KEY}}', TOKEN),
    redact: (text) => text.replaceAll(TOKEN, '[secret]'),
  };
});

afterAll(async () => {
  await dispatcher.close();
  await api.close();
});

const files = () =>
  validateHttpToolConfig({
    method: 'GET',
    url: `${api.url}/files/{name}/meta`,
    params: [{ name: 'name', in: 'path' }],
  });

describe('path arguments', () => {
  it.each([
    ['../admin', '/files/..%2Fadmin/meta'],
    ['a/b?c=1#d', '/files/a%2Fb%3Fc%3D1%23d/meta'],
    ['%2e%2e', '/files/%252e%252e/meta'],
    ['...', '/files/.../meta'],
  ])('stay one segment: %s', async (value, received) => {
    await callHttpTool(files(), { name: value }, deps);
    expect(api.requests.at(-1)!.url).toBe(received);
  });

  it.each(['..', '.', ''])('cannot be the dot segment or empty segment "%s"', async (value) => {
    const before = api.requests.length;
    const error = await failure(callHttpTool(files(), { name: value }, deps));
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(api.requests.length).toBe(before);
  });

  it('cannot be an object', async () => {
    const error = await failure(callHttpTool(files(), { name: { toString: 'x' } }, deps));
    expect(error.message).toBe(
      'argument name must be a string, number, boolean or an array of them (it is sent in the path)',
    );
  });
});

describe('header arguments', () => {
  it('cannot add a header with a line break', async () => {
    const config = validateHttpToolConfig({
      method: 'GET',
      url: `${api.url}/h`,
      params: [{ name: 'lang', in: 'header', key: 'Accept-Language' }],
    });
    const before = api.requests.length;
    const error = await failure(callHttpTool(config, { lang: 'en\r\nX-Admin: yes' }, deps));
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(api.requests.length).toBe(before);
  });
});

describe('secrets', () => {
  it('are resolved in the config only: an argument naming one is sent as written', async () => {
    const config = validateHttpToolConfig({
      method: 'POST',
      url: `${api.url}/echo`,
      headers: { 'X-Api-Key': '{{secret.API_KEY}}' },
      params: [
        { name: 'q', in: 'query' },
        { name: 'h', in: 'header', key: 'X-Note' },
        { name: 'b', in: 'body', key: 'b' },
      ],
    });
    const reference = '{{secret.API_KEY}}';
    await callHttpTool(config, { q: reference, h: reference, b: reference }, deps);
    const received = api.requests.at(-1)!;
    expect(received.headers['x-api-key']).toBe(TOKEN);
    expect(received.url).toBe(`/echo?q=${encodeURIComponent(reference)}`);
    expect(received.headers['x-note']).toBe(reference);
    expect(JSON.parse(received.body)).toEqual({ b: reference });
  });

  it('never appear in an error, even when the API echoes them', async () => {
    const config = validateHttpToolConfig({
      method: 'GET',
      url: `${api.url}/echo-auth`,
      headers: { 'X-Api-Key': '{{secret.API_KEY}}' },
      query: { key: '{{secret.API_KEY}}' },
    });
    const error = await failure(callHttpTool(config, {}, deps));
    expect(api.requests.at(-1)!.headers['x-api-key']).toBe(TOKEN);
    expect(api.requests.at(-1)!.url).toBe(`/echo-auth?key=${TOKEN}`);
    expect(error.code).toBe('UPSTREAM_FAILED');
    expect(error.details?.body_excerpt).toBe(`invalid credential: [secret] (/echo-auth?key=[secret])`);
    expect(JSON.stringify({ message: error.message, details: error.details })).not.toContain(TOKEN);
  });
});

describe('result_path', () => {
  it('runs within a budget: a hostile path ends with LIMIT_EXCEEDED in well under a second', async () => {
    const config = validateHttpToolConfig({
      method: 'GET',
      url: `${api.url}/numbers`,
      result_path: 'map(&map(&map(&map(&@, $), $), $), $)',
    });
    const started = performance.now();
    const error = await failure(callHttpTool(config, {}, deps));
    expect(error.code).toBe('LIMIT_EXCEEDED');
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});
