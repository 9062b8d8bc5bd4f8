/**
 * A large OpenAPI 3.0 document shaped like a real public API's: resources with list/create/read/
 * replace/update/delete operations, shared parameters and schemas reached through `$ref`s (nested
 * objects, arrays of references, one recursive schema), two security schemes, tags, long
 * descriptions and examples. Seeded, so every run builds the same document.
 *
 *   tsx support/openapi-document.ts [--operations 1200] [--mb 12] > api.json
 */
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { benchArgs } from './args.ts';

export interface GeneratorOptions {
  /** Operations to make (rounded up to whole resources of 6 operations). */
  operations: number;
  /** Rough size of the JSON text in MB; descriptions grow until it is reached. */
  mb: number;
}

const WORDS = (
  'account address amount archive balance batch billing cancel channel charge client comment contact ' +
  'country coupon currency customer default delivery device discount document email event export field ' +
  'file filter group history identity invoice item label language limit line list member message method ' +
  'note order owner page payment period plan policy price product profile project quota rate record ' +
  'refund region report request resource result role schedule session setting shipment source status ' +
  'subscription tag task tax team template tenant threshold ticket token total transfer type usage user ' +
  'value version webhook window workspace'
).split(' ');

/** A small deterministic generator (mulberry32). */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The document as an object. */
export function generateOpenApiDocument(options: GeneratorOptions): Record<string, unknown> {
  const resources = Math.ceil(options.operations / 6);
  const targetBytes = options.mb * 1024 * 1024;
  // Descriptions carry most of the size; start with a guess and grow them until the target is met.
  for (let words = 40; ; words = Math.ceil(words * 1.3)) {
    const document = build(resources, words);
    if (JSON.stringify(document).length >= targetBytes) return document;
  }
}

function build(resources: number, descriptionWords: number): Record<string, unknown> {
  const next = random(42);
  const word = () => WORDS[Math.floor(next() * WORDS.length)]!;
  const sentence = (n: number) => Array.from({ length: n }, word).join(' ');
  const schemas: Record<string, unknown> = {
    Error: {
      type: 'object',
      required: ['code', 'message'],
      properties: { code: { type: 'string' }, message: { type: 'string' }, details: { type: 'object' } },
    },
    TreeNode: {
      type: 'object',
      description: 'A node of a tree (recursive).',
      properties: {
        label: { type: 'string' },
        children: { type: 'array', items: { $ref: '#/components/schemas/TreeNode' } },
      },
    },
  };
  const paths: Record<string, unknown> = {};
  for (let r = 0; r < resources; r++) {
    const name = `${word()}${r}`;
    const model = `Model${r}`;
    const properties: Record<string, unknown> = {
      id: { type: 'string', format: 'uuid', readOnly: true, description: sentence(8) },
      created_at: { type: 'string', format: 'date-time', readOnly: true },
      status: { type: 'string', enum: ['active', 'paused', 'archived'], description: sentence(10) },
      tree: { $ref: '#/components/schemas/TreeNode' },
    };
    for (let p = 0; p < 24; p++) {
      const kind = p % 6;
      properties[`${word()}_${p}`] =
        kind === 0
          ? {
              type: 'string',
              maxLength: 200,
              description: sentence(descriptionWords / 4),
              example: sentence(3),
            }
          : kind === 1
            ? { type: 'integer', format: 'int64', minimum: 0, description: sentence(descriptionWords / 4) }
            : kind === 2
              ? { type: 'number', nullable: true, description: sentence(descriptionWords / 4) }
              : kind === 3
                ? { type: 'array', items: { type: 'string' }, maxItems: 50, description: sentence(12) }
                : kind === 4 && r > 0
                  ? { $ref: `#/components/schemas/Model${r - 1}Summary` }
                  : { type: 'boolean', default: false, 'x-internal-note': sentence(6) };
    }
    schemas[model] = {
      type: 'object',
      description: sentence(descriptionWords),
      required: ['status'],
      properties,
    };
    schemas[`${model}Summary`] = {
      type: 'object',
      properties: { id: { type: 'string' }, label: { type: 'string', description: sentence(10) } },
    };
    schemas[`${model}List`] = {
      type: 'object',
      properties: {
        items: { type: 'array', items: { $ref: `#/components/schemas/${model}` } },
        next_cursor: { type: 'string', nullable: true },
      },
    };
    const tag = `${word()}-${Math.floor(r / 10)}`;
    const ref = (schema: string) => ({ $ref: `#/components/schemas/${schema}` });
    const json = (schema: unknown) => ({ content: { 'application/json': { schema } } });
    const responses = (schema: string) => ({
      200: { description: sentence(6), ...json(ref(schema)) },
      default: { description: 'error', ...json(ref('Error')) },
    });
    const idParam = {
      name: `${name}Id`,
      in: 'path',
      required: true,
      schema: { type: 'string' },
      description: sentence(8),
    };
    const base = `/v1/${name}`;
    paths[base] = {
      get: {
        operationId: `list_${name}`,
        tags: [tag],
        summary: `List ${name}`,
        description: sentence(descriptionWords),
        parameters: [
          { $ref: '#/components/parameters/Limit' },
          { $ref: '#/components/parameters/Cursor' },
          { name: 'status', in: 'query', schema: { type: 'string', enum: ['active', 'paused', 'archived'] } },
          { $ref: '#/components/parameters/RequestId' },
        ],
        responses: responses(`${model}List`),
      },
      post: {
        operationId: `create_${name}`,
        tags: [tag],
        summary: `Create a ${name}`,
        description: sentence(descriptionWords),
        requestBody: { required: true, ...json(ref(model)) },
        responses: responses(model),
      },
    };
    paths[`${base}/{${name}Id}`] = {
      parameters: [idParam],
      get: {
        operationId: `get_${name}`,
        tags: [tag],
        summary: `Get a ${name}`,
        description: sentence(descriptionWords),
        parameters: [
          {
            name: 'expand',
            in: 'query',
            schema: { type: 'array', items: { type: 'string' } },
            style: 'form',
          },
        ],
        responses: responses(model),
      },
      put: {
        operationId: `replace_${name}`,
        tags: [tag],
        description: sentence(descriptionWords),
        requestBody: { required: true, ...json(ref(model)) },
        responses: responses(model),
      },
      patch: {
        operationId: `update_${name}`,
        tags: [tag],
        description: sentence(descriptionWords),
        requestBody: json({
          allOf: [ref(`${model}Summary`), { type: 'object', properties: { note: { type: 'string' } } }],
        }),
        responses: responses(model),
      },
      delete: {
        operationId: `delete_${name}`,
        tags: [tag],
        security: [{ apiKey: [] }],
        description: sentence(descriptionWords / 2),
        responses: { 204: { description: 'deleted' } },
      },
    };
  }
  return {
    openapi: '3.0.3',
    info: {
      title: 'Generated API',
      version: '1.0.0',
      description: 'A generated document for the import benchmark.',
    },
    servers: [{ url: 'https://api.example.com' }],
    security: [{ bearerAuth: [] }],
    tags: [],
    paths,
    components: {
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer' },
        apiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key' },
      },
      parameters: {
        Limit: {
          name: 'limit',
          in: 'query',
          schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 },
        },
        Cursor: { name: 'cursor', in: 'query', schema: { type: 'string' } },
        RequestId: { name: 'X-Request-Id', in: 'header', schema: { type: 'string', format: 'uuid' } },
      },
      schemas,
    },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values } = parseArgs({
    args: benchArgs(),
    options: { operations: { type: 'string', default: '1200' }, mb: { type: 'string', default: '12' } },
  });
  process.stdout.write(
    JSON.stringify(generateOpenApiDocument({ operations: Number(values.operations), mb: Number(values.mb) })),
  );
}
