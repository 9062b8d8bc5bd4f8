// The control plane's suites run twice: on a real PostgreSQL server and on embedded PGlite.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'postgres',
          env: { BINDERY_TEST_DB: 'postgres' },
          globalSetup: ['test/support/global-setup.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'pglite',
          env: { BINDERY_TEST_DB: 'pglite' },
          exclude: ['test/**/*.postgres.test.ts', '**/node_modules/**'],
        },
      },
    ],
  },
});
