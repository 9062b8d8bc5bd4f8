// The entry of an OpenAPI conversion thread (see openapi-conversion.ts). As for query workers, tsx's
// loader is registered here, scoped to this one import, since a worker thread does not always
// inherit the parent's loader; the TypeScript module does the work and answers plain data. A
// thread serves one conversion at a time, for as many as its owner sends it.
import { parentPort } from 'node:worker_threads';
import { tsImport } from 'tsx/esm/api';

const { convertTask } = await tsImport('./openapi-worker.ts', import.meta.url);

parentPort.on('message', (task) => parentPort.postMessage(convertTask(task)));
parentPort.postMessage({ ready: true });
