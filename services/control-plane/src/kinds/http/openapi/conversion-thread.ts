/**
 * The `workerData` that makes `openapi-worker.ts` serve conversions on its thread. Its own module,
 * so the main thread names it without loading the worker's parser.
 */
export const CONVERSION_THREAD = { openApiConversionThread: true } as const;
