// Pins how an HTTP tool fails, against a real API on 127.0.0.1: a slow API ends in TIMEOUT (reads)
// or OUTCOME_UNKNOWN (writes) at the tool's deadline, an oversize answer stops being read at the
// limit, a non-2xx answer is UPSTREAM_FAILED with its status and a bounded excerpt; and each bad
// config is refused when saved with an error naming the field.
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callHttpTool, validateHttpToolConfig, type HttpCallDeps } from '../src/kinds/http/index.ts';
import { sendJson, startRecordingApi, type RecordingApi } from './support/recording-api.ts';
import { DomainError } from '../src/domain/errors.ts';
import { failure } from './support/domain-failure.ts';

let api: RecordingApi;
let dispatcher: Agent;
let deps: HttpCallDeps;
/** Bytes the oversize handler managed to write before the client hung up. */
let streamedBytes = 0;

beforeAll(async () => {
  api = await startRecordingApi((request, response) => {
    const path = request.url.split('?')[0];
    if (path === '/slow') {
      setTimeout(() => sendJson(response, 200, { late: true }), 2_000).unref();
    } else if (path === '/slow-body') {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write('{"a": ');
      setTimeout(() => response.end('1}'), 2_000).unref();
    } else if (path === '/big-declared') {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': String(5_000_000) });
      response.write('[');
    } else if (path === '/big-streamed') {
      // Chunked, no length: an endless answer, written while the client keeps reading.
      response.writeHead(200, { 'content-type': 'text/plain' });
      const chunk = 'x'.repeat(16 * 1024);
      const pump = () => {
        while (!response.destroyed && streamedBytes < 50_000_000) {
          streamedBytes += chunk.length;
          if (!response.write(chunk)) return void response.once('drain', pump);
        }
        response.end();
      };
      response.on('close', () => response.destroy());
      pump();
    } else if (path === '/missing') {
      response.writeHead(404, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ message: 'no such user', padding: 'p'.repeat(5_000) }));
    } else if (path === '/moved') {
      response.writeHead(302, { location: 'http://127.0.0.1:1/elsewhere' });
      response.end();
    } else if (path === '/broken-json') {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{"a": 1,');
    } else if (path === '/binary') {
      response.writeHead(200, { 'content-type': 'image/png' });
      response.end(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0xff, 0xfe, 0x00, 0xc3]));
    } else {
      sendJson(response, 200, { ok: true });
    }
  });
  dispatcher = new Agent();
  deps = { dispatcher, resolveSecrets: (text) => text, redact: (text) => text };
});

afterAll(async () => {
  await dispatcher.close();
  await api.close();
});

function call(config: Record<string, unknown>, args: Record<string, unknown> = {}) {
  return callHttpTool(validateHttpToolConfig(config), args, deps);
}

describe('an HTTP tool call that fails', () => {
  it('ends a GET at its timeout with TIMEOUT', async () => {
    const started = performance.now();
    const error = await failure(call({ method: 'GET', url: `${api.url}/slow`, timeout_ms: 200 }));
    expect(performance.now() - started).toBeLessThan(1_500);
    expect(error.code).toBe('TIMEOUT');
    expect(error.message).toBe(`GET ${api.url}/slow did not answer within 200 ms`);
  });

  it('ends a POST at its timeout with OUTCOME_UNKNOWN, since it may have been applied', async () => {
    const error = await failure(call({ method: 'POST', url: `${api.url}/slow`, timeout_ms: 200 }));
    expect(error.code).toBe('OUTCOME_UNKNOWN');
    expect(error.message).toContain('may have been applied');
  });

  it('counts the deadline over the body too, not only until the headers', async () => {
    const started = performance.now();
    const error = await failure(call({ method: 'GET', url: `${api.url}/slow-body`, timeout_ms: 300 }));
    expect(performance.now() - started).toBeLessThan(1_500);
    expect(error.code).toBe('TIMEOUT');
  });

  it('refuses an answer whose declared length passes max_response_bytes before reading it', async () => {
    const error = await failure(
      call({ method: 'GET', url: `${api.url}/big-declared`, max_response_bytes: 1_000 }),
    );
    expect(error.code).toBe('RESULT_TOO_LARGE');
    expect(error.message).toContain('more than 1000 bytes (max_response_bytes)');
    expect(error.details).toEqual({ limit_bytes: 1_000 });
  });

  it('stops reading an endless answer at max_response_bytes', async () => {
    streamedBytes = 0;
    const error = await failure(
      call({ method: 'GET', url: `${api.url}/big-streamed`, max_response_bytes: 100_000 }),
    );
    expect(error.code).toBe('RESULT_TOO_LARGE');
    // The server stops once the client hangs up: far below the 50 MB it would send.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(streamedBytes).toBeLessThan(10_000_000);
  });

  it('answers UPSTREAM_FAILED with the status and a bounded excerpt for a non-2xx answer', async () => {
    const error = await failure(call({ method: 'GET', url: `${api.url}/missing` }));
    expect(error.code).toBe('UPSTREAM_FAILED');
    expect(error.message).toBe(`GET ${api.url}/missing answered HTTP 404`);
    expect(error.details).toMatchObject({ status: 404, body_truncated: true });
    const excerpt = String(error.details?.body_excerpt);
    expect(excerpt.startsWith('{"message":"no such user"')).toBe(true);
    expect(excerpt.length).toBe(1024);
  });

  it('follows a redirect through the dispatcher, and reports a 3xx it may not follow', async () => {
    // Followed: the location (a closed port on loopback) is where the call then fails.
    const followed = await failure(call({ method: 'GET', url: `${api.url}/moved` }));
    expect(followed.code).toBe('UPSTREAM_FAILED');
    expect(followed.message).toMatch(/^could not reach GET http:\/\/127\.0\.0\.1:\d+\/moved: /);
    expect(followed.details).toMatchObject({ cause_code: 'ECONNREFUSED' });
    // With following off, the status and location are what the caller learns.
    const reported = await failure(
      callHttpTool(
        validateHttpToolConfig({ method: 'GET', url: `${api.url}/moved` }),
        {},
        {
          ...deps,
          limits: { maxRedirects: 0 },
        },
      ),
    );
    expect(reported.code).toBe('UPSTREAM_FAILED');
    expect(reported.details).toMatchObject({ status: 302, location: 'http://127.0.0.1:1/elsewhere' });
  });

  it('answers UPSTREAM_FAILED for invalid JSON, a binary answer and an API that is not there', async () => {
    const broken = await failure(call({ method: 'GET', url: `${api.url}/broken-json` }));
    expect(broken.code).toBe('UPSTREAM_FAILED');
    expect(broken.message).toContain('answered invalid JSON');
    const binary = await failure(call({ method: 'GET', url: `${api.url}/binary` }));
    expect(binary.message).toContain('answered image/png that is not text');
    const closed = await startRecordingApi(() => undefined);
    await closed.close();
    const unreachable = await failure(call({ method: 'GET', url: `${closed.url}/x` }));
    expect(unreachable.code).toBe('UPSTREAM_FAILED');
    expect(unreachable.message).toContain(`could not reach GET ${closed.url}/x`);
    expect(unreachable.details).toEqual({ cause_code: 'ECONNREFUSED' });
  });

  it('reports a result_path that fails on the answer', async () => {
    const error = await failure(call({ method: 'GET', url: `${api.url}/ok`, result_path: 'abs(ok)' }));
    expect(error.code).toBe('INVALID_QUERY');
    expect(error.message).toMatch(/^result_path: The query failed on this data/);
  });
});

describe('saving an HTTP tool refuses a bad config, naming the field', () => {
  const base = {
    method: 'GET',
    url: 'https://api.example.com/users/{id}',
    params: [{ name: 'id', in: 'path' }],
  };
  const cases: [string, Record<string, unknown>, string, string][] = [
    [
      'a method outside the six',
      { method: 'TRACE' },
      'method',
      'method: must be one of GET, POST, PUT, PATCH, DELETE, HEAD',
    ],
    ['an unknown field', { retries: 3 }, 'retries', 'retries: unknown field "retries"'],
    ['a relative URL', { url: '/users/{id}' }, 'url', 'url: "/users/{id}" is not an absolute http(s) URL'],
    [
      'another scheme',
      { url: 'ftp://files.example.com/{id}' },
      'url',
      'url: the scheme must be http or https, not "ftp"',
    ],
    [
      'a placeholder in the host',
      { url: 'https://{id}.example.com/users' },
      'url',
      'url: placeholders may only appear in the path, not in the host or port',
    ],
    [
      'a placeholder in the query',
      { url: 'https://api.example.com/users?id={id}' },
      'url',
      'url: placeholders may only appear in the path, not in the query string',
    ],
    [
      'a placeholder without a path param',
      { params: [] },
      'url',
      'url: the placeholder {id} has no path parameter (params with "in": "path")',
    ],
    [
      'a path param without its placeholder',
      {
        params: [
          { name: 'id', in: 'path' },
          { name: 'org', in: 'path' },
        ],
      },
      'params/1',
      'params/1: path parameter "org" has no {org} in the url',
    ],
    [
      'an unbalanced brace',
      { url: 'https://api.example.com/users/{id}}' },
      'url',
      'url: unbalanced "}" in the path',
    ],
    [
      'credentials in the URL',
      { url: 'https://user:pw@api.example.com/users/{id}' },
      'url',
      'url: credentials in the URL are refused; send them in a header with a secret',
    ],
    [
      'a duplicate argument name',
      {
        params: [
          { name: 'id', in: 'path' },
          { name: 'id', in: 'query' },
        ],
      },
      'params/1/name',
      'params/1/name: duplicate argument name "id"',
    ],
    [
      'an argument name clients cannot send',
      {
        params: [
          { name: 'id', in: 'path' },
          { name: 'filter[x]', in: 'query' },
        ],
      },
      'params/1/name',
      'params/1/name: must match pattern "^[A-Za-z0-9_.-]{1,64}$"',
    ],
    [
      'a body on a GET',
      {
        params: [
          { name: 'id', in: 'path' },
          { name: 'b', in: 'body' },
        ],
      },
      'params/1/in',
      'params/1/in: a GET request has no body; use query or header',
    ],
    [
      'a whole body next to body properties',
      {
        method: 'POST',
        params: [
          { name: 'id', in: 'path' },
          { name: 'b', in: 'body' },
          { name: 'c', in: 'body', key: 'c' },
        ],
      },
      'params/1',
      'params/1: an argument that is the whole body (no key) cannot be combined with body properties (with a key)',
    ],
    [
      'bad JMESPath',
      { result_path: 'items[?' },
      'result_path',
      'result_path: The query is not valid JMESPath',
    ],
    [
      'an invalid header name',
      { headers: { 'X Bad': 'v' } },
      'headers/X Bad',
      'headers/X Bad: "X Bad" is not a valid header name',
    ],
    [
      'a header the client owns',
      { headers: { Host: 'evil.example' } },
      'headers/Host',
      'headers/Host: the header "Host" is set by the HTTP client, not by a tool',
    ],
    [
      'a header parameter with an invalid name',
      {
        params: [
          { name: 'id', in: 'path' },
          { name: 'h', in: 'header', key: 'Bad:Name' },
        ],
      },
      'params/1',
      'params/1: "Bad:Name" is not a valid header name',
    ],
    [
      'the same header twice',
      {
        headers: { 'X-Key': 'a' },
        params: [
          { name: 'id', in: 'path' },
          { name: 'k', in: 'header', key: 'x-key' },
        ],
      },
      'headers/X-Key',
      'headers/X-Key: the header "X-Key" is set twice',
    ],
    [
      'a header value with a line break',
      { headers: { 'X-A': 'a\r\nX-B: b' } },
      'headers/X-A',
      'headers/X-A: a header value may not hold line breaks or NUL',
    ],
    [
      'a malformed secret reference',
      { headers: { Authorization: 'Bearer {{secrets.TOKEN}}' } },
      'headers/Authorization',
      'headers/Authorization: "{{secrets.TOKEN}}" is not a secret reference',
    ],
    [
      'an unclosed secret reference',
      { query: { key: '{{secret.KEY' } },
      'query/key',
      'query/key: "{{secret.KEY" is not a secret reference',
    ],
    [
      'a secret in the URL',
      { url: 'https://api.example.com/users/{id}?k={{secret.K}}' },
      'url',
      'url: "{{...}}" is not allowed in the URL',
    ],
    ['a timeout out of bounds', { timeout_ms: 600_000 }, 'timeout_ms', 'timeout_ms: must be <= 60000'],
    [
      'a response limit out of bounds',
      { max_response_bytes: 0 },
      'max_response_bytes',
      'max_response_bytes: must be >= 1',
    ],
    [
      'an input schema without a param’s property',
      { input_schema: { type: 'object', properties: {} } },
      'input_schema',
      'input_schema: has no property "id" for the path parameter of that name',
    ],
    [
      'an input schema that does not require a path param',
      { input_schema: { type: 'object', properties: { id: { type: 'string' } } } },
      'input_schema',
      'input_schema: must list the path parameter "id" in required',
    ],
    [
      'an input schema with a property sent nowhere',
      { input_schema: { type: 'object', properties: { id: {}, extra: {} }, required: ['id'] } },
      'input_schema',
      'input_schema: the property "extra" is not sent anywhere',
    ],
    [
      'an input schema that is not JSON Schema',
      // Not valid in any dialect (an unknown keyword would be ignored, as in any tool's schema).
      { input_schema: { type: 'object', properties: { a: { type: 'text' } } } },
      'input_schema',
      'input_schema: not a usable JSON Schema',
    ],
  ];

  it.each(cases)('%s', (_what, change, field, message) => {
    let thrown: unknown;
    try {
      validateHttpToolConfig({ ...base, ...change });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(DomainError);
    const error = thrown as DomainError;
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.details?.field).toBe(field);
    expect(error.message.slice(0, message.length)).toBe(message);
  });

  it('refuses a config that is not an object', () => {
    expect(() => validateHttpToolConfig('GET https://x')).toThrow(
      'config: an HTTP tool config must be an object',
    );
  });
});
