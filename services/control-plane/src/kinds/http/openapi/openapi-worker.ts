/**
 * The worker side of an OpenAPI import's conversion (openapi-conversion.ts): the document in, the
 * HTTP tool configs out, or the error as plain data (an error's class does not survive the trip
 * between threads). Started as a conversion thread (its `workerData` says so), it serves one
 * conversion at a time, for as many as its owner sends it.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { CONVERSION_THREAD } from './conversion-thread.ts';
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

if (
  parentPort !== null &&
  (workerData as Partial<typeof CONVERSION_THREAD> | null)?.openApiConversionThread === true
) {
  const port = parentPort;
  port.on('message', (task: ConversionTask) => port.postMessage(convertTask(task)));
  port.postMessage({ ready: true });
}
