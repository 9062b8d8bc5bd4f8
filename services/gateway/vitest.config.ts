// Gateway suites: unit tests, and end-to-end tests against a real control plane process. Every
// suite runs with the control plane on PostgreSQL; the end-to-end suites whose outcome depends on
// the database engine (writes, idempotent retries across a frozen control plane, stored input) run
// again with the control plane on embedded PGlite. The legacy migration's end-to-end suite runs
// once: the migration is the control plane's, and its own suite (legacy-migration.happy, a bulk of
// 100 instances included) runs on both engines; here it took 54 s on PGlite, most of them migrating.
import { defineConfig } from 'vitest/config';
import { BUILD_SETUP, sourceResolution } from '../../vitest.shared.ts';

const ON_BOTH_ENGINES = [
  'test/gateway.happy.test.ts',
  'test/gateway.idempotency.resilience.test.ts',
  'test/bad-input.error.test.ts',
  // Custom tools read their context through the engine's store and run in the control plane's sandbox.
  'test/gateway.custom-tools.happy.test.ts',
];

export default defineConfig({
  ...sourceResolution,
  test: {
    globalSetup: [BUILD_SETUP],
    // Test files share their worker's modules (see the control plane's config): each file still
    // starts its own control plane and gateway.
    isolate: false,
    testTimeout: 60_000,
    hookTimeout: 90_000,
    projects: [
      { extends: true, test: { name: 'postgres', env: { BINDERY_TEST_DB: 'postgres' } } },
      {
        extends: true,
        test: { name: 'pglite', env: { BINDERY_TEST_DB: 'pglite' }, include: ON_BOTH_ENGINES },
      },
    ],
  },
});
