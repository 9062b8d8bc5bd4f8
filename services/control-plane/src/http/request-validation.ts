/**
 * How route schemas validate requests. Text-only parts (path parameters, query strings, headers)
 * are coerced to the schema's types, since `?limit=20` can only arrive as a string; JSON bodies are
 * never coerced: `{"name": 123}` is a wrong type, refused, not silently stored as "123". Unknown
 * fields are refused rather than dropped, and defaults are applied.
 */
import type { FastifySchemaCompiler } from 'fastify';
import { Ajv, type Options } from 'ajv';

// Fastify's own defaults, but for removeAdditional (refuse, do not drop) and coercion.
const BASE: Options = { useDefaults: true, removeAdditional: false, allErrors: false, addUsedSchema: false };

/** A validator compiler for `app.setValidatorCompiler`: one Ajv for bodies, one for text parts. */
export function requestValidatorCompiler(): FastifySchemaCompiler<unknown> {
  const text = new Ajv({ ...BASE, coerceTypes: 'array' });
  const body = new Ajv({ ...BASE, coerceTypes: false });
  return ({ schema, httpPart }) => (httpPart === 'body' ? body : text).compile(schema as object);
}
