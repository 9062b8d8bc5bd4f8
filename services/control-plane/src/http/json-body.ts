/**
 * The one JSON body parser of the control plane, admin and internal routes alike. Before parsing,
 * the raw text's nesting is measured (MAX_BODY_DEPTH), so no parser, validator or domain check
 * ever recurses into a hostile document; parsing itself is Fastify's own (secure-json-parse,
 * prototype poisoning refused); after it, what the database cannot store (a NUL, a lone surrogate,
 * a number that overflows) is refused, naming where.
 * JSON is the only body this API takes: other content types are refused (415 -> VALIDATION_FAILED).
 */
import { MAX_BODY_DEPTH, findUnstorable, jsonNestsDeeperThan, mayHoldUnstorable } from '@bindery/contracts';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { DomainError } from '../domain/errors.ts';
import { unstorableError } from './unstorable-input.ts';

/** Parses one JSON text as a body is parsed: `done` gets the value, or the refusal to answer. */
export type JsonTextParser = (
  request: FastifyRequest,
  text: string,
  done: (error: Error | null, value?: unknown) => void,
) => void;

/** The checks and the parser every JSON body goes through, for a body or for a part of one. */
export function jsonTextParser(app: FastifyInstance): JsonTextParser {
  // Fastify's own parser is callback-style (its type is a union with the promise form).
  const parse = app.getDefaultJsonParser('error', 'error') as JsonTextParser;
  return (request, body, done) => {
    if (body.length === 0) {
      done(new DomainError('VALIDATION_FAILED', 'the request body is empty: send JSON, or no Content-Type'));
      return;
    }
    if (jsonNestsDeeperThan(body, MAX_BODY_DEPTH)) {
      done(
        new DomainError('VALIDATION_FAILED', `JSON nested deeper than ${MAX_BODY_DEPTH} levels`, {
          max_depth: MAX_BODY_DEPTH,
        }),
      );
      return;
    }
    parse(request, body, (error, value) => {
      if (error) return done(error);
      const found = mayHoldUnstorable(body) ? findUnstorable(value) : undefined;
      if (found) return done(unstorableError('body', found));
      done(null, value);
    });
  };
}

export function registerJsonBody(app: FastifyInstance): void {
  const parse = jsonTextParser(app);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, text, done) =>
    parse(request, text as string, done),
  );
}
