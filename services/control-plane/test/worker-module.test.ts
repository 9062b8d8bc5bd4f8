// Pins how worker threads load their module (worker-module.ts, ts-worker-module.cjs): each pool's
// module bundles without a warning (a warning, such as `import.meta` in a worker's graph, would
// silently send every thread back to its slow TypeScript loader); a thread runs the text it was
// given, not its sources; without one it loads the TypeScript itself; a pool's threads answer tasks.
import { Piscina } from 'piscina';
import { afterEach, describe, expect, it } from 'vitest';
import { WORKER_MODULE_KEY, workerModule, workerModuleLater } from '../src/workers/worker-module.ts';

const ENTRY = new URL('../src/workers/worker-entry.cjs', import.meta.url).href;
const TASK = new URL('./fixtures/worker-task.ts', import.meta.url);

const pools: Piscina[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.destroy()));
});

function run(module: { path: string; code?: string }, task: unknown): Promise<unknown> {
  const pool = new Piscina({ filename: ENTRY, maxThreads: 1, workerData: { [WORKER_MODULE_KEY]: module } });
  pools.push(pool);
  return pool.run(task);
}

describe('worker modules', () => {
  it.each([
    './kinds/context/query-worker.ts',
    './kinds/custom/sandbox/sandbox-worker.ts',
    './kinds/http/openapi/openapi-worker.ts',
  ])('%s bundles without a warning', (path) => {
    const bundled = workerModule(new URL(`../src/${path.slice(2)}`, import.meta.url));
    expect(bundled.code).toEqual(expect.any(String));
    expect(bundled.code!.length).toBeGreaterThan(1_000);
  });

  it('the query worker takes no typebox; bundling off the event loop gives the same text', async () => {
    const url = new URL('../src/kinds/context/query-worker.ts', import.meta.url);
    expect(workerModule(url).code).not.toContain('typebox');
    expect(await workerModuleLater(url)).toBe(workerModule(url));
    // The fixture's first bundling in this file (the tests below reuse it): an async build.
    const later = await workerModuleLater(TASK);
    expect(later.code).toEqual(expect.any(String));
    expect(workerModule(TASK)).toBe(later);
  });

  it('a thread runs the bundle it is given', async () => {
    const bundled = workerModule(TASK);
    expect(await run(bundled, { x: 41 })).toEqual({ sum: 42, by: 'worker-task.ts' });
    // The text given is what runs, not the file it names.
    const other = {
      path: bundled.path,
      code: 'module.exports = { default: (task) => ({ given: task.x }) };',
    };
    expect(await run(other, { x: 7 })).toEqual({ given: 7 });
  });

  it('a thread given no bundle loads the TypeScript itself', async () => {
    expect(await run({ path: workerModule(TASK).path }, { x: 1 })).toEqual({ sum: 2, by: 'worker-task.ts' });
  });
});
