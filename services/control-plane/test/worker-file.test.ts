// Worker threads run built JavaScript with plain node (worker-file.ts): each worker module's built
// file is found from the sources as from dist/, and loads on a thread that has none of the test
// process's options (no TypeScript loader), its default export ready for tasks.
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { workerExecArgv, workerFile } from '../src/workers/worker-file.ts';

const SOURCES = new URL('../src/', import.meta.url);
const BUILT = new URL('../dist/', import.meta.url);

/** What a thread that imports `url` sees of the module: its default export's and named exports' types. */
function loadOnThread(url: URL): Promise<Record<string, string>> {
  const worker = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
     import(workerData.url).then(
       (module) => parentPort.postMessage(Object.fromEntries(Object.entries(module).map(([k, v]) => [k, typeof v]))),
       (error) => parentPort.postMessage({ error: String(error) }),
     );`,
    // memoryBytes: the sandbox worker's setting, read as it loads.
    { eval: true, workerData: { url: url.href, memoryBytes: 64 * 1024 * 1024 }, execArgv: workerExecArgv() },
  );
  return new Promise((resolve, reject) => {
    worker.once('message', (exports: Record<string, string>) => {
      void worker.terminate();
      resolve(exports);
    });
    worker.once('error', reject);
  });
}

describe('worker files', () => {
  it.each([
    ['kinds/context/query-pool.ts', 'query-worker', 'kinds/context/query-worker.js', 'default'],
    [
      'kinds/custom/sandbox/custom-tool-sandbox.ts',
      'sandbox-worker',
      'kinds/custom/sandbox/sandbox-worker.js',
      'default',
    ],
    [
      'kinds/http/openapi/openapi-conversion.ts',
      'openapi-worker',
      'kinds/http/openapi/openapi-worker.js',
      'convertTask',
    ],
  ])('%s starts %s from dist/, which loads on a plain thread', async (from, name, built, entry) => {
    const fromSources = workerFile(name, new URL(from, SOURCES).href);
    expect(fromSources.href).toBe(new URL(built, BUILT).href);
    // Run from dist/, the module is the one beside its caller.
    const fromBuilt = workerFile(name, new URL(from.replace(/\.ts$/, '.js'), BUILT).href);
    expect(fromBuilt.href).toBe(fromSources.href);
    const exports = await loadOnThread(fromSources);
    expect(exports).not.toHaveProperty('error');
    expect(exports[entry]).toBe('function');
  });

  it('a worker module that is not built is named, with the command that builds it', () => {
    expect(() => workerFile('no-such-worker', new URL('kinds/context/query-pool.ts', SOURCES).href)).toThrow(
      /no-such-worker\.js is not built: run `pnpm build`/,
    );
    expect(() => workerFile('query-worker', 'file:///elsewhere/query-pool.ts')).toThrow(
      /not under a package's src/,
    );
  });

  it("a thread keeps none of its process's options but source maps, and loads ES modules by import", () => {
    const saved = process.execArgv;
    try {
      Object.defineProperty(process, 'execArgv', {
        value: ['--import', 'tsx', '--conditions=bindery-source', '--enable-source-maps'],
        configurable: true,
      });
      // require() of an ES module off where Node knows the option: a thread terminated while
      // require() loaded one aborted the whole process (worker-file.ts).
      const noRequireEsm = process.allowedNodeEnvironmentFlags.has('--experimental-require-module')
        ? ['--no-experimental-require-module']
        : [];
      expect(workerExecArgv()).toEqual(['--enable-source-maps', ...noRequireEsm]);
    } finally {
      Object.defineProperty(process, 'execArgv', { value: saved, configurable: true });
    }
  });
});
