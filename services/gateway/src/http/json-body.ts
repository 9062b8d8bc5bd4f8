/**
 * The gateway's one JSON body parser, used by the Fastify routes and the fast lane alike: an empty
 * body, a body nested deeper than MAX_BODY_DEPTH (measured on the raw text, before anything
 * recurses into it) and malformed JSON are each refused with their JSON-RPC answer; parsing
 * refuses prototype poisoning as Fastify's own parser does.
 */
import { MAX_BODY_DEPTH, jsonNestsDeeperThan } from '@bindery/contracts';
import sjson from 'secure-json-parse';
import { JSONRPC, PARSE_ERROR, type JsonRpcErrorAnswer } from './jsonrpc-errors.ts';

/** A POST without a body. */
export const EMPTY_BODY: JsonRpcErrorAnswer = {
  status: 400,
  code: JSONRPC.PARSE_ERROR,
  message: 'Parse error: the body is empty; send a JSON-RPC message',
  bindery: 'VALIDATION_FAILED',
};

/** A body nested deeper than any request needs. */
export const TOO_DEEP: JsonRpcErrorAnswer = {
  status: 400,
  code: JSONRPC.INVALID_REQUEST,
  message: `Invalid Request: JSON nested deeper than ${MAX_BODY_DEPTH} levels`,
  bindery: 'VALIDATION_FAILED',
};

export type ParsedBody = { ok: true; value: unknown } | { ok: false; refusal: JsonRpcErrorAnswer };

/** Parses a request body's text, or names the JSON-RPC answer refusing it. */
export function parseJsonBody(text: string): ParsedBody {
  if (!/\S/.test(text)) return { ok: false, refusal: EMPTY_BODY };
  if (jsonNestsDeeperThan(text, MAX_BODY_DEPTH)) return { ok: false, refusal: TOO_DEEP };
  try {
    return { ok: true, value: sjson.parse(text, null, { protoAction: 'error', constructorAction: 'error' }) };
  } catch {
    return { ok: false, refusal: PARSE_ERROR };
  }
}

/** A parse refusal thrown from Fastify's content-type parser, for the error handler to answer. */
export class BodyRefused extends Error {
  override name = 'BodyRefused';
  readonly statusCode: number;
  constructor(readonly answer: JsonRpcErrorAnswer) {
    super(answer.message);
    this.statusCode = answer.status;
  }
}
