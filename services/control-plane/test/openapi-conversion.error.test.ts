// Pins the bounds of an OpenAPI document's conversion thread, each with its own clear error: a
// conversion past its time is TIMEOUT, one past its heap LIMIT_EXCEEDED (limit "memory"), one
// more than may run at once RATE_LIMITED; a document error crosses the thread as the same
// VALIDATION_FAILED; the converter keeps working after each.
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { OpenApiConverter } from '../src/kinds/http/openapi/openapi-conversion.ts';
import { failure } from './support/domain-failure.ts';

const PETSTORE = readFileSync(new URL('./fixtures/openapi/petstore-expanded.yaml', import.meta.url), 'utf8');
const converters: OpenApiConverter[] = [];
afterEach(async () => {
  await Promise.all(converters.splice(0).map((c) => c.close()));
});
function converter(limits: ConstructorParameters<typeof OpenApiConverter>[0]) {
  const made = new OpenApiConverter(limits);
  converters.push(made);
  return made;
}
/** A document of `operations` operations, each with a body schema of `properties` properties. */
function bigDocument(operations: number, properties: number) {
  const paths: Record<string, unknown> = {};
  for (let i = 0; i < operations; i++) {
    const props = Object.fromEntries(
      Array.from({ length: properties }, (_, p) => [
        `field_${p}`,
        { type: 'string', description: `field ${p} of ${i}` },
      ]),
    );
    paths[`/things_${i}`] = {
      post: {
        operationId: `addThing${i}`,
        requestBody: { content: { 'application/json': { schema: { type: 'object', properties: props } } } },
        responses: {},
      },
    };
  }
  return {
    openapi: '3.0.3',
    info: { title: 'Big', version: '1' },
    servers: [{ url: 'https://api.example.com' }],
    paths,
  };
}

describe('the conversion thread', () => {
  it('converts in a thread, and a document error crosses as the same VALIDATION_FAILED', async () => {
    const c = converter({});
    const conversion = await c.convert(PETSTORE, {});
    expect(conversion.tools.map((t) => t.name)).toEqual([
      'findPets',
      'addPet',
      'find_pet_by_id',
      'deletePet',
    ]);
    const error = await failure(c.convert('{"openapi": ', {}));
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.message).toMatch(/^document: not valid JSON/);
    expect(error.details).toMatchObject({ field: 'document' });
  });

  it('ends a conversion past its time (a thread’s start included) with TIMEOUT', async () => {
    const c = converter({ timeoutMs: 50 });
    const error = await failure(c.convert(bigDocument(400, 40), {}));
    expect(error.code).toBe('TIMEOUT');
    expect(error.message).toContain('took longer than 50 ms');
    expect(error.details).toMatchObject({ field: 'document', timeout_ms: 50 });
  });

  it('ends a conversion past its heap with LIMIT_EXCEEDED naming the memory limit', async () => {
    const c = converter({ memoryMb: 64, timeoutMs: 60_000 });
    const error = await failure(c.convert(bigDocument(2_000, 60), {}));
    expect(error.code).toBe('LIMIT_EXCEEDED');
    expect(error.details).toMatchObject({ field: 'document', limit: 'memory', memory_mb: 64 });
  });

  it('refuses a conversion beyond the number running at once with RATE_LIMITED', async () => {
    const c = converter({ concurrent: 1 });
    const first = c.convert(PETSTORE, {});
    const error = await failure(c.convert(PETSTORE, {}));
    expect(error.code).toBe('RATE_LIMITED');
    expect((await first).tools).toHaveLength(4);
    // The slot is free again once the first has finished.
    expect((await c.convert(PETSTORE, {})).tools).toHaveLength(4);
  });
});
