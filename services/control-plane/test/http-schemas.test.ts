// Pins that every route's schemas compile: the app compiles a route's request validators and
// response serializers at their first use (http/request-validation.ts, http/lazy-serializers.ts),
// so a schema Ajv or fast-json-stringify cannot compile would otherwise fail only the first request
// to its route. Every route of a full app, each part and status, compiled here by the same
// compilers.
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { RouteOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestValidatorCompiler } from '../src/http/request-validation.ts';
import { startTestApp, type TestApp } from './support/app.ts';

const routes: RouteOptions[] = [];
let t: TestApp;

beforeAll(async () => {
  t = await startTestApp({ onRoute: (route) => void routes.push(route) });
});
afterAll(async () => {
  await t?.close();
});

const PARTS = ['body', 'querystring', 'params', 'headers'] as const;

describe('route schemas', () => {
  it('every request part and every response status of every route compiles', async () => {
    const validator = requestValidatorCompiler();
    const serializer = SerializerSelector()({}, {});
    let validators = 0;
    let serializers = 0;
    for (const route of routes) {
      const schema = route.schema as Record<string, unknown> | undefined;
      if (!schema) continue;
      const url = route.url;
      const method = String(route.method);
      for (const httpPart of PARTS) {
        if (schema[httpPart] === undefined) continue;
        const validate = validator({ schema: schema[httpPart] as object, httpPart, url, method });
        // The first call compiles (its answer to null does not matter).
        expect(() => validate(null), `${method} ${url} ${httpPart}`).not.toThrow();
        validators += 1;
      }
      const response = (schema.response ?? {}) as Record<string, unknown>;
      for (const [httpStatus, statusSchema] of Object.entries(response)) {
        const body =
          (statusSchema as { content?: Record<string, { schema: unknown }> }).content?.['application/json']
            ?.schema ?? statusSchema;
        expect(
          () => serializer({ schema: body as object, url, method, httpStatus }),
          `${method} ${url} ${httpStatus}`,
        ).not.toThrow();
        serializers += 1;
      }
    }
    // The app's routes, not an empty list: the admin API alone has well over a hundred schemas.
    expect(validators).toBeGreaterThan(100);
    expect(serializers).toBeGreaterThan(100);
  });

  it('a lazily compiled validator refuses and coerces as before', async () => {
    const page = await t.call('GET', '/api/v2/tables?limit=1e999');
    expect(page.status).toBe(400);
    expect((await t.call('GET', '/api/v2/tables?limit=2')).status).toBe(200);
    const wrongType = await t.call('POST', '/api/v2/tables', { body: { name: 123, data: {} } });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.error.code).toBe('VALIDATION_FAILED');
  });
});
