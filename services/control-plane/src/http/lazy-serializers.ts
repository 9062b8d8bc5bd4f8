/**
 * Response serializers compiled at their first use: Fastify's own compiler (fast-json-stringify),
 * called for a route's status only once that route answers it. Compiling them all at start was
 * most of the rest of the route schemas' share of a start's CPU (request-validation.ts says why
 * that matters); a schema that cannot compile fails a test that compiles them all
 * (http-schemas.test.ts), not the start.
 */
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';

type Serializer = (data: unknown) => string;
type SerializerFactory = ReturnType<typeof SerializerSelector>;

/** `compilersFactory.buildSerializer` for Fastify's `schemaController` option. */
export const lazySerializers: SerializerFactory = (externalSchemas, options) => {
  const compile = SerializerSelector()(externalSchemas, options);
  return (route) => {
    let compiled: Serializer | undefined;
    return (data: unknown) => {
      compiled ??= compile(route) as Serializer;
      return compiled(data);
    };
  };
};
