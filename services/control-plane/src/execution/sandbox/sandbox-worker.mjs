// The entry of a custom tool worker thread (see sandbox.ts). As query-worker.mjs: tsx's loader is
// registered here, scoped to this one import, and the TypeScript module's task function is what
// piscina calls.
import { tsImport } from 'tsx/esm/api';

const { default: runSandboxTask } = await tsImport('./sandbox-worker.ts', import.meta.url);

export default runSandboxTask;
