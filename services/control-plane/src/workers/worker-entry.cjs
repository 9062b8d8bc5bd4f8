// The entry of a worker pool's threads (worker-pool.ts): the task function of the module the pool
// names in `workerData` (worker-module.ts), bundled or, failing that, loaded from its TypeScript.
const { givenModule, taskOf } = require('./ts-worker-module.cjs');

const given = givenModule();
if (given === undefined)
  throw new Error('worker-entry.cjs: no module in workerData (start it through FairWorkerPool)');
module.exports = taskOf(given.path);
