// The entry of a custom tool worker thread (see custom-tool-sandbox.ts): the task function of
// sandbox-worker.ts.
const { join } = require('node:path');
const { taskOf } = require('../ts-worker-module.cjs');

module.exports = taskOf(join(__dirname, 'sandbox-worker.ts'));
