// Pins the `http` kind's security through the admin API and the executor, with traffic to loopback
// only: without HTTP_TOOLS_ALLOWED_NETWORKS a tool aimed at 127.0.0.1, localhost or
// [::ffff:127.0.0.1] is refused (FORBIDDEN naming the setting) and the API receives nothing; with
// 127.0.0.1/32 allowed, a redirect to 127.0.0.2 is refused and 127.0.0.2 receives nothing, and a
// redirect to another origin does not carry the secret header along; a secret's value appears in
// no REST answer, no log line (level trace), no audit row and no tool result or error, even when
// the API echoes it back in its JSON, its text or its error body, as is or encoded (base64, hex,
// percent-encoded; inside a longer base64 text too); a value stored shorter than the minimum is not
// sent at all: the call fails naming the secret, instead of an answer garbled by its redaction.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/domain/ids.ts';
import { INTERNAL_TOKEN, startTestApp, type CallResult, type TestApp } from './support/app.ts';
import { sendJson, startRecordingApi, type RecordingApi } from './support/recording-api.ts';
import { embeddedEncodings, redactedInside, standaloneEncodings } from './support/secret-encodings.ts';

const VALUE = `sv-${randomBytes(12).toString('hex')}`;
// A value whose encodings all differ from it and from each other.
const SPECIAL = `p@ss w0rd/+?&=${randomBytes(6).toString('base64')}~!`;
const logLines: string[] = [];
const answers: string[] = [];
let open: TestApp; // 127.0.0.1/32 allowed
let closed: TestApp; // nothing allowed
let api: RecordingApi;
let elsewhere: RecordingApi; // another origin on 127.0.0.1
let outside: { server: Server; url: string; hits: number };

function ok(res: CallResult, what: string) {
  answers.push(JSON.stringify(res.body ?? null));
  if (res.status >= 300) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** A 6-character piece of a value in `text` (a part leaks as surely as all of it), or an encoding of it. */
function leakIn(text: string): string | undefined {
  for (const value of [VALUE, SPECIAL]) {
    for (let i = 0; i + 6 <= value.length; i++) {
      if (text.includes(value.slice(i, i + 6))) return value.slice(i, i + 6);
    }
  }
  return Object.values(standaloneEncodings(SPECIAL)).find((encoded) => text.includes(encoded));
}

beforeAll(async () => {
  elsewhere = await startRecordingApi((_request, response) => sendJson(response, 200, { landed: true }));
  api = await startRecordingApi((request, response) => {
    const path = new URL(request.url, 'http://api').pathname;
    const key = String(request.headers['x-api-key'] ?? '');
    if (path === '/echo-json') return sendJson(response, 200, { you_sent: key, [key]: 'as a key too' });
    if (path === '/echo-text') {
      response.writeHead(200, { 'content-type': 'text/plain' });
      return void response.end(`your key is ${key} (url-encoded: ${encodeURIComponent(key)})`);
    }
    if (path === '/echo-error') return sendJson(response, 401, { error: `invalid key ${key}` });
    if (path === '/echo-encoded') {
      return sendJson(response, 200, { ...standaloneEncodings(key), ...embeddedEncodings(key) });
    }
    if (path === '/echo-encoded-text') {
      response.writeHead(200, { 'content-type': 'text/plain' });
      const lines = Object.entries({ ...standaloneEncodings(key), ...embeddedEncodings(key) });
      return void response.end(lines.map(([name, text]) => `${name}=${text}`).join('\n'));
    }
    if (path === '/to-outside') {
      response.writeHead(302, { location: `${outside.url}/landing` });
      return void response.end();
    }
    if (path === '/to-elsewhere') {
      response.writeHead(307, { location: `${elsewhere.url}/landing` });
      return void response.end();
    }
    sendJson(response, 200, { ok: true });
  });
  // A server on 127.0.0.2, outside the allowed 127.0.0.1/32: it must never be reached.
  outside = await new Promise((resolve) => {
    const state = { server: undefined as unknown as Server, url: '', hits: 0 };
    state.server = createServer((_req, res) => {
      state.hits++;
      res.end('reached');
    });
    state.server.listen(0, '127.0.0.2', () => {
      state.url = `http://127.0.0.2:${(state.server.address() as AddressInfo).port}`;
      resolve(state);
    });
  });
  open = await startTestApp({
    allowedNetworks: ['127.0.0.1/32'],
    logStream: { write: (line) => void logLines.push(line) },
  });
  closed = await startTestApp();
});
afterAll(async () => {
  await open.close();
  await closed.close();
  await api.close();
  await elsewhere.close();
  await new Promise((resolve) => outside.server.close(resolve));
});

/** A user of `t` with the secret (`value`, VALUE unless given), one tool per path of the API, bound in one AEI. */
async function toolsOf(t: TestApp, urls: Record<string, string>, value = VALUE) {
  const user = await t.newUser('security');
  const as = (body?: unknown) => ({ token: user.token, ...(body !== undefined && { body }) });
  ok(await t.call('POST', '/api/v2/secrets', as({ name: 'API_KEY', value })), 'secret');
  const aei = ok(await t.call('POST', '/api/v2/aeis', as({ name: 'agent' })), 'aei');
  const tools: Record<string, { adiId: string; bindingId: string }> = {};
  for (const [name, url] of Object.entries(urls)) {
    const adi = ok(
      await t.call(
        'POST',
        '/api/v2/adis',
        as({ kind: 'http', name, method: 'GET', url, headers: { 'X-Api-Key': '{{secret.API_KEY}}' } }),
      ),
      name,
    );
    ok(await t.call('GET', `/api/v2/adis/${adi.id}`, as()), 'get');
    const binding = ok(
      await t.call('POST', `/api/v2/aeis/${aei.id}/bindings`, as({ adi_id: adi.id })),
      'bind',
    );
    tools[name] = { adiId: adi.id, bindingId: binding.id };
  }
  const call = async (name: string) => {
    const tool = tools[name]!;
    const res = await t.call('POST', `/internal/adi/${tool.adiId}/execute`, {
      token: INTERNAL_TOKEN,
      body: { aei_id: aei.id, binding_id: tool.bindingId, arguments: {} },
    });
    answers.push(JSON.stringify(res.body));
    expect(res.status).toBe(200);
    return res.body as { isError?: boolean; content: { text: string }[]; structuredContent?: unknown };
  };
  return { user, aei, call, as };
}

describe('the SSRF guard on HTTP tools', () => {
  it('refuses 127.0.0.1, localhost and [::ffff:127.0.0.1] without an allowance; the API receives nothing', async () => {
    const port = new URL(api.url).port;
    const { call } = await toolsOf(closed, {
      by_address: `http://127.0.0.1:${port}/plain`,
      by_name: `http://localhost:${port}/plain`,
      by_mapped: `http://[::ffff:127.0.0.1]:${port}/plain`,
    });
    const before = api.requests.length;
    for (const name of ['by_address', 'by_name', 'by_mapped']) {
      const result = await call(name);
      expect(result.isError, name).toBe(true);
      const error = JSON.parse(result.content[0]!.text).error;
      expect(error.code, name).toBe('FORBIDDEN');
      expect(error.message, name).toMatch(/outgoing request to .* refused: .*a loopback address/);
      expect(error.message, name).toContain('HTTP_TOOLS_ALLOWED_NETWORKS');
    }
    expect(api.requests.length).toBe(before);
  });

  it('refuses a redirect from an allowed 127.0.0.1 API to 127.0.0.2, which receives nothing', async () => {
    const { call } = await toolsOf(open, { redirected: `${api.url}/to-outside` });
    const result = await call('redirected');
    expect(result.isError).toBe(true);
    const error = JSON.parse(result.content[0]!.text).error;
    expect(error.code).toBe('FORBIDDEN');
    expect(error.message).toContain('outgoing request to 127.0.0.2 refused');
    expect(outside.hits).toBe(0);
  });

  it('follows an allowed redirect to another origin without the secret header', async () => {
    const { call } = await toolsOf(open, { moved: `${api.url}/to-elsewhere` });
    const result = await call('moved');
    expect(result.structuredContent).toEqual({ landed: true });
    const landed = elsewhere.requests.at(-1)!;
    expect(landed.headers['x-api-key']).toBeUndefined();
    expect(JSON.stringify(landed.headers)).not.toContain(VALUE);
  });
});

describe('a secret’s value', () => {
  it('is in no tool result or error, even when the API echoes it', async () => {
    const { call } = await toolsOf(open, {
      echo_json: `${api.url}/echo-json`,
      echo_text: `${api.url}/echo-text`,
      echo_error: `${api.url}/echo-error`,
    });
    const json = await call('echo_json');
    // The API did receive it: the tool sent it where it was meant to go.
    expect(api.requests.at(-1)!.headers['x-api-key']).toBe(VALUE);
    expect(json.structuredContent).toEqual({
      you_sent: '[secret API_KEY]',
      '[secret API_KEY]': 'as a key too',
    });
    const text = await call('echo_text');
    expect(text.content[0]!.text).toBe('your key is [secret API_KEY] (url-encoded: [secret API_KEY])');
    const error = await call('echo_error');
    expect(error.isError).toBe(true);
    expect(JSON.parse(error.content[0]!.text).error).toMatchObject({
      code: 'UPSTREAM_FAILED',
      details: { status: 401, body_excerpt: '{"error":"invalid key [secret API_KEY]"}' },
    });
  });

  it('is in no tool result when the API echoes it encoded: base64, hex, percent-encoded', async () => {
    const { call } = await toolsOf(
      open,
      { echo_encoded: `${api.url}/echo-encoded`, echo_encoded_text: `${api.url}/echo-encoded-text` },
      SPECIAL,
    );
    const json = (await call('echo_encoded')).structuredContent as Record<string, string>;
    expect(api.requests.at(-1)!.headers['x-api-key']).toBe(SPECIAL);
    for (const name of Object.keys(standaloneEncodings(SPECIAL))) {
      expect(json[name], name).toBe('[secret API_KEY]');
    }
    for (const [name, encoded] of Object.entries(embeddedEncodings(SPECIAL))) {
      expect(json[name], `${name}: ${encoded}`).toMatch(redactedInside('[secret API_KEY]'));
    }
    const text = (await call('echo_encoded_text')).content[0]!.text;
    for (const [name, encoded] of Object.entries({
      ...standaloneEncodings(SPECIAL),
      ...embeddedEncodings(SPECIAL),
    })) {
      expect(text, name).toContain(`${name}=`);
      expect(text, name).not.toContain(encoded);
    }
    expect(text).toContain('base64=[secret API_KEY]\nbase64_unpadded=[secret API_KEY]\n');
  });

  it('stored shorter than the minimum (before there was one) is not sent: the call fails naming it', async () => {
    const { user, as, aei } = await toolsOf(open, {});
    const keyring = open.app.domain.keyring!;
    await open.database.prisma.secret.create({
      data: {
        id: newId('sec'),
        userId: user.id,
        name: 'SHORT',
        ...keyring.seal('a', { userId: user.id, name: 'SHORT' }),
      },
    });
    const adi = ok(
      await open.call(
        'POST',
        '/api/v2/adis',
        as({
          kind: 'http',
          name: 'short',
          method: 'GET',
          url: `${api.url}/echo-text`,
          headers: { 'X-Api-Key': '{{secret.SHORT}}' },
        }),
      ),
      'save',
    );
    const binding = ok(
      await open.call('POST', `/api/v2/aeis/${aei.id}/bindings`, as({ adi_id: adi.id })),
      'bind',
    );
    const call = async () => {
      const res = await open.call('POST', `/internal/adi/${adi.id}/execute`, {
        token: INTERNAL_TOKEN,
        body: { aei_id: aei.id, binding_id: binding.id, arguments: {} },
      });
      expect(res.status).toBe(200);
      return res.body as { isError?: boolean; content: { text: string }[] };
    };
    const before = api.requests.length;
    const refused = await call();
    expect(refused.isError).toBe(true);
    expect(JSON.parse(refused.content[0]!.text).error).toMatchObject({
      code: 'VALIDATION_FAILED',
      message: expect.stringMatching(
        /secret SHORT, whose value is shorter than the 8 characters .* PUT \/api\/v2\/secrets\/SHORT$/,
      ),
      details: { secret: 'SHORT', rule: 'min_length', min_length: 8 },
    });
    expect(refused.content[0]!.text).not.toContain('[secret');
    expect(api.requests.length).toBe(before);
    // Everything else works with it stored: it is listed, and once replaced the tool runs.
    const listed = ok(await open.call('GET', '/api/v2/secrets', as()), 'list');
    expect(listed.items.map((s: { name: string }) => s.name)).toContain('SHORT');
    ok(await open.call('PUT', '/api/v2/secrets/SHORT', as({ value: 'a-longer-value' })), 'replace');
    expect((await call()).content[0]!.text).toBe('your key is [secret SHORT] (url-encoded: [secret SHORT])');
  });

  it('is in no REST answer, log line or audit row of everything above', async () => {
    const { as } = await toolsOf(open, { listed: `${api.url}/plain` });
    ok(await open.call('GET', '/api/v2/adis?kind=http', as()), 'list');
    ok(await open.call('GET', '/api/v2/export', as()), 'export');
    ok(await open.call('GET', '/api/v2/audit', as()), 'audit');
    const leaks = answers.map(leakIn).filter((leak) => leak !== undefined);
    expect(leaks).toEqual([]);
    expect(logLines.length).toBeGreaterThan(0);
    expect(logLines.map(leakIn).filter((leak) => leak !== undefined)).toEqual([]);
    const rows = await open.database.prisma.auditEvent.findMany({});
    expect(rows.length).toBeGreaterThan(0);
    expect(leakIn(JSON.stringify(rows))).toBeUndefined();
  });
});
