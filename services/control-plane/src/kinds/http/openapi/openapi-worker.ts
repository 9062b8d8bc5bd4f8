/**
 * The worker side of an OpenAPI import's conversion (openapi-conversion.ts): the document in, the
 * HTTP tool configs out, or the error as plain data (an error's class does not survive the trip
 * between threads).
 */
import type { ErrorCode } from '@bindery/contracts';
import { DomainError } from '../../../domain/errors.ts';
import { openApiToHttpTools, type OpenApiConversion, type OpenApiImportOptions } from './index.ts';

export interface ConversionTask {
  document: unknown;
  options: OpenApiImportOptions;
}

export type ConversionOutcome =
  | { ok: true; conversion: OpenApiConversion }
  | { ok: false; error: { code: ErrorCode; message: string; details?: Record<string, unknown> } };

export function convertTask(task: ConversionTask): ConversionOutcome {
  try {
    return { ok: true, conversion: openApiToHttpTools(task.document, task.options) };
  } catch (error) {
    if (error instanceof DomainError) {
      return {
        ok: false,
        error: { code: error.code, message: error.message, ...(error.details && { details: error.details }) },
      };
    }
    // A bug of the parser or the mapping (the document is the caller's own, so its text may show).
    const reason = error instanceof Error ? error.message : String(error);
    return {
      ok: false,
      error: { code: 'INTERNAL', message: `the document could not be converted: ${reason.slice(0, 300)}` },
    };
  }
}
