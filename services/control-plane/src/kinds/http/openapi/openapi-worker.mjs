// The entry of an OpenAPI conversion thread (see openapi-conversion.ts): openapi-worker.ts does
// the work and answers plain data, loaded as ts-worker-module.cjs says (bundled by the main
// thread). A thread serves one conversion at a time, for as many as its owner sends it.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parentPort } from 'node:worker_threads';
import workerModule from '../../../workers/ts-worker-module.cjs';

const here = dirname(fileURLToPath(import.meta.url));
const { convertTask } = await workerModule.loadModule(join(here, 'openapi-worker.ts'));

parentPort.on('message', (task) => parentPort.postMessage(convertTask(task)));
parentPort.postMessage({ ready: true });
