// Pins POST /internal/execute-batch, the exchange gateways share between calls that arrive
// together: each line's answer is the single route's answer for the same body (results, tool
// errors and refusals alike), matched to its line by `i`; a line the single route would refuse
// (bad JSON, no ADI id, an overlong field, a NUL, nesting past the limit) fails alone while the
// others run; writes in a batch all land, each audited once; a batch out of bounds or without the
// internal token is refused whole. A named batch's line is cut alone by
// POST /internal/execute-batch/cancel, also when the cut arrives before the batch.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EXECUTE_BATCH_MAX_CALLS, MAX_BODY_DEPTH, type ExecuteBatchAnswer } from '@bindery/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL_TOKEN, startTestApp, type TestApp } from './support/app.ts';
import { buildFixture, tableState, type Fixture } from './support/tools.ts';

let t: TestApp;
let f: Fixture;

beforeAll(async () => {
  t = await startTestApp();
  f = await buildFixture(
    t,
    {
      customers: [
        { id: 1, tier: 'gold' },
        { id: 2, tier: 'silver' },
        { id: 3, tier: 'gold' },
      ],
      notes: [],
    },
    {
      ask: { json_path: '/customers', operation_type: 'query' },
      note: { json_path: '/notes', operation_type: 'create' },
    },
  );
});
afterAll(() => t.close());

/** A line's request body, as the single route would take it. */
function body(name: string, args: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const tool = f.tools[name]!;
  return {
    aei_id: f.aeiId,
    binding_id: tool.bindingId,
    arguments: args,
    request_id: `batch-${name}`,
    ...extra,
  };
}

const line = (name: string, request: unknown) => `${f.tools[name]!.adiId}\t${JSON.stringify(request)}\n`;

async function batch(
  text: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; type: string | null; answers: ExecuteBatchAnswer[]; error?: unknown }> {
  const res = await fetch(`${t.baseUrl}/internal/execute-batch`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${INTERNAL_TOKEN}`,
      'content-type': 'application/x-ndjson',
      ...headers,
    },
    body: text,
  });
  const raw = await res.text();
  const type = res.headers.get('content-type');
  if (res.status !== 200) return { status: res.status, type, answers: [], error: JSON.parse(raw) };
  const answers = raw
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as ExecuteBatchAnswer);
  return { status: res.status, type, answers };
}

/** The single route's answer to the same call. */
async function alone(adiId: string, raw: string): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${t.baseUrl}/internal/adi/${adiId}/execute`, {
    method: 'POST',
    headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' },
    body: raw,
  });
  return { status: res.status, body: JSON.parse(await res.text()) };
}

/** An answer without what differs between two requests (the error body's request id). */
function comparable(answer: { status: number; body: unknown }) {
  const b = answer.body as { error?: Record<string, unknown> };
  if (!b.error) return { status: answer.status, body: answer.body };
  const { request_id: _ignored, ...error } = b.error;
  return { status: answer.status, body: { error } };
}

describe('answers', () => {
  it('answers every call by its line, as the single route answers it', async () => {
    const calls = [
      body('ask', { query: "[?tier == 'gold'].id" }),
      body('ask', { query: "[?tier == 'silver'].id" }),
      body('ask', { query: 'length(@)' }),
    ];
    const res = await batch(calls.map((c) => line('ask', c)).join(''));
    expect(res.status).toBe(200);
    expect(res.type).toMatch(/^application\/x-ndjson/);
    expect(res.answers.map((a) => a.i).sort()).toEqual([0, 1, 2]);
    const byLine = new Map(res.answers.map((a) => [a.i, a]));
    for (const [i, call] of calls.entries()) {
      const single = await alone(f.tools.ask!.adiId, JSON.stringify(call));
      expect(comparable(byLine.get(i)!)).toEqual(comparable(single));
    }
    const values = [0, 1, 2].map((i) => {
      const b = byLine.get(i)!.body as { isError: boolean; content: { text: string }[] };
      expect(b.isError).not.toBe(true);
      return JSON.parse(b.content[0]!.text);
    });
    expect(values).toEqual([[1, 3], [2], 3]);
  });

  it('writes in one batch all land, each with its own audit row', async () => {
    const before = await tableState(t, f);
    const n = 20;
    const text = Array.from({ length: n }, (_, k) =>
      line('note', body('note', { value: { k } }, { request_id: `batch-note-${k}` })),
    ).join('');
    const res = await batch(text);
    expect(res.answers).toHaveLength(n);
    for (const a of res.answers) {
      expect(a.status).toBe(200);
      expect((a.body as { isError?: boolean }).isError).not.toBe(true);
    }
    const after = await tableState(t, f);
    expect(after.data.notes.map((v: { k: number }) => v.k).sort((a: number, b: number) => a - b)).toEqual(
      Array.from({ length: n }, (_, k) => k),
    );
    expect(after.version).toBe(before.version + n);
    const audit = await t.call('GET', `/api/v2/audit?aei_id=${f.aeiId}&limit=100`, { token: f.token });
    const ids = audit.body.items
      .map((e: { request_id: string | null }) => e.request_id)
      .filter((id: string | null) => id?.startsWith('batch-note-'));
    expect(ids.sort()).toEqual(Array.from({ length: n }, (_, k) => `batch-note-${k}`).sort());
  });
});

describe('one call’s fault is its own', () => {
  it('a line the single route refuses gets that refusal, and the other lines run', async () => {
    const ask = f.tools.ask!.adiId;
    const deep = JSON.stringify(body('ask', { query: '@' })).replace(
      '"@"',
      `${'['.repeat(MAX_BODY_DEPTH)}${']'.repeat(MAX_BODY_DEPTH)}`,
    );
    const bad: [string, string][] = [
      ['JSON that does not parse', `${ask}\t{"aei_id": `],
      [
        'a field over its length',
        JSON.stringify(body('ask', { query: '@' }, { request_id: 'r'.repeat(129) })),
      ],
      ['a NUL in an argument', JSON.stringify(body('ask', { query: 'x\u0000y' }))],
      ['nesting past the limit', deep],
      ['an unknown field', JSON.stringify(body('ask', { query: '@' }, { surprise: true }))],
      [
        'a binding that does not exist',
        JSON.stringify(body('ask', { query: '@' }, { binding_id: 'bnd_none' })),
      ],
    ];
    const good = JSON.stringify(body('ask', { query: 'length(@)' }));
    const texts = [
      good,
      ...bad.map(([, raw]) => (raw.startsWith(ask) ? raw.slice(ask.length + 1) : raw)),
      good,
    ];
    const res = await batch(texts.map((raw) => `${ask}\t${raw}\n`).join(''));
    expect(res.status).toBe(200);
    const byLine = new Map(res.answers.map((a) => [a.i, a]));
    expect(byLine.size).toBe(texts.length);
    for (const [i, raw] of texts.entries()) {
      const single = await alone(ask, raw);
      expect(comparable(byLine.get(i)!), bad[i - 1]?.[0] ?? 'the good call').toEqual(comparable(single));
    }
    // The refusals are what they should be, not merely the same on both routes.
    expect(byLine.get(1)!.status).toBe(400);
    expect(byLine.get(2)).toMatchObject({ status: 400, body: { error: { code: 'VALIDATION_FAILED' } } });
    expect((byLine.get(2)!.body as { error: { message: string } }).error.message).toMatch(/request_id/);
    expect(byLine.get(3)).toMatchObject({ status: 400, body: { error: { code: 'VALIDATION_FAILED' } } });
    expect(byLine.get(4)).toMatchObject({ status: 400, body: { error: { code: 'VALIDATION_FAILED' } } });
    expect(byLine.get(5)).toMatchObject({ status: 400, body: { error: { code: 'VALIDATION_FAILED' } } });
    expect(byLine.get(6)).toMatchObject({ status: 200, body: { isError: true } });
    for (const i of [0, texts.length - 1]) {
      expect(byLine.get(i)).toMatchObject({ status: 200, body: { structuredContent: { result: 3 } } });
    }
  });

  it('a line without an ADI id, or with one a line cannot carry, is refused alone', async () => {
    const good = line('ask', body('ask', { query: 'length(@)' }));
    const res = await batch(`${JSON.stringify(body('ask', {}))}\nno/such id\t{}\n${good}`);
    expect(res.answers.find((a) => a.i === 0)).toMatchObject({
      status: 400,
      body: { error: { code: 'VALIDATION_FAILED', details: { field: 'adi_id' } } },
    });
    expect(res.answers.find((a) => a.i === 1)).toMatchObject({ status: 400 });
    expect(res.answers.find((a) => a.i === 2)).toMatchObject({
      status: 200,
      body: { structuredContent: { result: 3 } },
    });
  });
});

describe('a batch refused whole', () => {
  it('no calls, or more than the most a batch holds: 400 naming the bound', async () => {
    const empty = await batch('');
    expect(empty.status).toBe(400);
    const one = line('ask', body('ask', { query: '@' }));
    const many = await batch(one.repeat(EXECUTE_BATCH_MAX_CALLS + 1));
    expect(many.status).toBe(400);
    expect(many.error).toMatchObject({
      error: { code: 'VALIDATION_FAILED', details: { max_calls: EXECUTE_BATCH_MAX_CALLS } },
    });
    const full = await batch(one.repeat(EXECUTE_BATCH_MAX_CALLS));
    expect(full.answers).toHaveLength(EXECUTE_BATCH_MAX_CALLS);
  });

  it('without the internal token: 401, and nothing runs', async () => {
    const before = await tableState(t, f);
    const res = await fetch(`${t.baseUrl}/internal/execute-batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-ndjson' },
      body: line('note', body('note', { value: 'sneaky' })),
    });
    expect(res.status).toBe(401);
    expect((await tableState(t, f)).version).toBe(before.version);
  });
});

describe('cutting one call of a named batch', () => {
  // An API on loopback that never answers: a call of its tool runs until cut (or its time limit).
  let api: Server;
  let other: TestApp;
  let http: { adiId: string; bindingId: string; aeiId: string };
  const arrived: string[] = [];
  const closed: string[] = [];
  beforeAll(async () => {
    api = createServer((req, res) => {
      const tag = new URL(req.url ?? '/', 'http://api').searchParams.get('tag') ?? '';
      arrived.push(tag);
      res.on('close', () => closed.push(tag));
    });
    await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
    other = await startTestApp({ allowedNetworks: ['127.0.0.1/32'] });
    const adi = await other.call('POST', '/api/v2/adis', {
      body: {
        kind: 'http',
        name: 'hang',
        method: 'GET',
        url: `http://127.0.0.1:${(api.address() as AddressInfo).port}/hang`,
        params: [{ name: 'tag', in: 'query' }],
        timeout_ms: 20_000,
      },
    });
    const aei = await other.call('POST', '/api/v2/aeis', { body: { name: 'cuts' } });
    const binding = await other.call('POST', `/api/v2/aeis/${aei.body.id}/bindings`, {
      body: { adi_id: adi.body.id, tool_name: 'hang' },
    });
    http = { adiId: adi.body.id, bindingId: binding.body.id, aeiId: aei.body.id };
  });
  afterAll(async () => {
    await other?.close();
    await new Promise((resolve) => api?.close(resolve));
  });

  const hangLine = (tag: string) =>
    `${http.adiId}\t${JSON.stringify({ aei_id: http.aeiId, binding_id: http.bindingId, arguments: { tag } })}\n`;
  const post = (
    path: string,
    init: { body: string; headers: Record<string, string>; signal?: AbortSignal },
  ) =>
    fetch(`${other.baseUrl}/internal${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, ...init.headers },
      body: init.body,
      ...(init.signal && { signal: init.signal }),
    });
  const cut = (batchId: string, lines: number[]) =>
    post('/execute-batch/cancel', {
      body: JSON.stringify({ batch: batchId, lines }),
      headers: { 'content-type': 'application/json' },
    });

  it('a cut line ends at once, the other goes on; every answer names the process', async () => {
    const id = 'batch-cut-0000000001';
    const started = performance.now();
    const answer = post('/execute-batch', {
      body: hangLine('a') + hangLine('b'),
      headers: { 'content-type': 'application/x-ndjson', 'x-bindery-batch': id },
    });
    for (let i = 0; i < 200 && arrived.filter((t) => t === 'a' || t === 'b').length < 2; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const res = await cut(id, [0]);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ cancelled: 1 });
    const head = await answer;
    const instance = head.headers.get('x-bindery-instance');
    expect(instance).toMatch(/^[0-9a-f]{16}$/);
    expect(res.headers.get('x-bindery-instance')).toBe(instance);
    const reader = head.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    // Line 0 answered (cut) long before its 20 s limit; line 1 still runs.
    expect(JSON.parse(first.split('\n')[0]!)).toMatchObject({ i: 0, body: { isError: true } });
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(closed).toContain('a');
    expect(closed).not.toContain('b');
    await reader.cancel();
  });

  it('closing a named batch’s connection cuts every call of it still running', async () => {
    const id = 'batch-cut-0000000003';
    const gone = new AbortController();
    const res = await post('/execute-batch', {
      body: hangLine('e') + hangLine('f'),
      headers: { 'content-type': 'application/x-ndjson', 'x-bindery-batch': id },
      signal: gone.signal,
    });
    expect(res.status).toBe(200);
    for (let i = 0; i < 200 && arrived.filter((t) => t === 'e' || t === 'f').length < 2; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(closed).not.toContain('e');
    expect(closed).not.toContain('f');
    gone.abort();
    // Both requests to the API are cut long before their 20 s limit.
    for (let i = 0; i < 200 && closed.filter((t) => t === 'e' || t === 'f').length < 2; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(closed).toEqual(expect.arrayContaining(['e', 'f']));
  });

  it('a cut that arrives before its batch cuts the line when the batch comes', async () => {
    const id = 'batch-cut-0000000002';
    const early = await cut(id, [1]);
    expect(early.status).toBe(404);
    const started = performance.now();
    const res = await post('/execute-batch', {
      body: hangLine('c') + hangLine('d'),
      headers: { 'content-type': 'application/x-ndjson', 'x-bindery-batch': id },
    });
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(JSON.parse(first.split('\n')[0]!)).toMatchObject({ i: 1, body: { isError: true } });
    expect(performance.now() - started).toBeLessThan(5_000);
    await reader.cancel();
  });
});
