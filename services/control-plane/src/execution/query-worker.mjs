// The entry of a query worker thread (see query-pool.ts). The services run TypeScript through tsx
// without a build step, and a worker thread does not always inherit the parent's loader (vitest, for
// one, runs the control plane inside its own process): tsx's loader is registered here, scoped to
// this one import, and the TypeScript module's task function is what piscina calls.
import { tsImport } from 'tsx/esm/api';

const { default: runQuery } = await tsImport('./query-worker.ts', import.meta.url);

export default runQuery;
