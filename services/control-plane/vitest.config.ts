// The control plane's suites run twice: on a real PostgreSQL server and on embedded PGlite. Suites
// that open no database (settings, the sandbox, HTTP tool calls against a local server, OpenAPI
// conversion, the SSRF guard, invalidation delivery) or test only the query budget test nothing an
// engine changes: they run once, as do the upstream servers' failure suites (processes and
// circuits; the happy suites run on both).
import { randomBytes } from 'node:crypto';
import { defineConfig } from 'vitest/config';
import { BUILD_SETUP, sourceResolution } from '../../vitest.shared.ts';

// One template database per run, so runs from several checkouts on one server never drop each
// other's template (the config is read once, in the main process; test workers inherit the env).
process.env.BINDERY_TEST_TEMPLATE ??= `bindery_test_template_${randomBytes(4).toString('hex')}`;

const ENGINE_INDEPENDENT = [
  'test/config.test.ts',
  'test/upstream-catalog-snapshot.test.ts',
  'test/custom-tool-sandbox.*.test.ts',
  // Query slices, workers and their heap: the context they read is loaded by the store code every
  // other suite runs on both engines (this file alone took 106 s on PGlite, building its contexts).
  'test/executor.budget.test.ts',
  'test/http-tools.*.test.ts',
  'test/invalidation.error.test.ts',
  'test/openapi-conversion.*.test.ts',
  'test/openapi-import.*.test.ts',
  'test/prompts.error.test.ts',
  'test/ssrf-guard.*.test.ts',
  'test/upstream-catalog.error.test.ts',
  'test/upstream-servers.error.test.ts',
  'test/upstream-answers.error.test.ts',
  'test/worker-file.test.ts',
  // Rules judged on values alone (no database); the sidebar's command parsing and bounds.
  'test/table-rules.test.ts',
  'test/sidebar.error.test.ts',
];

export default defineConfig({
  ...sourceResolution,
  test: {
    // Test files share their worker's modules (Prisma's client, PGlite's WASM, Fastify): importing
    // them again for every file cost about a tenth of the suite's time. Each file still builds its
    // own app on its own database, and no test mocks a module or leans on module state.
    isolate: false,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'postgres',
          env: { BINDERY_TEST_DB: 'postgres' },
          globalSetup: [BUILD_SETUP, 'test/support/global-setup.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'pglite',
          env: { BINDERY_TEST_DB: 'pglite' },
          globalSetup: [BUILD_SETUP, 'test/support/global-setup.pglite.ts'],
          exclude: ['test/**/*.postgres.test.ts', ...ENGINE_INDEPENDENT, '**/node_modules/**'],
        },
      },
    ],
  },
});
