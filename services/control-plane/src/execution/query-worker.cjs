// The entry of a query worker thread (see query-pool.ts): the task function of query-worker.ts.
const { join } = require('node:path');
const { taskOf } = require('./ts-worker-module.cjs');

module.exports = taskOf(join(__dirname, 'query-worker.ts'));
