/**
 * The one error handler: every failure leaves as `{error: {code, message, details?, request_id}}`
 * with the status of its code. Unknown errors become INTERNAL without leaking their text.
 */
import { ERROR_STATUS, type ErrorBody, type ErrorCode } from '@bindery/contracts';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { constraintRefusal } from '../domain/prisma-errors.ts';
import { DomainError } from '../domain/errors.ts';

export interface Mapped {
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
}

/** What a failure nothing maps answers: no text of the error itself leaves. */
export const INTERNAL_ERROR: Mapped = {
  code: 'INTERNAL',
  message: 'internal error; quote the request_id when reporting it',
};

export function mapError(error: FastifyError | Error, request?: FastifyRequest): Mapped | undefined {
  if (error instanceof DomainError) return fromDomainError(error);
  // A constraint no check before the statement caught (an id that names nothing, a race on a
  // unique name): the caller's 4xx naming the field, like the checks' own.
  const refusal = constraintRefusal(error);
  if (refusal) return fromDomainError(refusal);
  const fastify = error as FastifyError;
  if (fastify.validation) {
    const first = fastify.validation[0];
    const tag = first?.keyword === 'discriminator' ? discriminatorMiss(first.params) : undefined;
    if (tag) {
      // A body of several shapes told apart by `tag` (an ADI's kind): the value is valid (the
      // tag's own schema checked it first) but this server offers no shape for it.
      return {
        code: 'VALIDATION_FAILED',
        message: `${fastify.validationContext ?? 'request'}/${tag.name} "${tag.value}" is not available on this server yet`,
        details: { field: tag.name, value: tag.value },
      };
    }
    const extra = (first?.params as { additionalProperty?: unknown } | undefined)?.additionalProperty;
    const where = `${fastify.validationContext ?? 'request'}${first?.instancePath ?? ''}`;
    // Ajv says "must be equal to constant" (or "to one of the allowed values") without naming
    // them; name the values allowed there (a union of constants fails once per branch, all at the
    // same place).
    const allowed =
      first?.keyword === 'const'
        ? fastify.validation
            .filter((v) => v.keyword === 'const' && v.instancePath === first.instancePath)
            .map((v) => JSON.stringify((v.params as { allowedValue?: unknown }).allowedValue))
        : first?.keyword === 'enum'
          ? ((first.params as { allowedValues?: unknown[] }).allowedValues ?? []).map((v) =>
              JSON.stringify(v),
            )
          : [];
    const problem =
      allowed.length > 0
        ? `must be ${allowed.length > 1 ? 'one of ' : ''}${allowed.join(', ')}`
        : (first?.message ?? 'is invalid');
    return {
      code: 'VALIDATION_FAILED',
      message: `${where} ${problem}${extra !== undefined ? `: "${String(extra)}"` : ''}`,
      details: {
        errors: fastify.validation.map((v) => ({
          path: v.instancePath,
          message: v.message,
          params: v.params,
        })),
      },
    };
  }
  switch (fastify.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE': {
      const limit = request?.routeOptions.bodyLimit;
      const setting = request?.routeOptions.config.bodyLimitSetting ?? 'BODY_LIMIT_BYTES';
      return {
        code: 'PAYLOAD_TOO_LARGE',
        message:
          limit === undefined
            ? 'request body is larger than the server accepts'
            : `request body is larger than the ${limit} bytes this server accepts (${setting})`,
        ...(limit !== undefined && { details: { limit_bytes: limit } }),
      };
    }
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { code: 'VALIDATION_FAILED', message: `request body is not valid JSON: ${fastify.message}` };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { code: 'VALIDATION_FAILED', message: 'send the body as application/json' };
    case 'FST_ERR_BAD_URL':
      return { code: 'VALIDATION_FAILED', message: 'the URL holds a percent-escape that is not UTF-8' };
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return { code: 'VALIDATION_FAILED', message: 'a path parameter is longer than any id or key' };
  }
  if (error instanceof SyntaxError && fastify.statusCode === 400) {
    return { code: 'VALIDATION_FAILED', message: `request body is not valid JSON: ${error.message}` };
  }
  // Any other refusal of the framework's own (a malformed request it cannot read) is the caller's
  // fault: its message names no internals, and it keeps the one error body.
  if (fastify.code?.startsWith('FST_') && fastify.statusCode !== undefined) {
    const status = fastify.statusCode;
    if (status === 413) return { code: 'PAYLOAD_TOO_LARGE', message: fastify.message };
    if (status >= 400 && status < 500) return { code: 'VALIDATION_FAILED', message: fastify.message };
  }
  // The file sender's own refusals under /console/ and /docs/static/ (a path it will not serve, a
  // Range past the file's end, an If-Match it fails): the caller's, never a 500. A file it refuses
  // to show is as absent as one that is not there.
  const sent = error as { status?: unknown; expose?: unknown };
  if (sent.expose === true && typeof sent.status === 'number' && sent.status >= 400 && sent.status < 500) {
    const path = request?.url.split('?', 1)[0];
    if (sent.status === 403 || sent.status === 404) {
      return { code: 'NOT_FOUND', message: path ? `no file ${path}` : 'no such file' };
    }
    if (sent.status === 412) {
      return {
        code: 'PRECONDITION_FAILED',
        message: 'the file does not match If-Match or If-Unmodified-Since',
      };
    }
    return { code: 'VALIDATION_FAILED', message: `${path ? `${path}: ` : ''}${error.message}` };
  }
  return undefined;
}

function fromDomainError(error: DomainError): Mapped {
  return { code: error.code, message: error.message, ...(error.details && { details: error.details }) };
}

/** The tag of a discriminated body whose value names no shape, from Ajv's error parameters. */
function discriminatorMiss(params: unknown): { name: string; value: string } | undefined {
  const { error, tag, tagValue } = (params ?? {}) as { error?: unknown; tag?: unknown; tagValue?: unknown };
  if (error !== 'mapping' || typeof tag !== 'string') return undefined;
  return { name: tag, value: String(tagValue) };
}

/** Builds the error body for a code (also used for 404 on unknown routes). */
export function errorBody(request: FastifyRequest, mapped: Mapped): ErrorBody {
  return { error: { ...mapped, request_id: String(request.id) } };
}

/**
 * For Fastify's `frameworkErrors` option: the router's own refusals (a URL whose percent-escapes
 * are not UTF-8, an overlong path parameter) answered with the one error body instead of
 * Fastify's default shape.
 */
export function frameworkErrorAnswer(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): void {
  const mapped = mapError(error) ?? { code: 'VALIDATION_FAILED', message: 'the request URL is not valid' };
  void reply.status(ERROR_STATUS[mapped.code]).send(errorBody(request, mapped));
}

export function registerErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const mapped = mapError(error, request);
    if (!mapped) {
      request.log.error({ err: error }, 'unhandled error');
      return reply.status(500).send(errorBody(request, INTERNAL_ERROR));
    }
    return reply.status(ERROR_STATUS[mapped.code]).send(errorBody(request, mapped));
  });
  app.setNotFoundHandler((request, reply) =>
    reply.status(404).send(
      errorBody(request, {
        code: 'NOT_FOUND',
        message: `no route ${request.method} ${request.url.split('?')[0]}`,
      }),
    ),
  );
}
